"""Buffer placement above the mesh (docs/spatial.md, "Buffer placement above the mesh"): model, solver, oracle.

- The model's prediction of random meshed schedules with buffers placed
  above the mesh (its family: inputs anywhere there, an output's buffer
  when a lower one above the mesh keeps it) equals the replay, every mode.
- On small meshed cases with a level above the mesh (3 levels, 2-4
  instances at L0; 4 levels with the mesh in the middle) the solver's
  optimum is that of ``tests/brute_force_spatial.py`` (which shares no code
  with the model and enumerates the positions itself), its schedule
  replays to its prediction in every mode, and on one case the optimum
  with positions is strictly better than with default positions only.
"""

from __future__ import annotations

import random
import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402
import brute_force_spatial as bfs  # noqa: E402
import brute_force_wide as bw  # noqa: E402

from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.schedule.schedule import Schedule  # noqa: E402
from mapsearch.sim.errors import CapacityError  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.solve import unsplit  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import SHARED, Architecture, Compute, Level, Link, MeshAxis  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402
from tests.sim.test_placed_spatial import place_above_mesh, random_meshed  # noqa: E402
from tests.solve.test_spatial_levels import model_prediction  # noqa: E402

MODES = ("events", "count", "data", "events-data")


def _every_mode(s: Schedule) -> None:
    for mode in MODES:
        got = replay(s, mode=mode)
        assert differences(s.predicted, got.figures) == [], (mode, s.levels)
        assert got.data_ok in (None, True), mode


@pytest.mark.parametrize("seed", range(40))
def test_the_model_predicts_buffers_placed_above_the_mesh(monkeypatch, seed: int) -> None:
    rng = random.Random(seed)
    s = place_above_mesh(random_meshed(rng), rng, family=True)
    if any(sp.dim in bfs.window_dims(s.workload) for lm in s.levels[:-1] for sp in lm.spatial):
        pytest.skip("a window dimension split above L0 (the model's family: equal parts only there)")
    try:
        replayed = bf.replay_figures(s)
    except CapacityError:
        pytest.skip("overflows")
    assert differences(model_prediction(s, monkeypatch), replayed) == [], s.levels


def test_the_random_schedules_place_buffers() -> None:
    placed = 0
    for seed in range(40):
        rng = random.Random(seed)
        s = place_above_mesh(random_meshed(rng), rng, family=True)
        placed += s.placed
    assert placed >= 25


def matmul(m: int, n: int, k: int) -> Workload:
    return Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": m, "n": n, "k": k})


def conv1d(k: int, p: int, r: int) -> Workload:
    return Workload.from_text("conv1d", "O[k,p] += I[p+r] * W[k,r]", {"k": k, "p": p, "r": r})


def arch(capacities, mesh_at: int, mesh, links, clocks=Fraction(1)) -> Architecture:
    names = ("L3", "L2", "L1", "L0")[-len(capacities):]
    levels = tuple(Level(names[i], cap, None if i == 0 else links[i], mesh=tuple(mesh) if i == mesh_at else ())
                   for i, cap in enumerate(capacities))
    return Architecture("arch", levels, Compute((), Fraction(clocks)), False)


ONE = Link(Fraction(1), Fraction(1), SHARED)
FAST = Link(Fraction(1, 4), Fraction(1, 4), SHARED)
CASES = {
    # Found by a scan (the solver with and without positions), each better with positions: 3x2x2 in words
    # (44 instead of 46 at 16 clocks), 2x4x2 and the conv in time (80 instead of 112 clocks, 26 instead of 30).
    "matmul, 2 instances reusing nothing": (matmul(3, 2, 2), arch([None, 8, 4], 2, [MeshAxis("x", 2, ("none",))],
                                                                  [None, ONE, FAST], Fraction(1, 4))),
    "matmul, 3 instances, a slow top link": (matmul(2, 4, 2), arch([None, 5, 4], 2, [MeshAxis("x", 3, ("none",))],
                                                                   [None, Link(Fraction(4), Fraction(4), SHARED), FAST],
                                                                   Fraction(1, 4))),
    "1-D conv, 4 instances": (conv1d(1, 4, 3), arch([None, 8, 4], 2, [MeshAxis("x", 4, ("none",))],
                                                    [None, Link(Fraction(2), Fraction(4), SHARED), FAST],
                                                    Fraction(1, 4))),
    "matmul, 2x2 instances": (matmul(2, 2, 3), arch([None, 7, 4], 2, [MeshAxis("x", 2, ("input",)),
                                                                      MeshAxis("y", 2, ("output",))],
                                                    [None, Link(Fraction(2), Fraction(1), SHARED), FAST])),
    "matmul, the mesh in the middle of 4 levels": (matmul(2, 1, 2), arch([None, 5, 4, 3], 2, [MeshAxis("x", 2, ("all",))],
                                                                         [None, ONE, FAST, FAST], Fraction(1, 4))),
}


def _solve(w: Workload, a: Architecture):
    return solve(Problem(w, a, ()), options=SolveOptions(time_limit=60, workers=1, seed=0))


BETTER = {  # (optimum with positions, optimum with default positions only), both by the brute force
    "matmul, 2 instances reusing nothing": ((16, 44), (16, 46)),
    "matmul, 3 instances, a slow top link": ((80, 60), (112, 64)),
    "1-D conv, 4 instances": ((26, 40), (30, 41)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_solver_matches_the_brute_force_with_positions(monkeypatch, name: str) -> None:
    """Equal optima, the solver's schedule replayed in every mode; where listed in ``BETTER``, the optimum with
    default positions only is worse (so these cases need the positions)."""
    w, a = CASES[name]
    brute = bfs.brute_force_spatial(w, a)
    with monkeypatch.context() as m:  # the meshed family alone (solve/unsplit.py adds the unsplit schedules)
        m.setattr(unsplit, "applies", lambda *_: False)
        result = _solve(w, a)
    assert result.proven and tuple(ph.value for ph in result.phases) == brute.value, (result.schedule.levels,
                                                                                      brute.schedule.levels)
    _every_mode(result.schedule)
    assert differences(brute.figures, bf.replay_figures(brute.schedule)) == []
    out = w.einsum.output.name
    assert result.family_restrictions == ("buffer placement: default positions only at and below the meshed levels "
                                          f"and for {out}'s lowest buffer above them (spatial fanout)",)
    if name in BETTER:
        monkeypatch.setattr(bfs, "POSITIONS", False)
        default = bfs.brute_force_spatial(w, a)
        assert (brute.value, default.value) == BETTER[name]
        assert brute.schedule.placed and result.schedule.placed


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_solver_matches_the_better_of_split_and_unsplit(name: str) -> None:
    """With the schedules that split nothing (solve/unsplit.py): the better of the spatial family's optimum and
    the mesh-free whole family's (every position), replayed exactly."""
    w, a = CASES[name]
    meshed = bfs.brute_force_spatial(w, a).value
    whole = bw.brute_force(w, unsplit.unsplit_problem(Problem(w, a, ())).architecture).value
    result = _solve(w, a)
    assert result.proven and tuple(ph.value for ph in result.phases) == min(tuple(meshed), tuple(whole))
    if tuple(meshed) != tuple(whole):  # only a split schedule reaches the meshed optimum when it is the better
        assert any(lm.spatial for lm in result.schedule.levels) == (tuple(meshed) < tuple(whole))
    _every_mode(result.schedule)

