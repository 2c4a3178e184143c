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
from mapsearch.model.overflow import least_need, overflow_text
from mapsearch.model.problem import Problem
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
    details = [_detail(p, n, enc.pinned) for n in core]
    if constraints.tiles and _feasible_without_tile_limits(p, constraints, options):
        core += ("user tile limits",)
        details.append("the user's tile limits exclude the tiles that would fit")
    text = " and ".join(core) if core else "the requirements"
    extra = "; ".join(d for d in details if d)
    return InfeasibleError(f"infeasible: {text} conflict" + (f": {extra}" if extra else ""), core)


def _detail(p: Problem, guard: str, pinned: frozenset[str]) -> str:
    """The numbers behind a capacity guard of the core (``pinned``: the dimensions the model held whole)."""
    if not guard.startswith("capacity of "):
        return ""
    name = guard[len("capacity of "):]
    i = p.architecture.index(name)
    need, parts = least_need(p, i, pinned)
    capacity = p.architecture.levels[i].capacity
    if need <= capacity:
        return f"{name} holds {capacity} words: not enough for tiles that meet the other requirements"
    return overflow_text(p, i, need, parts)


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
