"""A chain solve keeps to its time limit: fallbacks included, partly fused plans cut off and named, Ctrl-C obeyed.

AlexNet's 8 einsums on AccelForge's ``simple`` at ``--time-limit 5`` ran
past a minute: its 252 partly fused plans solved every group again for each
plan, each solve past the limit fell back to its greedy schedule half a
second past a deadline long spent, and nothing stopped the plans. Here the
clock is a fake one (``budget.time``) and the solves are counted, so no
figure depends on the machine's speed.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import mapsearch.budget as budget
from mapsearch.budget import Budget, checkpoint, within
from mapsearch.errors import SolverTimeout
from mapsearch.model.options import SolveOptions
from mapsearch.presets import load_preset
from mapsearch.spec.constraints import Constraints
from mapsearch.solve import chain
from mapsearch.spec.workload import WorkloadGraph

TEXTS = ["B[m,n] += A[m,k] * W1[k,n]", "C[m,p] += B[m,n] * W2[n,p]", "D[m,q] += C[m,p] * W3[p,q]",
         "E[m,r] += D[m,q] * W4[q,r]", "F[m,s] += E[m,r] * W5[r,s]"]


class Clock:
    """``budget.time`` with a ``monotonic`` the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(budget, "time", c)
    return c


def five_einsums() -> WorkloadGraph:
    return WorkloadGraph.from_texts("chain5", TEXTS, {d: 4 for d in "mnkpqrs"})


def fake_part(calls: list, clock: Clock, seconds: float, stop_at: int | None = None):
    """A solve that takes ``seconds`` of the fake clock and returns a schedule of time 1, 1 word (Ctrl-C at call
    ``stop_at``)."""
    def solve(*args, **kwargs):
        calls.append(args)
        if stop_at is not None and len(calls) == stop_at:
            budget.current().stop()
        clock.now += seconds
        return SimpleNamespace(schedule=SimpleNamespace(predicted=SimpleNamespace(time=1, words_total=1)),
                               status="OPTIMAL")
    return solve


def test_a_hard_limit_binds_the_extensions_under_it(clock) -> None:
    whole = Budget(5, hard=True)
    turn = Budget(1, parent=whole)
    clock.now += 4.9  # the turn's second is long spent, 0.1 s of the chain's 5 s left
    fallback = Budget(0.5, parent=turn, extends=True)  # solve/greedy_start.py's step past a search's limit
    inner = Budget(None, parent=fallback)
    assert inner.left() == pytest.approx(0.1)
    with within(inner):
        checkpoint("the greedy fallback")
    clock.now += 0.2
    with within(inner), pytest.raises(SolverTimeout, match=r"the time limit of 5 s ran out while the greedy fallback"):
        checkpoint("the greedy fallback")
    # Without a hard limit above it, an extension keeps its own deadline (tests/solve/test_budget.py).
    soft = Budget(5)
    clock.now += 5
    assert Budget(None, parent=Budget(0.5, parent=Budget(1, parent=soft), extends=True)).left() == pytest.approx(0.5)


def test_every_distinct_group_is_solved_once(monkeypatch, clock) -> None:
    """5 einsums on 3 levels: 14 cuts x 2 levels = 28 plans of 84 groups in all, 28 of them distinct (each group
    of contiguous einsums, its outer intermediates at one of 2 levels)."""
    singles, fused = [], []
    monkeypatch.setattr(chain, "solve", fake_part(singles, clock, 0.0))
    monkeypatch.setattr(chain, "solve_fused", fake_part(fused, clock, 0.0))
    plans, left_out = chain.group_plans(five_einsums(), load_preset("edge-3level"), {}, SolveOptions(time_limit=60))
    assert len(plans) == 28 and sum(len(p.groups) for p in plans) == 84 and left_out == ""
    assert len(singles) == 5 * 2  # einsum i alone, its intermediates at DRAM or at the middle level
    assert len(fused) == (28 - 10) * 2  # 9 multi-einsum groups x 2 levels, each fused at both levels below the top


def test_the_plans_stop_once_the_time_is_spent(monkeypatch, clock) -> None:
    """Each group takes 1 s of a 10 s limit: 10 groups are solved, not one more, and the rest is named."""
    calls: list = []
    monkeypatch.setattr(chain, "solve", fake_part(calls, clock, 1.0))
    monkeypatch.setattr(chain, "solve_fused", fake_part(calls, clock, 0.5))  # two levels per fused group: 1 s
    plans, left_out = chain.group_plans(five_einsums(), load_preset("edge-3level"), {}, SolveOptions(time_limit=10))
    groups = sum(1 for c in calls if len(c) == 1) + sum(1 for c in calls if len(c) == 5) // 2
    assert groups == 10 and clock.now == 1010.0
    assert 0 < len(plans) < 28
    assert left_out == (f"{28 - len(plans)} of 28 partly fused plans not tried (the time limit of 10 s ran out "
                        f"after 10 distinct groups were solved)")


def test_ctrl_c_stops_the_plans(monkeypatch, clock) -> None:
    calls: list = []
    monkeypatch.setattr(chain, "solve", fake_part(calls, clock, 0.0, stop_at=3))
    monkeypatch.setattr(chain, "solve_fused", fake_part(calls, clock, 0.0, stop_at=3))
    with within(Budget(None)):
        plans, left_out = chain.group_plans(five_einsums(), load_preset("edge-3level"), {},
                                            SolveOptions(time_limit=60))
    assert len(calls) == 3
    assert "partly fused plans not tried (interrupted by Ctrl-C after" in left_out


def test_a_fallback_in_a_chain_never_passes_the_chains_limit(monkeypatch, clock) -> None:
    """Every solve of the chain, and the greedy fallback's extension in it, ends by the chain's own deadline."""
    seen: list[float] = []

    def solve(problem, constraints=None, options=None):
        extension = Budget(2.0, parent=budget.current(), extends=True)  # as greedy_fallback opens it
        seen.append(extension.left())
        clock.now += 1.0
        raise SolverTimeout("the fake search ran out")

    monkeypatch.setattr(chain, "solve", solve)
    monkeypatch.setattr(chain, "solve_fused", lambda graph, arch, homes, f, options: chain.FusedOutcome(
        arch.levels[f].name, None, "TIMEOUT", reason="fake"))
    result = chain.solve_chain(five_einsums(), load_preset("edge-3level"), {}, SolveOptions(time_limit=3))
    assert clock.now == 1003.0 and len(seen) == 3  # the first einsum of the unfused option, of each materialized
    assert seen == [2.0, 2.0, 1.0]  # its 2 s step, until only 1 s of the chain's 3 s is left
    assert result.plans == () and result.plans_left_out.startswith("28 of 28 partly fused plans not tried")


def test_a_teaal_chains_einsums_share_its_limit(monkeypatch, clock) -> None:
    """Each einsum of a TeAAL file had the whole limit: 3 einsums at 30 s ran up to 90 s."""
    shares: list[float] = []

    def solve(problem, constraints, options):
        shares.append(budget.current().left())
        clock.now += 4.0  # the first two take 4 s of their 10 s, the third gets the 22 s left
        return SimpleNamespace(schedule=None, status="OPTIMAL")

    monkeypatch.setattr(chain, "solve", solve)
    spec = SimpleNamespace(constraints=lambda arch: [Constraints()] * 3)
    chain.solve_teaal(five_einsums(), load_preset("edge-3level"), spec, SolveOptions(time_limit=30))
    assert shares == [10.0, 13.0, 22.0]
