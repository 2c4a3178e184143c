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

from ortools.sat.python import cp_model

from mapsearch.errors import InfeasibleError, MapsearchError, SolverTimeout
from mapsearch.model.fusion import FusedEncoding, build_fused, decode_fused
from mapsearch.model.problem import Problem, UnsupportedProblem
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.solve.options import SolveOptions
from mapsearch.solve.run import Phase, SolveResult, run_phases, solve
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import WorkloadGraph


@dataclass(frozen=True)
class FusedOutcome:
    level: str
    schedule: FusedSchedule | None
    status: str  # OPTIMAL, FEASIBLE, INFEASIBLE, TIMEOUT, UNSUPPORTED
    phases: tuple[Phase, ...] = ()
    seconds: float = 0.0
    reason: str = ""


@dataclass(frozen=True)
class UnfusedOutcome:
    stages: tuple[SolveResult, ...]

    @property
    def status(self) -> str:
        return "OPTIMAL" if all(r.status == "OPTIMAL" for r in self.stages) else "FEASIBLE"

    @property
    def time(self) -> Fraction:
        return sum((r.schedule.predicted.time for r in self.stages), Fraction(0))

    @property
    def words(self) -> int:
        return sum(r.schedule.predicted.words_total for r in self.stages)


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

    def candidates(self) -> list[tuple[str, Fraction, int]]:
        out = [(f"fused at {o.level}", o.schedule.predicted.time, o.schedule.predicted.words_total)
               for o in self.fused if o.schedule is not None]
        if self.unfused is not None:
            out.append(("unfused", self.unfused.time, self.unfused.words))
        out += [(f"materialized at {level}", o.time, o.words) for level, o, _ in self.materialized if o is not None]
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
    """Each einsum alone, one after the other; the intermediates homed whole at ``level`` (default the top)."""
    inter = set(graph.intermediates)
    out = []
    for i in range(len(graph.einsums)):
        w = graph.stage(i)
        stage_homes = [(t, h) for t, h in homes.items() if t in w.tensor_names and t not in inter]
        if level > 0:
            stage_homes += [(t, arch.levels[level].name) for t in w.tensor_names if t in inter]
        out.append(solve(Problem(w, arch, tuple(stage_homes)), options=options))
    return UnfusedOutcome(tuple(out))


def solve_fused(graph: WorkloadGraph, arch: Architecture, homes: dict[str, str], level: int,
                options: SolveOptions) -> FusedOutcome:
    start = time.perf_counter()
    name = arch.levels[level].name
    try:
        fe = build_fused(graph, arch, homes, level)
    except UnsupportedProblem as e:
        return FusedOutcome(name, None, "UNSUPPORTED", reason=str(e), seconds=time.perf_counter() - start)
    except InfeasibleError as e:
        own = sorted({d for d, _ in graph.extents} - set(graph.shared_dims))
        return FusedOutcome(name, None, "INFEASIBLE", seconds=time.perf_counter() - start,
                            reason=f"fused at {name}, the dims no outer loop may tile ({', '.join(own)}) are whole "
                                   f"at {name} and above: {e}")
    for guard in fe.guards.values():
        fe.model.add(guard == 1)
    objectives = [("time", fe.time.expr, fe.scale), ("words", fe.words_total.expr, 1)]
    try:
        phases, schedule = run_phases(fe.model, objectives, options, start,
                                      decode=lambda solver: decode_fused(fe, solver), hint_vars=_decisions(fe),
                                      floor=lambda n: None)
    except InfeasibleError as e:
        return FusedOutcome(name, None, "INFEASIBLE", reason=f"{e} (capacity of the fused buffers)",
                            seconds=time.perf_counter() - start)
    except SolverTimeout as e:
        return FusedOutcome(name, None, "TIMEOUT", reason=str(e), seconds=time.perf_counter() - start)
    status = "OPTIMAL" if all(p.status == "OPTIMAL" for p in phases) else "FEASIBLE"
    return FusedOutcome(name, schedule, status, tuple(phases), time.perf_counter() - start)


def _decisions(fe: FusedEncoding) -> list:
    out = []
    for enc in fe.stages:
        out += [v for v in enc.choice.values() if not isinstance(v, int)]
        out += [v for v in enc.kept.values() if not isinstance(v, bool)]
        out += [v for v in enc.before.values() if isinstance(v, cp_model.IntVar)]
    return out


def solve_chain(graph: WorkloadGraph, arch: Architecture, homes: dict[str, str] | None = None,
                options: SolveOptions = SolveOptions()) -> ChainResult:
    """Every fusion level below the top, and the unfused baseline."""
    start = time.perf_counter()
    homes = dict(homes or {})
    fused = tuple(solve_fused(graph, arch, homes, f, options) for f in range(1, arch.depth))
    try:
        unfused, reason = solve_unfused(graph, arch, homes, options), ""
    except MapsearchError as e:
        unfused, reason = None, str(e)
    materialized = []
    for h in range(1, arch.depth):
        try:
            materialized.append((arch.levels[h].name, solve_unfused(graph, arch, homes, options, h), ""))
        except MapsearchError as e:
            materialized.append((arch.levels[h].name, None, " ".join(str(e).split())))
    return ChainResult(graph, arch, fused, unfused, reason, time.perf_counter() - start, tuple(materialized))
