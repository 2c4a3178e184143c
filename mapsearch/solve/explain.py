"""Why a problem is infeasible: a core of requirement families, with their numbers.

Each family of requirements (each level's capacity, each user constraint,
the minimum utilization) is guarded by one literal; solved with those
literals as assumptions and one worker, CP-SAT returns a subset that cannot
hold together (``sufficient_assumptions_for_infeasibility``). The user's tile
limits shape the tile chains rather than a guarded constraint: where they
take part, a deletion filter finds the ones that do (``error.limits``).
:func:`with_core` says where each requirement of the core comes from (a
file and its field) when the caller knows the files.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from ortools.sat.python import cp_model

from mapsearch.errors import InfeasibleError, NoScheduleInFamily
from mapsearch.model.build import build
from mapsearch.model.options import SolveOptions
from mapsearch.model.overflow import least_need, overflow_text
from mapsearch.model.problem import Problem
from mapsearch.spec import limits as spec_limits
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.constraints import Constraints, TileLimit, resolve_level, resolve_tensor
from mapsearch.spec.workload import Workload

FILTER_LIMITS = 8  # more tile limits than this: all are named rather than each tried without the others


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
    taking_part: tuple[TileLimit, ...] = ()
    if constraints.tiles and _feasible(p, replace(constraints, tiles=()), options):
        core += ("user tile limits",)
        details.append("the user's tile limits exclude the tiles that would fit")
        taking_part = _limits_taking_part(p, constraints, options)
    text = " and ".join(core) if core else "the requirements"
    extra = "; ".join(d for d in details if d)
    return InfeasibleError(f"infeasible: {text} conflict" + (f": {extra}" if extra else ""), core, taking_part)


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


def _status(p: Problem, constraints: Constraints, options: SolveOptions, seconds: float) -> int:
    """CP-SAT's status for ``p`` under ``constraints``, every guarded requirement on (INFEASIBLE where the model
    cannot even be built)."""
    try:
        enc = build(p, constraints, options)
    except InfeasibleError:
        return cp_model.INFEASIBLE
    for g in enc.guards.values():
        enc.model.add(g == 1)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = seconds
    return solver.solve(enc.model)


def _feasible(p: Problem, constraints: Constraints, options: SolveOptions) -> bool:
    return _status(p, constraints, options, max(1.0, options.time_limit)) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def _limits_taking_part(p: Problem, constraints: Constraints, options: SolveOptions) -> tuple[TileLimit, ...]:
    """The tile limits that conflict with the other requirements: each is left out where those left still
    conflict (proven; a try that runs out of time keeps it), so what remains all take part. Past
    :data:`FILTER_LIMITS` limits, all of them."""
    kept = list(constraints.tiles)
    if len(kept) > FILTER_LIMITS:
        return tuple(kept)
    seconds = max(1.0, options.time_limit / (2 * len(kept)))
    for limit in constraints.tiles:
        fewer = [lim for lim in kept if lim is not limit]
        if _status(p, replace(constraints, tiles=tuple(fewer)), options, seconds) == cp_model.INFEASIBLE:
            kept = fewer
    return tuple(kept)


def with_core(e: InfeasibleError, sources: Mapping[str, str] | None = None) -> InfeasibleError:
    """The error, its message naming every requirement of the core, and where each comes from where
    ``sources`` (requirement -> ``FILE: FIELD ...``, :func:`requirement_sources`) knows it."""
    message = " ".join(str(e).split())
    core = e.core
    if e.limits and "user tile limits" not in core:  # a limit that needs more than a level holds (model/chain_limits)
        core += ("user tile limits",)
    missing = [name for name in core if name not in message]
    sources = sources or {}
    if any(name in sources for name in core):
        named = [f"{name} from {sources[name]}" if name in sources else name for name in core]
        message += f" (conflicting requirements: {'; '.join(named)})"
    elif missing or not core:
        message += f" (conflicting requirements: {', '.join(core) if core else 'none isolated'})"
    if isinstance(e, NoScheduleInFamily):
        return NoScheduleInFamily(message, core, e.restrictions, e.limits)
    return InfeasibleError(message, core, e.limits)


def limit_text(limit: TileLimit) -> str:
    """A tile limit as its field in a constraints file says it: ``tiles.innermost.m = 8``, ``... <= 16``."""
    field = f"tiles.{limit.level}.{limit.dim}"
    if limit.lo == limit.hi:
        return f"{field} = {limit.lo}"
    if limit.hi >= spec_limits.MAX_EXTENT:
        return f"{field} >= {limit.lo}"
    if limit.lo <= 1:
        return f"{field} <= {limit.hi}"
    return f"{limit.lo} <= {field} <= {limit.hi}"


def requirement_sources(e: InfeasibleError, workload: Workload, arch: Architecture, constraints: Constraints,
                        constraints_file: str | None, arch_file: str | None, tree: bool = False) -> dict[str, str]:
    """Where each requirement of ``e.core`` comes from: ``{"capacity of L0": "arch.yaml: levels[2].capacity =
    64", "user tile limits": "c.yaml: tiles.innermost.m = 8", ...}`` for those given in a file (``None``: not a
    file). A tree's memory is named by its name (``arch.yaml: !Memory 'L0' size = 64``)."""
    out: dict[str, str] = {}
    names = arch.level_names
    if arch_file:
        for i, lv in enumerate(arch.levels):
            field = f"!Memory {lv.name!r} size" if tree else f"levels[{i}].capacity"
            out[f"capacity of {lv.name}"] = f"{arch_file}: {field} = {lv.capacity}"
    if constraints_file:
        taking_part = e.limits or constraints.tiles
        if taking_part:
            out["user tile limits"] = f"{constraints_file}: " + ", ".join(limit_text(lim) for lim in taking_part
                                                                          if isinstance(lim, TileLimit))
        for level, dims in constraints.orders:
            if level in ("innermost", "outermost") or level in names:
                name = names[resolve_level(level, arch, constraints_file, f"orders.{level}")]
                out[f"loop order {list(dims)} at {name}"] = f"{constraints_file}: orders.{level}"
        for n, (tensor, level) in enumerate(constraints.stationary):
            if level in ("innermost", "outermost") or level in names:
                name = names[resolve_level(level, arch, constraints_file, f"stationary[{n}].level")]
                t = resolve_tensor(tensor, workload, constraints_file, f"stationary[{n}].tensor")
                out[f"{t} stationary at {name}"] = f"{constraints_file}: stationary[{n}]"
    return out
