"""A phase never ends worse than the coarse schedule it was hinted with.

CP-SAT can drop a hint it fails to complete within its limit (measured on
``tpu-v4i-like``, a 1x1 stride-2 ResNet layer: the time phase was hinted at
4,325 clocks and ended at 201,336). The coarse schedule is a schedule of the
full model, so the phase keeps it. Here the full search is made to end with
no schedule at all (a zero time limit on every full search), the worst case.

The probe after a coarse search (mapsearch/solve/coarse.py): when the
coarse search ends without proving the coarse model's optimum, a probe
searches the coarse model with the objective held lower: at the floor in
the time phase (a schedule found there is optimal, the floor being
proven), 9/10 of the way from the floor to the coarse value in the words
phase. A probe that finds nothing leaves the coarse schedule, and no bound
follows from it. Below, the coarse search is starved (a zero time limit,
or stopped at its first schedule) so that the probe has work to do.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

from ortools.sat.python import cp_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402

import mapsearch.solve.coarse as coarse  # noqa: E402
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


def test_the_probe_finds_a_schedule_at_a_reachable_floor_and_none_below_the_optimum():
    model = cp_model.CpModel()
    x, y = model.new_int_var(0, 10, "x"), model.new_int_var(0, 10, "y")
    model.add(x + 2 * y >= 7)
    model.minimize(3 * x + 4 * y + 5)  # optimum 3*1 + 4*3 + 5 = 20
    solver = cp_model.CpSolver()
    found = coarse.probe(model, 20, solver)
    assert found is not None and found[0] == 20 and 3 * solver.value(x) + 4 * solver.value(y) + 5 == 20
    assert coarse.probe(model, 19, cp_model.CpSolver()) is None
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
    assert searched.count("probe") == 1  # the time phase's (the words phase's coarse search proves its optimum)
    # The probe's schedule meets the proven floor: the phase is OPTIMAL at once, at the reference's optimum.
    assert time_phase.status == "OPTIMAL" and time_phase.start_value == time_phase.start_bound == time_phase.value
    assert time_phase.value == reference.phases[0].value
    assert result.status == reference.status == "OPTIMAL" and result.words == reference.words
    replayed = bf.replay_figures(result.schedule)
    assert replayed.time == result.time and replayed.words_total == result.words


def test_probe_target():
    # The time phase: the floor.
    assert coarse.probe_target("time", 120, 100) == 100 and coarse.probe_target("time", None, 100) == 100
    assert coarse.probe_target("time", 100, 100) is None and coarse.probe_target("time", 120, None) is None
    # The words phase: 9/10 of the way from the floor (0 where none is known) to the best value known.
    assert coarse.probe_target("words", 200, 100) == 190 and coarse.probe_target("words", 200, None) == 180
    assert coarse.probe_target("words", 101, 100) == 100  # at the floor, still below the value
    assert coarse.probe_target("words", None, 100) is None and coarse.probe_target("words", 100, 100) is None
    assert coarse.probe_target("energy", 200, 100) is None


def test_a_words_probe_below_a_first_schedule_keeps_the_better_one(monkeypatch):
    reference = run.solve(_problem(), options=SolveOptions(workers=1, seed=0))
    real_search, real_probe = coarse.search, coarse.probe
    firsts, probes = [], []

    def first_only(solver, model, phase="search", *rest):
        if phase == "coarse search":
            solver.parameters.stop_after_first_solution = True
        status = real_search(solver, model, phase, *rest)
        if phase == "coarse search":
            firsts.append(int(round(solver.objective_value)) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None)
        return status

    def recorded(model, target, solver):
        found = real_probe(model, target, solver)
        probes.append((len(firsts), target, None if found is None else found[0]))  # 1: time phase, 2: words
        return found

    monkeypatch.setattr(coarse, "search", first_only)
    monkeypatch.setattr(coarse, "probe", recorded)
    result = run.solve(_problem(), options=SolveOptions(workers=1, seed=0))
    words = result.phases[1]
    assert len(firsts) == 2 and words.start_bound is not None
    floor = int(words.start_bound)
    (target, probed), = [(t, v) for phase, t, v in probes if phase == 2]
    assert target == floor + (firsts[1] - floor) * 9 // 10 < firsts[1]
    # The probe found a better schedule than the first (77,632 words, then 22,560), and the phase starts from it.
    assert probed is not None and probed < firsts[1] and words.start_value == probed
    assert result.status == reference.status == "OPTIMAL" and result.words == reference.words
    assert result.time == reference.time
    replayed = bf.replay_figures(result.schedule)
    assert replayed.time == result.time and replayed.words_total == result.words


def test_a_phase_with_a_coarse_schedule_and_no_time_left_starts_no_search(monkeypatch):
    """The words phase's coarse search ends exactly at the time limit: the phase keeps its schedule, FEASIBLE,
    and starts no full search (one at a limit of 0 still loads the model, seconds past the limit on large ones)."""
    import time as clock

    import mapsearch.budget as budget

    real_coarse, real_solver = run.coarse_solution, phases.new_solver
    full_searches = []

    def coarse_to_the_limit(enc, options, left, share, phase, *rest):
        found = real_coarse(enc, options, left, share, phase, *rest)
        if phase == "words":
            clock.sleep(budget.current().left() + 0.01)
        return found

    def counted(options, left):
        full_searches.append(left)
        return real_solver(options, left)

    monkeypatch.setattr(run, "coarse_solution", coarse_to_the_limit)
    monkeypatch.setattr(phases, "new_solver", counted)
    # The greedy fallback, a separate step past the limit that solves its own one-schedule model after a
    # FEASIBLE end (solve/greedy_start.py, tests/solve/test_greedy.py), is not the phase's search counted here.
    monkeypatch.setattr(run, "fallback_applies", lambda problem, options: False)
    result = run.solve(_problem(), options=SolveOptions(workers=1, seed=0, time_limit=3.0))
    time_phase, words_phase = result.phases
    assert time_phase.status == "OPTIMAL"  # its coarse schedule meets the floor: no full search either
    assert full_searches == []
    assert words_phase.status == "FEASIBLE" and words_phase.value == words_phase.start_value
    assert words_phase.bound == min(words_phase.start_bound, words_phase.value)
    replayed = bf.replay_figures(result.schedule)
    assert replayed.words_total == result.words == words_phase.value
