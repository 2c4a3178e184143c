"""The coarse search that starts each phase, and the probe that may follow it.

Each phase of a solve first searches the same model restricted to coarse
tile chains (model/coarse_chains.py): a good schedule in a fraction of the
time, which hints the full search (solve/phases.py). Nothing here bounds
anything: every schedule found is a schedule of the full model (the coarse
model only adds restrictions), and a coarse search that ends INFEASIBLE or
without a schedule says nothing about the full family.
"""

from __future__ import annotations

import logging

from ortools.sat.python import cp_model

import mapsearch.budget as budget
from mapsearch.model.coarse_chains import coarse_rows
from mapsearch.model.encoding import Encoding
from mapsearch.model.options import SolveOptions
from mapsearch.solve import spatial_seed
from mapsearch.solve.phases import hint_from, new_solver
from mapsearch.solve.progress import search

log = logging.getLogger(__name__)

# A probe may take this share of the time the coarse search left.
PROBE_SHARE = 1 / 3
# No probe starts with less time than this left.
PROBE_MIN_SECONDS = 1.0
# A later phase's probe holds its objective to this fraction of the way from the floor to the coarse value.
CUT = (9, 10)
# Where the coarse model is the whole model, the seeded searches' share of the phase's time (the coarse search
# that follows them has its ``share`` otherwise): most end proven in a second on a 128x128 array
# (solve/spatial_seed.py).
SEED_SHARE = 3 / 4


def coarse_solution(enc: Encoding, options: SolveOptions, time_left: float, share: float = 0.25,
                    phase: str = "", floor: int | None = None, incumbent: int | None = None):
    """``(objective value, solver)`` of the model restricted to coarse chains, or None.

    The search may take ``share`` of the time left (the rest is the full
    search's). A search that ends without proving the coarse model's optimum
    is followed by a probe (:func:`probe`) at :func:`probe_target` for the
    ``phase`` (its name), its proven ``floor`` and the best value known (the
    search's, or ``incumbent``, a warm start's); a schedule it finds better
    than that value is the result. On a large array without an incumbent,
    seeded searches (solve/spatial_seed.py) come first and hint the coarse
    search; where the coarse model is the full model they are the whole
    coarse search (:data:`SEED_SHARE` of the time), and the full search that
    follows starts from their schedule.
    """
    restricted = _restricted_rows(enc)
    if restricted is None:
        return None
    model = enc.model
    if restricted:
        model = enc.model.clone()
        for d, rows in restricted.items():
            var = enc.choice[d]
            model.add_allowed_assignments([model.get_int_var_from_proto_index(var.index)], [[r] for r in rows])
    seeded = None
    if seeds(enc, phase) and incumbent is None:  # solve/spatial_seed.py; a start is a better seed
        seeded = spatial_seed.seeded_solution(enc, model, options, time_left * (share if restricted else SEED_SHARE),
                                              floor)
    if not restricted:  # the coarse model is the full model: solve it once, from the seeded schedule
        return None if seeded is None else seeded[:2]
    if seeded is not None:
        if floor is not None and seeded[0] <= floor:
            return seeded[:2]
        time_left -= seeded[2]
        # The seeded model is a copy of this one with constraints added: the same variables, by index.
        hint_from(model, [model.get_int_var_from_proto_index(i) for i in range(len(model.proto.variables))],
                  seeded[1])
    solver = new_solver(options, min(time_left, max(0.05, time_left * share)))
    status = search(solver, model, "coarse search")
    found = int(round(solver.objective_value)) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
    left = time_left - solver.wall_time  # the coarse search's own time, whichever schedule is kept
    if seeded is not None and (found is None or seeded[0] < found):
        found, solver = seeded[:2]
    best = min((v for v in (found, incumbent) if v is not None), default=None)
    target = None if status == cp_model.OPTIMAL else probe_target(phase, best, floor)
    if target is not None and budget.seconds_left(left) < PROBE_MIN_SECONDS:
        # Loading a large model alone takes seconds whatever the limit (conv1 on tpu-v4i-like: 3-5 s at a
        # limit of 0): a probe this short would only overrun the solve's time limit.
        log.info("%s phase: no time left for a probe at %d", phase, target)
        target = None
    if target is not None:
        model.clear_hints()  # the hint led to ``found``, which the target cuts off
        probed = probe(model, target, new_solver(options, min(left, max(0.05, left * PROBE_SHARE))))
        log.info("%s phase: coarse search %s, best known %s, probe at %d: %s", phase, found, best, target,
                 "none" if probed is None else probed[0])
        if probed is not None and (best is None or probed[0] < best):
            return probed
    return None if found is None else (found, solver)


def _restricted_rows(enc: Encoding) -> dict[str, list[int]] | None:
    """Per dimension whose coarse chains are fewer than its chains, their rows; None where a dimension has
    no coarse chain (then there is no coarse model)."""
    restricted = {}
    for d, var in enc.choice.items():
        if isinstance(var, int):
            continue
        rows = coarse_rows(enc.chains[d], bool(enc.spatial_levels))
        if not rows:
            return None
        if len(rows) < len(enc.chains[d].tiles):
            restricted[d] = rows
    return restricted


def coarse_is_full(enc: Encoding) -> bool:
    """The coarse model would be the full model (no dimension restricted): its search is the full search's."""
    return _restricted_rows(enc) == {}


def seeds(enc: Encoding, phase: str) -> bool:
    """The time phase on a large array (solve/spatial_seed.py)."""
    return phase == "time" and spatial_seed.applies(enc)


def probe_target(phase: str, best: int | None, floor: int | None) -> int | None:
    """The objective value a probe holds the coarse model to when the best schedule known has value ``best``
    (None: none), or None for no probe.

    - The time phase: its proven ``floor``, when ``best`` is above it or
      None. Time floors are often reached (the compute time of a
      compute-bound problem), and a schedule at the floor is optimal. (A
      second probe, at the cut below, after the floor changed no time
      phase's gap in the targets table under work limit 5 and cost up to
      10 s more.)
    - The words phase: the cut ``floor + 9/10 (best - floor)`` (``floor`` 0
      where none is known), strictly below ``best``. Words floors are rarely
      reached (gaps of 28-60 % at depth), so the probe looks for a better
      start than ``best`` rather than for the optimum.
    - Other phases (energy, DRAM rows): none (not measured).
    """
    if phase == "time":
        return floor if floor is not None and (best is None or best > floor) else None
    if phase == "words" and best is not None and best > (floor or 0):
        low = floor or 0
        cut = low + (best - low) * CUT[0] // CUT[1]
        return cut if cut < best else None
    return None


def probe(model: cp_model.CpModel, target: int, solver: cp_model.CpSolver):
    """``(value, solver)`` holding a schedule of ``model`` whose objective is at most ``target``, or None.

    The model's objective is ``sum(c_i x_i) + offset``; the probe adds
    ``sum(c_i x_i) + offset <= target`` to a copy and minimises there.
    Minimising from above, CP-SAT's first schedules on the large models can
    sit far above the optimum and stay there. BERT's FFN on ``tpu-v4i-like``
    ended its time phase at 1,188,864 clocks for a floor of 18,432; held at
    the floor, propagation prunes every choice that cannot reach it, and the
    probe found 18,432 in 11.8 s. The ResNet-50 3x3 layer on
    ``eyeriss-like`` ended its words' coarse search at 3,922,176 words,
    hinted by the time phase's schedule; held 10 % lower, without the hint,
    it found 2,485,248 (work limit 5). A probe that ends INFEASIBLE or out of
    its time proves nothing about the full family (it searched the coarse
    model only), and the coarse search's schedule stands.
    """
    held = model.clone()
    objective = held.proto.objective
    if objective.scaling_factor not in (0, 1):
        return None  # not a minimisation of an integer expression as run_phases posts it
    terms = [held.get_int_var_from_proto_index(i) for i in objective.vars]
    held.add(cp_model.LinearExpr.weighted_sum(terms, list(objective.coeffs)) + int(round(objective.offset)) <= target)
    if search(solver, held, "probe") not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return int(round(solver.objective_value)), solver
