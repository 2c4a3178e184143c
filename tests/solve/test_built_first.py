"""The first schedule built level by level on deep scalar hierarchies (solve/built_first.py).

It is only a start: the result is the better of it and the full search's,
predicted as the replay counts it, and nothing is claimed from it (FEASIBLE,
bounds at most the values).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

import mapsearch.model.build as model_build
import mapsearch.model.chains as model_chains
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import differences
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.replay import replay
from mapsearch.solve import built_first
from mapsearch.solve.run import solve
from mapsearch.spec.architecture import Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.constraints import Constraints, TileLimit
from mapsearch.spec.workload import Workload

MATMUL = "Z[m,n] += A[m,k] * B[k,n]"


def four_levels(l0: int = 12, mesh=()) -> Architecture:
    return Architecture("4L", (Level("DRAM", None), Level("L2", 512, Link(Fraction(4), Fraction(4))),
                               Level("L1", 64, Link(Fraction(2), Fraction(2))), Level("L0", l0, Link(), mesh=mesh)),
                        Compute())


def matmul(m: int, n: int, k: int) -> Workload:
    return Workload.from_text("mm", MATMUL, {"m": m, "n": n, "k": k})


def values(result) -> tuple:
    return tuple(p.value for p in result.phases)


def test_the_built_schedule_wins_where_the_reduced_family_lacks_it(monkeypatch) -> None:
    """With the tile enumeration reduced (limits lowered here for a small case), the search cut short ends at
    more words than the schedule built level by level: started from it, the solve ends at it or better,
    FEASIBLE, predicted as the replay counts it."""
    w, a = matmul(30, 30, 30), four_levels()
    monkeypatch.setattr(model_chains, "DEEP_ENUMERATION_LIMIT", 50)
    model_build._chains_cached.cache_clear()
    options = SolveOptions(work_limit=0.05, workers=1, seed=0)
    try:
        with monkeypatch.context() as m:
            m.setattr(built_first, "applies", lambda *args: False)
            alone = solve(Problem(w, a), options=options)
        first = built_first.first_schedule(Problem(w, a), options, solve)
        result = solve(Problem(w, a), options=options)
    finally:
        model_build._chains_cached.cache_clear()  # the reduced chains must not serve later tests
    assert any(r.startswith("reduced tile candidates") for r in alone.family_restrictions)
    assert first is not None and first.status == "FEASIBLE"
    assert values(first) < values(alone)  # 42,300 words at 27,000 clocks against more than 44,100
    assert values(result) <= values(first)  # the search hinted with it: 38,700
    assert result.status == "FEASIBLE"
    f = result.schedule.predicted
    assert differences(f, replay(result.schedule, mode="count").figures) == []
    assert values(result) == (f.time, f.words_total)
    assert all(p.bound <= p.value for p in result.phases)


def test_the_search_keeps_its_own_schedule_where_it_is_better() -> None:
    """Never worse than the search alone: on a case the search proves, the result is the search's, proven."""
    w, a = matmul(8, 6, 5), four_levels(l0=8)
    options = SolveOptions(workers=1, seed=0)
    result = solve(Problem(w, a), options=options)
    first = built_first.first_schedule(Problem(w, a), options, solve)
    assert first is not None and values(first) >= values(result)
    assert result.status == "OPTIMAL" and all(p.bound == p.value for p in result.phases)
    assert differences(result.schedule.predicted, replay(result.schedule, mode="count").figures) == []


def test_each_step_fixes_the_levels_below_it() -> None:
    """The built schedule's inner tiles are the first step's: the top and L0 alone, the fewest words."""
    w, a = matmul(20, 20, 20), four_levels()
    options = SolveOptions(work_limit=1, workers=1, seed=0)
    first = built_first.first_schedule(Problem(w, a), options, solve)
    two = replace(a, levels=(a.levels[0], a.levels[3]))
    inner = solve(Problem(w, two), options=replace(options, objective="words"))
    assert first.schedule.levels[3].tile == inner.schedule.levels[1].tile


@pytest.mark.parametrize("case", ["start", "constraints", "mesh", "three levels", "home below the top", "energy",
                                  "every chain listed", "block op"])
def test_where_it_does_not_apply(case: str) -> None:
    w, a = matmul(256, 8, 8), four_levels()  # m's 2.8 M chains over three levels: a reduced family
    problem, constraints, options = Problem(w, a), Constraints(), SolveOptions()
    assert built_first.applies(problem, constraints, options)
    if case == "start":
        start = Schedule(w, a, tuple(LevelMapping(lv.name, (("m", 256), ("n", 8), ("k", 8)), ("m", "n", "k"))
                                     for lv in a.levels), ())
        options = replace(options, start=start)
    elif case == "constraints":
        constraints = Constraints("c", (TileLimit("L0", "m", 2, 2),))
    elif case == "mesh":
        problem = Problem(w, four_levels(mesh=(MeshAxis("x", 2),)))
    elif case == "three levels":
        problem = Problem(w, replace(a, levels=a.levels[:3]))
    elif case == "home below the top":
        problem = Problem(w, a, (("B", "L2"),))
    elif case == "block op":
        problem = Problem(w, replace(a, compute=Compute(block=(("n", 8),))))
    elif case == "every chain listed":
        problem = Problem(matmul(64, 64, 64), a)  # 45,760 chains per dimension: the search lists them all
    else:
        options = replace(options, objective="energy")
    assert not built_first.applies(problem, constraints, options)
