"""Why a problem is infeasible: a core of requirement families, with their numbers.

Each family of requirements (each level's capacity, each user constraint,
the minimum utilization) is guarded by one literal; solved with those
literals as assumptions and one worker, CP-SAT returns a subset that cannot
hold together (``sufficient_assumptions_for_infeasibility``).
"""

from __future__ import annotations


from ortools.sat.python import cp_model

from mapsearch.errors import InfeasibleError, NoScheduleInFamily
from mapsearch.model.build import build
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.model.windows import split_windows
from mapsearch.spec.constraints import Constraints


def explain_infeasible(p: Problem, constraints: Constraints, options: SolveOptions) -> InfeasibleError:
    enc = build(p, constraints, options)
    names = list(enc.guards)
    enc.model.add_assumptions([enc.guards[n] for n in names])
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = max(1.0, options.time_limit)
    status = solver.solve(enc.model)
    if status != cp_model.INFEASIBLE:
        return InfeasibleError("infeasible, but no conflicting set of requirements was isolated in time")
    core_idx = set(solver.sufficient_assumptions_for_infeasibility())
    core = tuple(n for n in names if enc.guards[n].index in core_idx)
    details = [_detail(p, n) for n in core]
    if constraints.tiles and _feasible_without_tile_limits(p, constraints, options):
        core += ("user tile limits",)
        details.append("the user's tile limits exclude the tiles that would fit")
    text = " and ".join(core) if core else "the requirements"
    extra = "; ".join(d for d in details if d)
    return InfeasibleError(f"infeasible: {text} conflict" + (f": {extra}" if extra else ""), core)


def _detail(p: Problem, guard: str) -> str:
    if not guard.startswith("capacity of "):
        return ""
    name = guard[len("capacity of "):]
    i = p.architecture.index(name)
    _, pinned, _ = split_windows(p, frozenset(), None)
    need, parts = least_need(p, i, pinned)
    capacity = p.architecture.levels[i].capacity
    if need <= capacity:
        return f"{name} holds {capacity} words: not enough for tiles that meet the other requirements"
    return _overflow_text(p, i, need, parts)


def least_need(p: Problem, i: int, pinned: frozenset[str] = frozenset()) -> tuple[int, list[str]]:
    """``(words, parts)``: the least occupancy of level ``i`` when the dims in ``pinned`` are held whole.

    Homes count whole; L0 keeps every tensor homed above it, at least its tile of extent 1 along every
    dim not pinned, twice with double buffering unless that tile is the whole tensor (it must move) or
    holding the whole tensor once is less. ``parts``: ``"X words"`` per such tensor.
    """
    arch, w = p.architecture, p.workload
    need = home_words_of(p, i)
    parts = []
    if i == arch.depth - 1:
        for t in w.tensor_names:
            if p.home(t) < i:
                smallest = w.tensor(t).words({d: w.extent[d] if d in pinned else 1 for d in w.dims})
                whole = w.tensor_words(t)
                if arch.double_buffering and smallest < whole:
                    smallest = min(2 * smallest, whole)
                parts.append(f"{t} {smallest}")
                need += smallest
    return need, parts


def _overflow_text(p: Problem, i: int, need: int, parts: list[str]) -> str:
    name = p.architecture.levels[i].name
    homes = home_words_of(p, i)
    what = f"the smallest tiles ({', '.join(parts)} words)" if parts else "what must be kept there"
    if p.architecture.double_buffering and parts:
        what = what.replace("the smallest tiles", "the smallest tiles, double-buffered,")
    if homes:
        what += f" plus {homes} words of homes"
    return f"{name} holds {p.architecture.levels[i].capacity} words but {what} need {need}"


def contract_overflow(p: Problem) -> InfeasibleError | None:
    """The infeasibility of a level that no schedule of the contract fits (tiles of one element, any position,
    any split), or None.

    A restricted search that finds nothing reports "no schedule in the searched family"; when even
    the contract's least occupancy overflows a level, no legal schedule exists and it is infeasible.
    Not claimed for a fused stage (its homes and buffers are the group's).
    """
    if p.fusion_level is not None:
        return None
    for i, lv in enumerate(p.architecture.levels):
        need, parts = least_need(p, i)
        if lv.capacity is not None and need > lv.capacity:
            return InfeasibleError(f"infeasible: capacity of {lv.name} conflict: {_overflow_text(p, i, need, parts)}",
                                   (f"capacity of {lv.name}",))
    return None


def home_words_of(p: Problem, i: int) -> int:
    return sum(p.workload.tensor_words(t) for t in p.workload.tensor_names if p.home(t) == i)


def _feasible_without_tile_limits(p: Problem, constraints: Constraints, options: SolveOptions) -> bool:
    relaxed = Constraints(constraints.name, (), constraints.orders, constraints.keep, constraints.stationary)
    try:
        enc = build(p, relaxed, options)
    except InfeasibleError:
        return False
    for g in enc.guards.values():
        enc.model.add(g == 1)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = max(1.0, options.time_limit)
    return solver.solve(enc.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def with_core(e: InfeasibleError) -> InfeasibleError:
    """The error, its message naming every requirement of the core."""
    message = " ".join(str(e).split())
    missing = [name for name in e.core if name not in message]
    if missing or not e.core:
        message += f" (conflicting requirements: {', '.join(e.core) if e.core else 'none isolated'})"
    if isinstance(e, NoScheduleInFamily):
        return NoScheduleInFamily(message, e.core, e.restrictions)
    return InfeasibleError(message, e.core)
