"""Schedules that split nothing over a mesh, searched with every buffer position (mapsearch/solve/unsplit.py).

Oracles: ``brute_force_wide`` over the path without its meshes (every tile,
order, keep and buffer position: a schedule without splits has the same
figures on either path) and ``brute_force_spatial`` over the meshed family
with default positions; neither imports the model or the solver.
"""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import pytest

import brute_force_spatial as bfs
import brute_force_wide as bw
from brute_force import Objective
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import differences
from mapsearch.sim.replay import replay
from mapsearch.solve import unsplit
from mapsearch.solve.phases import Phase
from mapsearch.solve.run import solve
from mapsearch.spec.architecture import Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.workload import Workload

F = Fraction


def _conv_s2() -> tuple[Workload, Architecture]:
    """A strided 1-D conv whose best schedule splits nothing over its 2 PEs (found by the mesh fuzz, seed 2048)."""
    w = Workload.from_text("conv1d_s2", "O[p] += I[p*2+r] * W[r]", {"p": 4, "r": 3})
    arch = Architecture("t", (
        Level("L2", None),
        Level("L1", 40, Link(F(1), F(2), "separate")),
        Level("L0", 7, Link(F(1), F(2), "separate"), mesh=(MeshAxis("x", 2, ("none",)),)),
    ), Compute(), double_buffering=True)
    return w, arch


def _conv_k() -> tuple[Workload, Architecture]:
    """A 1-D conv over channels on 2 PEs that share nothing (mesh fuzz seed 2008), minimised in words."""
    w = Workload.from_text("conv1d_k", "O[k,p] += I[p+r] * W[k,r]", {"k": 3, "p": 6, "r": 3})
    arch = Architecture("t", (
        Level("L1", None),
        Level("L0", 13, Link(F(1, 3), F(1, 3)), mesh=(MeshAxis("x", 2, ("none",)),)),
    ), Compute())
    return w, arch


@pytest.mark.parametrize("make, objective", [(_conv_s2, "time"), (_conv_k, "words")])
def test_no_split_with_positions_beats_every_split_schedule(make, objective):
    w, arch = make()
    result = solve(Problem(w, arch), options=SolveOptions(objective=objective, time_limit=60))
    oracle = Objective(kind=objective)
    whole = bw.brute_force(w, unsplit.unsplit_problem(Problem(w, arch)).architecture, {}, oracle)
    meshed = bfs.brute_force_spatial(w, arch, {}, oracle)
    got = tuple(p.value for p in result.phases)
    assert got == tuple(whole.value)
    assert got < tuple(meshed.value)  # strictly better than any split schedule at default positions
    assert not any(lm.spatial for lm in result.schedule.levels)
    assert result.schedule.placed
    assert result.status == "OPTIMAL_IN_FAMILY"
    assert any("those without one: every position" in r for r in result.family_restrictions)
    for mode in ("count", "events", "data"):
        assert differences(result.schedule.predicted, replay(result.schedule, mode).figures) == []


def test_values_of_the_two_named_cases():
    """The figures themselves, so that a change of either oracle cannot pass silently."""
    w, arch = _conv_s2()
    r = solve(Problem(w, arch), options=SolveOptions(time_limit=60))
    assert (r.time, r.words) == (12, 32)
    w, arch = _conv_k()
    r = solve(Problem(w, arch), options=SolveOptions(objective="words", time_limit=60))
    assert r.words == 35


def test_array_whose_one_instance_compute_is_slower_skips_the_search(monkeypatch):
    """On 16 PEs of 6 words the one-instance compute floor (4,096 clocks) is above the meshed time (448):
    no second search, the placement restriction is narrowed all the same."""
    def fail(*_):
        raise AssertionError("the unsplit family cannot win here and must not be searched")

    monkeypatch.setattr(unsplit, "search_unsplit", fail)
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 16, "n": 16, "k": 16})
    arch = Architecture("t", (Level("DRAM", None), Level("PE", 6, Link(F(1, 4), F(1, 4)), instances=16)), Compute())
    r = solve(Problem(w, arch), options=SolveOptions(time_limit=60))
    assert (r.time, r.words, r.status) == (448, 1792, "OPTIMAL_IN_FAMILY")
    assert any(x.startswith("buffer placement:") and "those without one: every position" in x
               for x in r.family_restrictions)


def _phases(*specs) -> SimpleNamespace:
    return SimpleNamespace(phases=tuple(Phase(n, s, F(v), F(b), 0.0) for n, s, v, b in specs))


def test_union_bounds_follow_the_lexicographic_order():
    best = _phases(("time", "OPTIMAL", 10, 10), ("words", "OPTIMAL", 20, 20))
    # The other family cannot reach time 10: its words say nothing about schedules at time 10.
    other = _phases(("time", "OPTIMAL", 12, 12), ("words", "OPTIMAL", 15, 15))
    assert [(p.status, p.bound) for p in unsplit.phases_of_union(best, other)] == [("OPTIMAL", 10), ("OPTIMAL", 20)]
    # Its time floor is below 10: both phases fall back to the smaller floors, unproven.
    other = _phases(("time", "FEASIBLE", 12, 9), ("words", "FEASIBLE", 15, 14))
    assert [(p.status, p.bound) for p in unsplit.phases_of_union(best, other)] == [("FEASIBLE", 9), ("FEASIBLE", 14)]
    # Its time floor reaches 10 but its words were never searched: nothing is known of them.
    other = _phases(("time", "FEASIBLE", 12, 10))
    assert [(p.status, p.bound) for p in unsplit.phases_of_union(best, other)] == [("OPTIMAL", 10), ("FEASIBLE", 0)]
    assert unsplit.phases_of_union(best, None) == best.phases
