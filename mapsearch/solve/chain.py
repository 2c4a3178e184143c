"""Solve a chain of einsums: fused at each level below the top, and unfused, side by side.

Unfused: each einsum alone, intermediates materialized at the top (or, as
other candidates, homed whole at a level below it when they fit), the runs
one after the other (figures add up, times too). Fused at level ``f``: one
CP-SAT model of the whole group (model/fusion.py). The best is the shortest
time, then the fewest words (docs/fusion.md).
"""

from __future__ import annotations

import logging
import time

from ortools.sat.python import cp_model

import mapsearch.budget as budget
from mapsearch.errors import InfeasibleError, Interrupted, MapsearchError, SolverTimeout
from mapsearch.model.family import family_restrictions, held_whole_restrictions, proven_status
from mapsearch.model.fusion import FusedEncoding, build_fused, decode_fused, stage_problems
from mapsearch.model.problem import Problem, UnsupportedProblem
from mapsearch.model.options import SolveOptions
from mapsearch.solve.chain_result import ChainResult, FusedOutcome, GroupPlan, UnfusedOutcome
from mapsearch.solve.phases import run_phases
from mapsearch.solve.run import solve
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.teaal import TeaalSpec
from mapsearch.spec.workload import WorkloadGraph

__all__ = ["ChainResult", "FusedOutcome", "GroupPlan", "UnfusedOutcome", "solve_unfused", "solve_fused", "solve_chain",
           "subgraph", "contiguous_groups", "group_plans", "solve_teaal"]

log = logging.getLogger(__name__)


def solve_unfused(graph: WorkloadGraph, arch: Architecture, homes: dict[str, str], options: SolveOptions,
                  level: int = 0) -> UnfusedOutcome:
    """Each einsum alone, one after the other; the intermediates homed whole at ``level`` (default the top).

    Each einsum gets an equal share of the time left for the einsums to come
    (a fast one leaves more to the next): given the whole limit, the first
    einsum of attention on ``tpu-v4i-like`` spent it on its words phase and
    the second ran out enumerating its tile chains, so the chain had no
    unfused schedule.
    """
    inter = set(graph.intermediates)
    problems = []
    for i in range(len(graph.einsums)):
        w = graph.stage(i)
        stage_homes = [(t, h) for t, h in homes.items() if t in w.tensor_names and t not in inter]
        if level > 0:
            stage_homes += [(t, arch.levels[level].name) for t in w.tensor_names if t in inter]
        problems.append(Problem(w, arch, tuple(stage_homes)))
    with budget.within(_hard(options)) as whole:
        turn = _turns(whole, len(problems))
        return UnfusedOutcome(tuple(turn(lambda p=p: solve(p, options=options)) for p in problems))


def _hard(options: SolveOptions) -> budget.Budget:
    """The budget of ``options.time_limit`` under the active one, hard: an einsum whose search ran out of time
    solves its greedy schedule a short step past its own share (solve/greedy_start.py), never past this limit.

    An 8-einsum chain on AccelForge's ``simple`` ran its 252 partly fused plans' solves on, each one's
    fallback half a second past a limit long spent: over a minute at ``--time-limit 5``.
    """
    return budget.Budget(options.time_limit, parent=budget.current(), hard=True)


def solve_fused(graph: WorkloadGraph, arch: Architecture, homes: dict[str, str], level: int,
                options: SolveOptions) -> FusedOutcome:
    start = time.perf_counter()
    name = arch.levels[level].name
    try:
        fe = build_fused(graph, arch, homes, level)
    except UnsupportedProblem as e:
        return FusedOutcome(name, None, "UNSUPPORTED", reason=str(e), seconds=time.perf_counter() - start)
    except SolverTimeout as e:  # the time ran out while the model was built
        return FusedOutcome(name, None, "TIMEOUT", reason=str(e), seconds=time.perf_counter() - start)
    except Interrupted as e:
        return FusedOutcome(name, None, "INTERRUPTED", reason=str(e), seconds=time.perf_counter() - start)
    except InfeasibleError as e:
        own = sorted({d for d, _ in graph.extents} - set(graph.shared_dims))
        why = f"fused at {name}, the dims no outer loop may tile ({', '.join(own)}) are whole at {name} and above: {e}"
        return _nothing_fits(graph, arch, homes, level, start, why)
    for guard in fe.guards.values():
        fe.model.add(guard == 1)
    objectives = [("time", fe.time.expr, fe.scale), ("words", fe.words_total.expr, 1)]
    try:
        phases, schedule = run_phases(fe.model, objectives, options, start,
                                      decode=lambda solver: decode_fused(fe, solver), hint_vars=_decisions(fe),
                                      floor=lambda n: None)
    except InfeasibleError as e:
        return _nothing_fits(graph, arch, homes, level, start, f"{e} (capacity of the fused buffers)")
    except SolverTimeout as e:
        return FusedOutcome(name, None, "TIMEOUT", reason=str(e), seconds=time.perf_counter() - start)
    except Interrupted as e:
        return FusedOutcome(name, None, "INTERRUPTED", reason=str(e), seconds=time.perf_counter() - start)
    restrictions = tuple(dict.fromkeys(r for enc in fe.stages for r in family_restrictions(enc)))
    status = proven_status(all(p.status == "OPTIMAL" for p in phases), restrictions)
    return FusedOutcome(name, schedule, status, tuple(phases), time.perf_counter() - start,
                        family_restrictions=restrictions)


def _nothing_fits(graph: WorkloadGraph, arch: Architecture, homes: dict[str, str], level: int, start: float,
                  why: str) -> FusedOutcome:
    """INFEASIBLE when the searched family holds every fused schedule's occupancy, else NO_SCHEDULE_IN_FAMILY.

    Of the fused family's restrictions only windows held whole (axes over
    three or more dimensions) can hide a schedule that fits: default buffer
    positions cannot, since bypassing a level holds less than any position
    there and L0's default position is already the innermost (docs/fusion.md,
    "Replay decisions").
    """
    name = arch.levels[level].name
    restrictions = held_whole_restrictions(stage_problems(graph, arch, homes, level))
    if not restrictions:
        return FusedOutcome(name, None, "INFEASIBLE", reason=why, seconds=time.perf_counter() - start)
    return FusedOutcome(name, None, "NO_SCHEDULE_IN_FAMILY", seconds=time.perf_counter() - start,
                        reason=f"no schedule in the searched family: {why}; the family was restricted "
                               f"({'; '.join(restrictions)}), so a legal schedule outside it may exist",
                        family_restrictions=restrictions)


def _decisions(fe: FusedEncoding) -> list:
    out = []
    for enc in fe.stages:
        out += [v for v in enc.choice.values() if not isinstance(v, int)]
        out += [v for v in enc.kept.values() if not isinstance(v, bool)]
        out += [v for v in enc.before.values() if isinstance(v, cp_model.IntVar)]
    return out


def solve_chain(graph: WorkloadGraph, arch: Architecture, homes: dict[str, str] | None = None,
                options: SolveOptions = SolveOptions()) -> ChainResult:
    """Every fusion level below the top, and the unfused baseline, within one ``options.time_limit``.

    The options share the time limit: each gets an equal share of the time
    left when it starts (a fast one leaves more to the next), so the whole
    chain ends within the limit and every option gets its turn. The limit is
    hard (:func:`_hard`): no fallback runs past it, and the partly fused
    plans it leaves unsolved are named in ``plans_left_out``.
    """
    start = time.perf_counter()
    homes = dict(homes or {})
    levels = range(1, arch.depth)
    with budget.within(_hard(options)) as whole:
        turn = _turns(whole, 2 * len(levels) + 1 + (len(graph.einsums) > 2))
        fused = tuple(turn(lambda: solve_fused(graph, arch, homes, f, options)) for f in levels)
        try:
            unfused, reason = turn(lambda: solve_unfused(graph, arch, homes, options)), ""
        except MapsearchError as e:
            unfused, reason = None, str(e)
        materialized = []
        for h in levels:
            try:
                materialized.append((arch.levels[h].name, turn(lambda: solve_unfused(graph, arch, homes, options, h)), ""))
            except MapsearchError as e:
                materialized.append((arch.levels[h].name, None, " ".join(str(e).split())))
        plans, left_out = ((), "")
        if len(graph.einsums) > 2:
            plans, left_out = turn(lambda: group_plans(graph, arch, homes, options))
    return ChainResult(graph, arch, fused, unfused, reason, time.perf_counter() - start, tuple(materialized), plans,
                       plans_left_out=left_out)


def _turns(whole: budget.Budget, count: int):
    """``turn(work)`` runs ``work()`` within an equal share of the time ``whole`` has left for the turns to come."""
    left = [count]

    def turn(work):
        share = whole.left() / max(1, left[0])
        left[0] -= 1
        with budget.within(budget.Budget(share, parent=whole)):
            return work()

    return turn


def subgraph(graph: WorkloadGraph, indices: tuple[int, ...]) -> WorkloadGraph:
    einsums = tuple(graph.einsums[i] for i in indices)
    dims = {d for e in einsums for d in e.dims}
    return WorkloadGraph(f"{graph.name}[{'+'.join(map(str, indices))}]", einsums,
                         tuple((d, e) for d, e in graph.extents if d in dims))


def contiguous_groups(n: int):
    """Every way to cut ``0..n-1`` into contiguous groups, except the whole chain in one group
    and every einsum alone (those are the fused and unfused options)."""
    for mask in range(1, 2 ** (n - 1) - 1):
        groups, current = [], [0]
        for i in range(1, n):
            if mask >> (i - 1) & 1:
                groups.append(tuple(current))
                current = [i]
            else:
                current.append(i)
        groups.append(tuple(current))
        yield tuple(groups)


def group_plans(graph: WorkloadGraph, arch: Architecture, homes: dict[str, str],
                options: SolveOptions) -> tuple[tuple[GroupPlan, ...], str]:
    """Partly fused chains: each cut into contiguous groups, for each level of the intermediates between them.

    Per intermediate this decides fused (inside a group) or materialized at a
    level (between groups). Plans that do not fit are left out. Returns the
    plans found and what the time limit (or Ctrl-C) left unsolved ("" when
    nothing).

    ``n`` einsums have ``2^(n-1) - 2`` cuts, each at every level but the
    innermost (2 M plans for ResNet-18's 21 einsums on three levels), so the
    plans are made one at a time and the time left is checked before each.
    Their distinct groups (a contiguous run of einsums with its tensors'
    homes) are few, at most ``n(n+1)/2 - 1`` per level in a linear chain:
    each is solved once, in an equal share of the time left for those not
    yet solved. A plan stops at its first group without a schedule, as it
    always has.
    """
    n, levels = len(graph.einsums), arch.depth - 1
    total = (2 ** (n - 1) - 2) * levels
    groups_left = (n * (n + 1) // 2 - 1) * levels  # a linear chain's distinct groups, at most: the shares' divisor
    solved: dict = {}  # key -> (part or None, whether its solve ran out of time)
    plans = []
    tried = timed_out = 0
    with budget.within(_hard(options)) as own:

        def parts_of(keys) -> tuple[list, bool] | None:
            """The plan's parts up to its first group without a schedule (and whether that one ran out of time);
            None where the time is spent, or Ctrl-C came, before a group it needs was solved."""
            parts = []
            for key in keys:
                if key not in solved:
                    if own.stopped or own.left() <= 0:
                        return None
                    share = own.left() / max(1, groups_left - len(solved))
                    with budget.within(budget.Budget(share, parent=own)):
                        solved[key] = _solve_group(graph, key, arch, options)
                part, out_of_time = solved[key]
                if part is None:
                    return parts, out_of_time
                parts.append(part)
            return parts, False

        for groups, level, keys in _plan_keys(graph, arch, homes):
            found = None if own.stopped or own.left() <= 0 else parts_of(keys)
            if found is None:
                break
            tried += 1
            parts, out_of_time = found
            if len(parts) == len(groups):
                plans.append(GroupPlan(groups, level, tuple(parts)))
            timed_out += out_of_time
        stopped = own.stopped
    left = []
    if tried < total:
        why = "interrupted by Ctrl-C" if stopped else _ran_out(options)
        left.append(f"{total - tried:,} of {total:,} partly fused plans not tried ({why} after {len(solved)} distinct "
                    f"groups were solved)")
    if timed_out:
        left.append(f"{timed_out:,} plans without a schedule for a group whose solve ran out of time")
    if left:
        log.info("partly fused plans: %s", "; ".join(left))
    return tuple(plans), "; ".join(left)


def _plan_keys(graph: WorkloadGraph, arch: Architecture, homes: dict[str, str]):
    """Every plan, one at a time: its groups, the level of the intermediates between them, and per group its key
    (:func:`_group_key`)."""
    inter = set(graph.intermediates)
    for groups in contiguous_groups(len(graph.einsums)):
        for h in range(arch.depth - 1):
            level = arch.levels[h].name
            between = {t for t in inter if not any(_inside(graph, g, t) for g in groups)}
            plan_homes = dict(homes) | {t: level for t in between}
            yield groups, level, tuple(_group_key(graph, g, plan_homes) for g in groups)


def _ran_out(options: SolveOptions) -> str:
    return "the time limit ran out" if options.time_limit is None else \
        f"the time limit of {options.time_limit:g} s ran out"


def _group_key(graph: WorkloadGraph, group: tuple[int, ...], homes: dict[str, str]):
    """What a group's solve depends on: the group, and the homes of its einsums' tensors."""
    names = {t.name for i in group for t in graph.einsums[i].tensors}
    return group, tuple(sorted((t, h) for t, h in homes.items() if t in names))


def _inside(graph: WorkloadGraph, group: tuple[int, ...], tensor: str) -> bool:
    """``tensor`` is produced and consumed within ``group``."""
    made = any(graph.einsums[i].output.name == tensor for i in group)
    used = any(t.name == tensor for i in group for t in graph.einsums[i].inputs)
    return made and used


def _solve_group(graph: WorkloadGraph, key, arch: Architecture, options: SolveOptions) -> tuple[object, bool]:
    """One einsum alone (a SolveResult) or a group fused at its best level (a FusedOutcome), or None where none
    has a schedule; and whether a solve ran out of time (or was stopped) without one. The fusion levels share
    the active budget as the chain's options do."""
    group, homes = key[0], dict(key[1])
    if len(group) == 1:
        w = graph.stage(group[0])
        try:
            return solve(Problem(w, arch, tuple(homes.items())), options=options), False
        except (SolverTimeout, Interrupted):
            return None, True
        except MapsearchError:
            return None, False
    sub = subgraph(graph, group)
    levels = range(1, arch.depth)
    turn = _turns(budget.current(), len(levels))
    outcomes = [turn(lambda f=f: solve_fused(sub, arch, homes, f, options)) for f in levels]
    done = [o for o in outcomes if o.schedule is not None]
    if not done:
        return None, any(o.status in ("TIMEOUT", "INTERRUPTED") for o in outcomes)
    return min(done, key=lambda o: (o.schedule.predicted.time, o.schedule.predicted.words_total)), False


def solve_teaal(graph: WorkloadGraph, arch: Architecture, spec: TeaalSpec, options: SolveOptions) -> ChainResult:
    """Each einsum alone (unfused) with its TeAAL mapping constraints, within one ``options.time_limit`` shared
    as :func:`solve_unfused` shares it (each einsum had the whole limit)."""
    start = time.perf_counter()
    constraints = spec.constraints(arch)
    with budget.within(_hard(options)) as whole:
        turn = _turns(whole, len(constraints))
        stages = tuple(turn(lambda i=i, c=c: solve(Problem(graph.stage(i), arch, ()), c, options))
                       for i, c in enumerate(constraints))
    return ChainResult(graph, arch, (), UnfusedOutcome(stages), "", time.perf_counter() - start)
