"""Unfused chain files (``format: mapsearch-unfused-chain``): a chain's einsums run one after another.

``mapsearch solve CHAIN.yaml ARCH -o FILE`` writes one when the best option is
unfused or materialized at a level (:func:`mapsearch.solve.chain_files.unfused_to_dict`)::

    {
      "format": "mapsearch-unfused-chain", "version": 1,
      "graph": {"name": "mm2", "einsums": ["T[m,n] += A[m,k] * B[k,n]", ...], "extents": {...}},
      "time": "320",       # predicted: the sum of the stages' times (exact: an int or "a/b")
      "words": 896,        # predicted: the sum of the stages' words over every link
      "stages": [          # one per einsum, in the graph's order: each a whole schedule file
        {"format": "mapsearch-schedule", "version": 1, "workload": ..., "architecture": ..., ...},
        ...
      ]
    }

Reading checks every stage as a schedule file (:func:`mapsearch.schedule.json_io.schedule_from_dict`,
errors prefixed ``stages[e].``), then that stage ``e`` is einsum ``e`` of the graph at its extents, that
every stage uses one architecture and that an intermediate has one home in every stage that uses it.
The predicted totals are not checked against the stages here: ``mapsearch replay --check`` compares
both with the replay. Every error is one :class:`~mapsearch.errors.SpecError` line naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Mapping

from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.fused_json import FORMAT as FUSED_FORMAT, _prefixed, fused_from_dict
from mapsearch.schedule.json_io import read_json, schedule_from_dict
from mapsearch.schedule.schedule import Schedule
from mapsearch.errors import SpecError
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.reading import _error, _note, fraction_from_json
from mapsearch.spec.workload import WorkloadGraph

__all__ = ["FORMAT", "VERSION", "UnfusedChain", "unfused_from_dict", "load_unfused", "load_schedule_file"]

FORMAT = "mapsearch-unfused-chain"
VERSION = 1


@dataclass(frozen=True)
class UnfusedChain:
    """A chain run einsum by einsum: ``stages[e]`` schedules einsum ``e`` alone; ``time`` and ``words`` are
    the predicted totals (None when the file gives none)."""

    graph: WorkloadGraph
    stages: tuple[Schedule, ...]
    time: Fraction | None = None
    words: int | None = None
    source: str = field(default="", compare=False, repr=False)

    @property
    def architecture(self) -> Architecture:
        return self.stages[0].architecture

    @property
    def predicted_complete(self) -> bool:
        """Every stage and both totals carry a prediction (what ``replay --check`` compares)."""
        return self.time is not None and self.words is not None and all(s.predicted is not None for s in self.stages)


def unfused_from_dict(data: object, source: str = "<unfused chain>") -> UnfusedChain:
    """Validate raw data and build an :class:`UnfusedChain` (one-line SpecErrors)."""
    from mapsearch.spec.graph_load import graph_from_dict

    if not isinstance(data, Mapping):
        raise _error(source, "", "an unfused chain object", data)
    known = ("format", "version", "graph", "time", "words", "stages")
    for key in data:
        if key not in known:
            raise _note(source, str(key), f"unknown field; expected one of {', '.join(known)}")
    for key in ("format", "version", "graph", "stages"):
        if key not in data:
            raise _note(source, key, "missing")
    if data["format"] != FORMAT:
        raise _error(source, "format", repr(FORMAT), data["format"])
    if data["version"] != VERSION or isinstance(data["version"], (bool, float)):
        raise _error(source, "version", str(VERSION), data["version"])
    if not isinstance(data["graph"], Mapping):
        raise _error(source, "graph", "a chain {name, einsums, extents}", data["graph"])
    graph = graph_from_dict(data["graph"], source)
    time = fraction_from_json(data["time"], source, "time", nonnegative=True) if "time" in data else None
    words = data.get("words")
    if words is not None and (not isinstance(words, int) or isinstance(words, bool) or words < 0):
        raise _error(source, "words", "int >= 0", words)
    raw_stages = data["stages"]
    if not isinstance(raw_stages, list) or len(raw_stages) != len(graph.einsums):
        raise _error(source, "stages", f"a list of {len(graph.einsums)} schedules (one per einsum)", raw_stages)
    stages: list[Schedule] = []
    for e, raw in enumerate(raw_stages):
        try:
            stages.append(schedule_from_dict(raw, source))
        except SpecError as err:
            raise _prefixed(err, source, f"stages[{e}]") from None
    _check_stages(graph, stages, source)
    return UnfusedChain(graph, tuple(stages), time, words, source=source)


def _check_stages(graph: WorkloadGraph, stages: list[Schedule], source: str) -> None:
    """Stage ``e`` is einsum ``e`` at the graph's extents, on one architecture; one home per intermediate."""
    homes: dict[str, tuple[int, str]] = {}  # intermediate -> (first stage using it, its home there)
    for e, st in enumerate(stages):
        want = graph.stage(e)
        if st.workload.einsum != want.einsum:
            raise _error(source, f"stages[{e}].workload.einsum", f"einsum {e} of the graph, "
                         f"{want.einsum.text()!r}", st.workload.einsum.text())
        if dict(st.workload.extents) != dict(want.extents):
            raise _error(source, f"stages[{e}].workload.extents", f"the graph's extents {dict(want.extents)}",
                         dict(st.workload.extents))
        if st.architecture != stages[0].architecture:
            raise _note(source, f"stages[{e}].architecture", "differs from stages[0].architecture; every stage "
                        "runs on one architecture")
        for t in graph.intermediates:
            if t not in st.workload.tensor_names:
                continue
            level = st.architecture.levels[st.home(t)].name
            first = homes.setdefault(t, (e, level))
            if first[1] != level:
                raise _error(source, f"stages[{e}].homes.{t}", f"{first[1]}, its home in stages[{first[0]}] "
                             "(an intermediate is read from where it was written)", level)


def load_unfused(path: str | Path) -> UnfusedChain:
    return unfused_from_dict(read_json(path), str(path))


def load_schedule_file(path: str | Path) -> Schedule | FusedSchedule | UnfusedChain:
    """Any schedule file ``mapsearch replay`` reads, told apart by its ``format``: one einsum's
    (``mapsearch-schedule``), a fused chain's (``mapsearch-fused-schedule``) or an unfused chain's
    (``mapsearch-unfused-chain``)."""
    data = read_json(path)
    kind = data.get("format") if isinstance(data, dict) else None
    if kind == FORMAT:
        return unfused_from_dict(data, str(path))
    if kind == FUSED_FORMAT:
        return fused_from_dict(data, str(path))
    return schedule_from_dict(data, str(path))
