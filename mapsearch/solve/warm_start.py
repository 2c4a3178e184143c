"""Warm starts: a known schedule as the first hint of a solve (the inverse of model/decode.py).

:func:`start_of` maps a :class:`~mapsearch.schedule.schedule.Schedule` onto
an :class:`~mapsearch.model.encoding.Encoding`'s decisions: the chain row
of every dimension (its tile extents and, at a meshed level, its part
extent), the mesh axis of every split, each keep, each loop order and each
buffer's cut. :func:`start_solution` solves the model with those decisions
fixed (a clone, the phase's objective, a short limit), which both checks
that the schedule is a schedule of this model and gives its objective
value and a solver to hint from, as :func:`mapsearch.solve.coarse.coarse_solution`
does for the coarse search; :func:`with_start` picks the better of the two.

A start only ever adds a known schedule of the model, never a constraint
on the search: the optimum, its proof and what OPTIMAL means are those of
the solve without it. A schedule outside the model's family (another
problem, a chain the enumeration pruned or never listed, a user constraint
it breaks, a buffer too large for this capacity) is no start: the reason is
logged at debug level and the solve goes on as without one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import numpy as np
from ortools.sat.python import cp_model

from mapsearch.model.build import build
from mapsearch.model.decode import decode
from mapsearch.model.encoding import Encoding
from mapsearch.model.options import SolveOptions
from mapsearch.model.placement import meshed_placement_restriction, placed_dims, placement_disabled_reason
from mapsearch.model.problem import Problem
from mapsearch.schedule.schedule import Schedule
from mapsearch.solve.progress import search
from mapsearch.spec.constraints import Constraints, resolve_level

log = logging.getLogger(__name__)

Hint = tuple[int, cp_model.CpSolver]  # (objective value, solver holding the schedule), as run_phases takes it


class NotInFamily(Exception):
    """Why a schedule is no start for this model (logged, never raised out of this module)."""


@dataclass(frozen=True)
class Start:
    """The decisions of a schedule in one model: fixed values, and allowed rows where a chain was pruned.

    ``allowed[d]``: the rows of ``d``'s chains with the schedule's piece
    counts and no larger tile extents (one of them dominates the
    schedule's own chain, which the enumeration dropped: model/chains.py).
    """

    values: tuple[tuple[cp_model.IntVar, int], ...]
    allowed: tuple[tuple[cp_model.IntVar, tuple[int, ...]], ...]
    schedule: Schedule


def start_of(enc: Encoding, schedule: Schedule | None, constraints: Constraints = Constraints()) -> Start | None:
    """The decisions of ``schedule`` in ``enc``, or None (reason logged at debug level) when it is not one of its schedules."""
    if schedule is None:
        return None
    try:
        return _start(enc, schedule, _fixed_order_levels(enc, constraints))
    except NotInFamily as e:
        log.debug("the start schedule is ignored: %s", e)
        return None


def start_solution(enc: Encoding, start: Start | None, solver: cp_model.CpSolver) -> Hint | None:
    """``(objective value, solver)`` of the model's current objective with ``start``'s decisions fixed, or None.

    None when the model refuses them (a capacity, a user constraint, an
    earlier phase's value the start does not reach) or ``solver``'s limit
    ends first.
    """
    if start is None:
        return None
    model = enc.model.clone()
    model.clear_hints()
    for var, value in start.values:
        model.add(model.get_int_var_from_proto_index(var.index) == value)
    for var, rows in start.allowed:
        model.add_allowed_assignments([model.get_int_var_from_proto_index(var.index)], [[r] for r in rows])
    status = search(solver, model, "warm start")
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        log.debug("the start schedule is ignored: the model with its decisions fixed is %s (%s)",
                  solver.status_name(status).lower(), _overflow(enc, start.schedule) or "a constraint of the model")
        return None
    return int(round(solver.objective_value)), solver


def with_start(enc: Encoding, start: Start | None, coarse: Callable[[int | None], Hint | None],
               make_solver: Callable[[], cp_model.CpSolver], floor: int | None = None) -> Hint | None:
    """The better hint of the coarse search's (``coarse(incumbent)``, told the start's value) and the start's
    (the start on a tie); either where the other is None. A start that meets the phase's proven ``floor`` is
    taken without the coarse search."""
    if start is None:
        return coarse(None)
    hinted = start_solution(enc, start, make_solver())
    if hinted is not None and floor is not None and hinted[0] <= floor:
        log.debug("the start schedule meets the phase's floor %d: no coarse search", floor)
        return hinted
    found = coarse(None if hinted is None else hinted[0])
    if hinted is None or (found is not None and found[0] < hinted[0]):
        return found
    log.debug("the start schedule hints the phase: value %d (coarse search: %s)", hinted[0],
              "none" if found is None else found[0])
    return hinted


def model_view(problem: Problem, schedule: Schedule, constraints: Constraints = Constraints(),
               options: SolveOptions = SolveOptions(), time_limit: float = 10.0) -> Schedule | None:
    """``schedule`` as the model of ``problem`` has it (decoded, with the model's predicted figures), or None
    when it is not one of the model's schedules. For a schedule of this problem's family, the inverse of decode:
    ``model_view(p, decode(enc, solver)) == decode(enc, solver)``."""
    enc = build(problem, constraints, options)
    for guard in enc.guards.values():
        enc.model.add(guard == 1)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = time_limit
    hinted = start_solution(enc, start_of(enc, schedule, constraints), solver)
    return None if hinted is None else decode(enc, hinted[1])


# ----------------------------------------------------------------------------- schedule -> decisions


def _fixed_order_levels(enc: Encoding, constraints: Constraints) -> frozenset[int]:
    """Levels whose loop order the user fixed: the model keeps their single-trip loops where the order puts them."""
    arch = enc.problem.architecture
    return frozenset(resolve_level(level, arch, "constraints", "orders") for level, _ in constraints.orders)


def _start(enc: Encoding, s: Schedule, fixed_levels: frozenset[int]) -> Start:
    _check_same_problem(enc, s)
    values: dict[int, tuple[cp_model.IntVar, int]] = {}

    def fix(var, value: int, what: str) -> None:
        if isinstance(var, (bool, int, np.integer)):
            if int(var) != int(value):
                raise NotInFamily(f"{what} is {int(value)} in the schedule but fixed to {int(var)} in the model")
            return
        values[var.index] = (var, int(value))

    rows, allowed = _chain_rows(enc, s, fix)
    _mesh_axes(enc, s, rows, fix)
    for (t, i), lit in enc.kept.items():
        fix(lit, s.keeps(t, i), f"the keep of {t} at {s.architecture.levels[i].name}")
    orders = _orders(enc, s, rows, fixed_levels)
    for (j, d, e), lit in enc.before.items():
        if isinstance(lit, cp_model.IntVar):
            fix(lit, orders[j].index(d) < orders[j].index(e), f"the order of {d} and {e} at level {j}")
    _cuts(enc, s, rows, fixed_levels, fix)
    _layouts(enc, s, fix)
    return Start(tuple(values.values()), tuple(allowed), s)


def _check_same_problem(enc: Encoding, s: Schedule) -> None:
    p = enc.problem
    w, arch = p.workload, p.architecture
    if s.workload.extents != w.extents or s.workload.tensors != w.tensors:
        raise NotInFamily(f"it is a schedule of {s.workload.name} (extents {dict(s.workload.extents)}), "
                          f"not of {w.name} (extents {dict(w.extents)})")
    if s.architecture.level_names != arch.level_names:
        raise NotInFamily(f"its levels {list(s.architecture.level_names)} are not {list(arch.level_names)}")
    for t in w.tensor_names:
        if s.home(t) != p.home(t):
            raise NotInFamily(f"{t} is homed at {s.architecture.levels[s.home(t)].name}, not at "
                              f"{arch.levels[p.home(t)].name}")


def _chain_rows(enc: Encoding, s: Schedule, fix) -> tuple[dict[str, int], list]:
    """Per dimension, the row of the schedule's chain (tiles, and parts at meshed levels); fixes ``choice``.

    A chain the enumeration dropped as dominated is replaced by the rows
    that can dominate it (same counts, no larger extents), left to the
    validating solve to pick from.
    """
    rows: dict[str, int] = {}
    allowed = []
    J = enc.problem.depth
    for d, ch in enc.chains.items():
        tiles = np.array([s.levels[j].tile_extent(d) for j in range(1, J + 1)], dtype=np.int64)
        match = np.all(ch.tiles == tiles, axis=1)
        for lv, level in enumerate(enc.spatial_levels):
            part = s.levels[level].part_extent(d)
            if ch.factors is None:
                if part is not None:
                    raise NotInFamily(f"{d} is split at {s.architecture.levels[level].name}, which no chain of the model does")
                continue
            match &= (ch.factors[:, lv] == 1) if part is None else (ch.factors[:, lv] > 1) & (ch.parts[:, lv] == part)
        found = np.flatnonzero(match)
        if found.size:
            rows[d] = int(found[0])
            fix(enc.choice[d], rows[d], f"the chain row of {d}")
            continue
        dominating = _dominating_rows(enc, d, tiles)
        if not dominating:
            parts = [s.levels[level].part_extent(d) for level in enc.spatial_levels]
            split = f" split in parts {parts} at the meshed levels" if any(parts) else ""
            raise NotInFamily(f"the tile extents of {d} {tiles.tolist()}{split} are not among the model's chains "
                              f"({len(ch)} kept of {ch.raw_count:,}, family: {ch.family})")
        if not isinstance(enc.choice[d], int):  # else the model's one chain dominates it
            allowed.append((enc.choice[d], tuple(dominating)))
        rows[d] = dominating[0]
    return rows, allowed


def _dominating_rows(enc: Encoding, d: str, tiles: np.ndarray) -> list[int]:
    """Rows with the piece counts of the chain ``tiles`` at every level and no larger extents.

    Only for chains without spatial parts (a split's parts must match exactly).
    """
    if enc.chains[d].factors is not None:
        return []
    from mapsearch.model.chains_pieces import level_pieces

    ch = enc.chains[d]
    pieces = level_pieces(ch.extent, tiles[None, :])
    counts = np.array([int(sum(c for _, c in lv)[0]) for lv in pieces], dtype=np.int64)
    ok = np.all(ch.counts == counts, axis=1) & np.all(ch.tiles <= tiles, axis=1)
    return np.flatnonzero(ok).tolist()


def _mesh_axes(enc: Encoding, s: Schedule, rows: dict[str, int], fix) -> None:
    """The mesh axis of every split (axis 0 for an unsplit dimension, as the model has it)."""
    for (d, lv, a), lit in enc.on_axis.items():
        if a != 0:
            continue  # axis 1 is the negation of axis 0 (model/spatial.py)
        level = enc.problem.architecture.levels[enc.spatial_levels[lv]]
        split = next((x for x in s.levels[enc.spatial_levels[lv]].spatial if x.dim == d), None)
        names = [axis.name for axis in level.mesh]
        if split is not None and split.axis not in names:
            raise NotInFamily(f"{d} is split on axis {split.axis} of {level.name}, whose axes are {names}")
        fix(lit, split is None or names.index(split.axis) == 0, f"the mesh axis of {d} at {level.name}")


def _single_trip(enc: Encoding, d: str, row: int, j: int) -> bool:
    counts = enc.chains[d].counts
    return bool(counts[row, j] == counts[row, j - 1])


def _orders(enc: Encoding, s: Schedule, rows: dict[str, int], fixed_levels: frozenset[int]) -> dict[int, tuple[str, ...]]:
    """Each level's order as the model writes it: single-trip loops outermost, in dimension order
    (model/order.py; moving them changes no visit), except where the user fixed the order."""
    dims = enc.problem.workload.dims
    active = enc.cache.get("active", dims)
    out = {}
    for j in range(1, enc.problem.depth + 1):
        order = s.levels[j].order
        if sorted(order) != sorted(dims):
            raise NotInFamily(f"the order {list(order)} at {s.levels[j].level} does not list every dimension once")
        single = [] if j in fixed_levels else [d for d in dims if d in active and _single_trip(enc, d, rows[d], j)]
        out[j] = tuple(single) + tuple(d for d in order if d not in single)
    return out


def _cuts(enc: Encoding, s: Schedule, rows: dict[str, int], fixed_levels: frozenset[int], fix) -> None:
    """The cut of every buffer (model/placement.py) from its nest position in the schedule; a bypassed
    level's cut is its default, as the model has it."""
    J = enc.problem.depth
    off = placement_disabled_reason(enc)
    meshed = meshed_placement_restriction(enc)
    for t in enc.problem.workload.tensor_names:
        dims = placed_dims(enc, t)
        r = len(dims)
        if r == 0:
            continue  # no loop that advances indexes t: every position holds the same regions
        for i in range(enc.problem.home(t) + 1, J + 1):
            cut = _cut(enc, s, t, i, dims, rows, fixed_levels) if s.keeps(t, i) else i * r
            lits = enc.at.get((t, i))
            if lits is None or cut not in lits:
                if cut != i * r:
                    level = s.architecture.levels[i].name
                    raise NotInFamily(f"the buffer of {t} at {level} is away from its default position, which this "
                                      f"model does not search ({off or meshed or 'its position is fixed'})")
                continue
            for c, lit in lits.items():
                fix(lit, c == cut, f"the position of {t}'s buffer at level {i}")


def _cut(enc: Encoding, s: Schedule, t: str, i: int, dims: list[str], rows: dict[str, int],
         fixed_levels: frozenset[int]) -> int:
    """Cut ``(j-1)*r + m`` of the buffer's position: anchor level ``j``, ``m`` the ``R`` loops of level ``j``
    outside it in the model's order.

    There single-trip loops stand first (moving a buffer across one changes
    no region): behind a loop that advances, the buffer has every one of
    them outside; otherwise those the schedule has outside, which keeps a
    canonical schedule's own cut (two buffers of a tensor at cuts that hold
    the same regions are not both in the model: model/placement.py).
    """
    r = len(dims)
    if s.position(t, i) == 0:
        return 0
    j, outside = s.buffer_anchor(t, i)
    if outside is None:
        return j * r
    single = set() if j in fixed_levels else {d for d in dims if _single_trip(enc, d, rows[d], j)}
    advancing = [d for d in dims if d in outside and d not in single]
    return (j - 1) * r + len(advancing) + (len(single) if advancing else len([d for d in single if d in outside]))


def _layouts(enc: Encoding, s: Schedule, fix) -> None:
    """The schedule's DRAM layouts where the model chooses one (left to the validating solve when not given)."""
    if enc.rows is None or s.dram is None:
        return
    given = dict(s.dram.layouts)
    for t, candidates in enc.rows.candidates.items():
        if t not in given:
            continue
        hits = [c.spec == given[t] for c in candidates]
        if not any(hits):
            raise NotInFamily(f"the DRAM layout of {t} is not one the model chooses from")
        for lit, hit in zip(enc.rows.chosen[t], hits):
            fix(lit, hit, f"the DRAM layout of {t}")


def _overflow(enc: Encoding, s: Schedule) -> str | None:
    """The levels the schedule's predicted occupancy overflows in this architecture, if it says."""
    if s.predicted is None:
        return None
    caps = {lv.name: lv.capacity for lv in enc.problem.architecture.levels}
    over = [f"{name} holds {words:,} words, capacity {caps[name]:,}" for name, words in s.predicted.occupancy
            if caps.get(name) is not None and words > caps[name]]
    return "; ".join(over) or None
