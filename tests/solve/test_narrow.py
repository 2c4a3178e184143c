"""The first schedule on meshed paths (mapsearch/solve/narrow.py).

On a meshed path ``solve`` first solves the problem in two narrower
families, buffers at their default positions: window dimensions unsplit over
mesh axes (the narrow family, coarse searches only), and the model of the
coarse chains alone (the coarse family); the better schedule starts the full
search. Checked here: each model is that family (the narrow chains split no
window dimension over a mesh axis, the coarse chains are a subset of the full
ones with coarse extents, the schedules keep default positions); when it
applies; and that the start changes no optimum: on a case whose wide optimum
is 6x faster than anything in the narrow family, the solve still proves the
wide optimum of the brute force, and its figures are never worse than the
start's.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force_spatial as bfs  # noqa: E402

from mapsearch.errors import InfeasibleError  # noqa: E402
from mapsearch.model.build import build  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.solve import narrow  # noqa: E402
from mapsearch.solve.run import _search, solve  # noqa: E402
from mapsearch.spec.architecture import MeshAxis  # noqa: E402
from mapsearch.spec.constraints import Constraints  # noqa: E402
from tests.solve.test_spatial_levels import arch  # noqa: E402
from tests.solve.test_spatial_windows import PE_ARRAY, ROW_STATIONARY, conv  # noqa: E402

OPTIONS = SolveOptions(time_limit=60, workers=1, seed=0)
MATMUL = conv("Z[m,n] += A[m,k] * B[k,n]", m=4, n=3, k=2)


def _split_rows(chains) -> int:
    return 0 if chains.factors is None else int(np.count_nonzero(np.any(chains.factors > 1, axis=1)))


def test_the_narrow_model_splits_no_window_dimension_over_a_mesh_axis() -> None:
    p = Problem(ROW_STATIONARY, PE_ARRAY)
    wide, thin = build(p, options=OPTIONS), build(p, options=OPTIONS, windows_over_mesh=False)
    for d in ("p", "r"):
        assert _split_rows(wide.chains[d]) > 0 and _split_rows(thin.chains[d]) == 0, d
    assert _split_rows(thin.chains["k"]) == _split_rows(wide.chains["k"]) > 0  # other dimensions as before


def test_the_coarse_model_is_the_coarse_chains_of_the_full_one() -> None:
    from mapsearch.model.coarse_chains import coarse_chains

    p = Problem(ROW_STATIONARY, PE_ARRAY)
    wide, coarse = build(p, options=OPTIONS), build(p, options=OPTIONS, coarse_only=True)
    assert len(coarse.chains["p"]) < len(wide.chains["p"])  # 8 chains, 7 of them coarse (extent 4: 3 is not)
    for d, chains in coarse.chains.items():
        full = {tuple(r) for r in wide.chains[d].tiles.tolist()}
        assert {tuple(r) for r in chains.tiles.tolist()} <= full, d
        assert coarse_chains(chains.extent, chains.tiles) == list(range(len(chains))), d
    assert _split_rows(coarse.chains["p"]) > 0 and _split_rows(coarse.chains["r"]) > 0  # windows over the mesh


def _first(family: str):
    """The ``family``'s first search on the row-stationary conv, as ``solve`` runs it (default positions)."""
    p = Problem(ROW_STATIONARY, PE_ARRAY)
    return _search(p, Constraints(), dataclasses.replace(OPTIONS, placement=False), time.perf_counter(), family)


def _search_family(p):
    return lambda o, family: _search(p, Constraints(), o, time.perf_counter(), family)


def test_when_the_narrow_family_applies() -> None:
    flat = arch([None, 8], {})
    meshed = arch([None, 8], {1: [MeshAxis("x", 2, ("all",))]})
    assert not narrow.applies(Problem(MATMUL, flat), OPTIONS)  # no mesh: no narrower family worth a search
    # Positions above the mesh alone: the narrow search's share of the time costs more than it gains.
    assert not narrow.applies(Problem(MATMUL, meshed), OPTIONS)
    assert narrow.applies(Problem(ROW_STATIONARY, PE_ARRAY), OPTIONS)  # windows over the mesh
    assert narrow.applies(Problem(ROW_STATIONARY, PE_ARRAY), SolveOptions(placement=False))
    result = solve(Problem(ROW_STATIONARY, PE_ARRAY), options=OPTIONS)
    assert not narrow.applies(Problem(ROW_STATIONARY, PE_ARRAY), SolveOptions(start=result.schedule))  # the user's
    assert not narrow.applies(Problem(ROW_STATIONARY, PE_ARRAY), SolveOptions(dram_rows="tiebreak"))


def test_the_start_is_the_better_first_schedule_and_the_solve_still_finds_the_wide_optimum(caplog) -> None:
    """Row-stationary conv on a 4x3 PE array: the narrow family's best is 12 clocks, the wide optimum 2 (which
    the coarse family holds: 2 clocks, 26 words)."""
    p = Problem(ROW_STATIONARY, PE_ARRAY)
    thin = _first("narrow").schedule
    split = {sp.dim for lm in thin.levels for sp in lm.spatial}
    assert split and not split & {"p", "r"}  # splits, but none of a window dimension
    assert thin.predicted.time >= 12  # the narrow family's best time (brute force, test_spatial_windows)
    coarse = _first("coarse")
    assert [ph.value for ph in coarse.phases] == [2, 26]
    found = narrow.first_schedule(p, OPTIONS, time.perf_counter(), _search_family(p))
    assert found is not None and found.family_restrictions == (narrow.COARSE_ONLY,)  # the better one
    first = found.schedule
    assert all(not lm.positions for lm in first.levels) and all(not lm.positions for lm in thin.levels)
    start = (first.predicted.time, first.predicted.words_total)
    assert start == (2, 26)
    with caplog.at_level(logging.INFO, logger="mapsearch.solve.narrow"):
        result = solve(p, options=OPTIONS)
    messages = [r.getMessage() for r in caplog.records]
    # The coarse family first (the narrow one idles the array); its 2 clocks are below the narrow family's
    # floor of 12, so that family is not searched.
    assert [m.split(" (")[0] for m in messages if m.startswith(("narrow family", "coarse family"))] == ["coarse family"]
    assert ("the coarse family's time is below the narrow family's floor (12): the narrow family is not searched; "
            "the coarse family's schedule starts the full search") in messages
    brute = bfs.brute_force_spatial(ROW_STATIONARY, PE_ARRAY)
    assert result.status == "OPTIMAL_IN_FAMILY"  # proven; positions at the meshed level are not searched
    assert [r.startswith("buffer placement") for r in result.family_restrictions] == [True]
    assert (result.phases[0].value, result.phases[1].value) == brute.value == (2, 26)
    assert (result.schedule.predicted.time, result.schedule.predicted.words_total) <= start


def test_first_families_without_a_schedule_give_no_start(caplog, monkeypatch) -> None:
    """A first search's infeasibility or timeout is not the problem's: no start, the reason logged."""
    from mapsearch.errors import InfeasibleError, SolverTimeout

    monkeypatch.setattr(narrow, "_coarse_goes_first", lambda problem, floors: None)  # the narrow family first
    p = Problem(ROW_STATIONARY, PE_ARRAY)
    for error in (InfeasibleError("no schedule in the narrow family"), SolverTimeout("no schedule in 0.1 s")):
        def fails(_options, _family, error=error):
            raise error

        caplog.clear()
        with caplog.at_level(logging.INFO, logger="mapsearch.solve.narrow"):
            assert narrow.first_schedule(p, OPTIONS, time.perf_counter(), fails) is None
        assert [r.getMessage() for r in caplog.records] == [
            f"narrow family (windows unsplit over mesh axes, default positions): no first schedule ({error})",
            f"coarse family (coarse tile chains, default positions): no first schedule ({error})"]


def test_the_narrow_schedule_is_the_start_where_the_coarse_family_has_none() -> None:
    from mapsearch.errors import SolverTimeout

    p = Problem(ROW_STATIONARY, PE_ARRAY)

    def narrow_only(options, family):
        if family == "coarse":
            raise SolverTimeout("no schedule in 0.1 s")
        return _search(p, Constraints(), options, time.perf_counter(), family)

    found = narrow.first_schedule(p, OPTIONS, time.perf_counter(), narrow_only)
    assert found.family_restrictions == (narrow.NARROW_ONLY,) and found.phases[0].value == 12


def test_the_first_searches_get_shares_of_the_time_left(monkeypatch) -> None:
    monkeypatch.setattr(narrow, "_coarse_goes_first", lambda problem, floors: None)  # the narrow family first
    seen = []
    p = Problem(ROW_STATIONARY, PE_ARRAY)
    search = _search_family(p)
    found = narrow.first_schedule(p, SolveOptions(time_limit=40), time.perf_counter(),
                                  lambda o, family: seen.append((o, family)) or search(o, family))
    assert found is not None and found.phases[0].value == 2  # the coarse family's, better than the narrow 12
    assert [family for _, family in seen] == ["narrow", "coarse"] and not any(o.placement for o, _ in seen)
    assert 40 * narrow.TIME_SHARE - 1 < seen[0][0].time_limit <= 40 * narrow.TIME_SHARE
    # The coarse search's share is of the time the narrow one left (it took a second or so of its share).
    assert (40 - 10) * narrow.COARSE_SHARE < seen[1][0].time_limit <= 40 * narrow.COARSE_SHARE


@pytest.mark.parametrize("error", ["timeout", "interrupt"])
def test_without_a_schedule_of_its_own_the_full_search_returns_the_narrow_one(monkeypatch, error) -> None:
    """The full search finds nothing (out of time, or stopped): the narrow schedule, FEASIBLE, bounded by the
    contract's floors, which hold for the whole family (at most its optimum, 2 clocks and 26 words here)."""
    from mapsearch.errors import Interrupted, SolverTimeout
    from mapsearch.model.bounds import contract_floors
    from mapsearch.model.build import clock_scale
    from mapsearch.solve import run

    search = run._search

    def wide_fails(problem, constraints, options, start, family="full"):
        if family == "full":
            raise SolverTimeout("no schedule in 0 s") if error == "timeout" else Interrupted("interrupted")
        return search(problem, constraints, options, start, family)

    monkeypatch.setattr(run, "_search", wide_fails)
    p = Problem(ROW_STATIONARY, PE_ARRAY)
    result = solve(p, options=OPTIONS)
    assert result.status == "FEASIBLE" and result.interrupted == (error == "interrupt")
    assert result.family_restrictions == (narrow.COARSE_ONLY,)
    f = result.schedule.predicted
    assert [ph.value for ph in result.phases] == [f.time, f.words_total] == [2, 26]  # the coarse family's
    scale = clock_scale(PE_ARRAY)
    floors = contract_floors(p, scale)
    assert [ph.bound for ph in result.phases] == [Fraction(floors[0], scale), floors[1]]
    assert result.phases[0].bound <= 2 and result.phases[1].bound <= 26  # the whole family's optimum
    # The time meets the contract's floor (24 / 12 = 2 clocks): proven over the whole family; the words do not.
    assert [ph.status for ph in result.phases] == ["OPTIMAL", "FEASIBLE"]


def test_phases_at_the_contract_floors_are_proven_in_order() -> None:
    from mapsearch.solve.phases import Phase

    floors = {"time": Fraction(2), "words": Fraction(20)}

    def phases(*values):
        return [Phase(name, "FEASIBLE", Fraction(v), Fraction(min(v, floors[name])), 0.0)
                for name, v in zip(("time", "words"), values)]

    assert [p.status for p in narrow._proven_at_floors(phases(2, 20), floors)] == ["OPTIMAL", "OPTIMAL"]
    assert [p.status for p in narrow._proven_at_floors(phases(2, 26), floors)] == ["OPTIMAL", "FEASIBLE"]
    # Words at their floor after a time above its floor prove nothing: the words floor holds at every time.
    assert [p.status for p in narrow._proven_at_floors(phases(3, 20), floors)] == ["FEASIBLE", "FEASIBLE"]
    assert [p.status for p in narrow._proven_at_floors(phases(3, 20)[:1], {})] == ["FEASIBLE"]  # no floor known


def test_stopped_during_the_narrow_search_the_result_is_its_schedule(monkeypatch) -> None:
    """Ctrl-C while the narrow family is searched: its schedule (when it found one) is the result, FEASIBLE and
    marked interrupted; the full search does not start."""
    import mapsearch.budget as budget
    from mapsearch.solve import run

    search = run._search
    searched = []

    def narrow_then_stop(problem, constraints, options, start, family="full"):
        searched.append(family)
        found = search(problem, constraints, options, start, family)
        budget.current().stop()  # as the CLI's Ctrl-C handler does, once the narrow search has its schedule
        return found

    monkeypatch.setattr(run, "_search", narrow_then_stop)
    monkeypatch.setattr(narrow, "_coarse_goes_first", lambda problem, floors: None)  # the narrow family first
    result = solve(Problem(ROW_STATIONARY, PE_ARRAY), options=OPTIONS)
    assert searched == ["narrow"]  # neither the coarse nor the full search ran
    assert result.interrupted and result.status == "FEASIBLE"
    assert result.family_restrictions == (narrow.NARROW_ONLY,)
    assert result.phases[0].value >= 12  # the narrow family's schedule (its best is 12 clocks)


def test_a_full_search_that_ends_worse_than_the_narrow_schedule_returns_the_narrow_one() -> None:
    """The full search cut short may end worse than its start (the start dropped when checking it outlasted its
    share): the narrow schedule is then the result, FEASIBLE, its first bound the full search's (it covers the
    narrow family too), the later ones the contract's floors."""
    import dataclasses

    from mapsearch.model.bounds import contract_floors
    from mapsearch.model.build import clock_scale

    p = Problem(ROW_STATIONARY, PE_ARRAY)
    first = _first("narrow")
    wide = solve(p, options=OPTIONS)
    assert [ph.value for ph in wide.phases] == [2, 26] and [ph.value for ph in first.phases][0] == 12
    assert narrow.better_of(wide, first, p) is wide  # the full search's schedule is better: kept
    worse = dataclasses.replace(wide, status="FEASIBLE", phases=tuple(
        dataclasses.replace(ph, status="FEASIBLE", value=ph.value * 100, bound=Fraction(1)) for ph in wide.phases))
    kept = narrow.better_of(worse, first, p)
    assert kept.schedule is first.schedule and kept.status == "FEASIBLE"
    assert [ph.value for ph in kept.phases] == [ph.value for ph in first.phases]
    scale = clock_scale(PE_ARRAY)
    time_floor, words_floor = contract_floors(p, scale)
    assert kept.phases[0].bound == max(Fraction(time_floor, scale), Fraction(1))
    assert kept.phases[1].bound == min(words_floor, first.phases[1].value)
    assert kept.family_restrictions == worse.family_restrictions and kept.space is worse.space
    assert [ph.status for ph in kept.phases] == ["FEASIBLE", "FEASIBLE"]
    # The full search proved the time the narrow schedule has, and ended with more words: the narrow schedule,
    # its time still proven.
    t, wd = first.phases
    same_time = dataclasses.replace(wide, status="FEASIBLE", phases=(
        dataclasses.replace(wide.phases[0], status="OPTIMAL", value=t.value, bound=t.value),
        dataclasses.replace(wide.phases[1], status="FEASIBLE", value=wd.value + 1, bound=Fraction(1))))
    kept = narrow.better_of(same_time, first, p)
    assert kept.schedule is first.schedule and kept.status == "FEASIBLE"
    assert [(ph.status, ph.bound) for ph in kept.phases] == [
        ("OPTIMAL", t.value), ("FEASIBLE", min(words_floor, wd.value))]
    # A tie keeps the full search's result.
    tie = dataclasses.replace(wide, phases=tuple(dataclasses.replace(ph, value=fp.value)
                                                 for ph, fp in zip(wide.phases, first.phases)))
    assert narrow.better_of(tie, first, p) is tie


def test_a_time_the_full_search_proved_in_a_restricted_family_keeps_its_restrictions() -> None:
    """``better_of`` where the full search proved the first schedule's time (12 clocks, above the contract's
    floor of 2) in a restricted family and the first schedule's words meet the contract's floor (values set
    here, to reach the branch): every phase is proven, but the time only in the full search's family, so the
    result is OPTIMAL_IN_FAMILY with its restrictions (it was OPTIMAL with none: a schedule outside the family
    may be faster). At the time floor too, OPTIMAL over the whole family."""
    import dataclasses

    from mapsearch.model.bounds import contract_floors
    from mapsearch.model.build import clock_scale

    p = Problem(ROW_STATIONARY, PE_ARRAY)
    scale = clock_scale(PE_ARRAY)
    time_floor, words_floor = contract_floors(p, scale)
    first = _first("narrow")
    t, wd = first.phases
    assert t.value > Fraction(time_floor, scale)
    first = dataclasses.replace(first, phases=(t, dataclasses.replace(wd, value=Fraction(words_floor))))
    restricted = ("some restriction of the full search's family",)
    wide = solve(p, options=OPTIONS)
    wide = dataclasses.replace(wide, status="OPTIMAL_IN_FAMILY", family_restrictions=restricted, phases=(
        dataclasses.replace(wide.phases[0], status="OPTIMAL", value=t.value, bound=t.value),
        dataclasses.replace(wide.phases[1], status="OPTIMAL", value=Fraction(words_floor) + 1,
                            bound=Fraction(words_floor) + 1)))
    kept = narrow.better_of(wide, first, p)
    assert kept.schedule is first.schedule
    assert [ph.status for ph in kept.phases] == ["OPTIMAL", "OPTIMAL"]
    assert kept.status == "OPTIMAL_IN_FAMILY" and kept.family_restrictions == restricted
    # The same full search with no restriction: OPTIMAL.
    kept = narrow.better_of(dataclasses.replace(wide, status="OPTIMAL", family_restrictions=()), first, p)
    assert kept.status == "OPTIMAL" and kept.family_restrictions == ()
    # Both phases at the contract's floors: OPTIMAL over the whole family, whatever the full search covered.
    at_floor = Fraction(time_floor, scale)
    first = dataclasses.replace(first, phases=(dataclasses.replace(t, value=at_floor), first.phases[1]))
    wide = dataclasses.replace(wide, phases=(dataclasses.replace(wide.phases[0], value=at_floor, bound=at_floor),
                                             wide.phases[1]))
    kept = narrow.better_of(wide, first, p)
    assert kept.status == "OPTIMAL" and kept.family_restrictions == ()


def test_the_coarse_family_is_searched_only_where_the_narrow_schedule_idles_the_array(monkeypatch) -> None:
    """The narrow schedule's 12 clocks are 6x the contract's floor of 2: the coarse family is searched (above).
    Within the multiple it is not, and the narrow schedule is the start."""
    seen = []
    p = Problem(ROW_STATIONARY, PE_ARRAY)
    search = _search_family(p)
    monkeypatch.setattr(narrow, "COARSE_ABOVE_FLOOR", 6)  # 12 >= 6 x 2: still searched, and first (below)
    narrow.first_schedule(p, OPTIONS, time.perf_counter(), lambda o, family: seen.append(family) or search(o, family))
    assert seen == ["coarse"]  # its 2 clocks are below the narrow floor of 12: the narrow family is not searched
    seen.clear()
    monkeypatch.setattr(narrow, "COARSE_ABOVE_FLOOR", 7)
    found = narrow.first_schedule(p, OPTIONS, time.perf_counter(),
                                  lambda o, family: seen.append(family) or search(o, family))
    assert seen == ["narrow"] and found.family_restrictions == (narrow.NARROW_ONLY,) and found.phases[0].value == 12


def test_a_first_schedule_at_every_contract_floor_is_optimal_over_the_whole_family() -> None:
    """``fallback`` with phases at the contract's floors (24 / 12 = 2 clocks, 20 words: values set here, to
    reach the branch): OPTIMAL, and no restriction named, since no schedule of the contract is below a floor."""
    import dataclasses

    from mapsearch.model.bounds import contract_floors
    from mapsearch.model.build import clock_scale

    p = Problem(ROW_STATIONARY, PE_ARRAY)
    scale = clock_scale(PE_ARRAY)
    time_floor, words_floor = contract_floors(p, scale)
    first = _first("coarse")
    first = dataclasses.replace(first, family_restrictions=(narrow.COARSE_ONLY,), phases=(
        dataclasses.replace(first.phases[0], value=Fraction(time_floor, scale)),
        dataclasses.replace(first.phases[1], value=Fraction(words_floor))))
    result = narrow.fallback(first, p, 1.0, False)
    assert result.status == "OPTIMAL" and result.family_restrictions == ()
    assert [(ph.status, ph.bound) for ph in result.phases] == [("OPTIMAL", Fraction(2)), ("OPTIMAL", Fraction(20))]
    # One word above the floor: the time stays proven, the result FEASIBLE in the coarse family's terms.
    first = dataclasses.replace(first, phases=(first.phases[0], dataclasses.replace(first.phases[1], value=21)))
    result = narrow.fallback(first, p, 1.0, False)
    assert result.status == "FEASIBLE" and result.family_restrictions == (narrow.COARSE_ONLY,)
    assert [ph.status for ph in result.phases] == ["OPTIMAL", "FEASIBLE"]


def test_a_large_array_without_windows_starts_from_the_coarse_family_alone(monkeypatch) -> None:
    """No window: the narrow family's chains are the full model's, so only the coarse family is searched
    first, and only on an array of at least COARSE_ALONE_INSTANCES instances; the optimum is unchanged."""
    small = arch([None, 8], {1: [MeshAxis("x", 2, ("all",))]})
    large = arch([None, 64, 4], {2: [MeshAxis("x", 32, ("input",)), MeshAxis("y", 32, ("output",))]})
    assert 2 < narrow.COARSE_ALONE_INSTANCES <= 32 * 32
    assert narrow.families(Problem(MATMUL, small), OPTIONS) == ()
    assert narrow.families(Problem(MATMUL, large), OPTIONS) == ("coarse",)
    assert narrow.families(Problem(ROW_STATIONARY, PE_ARRAY), OPTIONS) == ("narrow", "coarse")
    p = Problem(conv("Z[m,n] += A[m,k] * B[k,n]", m=12, n=10, k=6), large)
    seen = []
    search = _search_family(p)
    found = narrow.first_schedule(p, SolveOptions(time_limit=40, workers=1), time.perf_counter(),
                                  lambda o, family: seen.append((o, family)) or search(o, family))
    assert [family for _, family in seen] == ["coarse"] and not seen[0][0].placement
    assert 40 * narrow.COARSE_ALONE_SHARE - 1 < seen[0][0].time_limit <= 40 * narrow.COARSE_ALONE_SHARE
    assert found is not None and found.family_restrictions == (narrow.COARSE_ONLY,)
    result = solve(p, options=OPTIONS)
    monkeypatch.setattr(narrow, "families", lambda *_: ())
    plain = solve(p, options=OPTIONS)
    assert result.status == plain.status and result.status.startswith("OPTIMAL")
    assert [ph.value for ph in result.phases] == [ph.value for ph in plain.phases]
    assert [ph.value for ph in result.phases] <= [ph.value for ph in found.phases]


def test_a_narrow_family_that_cannot_fill_the_array_goes_second() -> None:
    """On the row-stationary case the narrow family splits only k (2 of 12 PEs) over the mesh: its time is at
    least 24 MACs / 2 = 12 clocks, 6x the contract's floor of 2, whatever it finds. So the coarse family is
    searched first with the larger share; its schedule (2 clocks) is below that floor, so the narrow family
    could not give a better start and is not searched."""
    seen = []
    p = Problem(ROW_STATIONARY, PE_ARRAY)
    floors = narrow.time_floors(p)
    assert floors.narrow_idles_the_array and (floors.narrow, floors.contract) == (12, 2)
    search = _search_family(p)
    found = narrow.first_schedule(p, SolveOptions(time_limit=40), time.perf_counter(),
                                  lambda o, family: seen.append((o, family)) or search(o, family))
    assert found is not None and found.phases[0].value == 2  # the coarse family's
    assert [family for _, family in seen] == ["coarse"]
    assert 40 * narrow.COARSE_SHARE - 1 < seen[0][0].time_limit <= 40 * narrow.COARSE_SHARE


def test_the_narrow_family_follows_a_coarse_search_that_found_nothing() -> None:
    """Where the coarse family's search finds no schedule (here: told so), the narrow one is searched after it
    with a share of what is left, and its schedule starts the full search."""
    seen = []
    p = Problem(ROW_STATIONARY, PE_ARRAY)
    search = _search_family(p)

    def family_search(o, family):
        seen.append((o, family))
        if family == "coarse":
            raise InfeasibleError("no schedule in the coarse family")
        return search(o, family)

    found = narrow.first_schedule(p, SolveOptions(time_limit=40), time.perf_counter(), family_search)
    assert found is not None and found.phases[0].value == 12  # the narrow family's floor, which it proves
    assert found.family_restrictions == (narrow.NARROW_ONLY,)
    assert [family for _, family in seen] == ["coarse", "narrow"]
    assert (40 - 10) * narrow.COARSE_SHARE < seen[1][0].time_limit <= 40 * narrow.COARSE_SHARE


def test_the_coarse_family_gets_most_of_the_time_where_the_narrow_floor_is_far_above() -> None:
    """Where the narrow family's floor is at least NARROW_FAR_ABOVE times the contract's, the coarse search
    first gets nine tenths of the time left; the row-stationary case's 12 clocks are 6x the floor of 2: half.
    (ResNet-50's conv1 on tpu-v4i-like, 185x: below.)"""
    assert narrow._coarse_share(narrow.time_floors(Problem(ROW_STATIONARY, PE_ARRAY))) == narrow.COARSE_SHARE


@pytest.mark.parametrize("preset, idles", [("tpu-v4i-like", True), ("eyeriss-like", False)])
def test_the_narrow_floor_of_resnet_conv1(preset, idles) -> None:
    """ResNet-50's conv1 (7x7 stride 2): n x k x c = 192 instances at most without splitting a window dimension;
    on tpu-v4i-like's 65,536 PEs that floor is 118,013,952 MACs / 192 = 614,656 clocks (what the narrow search proves) against the contract's 3,316;
    eyeriss-like's 168 PEs are all within reach."""
    from mapsearch.presets import load_preset
    from mapsearch.spec.workload import Workload

    w = Workload.from_text("conv1", "O[n,k,p,q] += I[n,c,p*2+r,q*2+s] * W[k,c,r,s]",
                           dict(n=1, k=64, c=3, p=112, q=112, r=7, s=7))
    p = Problem(w, load_preset(preset))
    floors = narrow.time_floors(p)
    assert floors.narrow_idles_the_array is idles
    if idles:
        assert floors.narrow == 614_656
        assert narrow._coarse_share(floors) == narrow.COARSE_FIRST_SHARE  # 614,656 >= 10 x 3,316


def test_the_narrow_familys_time_phase_takes_most_of_its_limit_and_the_words_phase_the_rest(monkeypatch) -> None:
    """The narrow family's phases are coarse searches alone (no full search follows): the time phase gets
    PHASE_SHARE of what the narrow limit leaves, the words phase, the last, all that is left then."""
    from mapsearch.solve import run

    shares = []
    real = run.coarse_solution

    def record(enc, options, time_left, share=0.25, phase="", floor=None, incumbent=None):
        shares.append((phase, share))
        return real(enc, options, time_left, share, phase, floor, incumbent)

    monkeypatch.setattr(run, "coarse_solution", record)
    p = Problem(ROW_STATIONARY, PE_ARRAY)
    _search(p, Constraints(), dataclasses.replace(OPTIONS, placement=False), time.perf_counter(), "narrow")
    assert shares == [("time", narrow.PHASE_SHARE), ("words", 1.0)]


@pytest.mark.parametrize("preset, first", [("tpu-v4i-like", True), ("eyeriss-like", False)])
def test_the_coarse_family_goes_first_on_a_large_array(preset, first) -> None:
    """ResNet-50's conv4 3x3 layer: n x k x c = 65,536 instances without a window split, so the narrow
    family could fill either array; on tpu-v4i-like's 65,536 PEs (at least COARSE_ALONE_INSTANCES) the coarse
    family still goes first, with half the time (the narrow floor is not 10x the contract's); on
    eyeriss-like's 168 the narrow family goes first."""
    from mapsearch.presets import load_preset
    from mapsearch.spec.workload import Workload

    w = Workload.from_text("conv4", "O[n,k,p,q] += I[n,c,p+r,q+s] * W[k,c,r,s]",
                           dict(n=1, k=256, c=256, p=14, q=14, r=3, s=3))
    p = Problem(w, load_preset(preset))
    floors = narrow.time_floors(p)
    assert not floors.narrow_idles_the_array
    assert (narrow._coarse_goes_first(p, floors) is not None) is first
    if first:
        assert narrow._coarse_share(floors) == narrow.COARSE_SHARE
