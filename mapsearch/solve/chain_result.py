"""What a chain solve gives: the outcome of each fusion option and the chain's result, which names the best.

:func:`mapsearch.solve.chain.solve_chain` fills these in: a
:class:`FusedOutcome` per fusion level, an :class:`UnfusedOutcome` for the
einsums solved one after the other, a :class:`GroupPlan` per partly fused
plan, and the :class:`ChainResult` that holds them all (and, once
:mod:`mapsearch.solve.entry` has replayed them, the replay checks). The best
is the shortest time, then the fewest words (docs/fusion.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from mapsearch.errors import MapsearchError
from mapsearch.model.family import combined_status
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.solve.phases import Phase
from mapsearch.solve.run import SolveResult
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.teaal import TeaalSpec
from mapsearch.spec.workload import WorkloadGraph

if TYPE_CHECKING:  # the replay checks import this module for ChainResult
    from mapsearch.solve.chain_replay import ChainReplay


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
    plans_left_out: str = ""  # the plans the time limit (or Ctrl-C) left unsolved, and why; "" when none
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
