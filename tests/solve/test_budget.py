"""Every limit bounds every phase: the Budget, model building, meshes, chains, and the progress hook."""

from __future__ import annotations

import io
import time
from fractions import Fraction
from pathlib import Path

import pytest

from mapsearch.budget import Budget, checkpoint, within
from mapsearch.errors import Interrupted, SolverTimeout
from mapsearch.model.problem import Problem
from mapsearch.solve.chain import solve_chain
from mapsearch.cli.solve_progress import ProgressLine
from mapsearch.model.options import SolveOptions
from mapsearch.solve.progress import SolveProgress, listening
from mapsearch.solve.run import solve
from mapsearch.spec.architecture import Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.graph_load import load_graph
from mapsearch.spec.workload import Workload

ROOT = Path(__file__).resolve().parents[2]
MATMUL = "Z[m,n] += A[m,k] * B[k,n]"


def three_levels(mesh: tuple[MeshAxis, ...] = ()) -> Architecture:
    size = 1
    for a in mesh:
        size *= a.size
    return Architecture("three", (Level("L2", None), Level("L1", 4096, Link(Fraction(4), Fraction(4))),
                                  Level("L0", 64, Link(Fraction(1), Fraction(1)), size, mesh)), Compute())


def test_budget_deadline_stop_and_nesting() -> None:
    outer = Budget(0.2)
    inner = Budget(60, parent=outer)
    assert inner.left() <= 0.2
    with within(inner):
        checkpoint("working")  # within the limit: nothing
        time.sleep(0.25)
        with pytest.raises(SolverTimeout, match=r"the time limit of 0\.2 s ran out while working"):
            checkpoint("working")
    stopped = Budget(None)
    child = Budget(10, parent=stopped)
    stopped.stop()
    assert child.stopped and not child.aborted
    with within(child), pytest.raises(Interrupted, match="interrupted while building"):
        checkpoint("building")


def test_model_building_of_a_huge_extent_ends_near_the_time_limit() -> None:
    """2^24, the largest extent taken: the chain enumeration stops at the limit instead of running on."""
    problem = Problem(Workload.from_text("big", MATMUL, {"m": 2**24, "n": 4, "k": 4}), three_levels())
    start = time.perf_counter()
    with pytest.raises(SolverTimeout):
        solve(problem, options=SolveOptions(time_limit=0.5))
    assert time.perf_counter() - start < 15  # one enumeration step (about a second alone) past the limit at most


def test_a_mesh_wider_than_the_extents_costs_nothing_more() -> None:
    """2^20 instances on one axis (the most taken): the split factors stop at the largest tile, same optimum."""
    w = Workload.from_text("mm", MATMUL, {"m": 24, "n": 20, "k": 8})
    small = solve(Problem(w, three_levels((MeshAxis("x", 24, ("all",)),))), options=SolveOptions(time_limit=60))
    start = time.perf_counter()
    wide = solve(Problem(w, three_levels((MeshAxis("x", 2**20, ("all",)),))), options=SolveOptions(time_limit=60))
    assert time.perf_counter() - start < 30
    assert wide.schedule.predicted.time == small.schedule.predicted.time


def test_a_chain_solve_ends_within_its_time_limit() -> None:
    """Every option of the chain shares one limit (characterize's pairs ran ~30 s under --time-limit 8).

    Without a limit this chain takes about 8 s here (its fused option searches longest).
    """
    graph = load_graph(ROOT / "examples" / "chains" / "three-stage.yaml")
    arch = three_levels()
    start = time.perf_counter()
    solve_chain(graph, arch, {}, SolveOptions(time_limit=2.0))
    assert time.perf_counter() - start < 2.0 + 3.0  # decoding and the last model build after the limit


def test_progress_reaches_a_listener_and_the_line_is_throttled() -> None:
    seen: list[SolveProgress] = []
    w = Workload.from_text("mm", MATMUL, {"m": 97, "n": 193, "k": 61})
    with listening(seen.append):
        result = solve(Problem(w, three_levels()), options=SolveOptions(time_limit=60))
    phases = [p.phase for p in seen]
    assert phases[0] == "building the model" and phases[-1] == "finished"
    found = [p for p in seen if p.values]
    assert found and all(dict(p.values).keys() == {"time", "words"} for p in found)
    # The last schedule reported is the one returned (time in clocks, then words).
    assert dict(found[-1].values)["time"] >= result.schedule.predicted.time

    stream = io.StringIO()
    line = ProgressLine(stream, interval=3600)
    line(SolveProgress("time", 1.0, (("time", Fraction(10)), ("words", Fraction(7))), None))
    line(SolveProgress("time", 1.5, (("time", Fraction(9)), ("words", Fraction(7))), Fraction(8)))  # within the hour
    assert stream.getvalue() == "\rmapsearch: 1 s, time; best time 10, words 7; no bound yet"
    assert ProgressLine.text(SolveProgress("words", 3.0, (("time", Fraction(9)), ("words", Fraction(20))),
                                           Fraction(15))) == "mapsearch: 3 s, words; best time 9, words 20; bound 15; gap 25.0%"
    line(SolveProgress("finished", 2.0))
    assert stream.getvalue().endswith("\r")  # erased before the report


def test_a_search_with_no_time_left_does_not_load_its_model() -> None:
    """Out of time (or stopped) before a search starts, ``search`` answers UNKNOWN from an empty model: CP-SAT
    would load and presolve the real one first, seconds past the limit on a large array."""
    from ortools.sat.python import cp_model

    from mapsearch.solve.progress import search

    model = cp_model.CpModel()
    x = model.new_int_var(0, 10, "x")
    model.add(x >= 3)
    model.minimize(x)
    spent = Budget(0.0)
    time.sleep(0.01)
    for budget in (spent, Budget(60)):
        if budget is not spent:
            budget.stop()
        with within(budget):
            solver = cp_model.CpSolver()
            assert search(solver, model) == cp_model.UNKNOWN
            assert solver.num_branches == 0 and solver.best_objective_bound == 0  # the empty model's response
    with within(Budget(60)):
        solver = cp_model.CpSolver()
        assert search(solver, model) == cp_model.OPTIMAL and solver.objective_value == 3


def test_an_extension_has_its_own_deadline_and_stops_with_its_parents():
    expired = Budget(0)
    extension = Budget(30, parent=expired, extends=True)
    inner = Budget(None, parent=extension)  # a solve's budget under the extension
    assert expired.left() == 0 and 29 < extension.left() <= 30 and 29 < inner.left() <= 30
    with within(inner):
        checkpoint("the greedy fallback")  # the expired parent's deadline does not apply
    expired.stop()
    with within(inner), pytest.raises(Interrupted):
        checkpoint("the greedy fallback")
    with within(Budget(None, parent=expired)), pytest.raises(Interrupted):
        checkpoint("a search")
