"""A deterministic work limit stops the search at the same point on every run, whatever the load."""

from __future__ import annotations

from pathlib import Path

from mapsearch.model.problem import Problem
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.spec.load import load_problem

ROOT = Path(__file__).resolve().parents[2]


def test_same_work_limit_same_result():
    w, arch, homes = load_problem(ROOT / "examples" / "matmul-97x193x61.yaml", ROOT / "examples" / "arch-three-level.yaml")
    options = SolveOptions(work_limit=0.05)
    first = solve(Problem(w, arch, tuple(homes.items())), options=options)
    second = solve(Problem(w, arch, tuple(homes.items())), options=options)
    assert first.schedule == second.schedule
    assert [(p.status, p.value, p.bound) for p in first.phases] == [(p.status, p.value, p.bound) for p in second.phases]
    # The words phase is cut short: the result says so, with its bound below its value.
    assert first.status == "FEASIBLE" and first.objective_bound < first.objective_value
