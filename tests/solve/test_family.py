"""What the result says about the family it searched (model/family.py).

OPTIMAL means optimal over every schedule of the contract; a search over
less says OPTIMAL_IN_FAMILY and names each restriction that applied to this
problem, and an empty restricted family is never called infeasible.
"""

from __future__ import annotations

import pytest

from mapsearch.errors import InfeasibleError, NoScheduleInFamily
from mapsearch.model.problem import Problem
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.replay import replay
from mapsearch.solve.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.spec.architecture import Architecture, Compute, Level, Link
from mapsearch.spec.workload import Workload


def two_level(l0: int | None) -> Architecture:
    return Architecture("two", (Level("L1", None, None), Level("L0", l0, Link())), Compute(), False)


def conv1d(p: int, r: int) -> Workload:
    return Workload.from_text("conv1d", "Z[p] += I[p+r] * W[r]", {"p": p, "r": r})


def test_plain_matmul_is_optimal_over_the_whole_family() -> None:
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})
    result = solve(Problem(w, two_level(12)))
    assert result.status == "OPTIMAL" and result.family_restrictions == ()


def test_held_filter_window_is_named_and_status_says_in_family() -> None:
    # Issue 15: p=6, r=4, L0 9 words. The searched family holds r whole; a schedule tiling
    # p and r by 2 replays at 30 clocks, below what the restricted family reaches.
    result = solve(Problem(conv1d(6, 4), two_level(9)))
    assert result.status == "OPTIMAL_IN_FAMILY"
    assert any(r.startswith("filter windows held whole: r") for r in result.family_restrictions)
    split = Schedule(conv1d(6, 4), two_level(9), (
        LevelMapping("L1", (("p", 6), ("r", 4))),
        LevelMapping("L0", (("p", 2), ("r", 2)), ("p", "r"), frozenset({"Z", "I", "W"}))), ())
    figures = replay(split, mode="count").figures
    # Hand count: 3 p-tiles x 2 r-tiles; I's window (2-1)+(2-1)+1 = 3 words: [0,2] [2,4] | [2,4] [4,6] |
    # [4,6] [6,8]: two steps keep the window they had, so 4 loads = 12 words; W 2 words on each of
    # the 6 steps = 12; Z 2 words stored per p-tile = 6. 30 words, 30 clocks on a shared line.
    assert figures.words_total == 30 and figures.time == 30
    assert (result.schedule.predicted.time, result.schedule.predicted.words_total) == (34, 34)


def test_empty_restricted_family_is_not_called_infeasible() -> None:
    # Issue 15: p=4, r=3, L0 6 words: holding the 3-wide window whole does not fit with Z and W,
    # yet tiles p=2, r=1 do (hand count: I 2 + W 1 + Z 2 = 5 words).
    with pytest.raises(NoScheduleInFamily) as info:
        solve(Problem(conv1d(4, 3), two_level(6)))
    message = str(info.value)
    assert message.startswith("no schedule in the searched family")
    assert "filter windows held whole: r" in message and "a legal schedule outside it may exist" in message
    legal = Schedule(conv1d(4, 3), two_level(6), (
        LevelMapping("L1", (("p", 4), ("r", 3))),
        LevelMapping("L0", (("p", 2), ("r", 1)), ("p", "r"), frozenset({"Z", "I", "W"}))), ())
    assert dict(replay(legal, mode="count").figures.occupancy)["L0"] == 5


def test_truly_infeasible_stays_infeasible() -> None:
    # A scalar MAC needs one word of each of A, B and Z at L0: 2 words can never do.
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 2, "n": 2, "k": 2})
    with pytest.raises(InfeasibleError) as info:
        solve(Problem(w, two_level(2)))
    assert not isinstance(info.value, NoScheduleInFamily)
    assert "capacity of L0" in str(info.value) or "L0" in str(info.value)


def test_placement_turned_off_is_a_named_restriction() -> None:
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})
    result = solve(Problem(w, two_level(12)), options=SolveOptions(placement=False))
    assert result.status == "OPTIMAL_IN_FAMILY"
    assert result.family_restrictions == ("buffer placement: default positions only (turned off)",)
