"""The coarse search that starts each phase, and its probe at the phase's floor.

Each phase of a solve first searches the same model restricted to coarse
tile chains (:func:`coarse_chains`): a good schedule in a fraction of the
time, which hints the full search (solve/phases.py). Nothing here bounds
anything: every schedule found is a schedule of the full model (the coarse
model only adds restrictions), and a coarse search that ends INFEASIBLE or
without a schedule says nothing about the full family.
"""

from __future__ import annotations

import logging

import numpy as np
from ortools.sat.python import cp_model

from mapsearch.model.encoding import Encoding
from mapsearch.model.options import SolveOptions
from mapsearch.solve.phases import new_solver
from mapsearch.solve.progress import search

log = logging.getLogger(__name__)

# The probe at the floor may take this share of the time the coarse search left.
PROBE_SHARE = 1 / 3


def coarse_chains(extent: int, tiles, powers_of_two: bool = True) -> list[int]:
    """Rows of chains whose extents are all ``ceil(E / 2**k)``, ``E`` or 1, or (``powers_of_two``) powers of two."""
    values = {extent, 1}
    k = 1
    while k <= extent:
        values.add(-(-extent // k))
        if powers_of_two:
            values.add(k)
        k *= 2
    return np.flatnonzero(np.all(np.isin(tiles, sorted(values)), axis=1)).tolist()


def coarse_rows(chains, meshed: bool) -> list[int]:
    """The coarse chains of a dimension; the halvings alone where every chain is coarse (without a mesh).

    Where every chain of a dimension is coarse (an enumeration reduced at
    depth, ``space.reduced``, or pruned to such extents), the coarse model
    would be the full model and give no quick first schedule: BERT's FFN
    on ``cpu-core`` (5 levels) then ended its time phase at 16x the compute
    time under a work limit of 5, while the halvings' model proves the
    compute time in 4.5 s. Not under a mesh: there the halvings can leave out
    the parts the array needs (the 3x3 layer on ``tpu-v4i-like`` then got no
    coarse schedule at all).
    """
    rows = coarse_chains(chains.extent, chains.tiles)
    if len(rows) == len(chains.tiles) and not meshed:
        rows = coarse_chains(chains.extent, chains.tiles, powers_of_two=False)
    return rows


def coarse_solution(enc: Encoding, options: SolveOptions, time_left: float, share: float = 0.25,
                    probe_floor: int | None = None):
    """``(objective value, solver)`` of the model restricted to coarse chains, or None.

    The search may take ``share`` of the time left (the rest is the full
    search's). With ``probe_floor`` (a proven floor of the phase's
    objective), a coarse search that ends above it without proving the
    coarse model's optimum is followed by :func:`floor_probe`.
    """
    restricted = {}
    for d, var in enc.choice.items():
        if isinstance(var, int):
            continue
        rows = coarse_rows(enc.chains[d], bool(enc.spatial_levels))
        if not rows:
            return None
        if len(rows) < len(enc.chains[d].tiles):
            restricted[d] = rows
    if not restricted:
        return None  # the coarse model is the full model: solve it once
    model = enc.model.clone()
    for d, rows in restricted.items():
        var = enc.choice[d]
        model.add_allowed_assignments([model.get_int_var_from_proto_index(var.index)], [[r] for r in rows])
    solver = new_solver(options, min(time_left, max(0.05, time_left * share)))
    status = search(solver, model, "coarse search")
    found = int(round(solver.objective_value)) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
    if probe_floor is not None and status != cp_model.OPTIMAL and (found is None or found > probe_floor):
        left = time_left - solver.wall_time
        probed = floor_probe(model, probe_floor, new_solver(options, min(left, max(0.05, left * PROBE_SHARE))))
        if probed is not None:
            log.info("the coarse search ended %s the phase's floor; a probe at the floor found a schedule there",
                     "without a schedule at" if found is None else "above")
            return probed
    return None if found is None else (found, solver)


def floor_probe(model: cp_model.CpModel, floor: int, solver: cp_model.CpSolver):
    """``(floor, solver)`` holding a schedule of ``model`` whose objective is at most ``floor``, or None.

    The model's objective is ``sum(c_i x_i) + offset``; the probe adds
    ``sum(c_i x_i) + offset <= floor`` and searches that. Minimising from
    above, CP-SAT's first schedules on the large array models can sit far
    above the optimum (BERT's FFN on ``tpu-v4i-like``: 1,188,864 clocks for
    a floor of 18,432, where every later improvement took as long as the
    first); with the objective held at the floor, propagation prunes every
    choice that cannot reach it, and the probe found a schedule at the
    floor in 11.8 s. Since ``floor`` is a proven lower bound, a schedule
    found is optimal. Where the floor cannot be reached, the probe ends
    INFEASIBLE (in the coarse model only: no bound follows) or runs out of
    its time, and the coarse search's schedule stands.
    """
    probe = model.clone()
    objective = probe.proto.objective
    if objective.scaling_factor not in (0, 1):
        return None  # not a minimisation of an integer expression as run_phases posts it
    terms = [probe.get_int_var_from_proto_index(i) for i in objective.vars]
    probe.add(cp_model.LinearExpr.weighted_sum(terms, list(objective.coeffs)) + int(round(objective.offset)) <= floor)
    if search(solver, probe, "probe at the floor") not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return int(round(solver.objective_value)), solver
