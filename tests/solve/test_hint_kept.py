"""A phase never ends worse than the coarse schedule it was hinted with.

CP-SAT can drop a hint it fails to complete within its limit (measured on
``tpu-v4i-like``, a 1x1 stride-2 ResNet layer: the time phase was hinted at
4,325 clocks and ended at 201,336). The coarse schedule is a schedule of the
full model, so the phase keeps it. Here the full search is made to end with
no schedule at all (a zero time limit on every full search), the worst case.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402

import mapsearch.solve.phases as phases  # noqa: E402
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


def test_a_lost_hint_keeps_the_coarse_schedule(monkeypatch):
    coarse_values = []
    real_coarse = run.coarse_solution

    def coarse(enc, options, left, *rest):
        found = real_coarse(enc, options, left, *rest)
        coarse_values.append(None if found is None else found[0])
        return found

    real_solver = phases.new_solver

    def starved(options, left):  # the full searches only (the coarse search makes its solver in coarse.py)
        solver = real_solver(options, left)
        solver.parameters.max_time_in_seconds = 0.0
        return solver

    monkeypatch.setattr(run, "coarse_solution", coarse)
    monkeypatch.setattr(phases, "new_solver", starved)
    result = run.solve(_problem(), options=SolveOptions(workers=1, seed=0))
    time_phase, words_phase = result.phases
    assert time_phase.status == "OPTIMAL"  # the coarse schedule meets the time floor: no full search
    assert len(coarse_values) == 2 and coarse_values[1] is not None
    # The words phase's full search found nothing: the phase keeps the coarse schedule, not proven.
    assert words_phase.status == "FEASIBLE" and words_phase.value == coarse_values[1]
    assert 0 < words_phase.bound < words_phase.value
    assert result.status == "FEASIBLE"
    # The kept schedule is a real one: predicted == replayed, with the phases' values.
    replayed = bf.replay_figures(result.schedule)
    assert replayed.time == result.schedule.predicted.time == time_phase.value
    assert replayed.words_total == result.words == words_phase.value
