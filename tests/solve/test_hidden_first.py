"""The first schedule of a problem whose skewed axis hides a filter window (solve/hidden_first.py): the family
with the window's smaller dimension held whole, searched first, starts the full search."""

from __future__ import annotations

import time
from fractions import Fraction

import brute_force_wide as bw
from brute_force import Objective
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.schedule.schedule import Schedule
from mapsearch.solve import hidden_first
from mapsearch.solve.run import _search, solve
from mapsearch.spec.constraints import Constraints
from mapsearch.spec.architecture import Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.workload import Workload

HIDDEN = "O[p] += I[p+r+u,p] * W[r,u]"


def _arch(caps, mesh=()) -> Architecture:
    names = [f"L{len(caps) - 1 - i}" for i in range(len(caps))]
    return Architecture("h", tuple(Level(n, c, None if i == 0 else Link(), mesh=mesh if i == len(caps) - 1 else ())
                                   for i, (n, c) in enumerate(zip(names, caps))), Compute())


def test_it_applies_off_a_mesh_to_a_hidden_window_only():
    w = Workload.from_text("h", HIDDEN, {"p": 3, "r": 2, "u": 2})
    assert hidden_first.applies(Problem(w, _arch([None, 11, 5])), SolveOptions())
    # on a mesh, where the held family is no family the solver searches; with a start of the user's
    assert not hidden_first.applies(Problem(w, _arch([None, 11, 5], (MeshAxis("x", 2, ("all",)),))), SolveOptions())
    start = Schedule.__new__(Schedule)
    assert not hidden_first.applies(Problem(w, _arch([None, 11, 5])), SolveOptions(start=start))
    # the box determines every piece (nothing hidden), or p of extent 1 (a plain window)
    for einsum, extents in (("O[p] += I[p+r,p] * W[r]", {"p": 3, "r": 2}), (HIDDEN, {"p": 1, "r": 2, "u": 2})):
        assert not hidden_first.applies(Problem(Workload.from_text("h", einsum, extents), _arch([None, 11, 5])),
                                        SolveOptions())


def test_the_first_schedule_holds_the_smaller_window_dimension_and_the_solve_ends_at_the_whole_familys():
    """The held family's optimum is (25, 44) on this case, the whole family's (19, 38): the first schedule names
    its restriction and holds u whole, and the solve started from it still reaches the whole family's optimum."""
    w = Workload.from_text("h", HIDDEN, {"p": 3, "r": 2, "u": 2})
    problem = Problem(w, _arch([None, 11, 5]))
    options = SolveOptions(workers=1, seed=0)
    first = hidden_first.first_schedule(problem, options,
                                        lambda p, o: _search(p, Constraints(), o, time.perf_counter()))
    assert first is not None
    assert any(x.startswith("filter windows held whole: u (") for x in first.family_restrictions)
    assert all(e == 2 for lv in first.schedule.levels for d, e in lv.tile if d == "u")
    assert tuple(p.value for p in first.phases) == bw.brute_force(w, problem.architecture, {}, Objective(),
                                                                  frozenset({"u"})).value == (Fraction(25), 44)
    result = solve(problem, options=options)
    assert result.status == "OPTIMAL" and result.family_restrictions == ()
    assert tuple(p.value for p in result.phases) == bw.brute_force(w, problem.architecture, {}, Objective()).value


def test_a_first_schedule_at_the_contracts_floors_ends_the_solve(monkeypatch):
    """The held family's optimum on ``examples/arch-three-level.yaml`` meets the contract's floors (p = 3,
    r = u = 2: 64 clocks, 32 words): it is the optimum over the whole family, OPTIMAL with no restriction,
    and the whole family's larger model is never searched."""
    from mapsearch.solve import run
    from mapsearch.spec.load import load_problem

    _, arch, _ = load_problem("examples/matmul-4x4x4.yaml", "examples/arch-three-level.yaml")
    w = Workload.from_text("h", HIDDEN, {"p": 3, "r": 2, "u": 2})
    searched = []
    real = run._search

    def counting(problem, *args, **kwargs):
        searched.append(problem.hidden_windows)
        return real(problem, *args, **kwargs)

    monkeypatch.setattr(run, "_search", counting)
    result = solve(Problem(w, arch), options=SolveOptions(workers=1, seed=0))
    assert searched == [False]
    assert result.status == "OPTIMAL" and result.family_restrictions == ()
    assert tuple(p.value for p in result.phases) == bw.brute_force(w, arch, {}, Objective()).value
