"""The time phase's probe at its floor (mapsearch/solve/coarse.py).

When the coarse search ends above the time floor without proving the coarse
model's optimum, a probe searches the coarse model with the objective held
at the floor. A schedule it finds is optimal (the floor is proven); one it
does not find leaves the coarse schedule, and no bound follows from it.
Here the coarse search is starved (a zero time limit) so that only the
probe can give the phase its first schedule.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

from ortools.sat.python import cp_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402

import mapsearch.solve.coarse as coarse  # noqa: E402
import mapsearch.solve.run as run  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.spec.architecture import Architecture, Level, Link  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402


def _problem() -> Problem:
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 48, "n": 40, "k": 36})
    arch = Architecture("3L", (Level("L2", None), Level("L1", 2048, Link(Fraction(4), Fraction(4))),
                               Level("L0", 96, Link())))
    return Problem(w, arch)


def test_the_probe_finds_a_schedule_at_a_reachable_floor_and_none_below_the_optimum():
    model = cp_model.CpModel()
    x, y = model.new_int_var(0, 10, "x"), model.new_int_var(0, 10, "y")
    model.add(x + 2 * y >= 7)
    model.minimize(3 * x + 4 * y + 5)  # optimum 3*1 + 4*3 + 5 = 20
    solver = cp_model.CpSolver()
    found = coarse.floor_probe(model, 20, solver)
    assert found is not None and found[0] == 20 and 3 * solver.value(x) + 4 * solver.value(y) + 5 == 20
    assert coarse.floor_probe(model, 19, cp_model.CpSolver()) is None
    assert len(model.proto.constraints) == 1  # the probe searched a copy


def test_a_starved_coarse_search_leaves_the_time_phase_to_the_probe(monkeypatch):
    reference = run.solve(_problem(), options=SolveOptions(workers=1, seed=0))
    searched = []
    real_search = coarse.search

    def starve_coarse(solver, model, phase="search", *rest):
        if phase == "coarse search":
            solver.parameters.max_time_in_seconds = 0.0
        searched.append(phase)
        return real_search(solver, model, phase, *rest)

    monkeypatch.setattr(coarse, "search", starve_coarse)
    result = run.solve(_problem(), options=SolveOptions(workers=1, seed=0))
    time_phase = result.phases[0]
    assert searched.count("probe at the floor") == 1  # the time phase only: words floors are rarely reached
    # The probe's schedule meets the proven floor: the phase is OPTIMAL at once, at the reference's optimum.
    assert time_phase.status == "OPTIMAL" and time_phase.start_value == time_phase.start_bound == time_phase.value
    assert time_phase.value == reference.phases[0].value
    assert result.status == reference.status == "OPTIMAL" and result.words == reference.words
    replayed = bf.replay_figures(result.schedule)
    assert replayed.time == result.time and replayed.words_total == result.words
