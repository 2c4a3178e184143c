"""A schedule of a fused group of einsums (docs/fusion.md)."""

from __future__ import annotations

from dataclasses import dataclass

from mapsearch.schedule.figures import Figures
from mapsearch.schedule.schedule import Schedule
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import WorkloadGraph


@dataclass(frozen=True)
class FusedSchedule:
    """``stages[e]`` schedules einsum ``e``; levels ``0..fusion_level`` are shared (see docs/fusion.md)."""

    graph: WorkloadGraph
    architecture: Architecture
    fusion_level: int
    stages: tuple[Schedule, ...]
    predicted: Figures | None = None

    @property
    def intermediates(self) -> tuple[str, ...]:
        return self.graph.intermediates

    def with_predicted(self, figures: Figures | None) -> "FusedSchedule":
        return FusedSchedule(self.graph, self.architecture, self.fusion_level, self.stages, figures)
