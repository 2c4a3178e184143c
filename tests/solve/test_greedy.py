"""The greedy first schedule (solve/greedy.py): legal, within every capacity, and the start of a search cut short."""

from __future__ import annotations

from fractions import Fraction

import pytest

from mapsearch.api import replay_schedule, solve
from mapsearch.model.problem import Problem
from mapsearch.presets import load_preset
from mapsearch.schedule.legality import violations
from mapsearch.solve.greedy import _extents, greedy_schedule
from mapsearch.spec.architecture import Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.workload import Workload

CONV = "O[k,p,q] += I[c,p+r,q+s] * W[k,c,r,s]"
STRIDED = "O[k,p] += I[c,2*p+2*r] * W[k,c,r]"
MATMUL = "Z[m,n] += A[m,k] * B[k,n]"


def _arch(caps, *, block=(), double=False, mesh_at=None) -> Architecture:
    names = [f"L{len(caps) - 1 - i}" for i in range(len(caps))]
    levels = tuple(Level(n, c, None if i == 0 else Link(Fraction(1), Fraction(1)),
                         mesh=(MeshAxis("x", 4, ("all",)),) if i == mesh_at else ())
                   for i, (n, c) in enumerate(zip(names, caps)))
    return Architecture("greedy", levels, Compute(block, Fraction(1)), double)


CASES = [
    ("matmul, 3 levels, tight", Workload.from_text("mm", MATMUL, {"m": 13, "n": 7, "k": 11}), _arch([None, 60, 5]), {}),
    ("matmul, 4 levels, double buffered", Workload.from_text("mm", MATMUL, {"m": 24, "n": 20, "k": 9}),
     _arch([None, 400, 60, 12], double=True), {}),
    ("conv, 3 levels", Workload.from_text("conv", CONV, dict(k=6, c=5, p=7, q=6, r=3, s=3)), _arch([None, 300, 40]), {}),
    ("strided, dilated conv", Workload.from_text("conv1d", STRIDED, dict(k=4, c=3, p=9, r=3)), _arch([None, 50, 9]), {}),
    ("block op", Workload.from_text("mm", MATMUL, {"m": 10, "n": 9, "k": 8}), _arch([None, 120, 24], block=(("n", 4),)), {}),
    ("homes at the middle level", Workload.from_text("mm", MATMUL, {"m": 8, "n": 6, "k": 5}), _arch([None, 90, 6]),
     {"B": "L1"}),
    ("a meshed level", Workload.from_text("mm", MATMUL, {"m": 9, "n": 8, "k": 7}), _arch([None, 100, 6], mesh_at=2), {}),
]


@pytest.mark.parametrize("name, w, arch, homes", CASES, ids=[c[0] for c in CASES])
def test_greedy_schedules_are_legal_and_fit_when_replayed(name, w, arch, homes):
    s = greedy_schedule(Problem(w, arch, tuple(homes.items())))
    assert s is not None
    assert violations(s) == []
    for i in range(1, len(s.levels)):
        tile, parent = dict(s.levels[i].tile), dict(s.levels[i - 1].tile)
        for d in w.dims:
            assert tile[d] <= parent[d]
            assert tile[d] in _extents(w.extent[d])  # listed by the model even in a reduced family
    replayed = replay_schedule(s, "count")  # raises on a capacity overflow
    for (level, peak), lv in zip(replayed.figures.occupancy, arch.levels):
        assert lv.capacity is None or peak <= lv.capacity, level
    # L0 grew past one element wherever it had room: the greedy is a start, not the smallest schedule
    assert sum(dict(s.levels[-1].tile).values()) > len(w.dims)


def test_extents_are_the_piece_counts_of_the_whole():
    for extent in (1, 2, 7, 64, 97, 1000):
        assert _extents(extent) == sorted({-(-extent // n) for n in range(1, extent + 1)})


def test_no_greedy_schedule_where_l0_cannot_hold_one_element_of_each_tensor():
    w = Workload.from_text("mm", MATMUL, {"m": 4, "n": 4, "k": 4})
    assert greedy_schedule(Problem(w, _arch([None, 64, 2]))) is None


def test_a_search_cut_short_starts_from_the_greedy_schedule():
    """Under a work limit too small for the coarse search to find anything, the solve used to end with no
    schedule (SolverTimeout); it now starts from the greedy schedule and ends FEASIBLE, replayed exactly."""
    w = Workload.from_text("conv", CONV, dict(k=16, c=16, p=14, q=14, r=3, s=3))
    arch = load_preset("edge-3level")
    greedy = replay_schedule(greedy_schedule(Problem(w, arch)), "count").figures
    result = solve(w, arch, work_limit=0.001, replay_mode="count")  # strict: predicted == replayed
    time_phase = result.phases[0]
    assert time_phase.name == "time" and time_phase.start_value == greedy.time
    assert result.status == "FEASIBLE" and time_phase.value <= greedy.time


def test_a_search_that_finds_nothing_returns_the_greedy_schedule(monkeypatch):
    """The full search runs out of time before any schedule (as the chains of ResNet-50's 7x7/2 stem on five
    levels do at 10 s): the greedy schedule, solved on its own first, is the result, FEASIBLE, its bounds the
    contract's floors, replayed to its prediction."""
    import mapsearch.solve.run as run
    from mapsearch.errors import SolverTimeout
    from mapsearch.model.build import clock_scale
    from mapsearch.model.family import phase_floors

    w = Workload.from_text("conv", CONV, dict(k=6, c=5, p=7, q=6, r=3, s=3))
    arch = _arch([None, 300, 40])
    searched = run._search_family

    def out_of_time(problem, constraints, options, start, family):
        if family == "full":
            raise SolverTimeout("the time limit of 1 s ran out while enumerating the tile chains of p")
        return searched(problem, constraints, options, start, family)

    monkeypatch.setattr(run, "_search_family", out_of_time)
    result = solve(w, arch, replay_mode="count")  # strict: predicted == replayed
    greedy = replay_schedule(greedy_schedule(Problem(w, arch)), "count").figures
    floors = phase_floors(Problem(w, arch), clock_scale(arch))
    assert result.status == "FEASIBLE" and result.family_restrictions == ()
    assert [(p.name, p.status, p.value, p.bound) for p in result.phases] == [
        ("time", "FEASIBLE", greedy.time, floors["time"]), ("words", "FEASIBLE", sum(link.words for link in greedy.links), floors["words"])]
    from mapsearch.api import render_solve_text

    text = render_solve_text(result, result.replayed)
    assert "search space: no schedule found by the search in time; the greedy schedule is returned, unproven" in text


def test_no_fallback_where_the_users_constraints_exclude_the_greedy_schedule():
    from mapsearch.model.options import SolveOptions
    from mapsearch.solve.greedy_start import greedy_fallback
    from mapsearch.solve.run import _search
    from mapsearch.spec.constraints import Constraints, TileLimit

    w = Workload.from_text("mm", MATMUL, {"m": 13, "n": 7, "k": 11})
    arch = _arch([None, 60, 5])
    problem = Problem(w, arch)
    tile = dict(greedy_schedule(problem).levels[2].tile)["m"]
    other = Constraints(tiles=(TileLimit("L0", "m", tile + 1, tile + 1),))
    search = lambda c, o: _search(problem, c, o, 0.0, "fixed")  # noqa: E731
    assert greedy_fallback(problem, Constraints(), SolveOptions(), search) is not None
    assert greedy_fallback(problem, other, SolveOptions(), search) is None


def test_the_greedy_schedule_replaces_a_worse_search_result_keeping_its_proofs_and_bounds():
    """A search cut short at (time T proven, words W) against a greedy schedule at (T, W' < W): the greedy one is
    returned, its time phase still OPTIMAL (it ties the proven optimum), its words FEASIBLE with the search's
    bound and the floor at the phase's start."""
    import dataclasses

    from mapsearch.solve.greedy_start import better_than_search
    from mapsearch.solve.phases import Phase

    w = Workload.from_text("mm", MATMUL, {"m": 13, "n": 7, "k": 11})
    arch = _arch([None, 60, 5])
    fallback = solve(w, arch, replay_mode=None)
    t, words = fallback.phases
    searched = dataclasses.replace(fallback, status="FEASIBLE", phases=(
        Phase("time", "OPTIMAL", t.value, t.value, 1.0),
        Phase("words", "FEASIBLE", words.value + 10, words.value - 5, 2.0, words.value + 20, words.value - 7)))
    kept = better_than_search(searched, fallback)
    assert kept.schedule is fallback.schedule and kept.status == "FEASIBLE"
    assert [(p.status, p.value, p.bound, p.start_bound) for p in kept.phases] == [
        ("OPTIMAL", t.value, t.value, None), ("FEASIBLE", words.value, words.value - 5, words.value - 7)]
    assert better_than_search(searched, dataclasses.replace(fallback, phases=(t, dataclasses.replace(
        words, value=words.value + 10)))) is searched  # a tie keeps the search's schedule
