"""What the result says about the family it searched (model/family.py).

OPTIMAL means optimal over every schedule of the contract; a search over
less says OPTIMAL_IN_FAMILY and names each restriction that applied to this
problem, and an empty restricted family is never called infeasible.
"""

from __future__ import annotations

import pytest

from mapsearch.errors import InfeasibleError, NoScheduleInFamily
from mapsearch.model import windows
from mapsearch.model.problem import Problem
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.replay import replay
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.spec.architecture import Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.workload import Workload


def two_level(l0: int | None) -> Architecture:
    return Architecture("two", (Level("L1", None, None), Level("L0", l0, Link())), Compute(), False)


def conv1d(p: int, r: int) -> Workload:
    return Workload.from_text("conv1d", "Z[p] += I[p+r] * W[r]", {"p": p, "r": r})


def test_plain_matmul_is_optimal_over_the_whole_family() -> None:
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})
    result = solve(Problem(w, two_level(12)))
    assert result.status == "OPTIMAL" and result.family_restrictions == ()


def test_held_filter_window_is_named_and_status_says_in_family(monkeypatch) -> None:
    # An axis over three dimensions (I[p+r+u]) whose joint coincidence table is over the limit (here 0
    # entries) is split only along its largest dimension: the result names it, with the table's size.
    # (With L0 = 16 the optimum meets the contract's floors and is OPTIMAL outright; 8 words do not.)
    monkeypatch.setattr(windows, "JOINT_TABLE_LIMIT", 0)
    w = Workload.from_text("c3", "O[p] += I[p+r+u] * W[r,u]", {"p": 6, "r": 2, "u": 2})
    result = solve(Problem(w, two_level(8)))
    assert result.status == "OPTIMAL_IN_FAMILY"
    assert result.family_restrictions == (
        "filter windows held whole: r, u (the joint table of (p, r, u) would have 24 entries, over the limit of 0; "
        "such an axis is split only along its largest dimension)",)


def test_two_dimension_windows_are_split() -> None:
    # Issue 15: p=6, r=4, L0 9 words. Held whole, r makes 34 clocks; a schedule tiling p and r by 2
    # replays at 30 clocks. Windows over two dimensions are now split: OPTIMAL, below both.
    result = solve(Problem(conv1d(6, 4), two_level(9)))
    assert result.status == "OPTIMAL" and result.family_restrictions == ()
    split = Schedule(conv1d(6, 4), two_level(9), (
        LevelMapping("L1", (("p", 6), ("r", 4))),
        LevelMapping("L0", (("p", 2), ("r", 2)), ("p", "r"), frozenset({"Z", "I", "W"}))), ())
    figures = replay(split, mode="count").figures
    # Hand count: 3 p-tiles x 2 r-tiles; I's window (2-1)+(2-1)+1 = 3 words: [0,2] [2,4] | [2,4] [4,6] |
    # [4,6] [6,8]: two steps keep the window they had, so 4 loads = 12 words; W 2 words on each of
    # the 6 steps = 12; Z 2 words stored per p-tile = 6. 30 words, 30 clocks on a shared line.
    assert figures.words_total == 30 and figures.time == 30
    assert (result.schedule.predicted.time, result.schedule.predicted.words_total) == (24, 22)


def test_empty_restricted_family_is_not_called_infeasible(monkeypatch) -> None:
    # I[p+r+u] with r = u = 3 held whole (the joint table over its limit): W alone is 9 words > L0's 6,
    # yet tiles of 1 fit in 3 words.
    monkeypatch.setattr(windows, "JOINT_TABLE_LIMIT", 0)
    w = Workload.from_text("c3", "O[p] += I[p+r+u] * W[r,u]", {"p": 4, "r": 3, "u": 3})
    with pytest.raises(NoScheduleInFamily) as info:
        solve(Problem(w, two_level(6)))
    message = str(info.value)
    assert message.startswith("no schedule in the searched family")
    assert "filter windows held whole: r, u" in message and "a legal schedule outside it may exist" in message
    legal = Schedule(w, two_level(6), (
        LevelMapping("L1", (("p", 4), ("r", 3), ("u", 3))),
        LevelMapping("L0", (("p", 1), ("r", 1), ("u", 1)), ("p", "r", "u"), frozenset({"O", "I", "W"}))), ())
    assert dict(replay(legal, mode="count").figures.occupancy)["L0"] == 3


def test_innermost_tile_limit_beyond_capacity_is_said_of_the_family_searched(monkeypatch) -> None:
    # A user's L0 tile of p >= 5 on a 6-word L0: p + r - 1 words of I, r of W, p of Z. Split windows:
    # infeasible outright (11 words at least). I[p+r+u] likewise (p + r + u - 2 of I, 1 of W at least, p
    # of O), split or held whole (r, u over the joint table's limit): no schedule of the contract fits, so
    # the held family's emptiness is infeasibility (with room for p = 3 it is said of the family:
    # test_an_empty_family_before_the_search_says_infeasible_only_under_the_contract).
    from mapsearch.spec.constraints import Constraints, TileLimit

    limit = Constraints(tiles=(TileLimit("L0", "p", 5, 6),))
    with pytest.raises(InfeasibleError) as info:
        solve(Problem(conv1d(6, 3), two_level(6)), limit)
    assert not isinstance(info.value, NoScheduleInFamily)
    assert str(info.value) == ("capacity of L0 conflict: the tile limits on p at L0 need at least 5, but at most 2 "
                               "fits its 6 words with every other tile at its smallest")
    w = Workload.from_text("c3", "O[p] += I[p+r+u] * W[r,u]", {"p": 6, "r": 2, "u": 2})
    for table_limit in (100_000, 0):
        monkeypatch.setattr(windows, "JOINT_TABLE_LIMIT", table_limit)
        with pytest.raises(InfeasibleError) as info:
            solve(Problem(w, two_level(6)), limit)
        assert not isinstance(info.value, NoScheduleInFamily)
        assert str(info.value) == ("capacity of L0 conflict: the tile limits on p at L0 need at least 5, but at most "
                                   "2 fits its 6 words with every other tile at its smallest")


def test_truly_infeasible_stays_infeasible() -> None:
    # A scalar MAC needs one word of each of A, B and Z at L0: 2 words can never do.
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 2, "n": 2, "k": 2})
    with pytest.raises(InfeasibleError) as info:
        solve(Problem(w, two_level(2)))
    assert not isinstance(info.value, NoScheduleInFamily)
    assert "capacity of L0" in str(info.value) or "L0" in str(info.value)


@pytest.mark.parametrize("capacity, double, need", [(2, False, "(A 1, B 1, Z 1 words) need 3"),
                                                     (5, True, "double-buffered, (A 2, B 2, Z 2 words) need 6")])
def test_truly_infeasible_with_a_mesh_is_infeasible_not_in_family(capacity, double, need) -> None:
    # Found by benchmarks/fuzz_vs_brute.py: a meshed level makes the family restricted (default positions),
    # so an empty search said "no schedule in the searched family ... a legal schedule outside it may exist",
    # yet one word of each operand (two, double-buffered, as a moving one-word buffer needs two) overflows L0
    # under every schedule of the contract. tests/brute_force_wide.py (without the mesh: no split can shrink
    # a one-word tile) and tests/brute_force_spatial.py both find nothing; with L0 = 6 both find schedules.
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 2, "n": 2, "k": 2})
    mesh = (MeshAxis("x", 2, ("all",)),)
    a = Architecture("two", (Level("L1", None, None), Level("L0", capacity, Link(), mesh=mesh)), Compute(), double)
    with pytest.raises(InfeasibleError) as info:
        solve(Problem(w, a))
    assert not isinstance(info.value, NoScheduleInFamily)
    assert str(info.value) == f"infeasible: capacity of L0 conflict: L0 holds {capacity} words but the smallest tiles" \
        + (", " if double else " ") + need
    roomy = Architecture("two", (Level("L1", None, None), Level("L0", 6, Link(), mesh=mesh)), Compute(), True)
    assert solve(Problem(w, roomy)).status == "OPTIMAL_IN_FAMILY"


def test_placement_turned_off_is_a_named_restriction() -> None:
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})
    result = solve(Problem(w, two_level(12)), options=SolveOptions(placement=False))
    assert result.status == "OPTIMAL_IN_FAMILY"
    assert result.family_restrictions == ("buffer placement: default positions only (turned off)",)


def test_a_restricted_optimum_that_meets_the_contract_floors_is_optimal() -> None:
    """m = 2048 over two levels below the top draws outer tiles from ceil(E/n) (reduced candidates), but
    everything fits: the time is the compute floor (8192 MACs) and the words the compulsory ones per link
    (2 x (4096 + 4 + 4096) = 16,392), floors that hold for every schedule, so nothing outside the family is
    better and the status is OPTIMAL with no restriction named."""
    from fractions import Fraction

    from mapsearch.model.bounds import contract_floors
    from mapsearch.schedule.figures import differences

    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 2048, "n": 2, "k": 2})
    fast = Link(Fraction(1, 8), Fraction(1, 8), "shared")
    a = Architecture("a", (Level("L2", None, None), Level("L1", 100_000, fast), Level("L0", 20_000, fast)),
                     Compute(), False)
    result = solve(Problem(w, a))
    assert result.space.reduced  # the family searched was the reduced one
    assert contract_floors(Problem(w, a), 8) == (8192 * 8, 16_392)
    assert [(p.name, p.value) for p in result.phases] == [("time", 8192), ("words", 16_392)]
    assert result.status == "OPTIMAL" and result.family_restrictions == ()
    assert differences(result.schedule.predicted, replay(result.schedule, mode="count").figures) == []


def test_a_restricted_optimum_at_the_floors_drops_its_restriction(monkeypatch) -> None:
    # The 3-dim axis held whole, with room: 24 MACs, compulsory words only (Z 6 + I 8 + W 4 = 18), floors met.
    monkeypatch.setattr(windows, "JOINT_TABLE_LIMIT", 0)
    w = Workload.from_text("c3", "O[p] += I[p+r+u] * W[r,u]", {"p": 6, "r": 2, "u": 2})
    result = solve(Problem(w, two_level(16)))
    assert [(p.name, p.value) for p in result.phases] == [("time", 24), ("words", 18)]
    assert result.status == "OPTIMAL" and result.family_restrictions == ()


@pytest.mark.parametrize("capacity, limit, error, message", [
    # r held whole at 2, a user limit r = 1 at L0: a legal schedule (r split) may exist outside the family...
    (8, ("r", 1, 1), NoScheduleInFamily, "no schedule in the searched family: the tile limit on r at L0 (1..1) "
                                         "excludes its extent 2, at which r is held whole; the family was restricted"),
    # ...but not where one word of each operand overflows L0 under every schedule of the contract,
    (2, ("r", 1, 1), InfeasibleError, "infeasible: capacity of L0 conflict: L0 holds 2 words but the smallest tiles "
                                      "(I 1, W 1, O 1 words) need 3"),
    # nor where the limit admits no tile at all,
    (8, ("r", 5, 6), InfeasibleError, "the tile limits on r leave no legal tile extent (need 1 <= T <= parent <= 2)"),
    # nor where p's least tile under the limit overflows L0 with r and u at 1 (I 2 + W 1 + O 2 > 4 words);
    (4, ("p", 2, 4), InfeasibleError, "capacity of L0 conflict: the tile limits on p at L0 need at least 2, but at "
                                      "most 1 fits its 4 words with every other tile at its smallest"),
    # with room for p = 3 once r and u are split (I 3 + W 1 + O 3 <= 8), the family's emptiness is said as such.
    (8, ("p", 3, 4), NoScheduleInFamily, "no schedule in the searched family: capacity of L0 conflict: the tile "
                                         "limits on p at L0 need at least 3, but at most 1 fits its 8 words"),
])
def test_an_empty_family_before_the_search_says_infeasible_only_under_the_contract(
        monkeypatch, capacity, limit, error, message) -> None:
    """model/build.py finds some families empty before any search (a held dimension's tile limit, L0's room for a
    limited tile): it says "infeasible" only where no schedule of the contract exists
    (model/overflow.contract_overflow, the limits alone, L0's room with every window split)."""
    from mapsearch.spec.constraints import Constraints, TileLimit

    monkeypatch.setattr(windows, "JOINT_TABLE_LIMIT", 0)  # I[p+r+u]'s r and u held whole
    w = Workload.from_text("c3", "O[p] += I[p+r+u] * W[r,u]", {"p": 4, "r": 2, "u": 2})
    d, lo, hi = limit
    with pytest.raises(InfeasibleError) as info:
        solve(Problem(w, two_level(capacity)), Constraints(tiles=(TileLimit("L0", d, lo, hi),)))
    assert type(info.value) is error and str(info.value).startswith(message)
    if error is NoScheduleInFamily:  # and a schedule of the contract meets the limit
        monkeypatch.setattr(windows, "JOINT_TABLE_LIMIT", 100_000)
        result = solve(Problem(w, two_level(capacity)), Constraints(tiles=(TileLimit("L0", d, lo, hi),)))
        assert result.status == "OPTIMAL" and lo <= result.schedule.levels[1].tile_extent(d) <= hi
