"""A fused chain's tensors, its reference values, and the check every fused replay starts with.

The tensors of a chain in order of first appearance, its inputs (written by
no einsum) and its final outputs (read by no later einsum), the values numpy
computes einsum by einsum, and :func:`check_fused`: a fused schedule that
breaks the rules of docs/fusion.md is refused before any replay walks it.
"""

from __future__ import annotations

import numpy as np

from mapsearch.errors import ScheduleError
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.fused_json import fused_violations
from mapsearch.sim.compute import einsum_reference
from mapsearch.spec.workload import WorkloadGraph


def chain_tensor_names(graph: WorkloadGraph) -> tuple[str, ...]:
    """Every tensor of the chain, in order of first appearance (per einsum: inputs, then the output)."""
    return graph.tensor_names


def chain_inputs(graph: WorkloadGraph) -> tuple[str, ...]:
    written = {e.output.name for e in graph.einsums}
    return tuple(t for t in chain_tensor_names(graph) if t not in written)


def chain_outputs(graph: WorkloadGraph) -> tuple[str, ...]:
    inter = set(graph.intermediates)
    return tuple(e.output.name for e in graph.einsums if e.output.name not in inter)


def chain_reference(graph: WorkloadGraph, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every tensor's values, the einsums computed one after the other with numpy."""
    values = dict(inputs)
    for i in range(len(graph.einsums)):
        w = graph.stage(i)
        values[w.einsum.output.name] = einsum_reference(w, values)
    return values


def check_fused(fs: FusedSchedule) -> None:
    """Raise ``ScheduleError`` naming the first rule of docs/fusion.md the schedule breaks."""
    found = fused_violations(fs)
    if found:
        raise ScheduleError(found[0])
