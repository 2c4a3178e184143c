"""Solve a chain of einsums: fused at each level below the top, and unfused, side by side.

Unfused: each einsum alone, intermediates materialized at the top (or, as
other candidates, homed whole at a level below it when they fit), the runs
one after the other (figures add up, times too). Fused at level ``f``: one
CP-SAT model of the whole group (model/fusion.py). The best is the shortest
time, then the fewest words (docs/fusion.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from ortools.sat.python import cp_model

import mapsearch.budget as budget
from mapsearch.errors import InfeasibleError, Interrupted, MapsearchError, SolverTimeout
from mapsearch.model.family import combined_status, family_restrictions, held_whole_restrictions, proven_status
from mapsearch.model.fusion import FusedEncoding, build_fused, decode_fused, stage_problems
from mapsearch.model.problem import Problem, UnsupportedProblem
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.model.options import SolveOptions
from mapsearch.solve.phases import Phase, run_phases
from mapsearch.solve.run import SolveResult, solve
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.teaal import TeaalSpec

if TYPE_CHECKING:  # the replay checks import this module for ChainResult
    from mapsearch.solve.chain_replay import ChainReplay
from mapsearch.spec.workload import WorkloadGraph


@dataclass(frozen=True)
class FusedOutcome:
    level: str
    schedule: FusedSchedule | None
    # OPTIMAL, OPTIMAL_IN_FAMILY, FEASIBLE, INFEASIBLE, NO_SCHEDULE_IN_FAMILY (nothing in a restricted family
    # whose restrictions can matter for feasibility: family_restrictions names them), TIMEOUT, UNSUPPORTED, INTERRUPTED
    status: str
    phases: tuple[Phase, ...] = ()
    seconds: float = 0.0
    reason: str = ""
    family_restrictions: tuple[str, ...] = ()  # what the fused search left out (model/family.py)


@dataclass(frozen=True)
class UnfusedOutcome:
    stages: tuple[SolveResult, ...]

    @property
    def status(self) -> str:
        return combined_status(r.status for r in self.stages)

    @property
    def time(self) -> Fraction:
        return sum((r.schedule.predicted.time for r in self.stages), Fraction(0))

    @property
    def words(self) -> int:
        return sum(r.schedule.predicted.words_total for r in self.stages)


@dataclass(frozen=True)
class GroupPlan:
    """A chain cut into contiguous groups run one after another: each group fused at its best level
    (or a single einsum solved alone); the intermediates between groups materialized at ``level``."""

    groups: tuple[tuple[int, ...], ...]  # einsum indices per group, in order
    level: str  # where the intermediates between groups live
    parts: tuple[object, ...]  # per group: FusedOutcome (several einsums) or SolveResult (one)

    @property
    def name(self) -> str:
        cut = " | ".join("+".join(str(i) for i in g) for g in self.groups)
        return f"groups {cut}, between at {self.level}"

    @property
    def time(self) -> Fraction:
        return sum((_schedule(p).predicted.time for p in self.parts), Fraction(0))

    @property
    def words(self) -> int:
        return sum(_schedule(p).predicted.words_total for p in self.parts)

    @property
    def status(self) -> str:
        return combined_status(p.status for p in self.parts)


def _schedule(part):
    return part.schedule


@dataclass(frozen=True)
class ChainResult:
    graph: WorkloadGraph
    architecture: Architecture
    fused: tuple[FusedOutcome, ...]
    unfused: UnfusedOutcome | None  # intermediates materialized at the top
    unfused_reason: str
    solve_seconds: float
    # Unfused with the intermediates materialized (homed whole) at a level below the top:
    # (level name, outcome or None, why not)
    materialized: tuple[tuple[str, UnfusedOutcome | None, str], ...] = ()
    plans: tuple[GroupPlan, ...] = ()  # chains of 3+ einsums: partly fused
    teaal: TeaalSpec | None = None  # the TeAAL specification whose mapping constrained the einsums
    replay: ChainReplay | None = None  # the replay checks (mapsearch.solve.entry.solve_chain fills them in)

    def candidates(self) -> list[tuple[str, Fraction, int]]:
        out = [(f"fused at {o.level}", o.schedule.predicted.time, o.schedule.predicted.words_total)
               for o in self.fused if o.schedule is not None]
        if self.unfused is not None:
            out.append(("unfused", self.unfused.time, self.unfused.words))
        out += [(f"materialized at {level}", o.time, o.words) for level, o, _ in self.materialized if o is not None]
        out += [(plan.name, plan.time, plan.words) for plan in self.plans]
        return out

    @property
    def best(self) -> str:
        cands = self.candidates()
        if not cands:
            raise MapsearchError("no schedule for this chain: " + "; ".join(
                [f"fused at {o.level}: {o.reason}" for o in self.fused] + [f"unfused: {self.unfused_reason}"]))
        return min(cands, key=lambda c: (c[1], c[2]))[0]

    def best_fused(self) -> FusedOutcome | None:
        done = [o for o in self.fused if o.schedule is not None]
        return min(done, key=lambda o: (o.schedule.predicted.time, o.schedule.predicted.words_total)) if done else None


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
    with budget.within(budget.Budget(options.time_limit, parent=budget.current())) as whole:
        turn = _turns(whole, len(problems))
        return UnfusedOutcome(tuple(turn(lambda p=p: solve(p, options=options)) for p in problems))


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
    chain ends within the limit and every option gets its turn.
    """
    start = time.perf_counter()
    homes = dict(homes or {})
    levels = range(1, arch.depth)
    with budget.within(budget.Budget(options.time_limit, parent=budget.current())) as whole:
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
        plans = turn(lambda: tuple(group_plans(graph, arch, homes, options))) if len(graph.einsums) > 2 else ()
    return ChainResult(graph, arch, fused, unfused, reason, time.perf_counter() - start, tuple(materialized), plans)


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


def group_plans(graph: WorkloadGraph, arch: Architecture, homes: dict[str, str], options: SolveOptions):
    """Partly fused chains: each cut into contiguous groups, for each level of the intermediates between them.

    Per intermediate this decides fused (inside a group) or materialized at a
    level (between groups). Plans that do not fit are left out.
    """
    inter = set(graph.intermediates)
    for groups in contiguous_groups(len(graph.einsums)):
        for h in range(arch.depth - 1):
            level = arch.levels[h].name
            between = {t for t in inter if not any(_inside(graph, g, t) for g in groups)}
            plan_homes = dict(homes) | {t: level for t in between}
            parts = []
            for g in groups:
                part = _solve_group(graph, g, arch, plan_homes, options)
                if part is None:
                    break
                parts.append(part)
            else:
                yield GroupPlan(groups, level, tuple(parts))


def _inside(graph: WorkloadGraph, group: tuple[int, ...], tensor: str) -> bool:
    """``tensor`` is produced and consumed within ``group``."""
    made = any(graph.einsums[i].output.name == tensor for i in group)
    used = any(t.name == tensor for i in group for t in graph.einsums[i].inputs)
    return made and used


def _solve_group(graph, group, arch, homes, options):
    if len(group) == 1:
        w = graph.stage(group[0])
        try:
            return solve(Problem(w, arch, tuple((t, h) for t, h in homes.items() if t in w.tensor_names)),
                         options=options)
        except MapsearchError:
            return None
    sub = subgraph(graph, group)
    names = {t.name for e in sub.einsums for t in e.tensors}
    outcomes = [solve_fused(sub, arch, {t: h for t, h in homes.items() if t in names}, f, options)
                for f in range(1, arch.depth)]
    done = [o for o in outcomes if o.schedule is not None]
    return min(done, key=lambda o: (o.schedule.predicted.time, o.schedule.predicted.words_total)) if done else None


def solve_teaal(graph: WorkloadGraph, arch: Architecture, spec: TeaalSpec, options: SolveOptions) -> ChainResult:
    """Each einsum alone (unfused) with its TeAAL mapping constraints."""
    start = time.perf_counter()
    constraints = spec.constraints(arch)
    stages = []
    for i, c in enumerate(constraints):
        stages.append(solve(Problem(graph.stage(i), arch, ()), c, options))
    return ChainResult(graph, arch, (), UnfusedOutcome(tuple(stages)), "", time.perf_counter() - start)
