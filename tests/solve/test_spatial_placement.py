"""Buffer placement above the mesh (docs/spatial.md, "Buffer placement above the mesh"): model, solver, oracle.

- The model's prediction of random meshed schedules with buffers placed
  above the mesh (its family: every buffer there, anywhere there) equals
  the replay, every mode; so on random schedules built for the flush (idle
  instances below an output's buffer placed above the mesh: docs/spatial.md,
  "Buffer placement above the mesh", 3), where the rule of a keeper at its
  default position mispredicts many.
- On small meshed cases with a level above the mesh (3 levels, 2-4
  instances at L0, a strided convolution among them; 4 levels with the
  mesh in the middle) the solver's optimum is that of ``tests/brute_force_spatial.py`` (which shares no code
  with the model and enumerates the positions itself), its schedule
  replays to its prediction in every mode, and on four cases the optimum
  with positions is strictly better than with default positions only, on
  one of them also than with the output's lowest buffer above the mesh at
  its default position (the family before).
"""

from __future__ import annotations

import random
import sys
from dataclasses import replace
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
from mapsearch.schedule.schedule import Schedule, SpatialSplit  # noqa: E402
from mapsearch.sim.errors import CapacityError  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.solve import unsplit  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import SEPARATE, SHARED, Architecture, Compute, Level, Link, MeshAxis  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402
from tests.sim import spatial_helpers as sh  # noqa: E402
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
    s = place_above_mesh(random_meshed(rng), rng)
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
        s = place_above_mesh(random_meshed(rng), rng)
        placed += s.placed
    assert placed >= 25


def random_flushing(rng: random.Random) -> Schedule:
    """A meshed schedule built for the flush: a dimension ``d`` of the output tiled above the mesh into one full
    tile and a remainder, split at the mesh so that instances may idle in the remainder, the dimensions that do
    not index the output with several trips above the mesh, the output mostly kept above the mesh, and every
    buffer there at a random position (docs/spatial.md, "Buffer placement above the mesh", 3)."""
    if rng.random() < 0.6:
        wl = sh.matmul(rng.randint(3, 7), rng.randint(1, 3), rng.randint(2, 4))
    else:
        wl = sh.conv1d(rng.randint(1, 2), rng.randint(1, 2), rng.randint(3, 7), rng.randint(1, 3), rng.randint(1, 2), 1)
    out = wl.einsum.output.name
    zdims = [x for x in wl.dims if x in wl.tensor(out).dims]
    d = rng.choice([x for x in zdims if wl.extent[x] >= 3])
    depth = rng.choice([3, 4])
    meshed = {depth - 1} if depth == 3 or d in bfs.window_dims(wl) else rng.choice([{2}, {3}, {2, 3}])
    first = min(meshed)
    names = ["DRAM", "L2", "L1", "L0"][-depth:]
    reuse = [("all",), ("none",), ("input",), ("output",), (out,)]
    levels = []
    for i in range(depth):
        mesh = (MeshAxis("x", 3, rng.choice(reuse)),) if i in meshed else ()
        link = None if i == 0 else Link(Fraction(rng.choice([1, 2])), Fraction(rng.choice([1, 2])),
                                        rng.choice([SHARED, SEPARATE]))
        levels.append(sh.level(names[i], None if i == 0 else 10**6, mesh, link))
    a = sh.arch(*levels)
    E = wl.extent[d]
    cut_at = rng.randint(1, first - 1)  # the level whose d loop has one full tile and a remainder
    below, parent = [], dict(wl.extent)
    for i in range(1, depth):
        splits, cap = [], dict(parent)
        if i in meshed and parent[d] >= 2:
            part = rng.randint(max(1, -(-parent[d] // 3)), parent[d] - 1)
            splits.append(SpatialSplit(d, part, "x"))
            cap[d] = part
        tile = {}
        for x in wl.dims:
            if x == d:
                tile[x] = (E if i < cut_at else rng.randint(E // 2 + 1, E - 1) if i == cut_at
                           else cap[x] if rng.random() < 0.7 else rng.randint(1, cap[x]))
            elif x not in zdims and i <= cut_at:
                tile[x] = rng.randint(1, max(1, cap[x] - 1))
            else:
                tile[x] = rng.randint(1, cap[x])
        keep = {t for t in wl.tensor_names if i == depth - 1 or rng.random() < 0.5}
        if i < first and rng.random() < 0.8:
            keep.add(out)
        below.append((tile, rng.sample(wl.dims, len(wl.dims)), keep, splits))
        parent = tile
    return place_above_mesh(sh.schedule(wl, a, below), rng)


def _unflushed_before(enc, tensor: str, levels: tuple[int, ...], d: str):
    """The flush rule before: no keeper at a level of the mask, as if every keeper were at its default position."""
    from mapsearch.model.encoding import negate

    return enc.bool_and([negate(enc.kept[(tensor, j)]) for j in levels], f"{tensor}_unflushed_before")


@pytest.mark.parametrize("seed", range(60))
def test_the_model_predicts_the_flush_under_placed_keepers(monkeypatch, seed: int) -> None:
    s = random_flushing(random.Random(seed))
    if any(sp.dim in bfs.window_dims(s.workload) for lm in s.levels[:-1] for sp in lm.spatial):
        pytest.skip("a window dimension split above L0 (the model's family: equal parts only there)")
    assert differences(model_prediction(s, monkeypatch), bf.replay_figures(s)) == [], s.levels


def test_the_flushing_schedules_need_the_placed_keepers_rule(monkeypatch) -> None:
    """Teeth: with the rule before (every keeper read at its default position, not model/cuts.flushers)
    the model mispredicts many of the schedules above (8 of the 48 it checks; 128 of 853 over seeds 0-999)."""
    import mapsearch.model.traffic as traffic

    wrong = 0
    for seed in range(60):
        s = random_flushing(random.Random(seed))
        if any(sp.dim in bfs.window_dims(s.workload) for lm in s.levels[:-1] for sp in lm.spatial):
            continue
        with monkeypatch.context() as m:
            m.setattr(traffic, "unflushed", _unflushed_before)
            m.setattr(traffic, "flush_class", lambda enc, tensor, levels: levels)
            try:
                wrong += differences(model_prediction(s, m), bf.replay_figures(s)) != []
            except pytest.skip.Exception:
                pass
    assert wrong >= 8


def test_a_keeper_holding_the_whole_output_flushes_nothing(monkeypatch) -> None:
    """m=4 tiled 3 at L1 (pieces 3, 1), split in parts of 2 over 2 L0 instances, L1 order (n, k, m), Z kept
    at L1 (tests/solve/test_spatial_levels.py, ``test_idle_instance_under_a_changing_keeper``). At its default
    position L1's Z moves into the piece [3, 4) while instance 1 idles: its partial sum is flushed and reloaded,
    4 words down and 8 up on L1->L0. Placed outside every loop (position 0), or after n and k (which do not
    index Z or have one trip), it holds Z whole and never moves: nothing is flushed, 3 down and 7 up, the
    figures of Z bypassed at L1."""
    a = sh.arch(sh.level("L2", None), sh.level("L1", 10**6), sh.level("L0", 10**6, [MeshAxis("x", 2, ("all",))]))
    expected = {None: (4, 8), 0: (3, 7), 2: (3, 7)}
    for position, words in expected.items():
        s = sh.schedule(sh.matmul(4, 1, 2), a, [({"m": 3, "n": 1, "k": 1}, "nkm", {"Z"}),
                                                ({"m": 1, "n": 1, "k": 1}, "mnk", {"A", "B", "Z"}, [("m", 2, "x")])],
                        homes=(("B", "L1"),))
        if position is not None:
            s = replace(s, levels=(s.levels[0], replace(s.levels[1], positions=(("Z", position),)), s.levels[2]))
        replayed = bf.replay_figures(s)
        assert {t.tensor: (t.words_down, t.words_up) for t in replayed.links[1].tensors}["Z"] == words
        assert differences(model_prediction(s, monkeypatch), replayed) == []
        _every_mode(s.with_predicted(replayed))


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
    # Found by a scan (the solver with and without the output's positions): L1's Z placed after L1's n loop,
    # holding m whole (a 2x2 region), 108 clocks instead of 120.
    "matmul, 3 instances, the output placed": (matmul(2, 3, 3), arch([None, 5, 4], 2, [MeshAxis("x", 3, ("none",))],
                                                                     [None, Link(Fraction(4), Fraction(1), SHARED),
                                                                      FAST], Fraction(1, 4))),
    "strided 1-D conv, 3 instances": (Workload.from_text("conv1d_s2", "O[k,p] += I[2*p+r] * W[k,r]",
                                                         {"k": 1, "p": 7, "r": 2}),
                                      arch([None, 6, 4], 2, [MeshAxis("x", 3, ("none",))],
                                           [None, Link(Fraction(2), Fraction(1), SHARED), FAST], Fraction(1, 4))),
}


def _solve(w: Workload, a: Architecture):
    return solve(Problem(w, a, ()), options=SolveOptions(time_limit=60, workers=1, seed=0))


BETTER = {  # (optimum with positions, optimum with default positions only), both by the brute force
    "matmul, 2 instances reusing nothing": ((16, 44), (16, 46)),
    "matmul, 3 instances, a slow top link": ((80, 60), (112, 64)),
    "1-D conv, 4 instances": ((26, 40), (30, 41)),
    "matmul, 3 instances, the output placed": ((108, 84), (120, 72)),
}
BETTER_WITH_OUTPUT = {  # (optimum, optimum with the output's lowest buffer above the mesh at its default position)
    "matmul, 3 instances, the output placed": ((108, 84), (120, 72)),
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
    assert result.family_restrictions == ("buffer placement: default positions only at and below the meshed levels "
                                          "(spatial fanout)",)
    if name in BETTER_WITH_OUTPUT:
        with monkeypatch.context() as m:
            m.setattr(bfs, "OUTPUT_POSITIONS", False)
            before = bfs.brute_force_spatial(w, a)
        assert (brute.value, before.value) == BETTER_WITH_OUTPUT[name]
        out = w.einsum.output.name
        assert any(t == out for lm in result.schedule.levels for t, _ in lm.positions)
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



def test_placed_buffers_compose_per_tensor() -> None:
    """The brute force's shortcut with positions, the output's too: one replay per position with every tensor's
    buffer above the mesh there gives each placed schedule's figures, checked against a plain replay of each
    (capacity included): 5,125 schedules, 3,075 with the output placed, 1,155 that fit."""
    a = arch([None, 6, 4], 2, [MeshAxis("x", 2, ("none",))], [None, Link(Fraction(2), Fraction(1), SEPARATE), FAST])
    checked = placed_outputs = 0
    for sched, fig in bfs.all_scored(matmul(3, 2, 1), a, positions=True):
        direct = bf.evaluate_direct(sched)
        assert (fig is None) == (direct is None), sched.levels
        if fig is not None:
            assert differences(fig, direct) == [], sched.levels
        checked += 1
        placed_outputs += any(t == "Z" for lm in sched.levels for t, _ in lm.positions)
    assert (checked, placed_outputs) == (5125, 3075)


def test_placed_meshed_buffers_compose_per_tensor(monkeypatch) -> None:
    """The same shortcut with buffers placed at the meshed level too (``MESHED_POSITIONS``, docs/spatial.md
    "Buffer placement at and below the mesh"): one replay per (kept levels, positions) of a tensor gives each
    schedule's figures. 32,000 schedules (31,500 with an L0 buffer placed, 23,500 that fit); every 40th is
    checked against a plain replay (the whole run was, once: 136,000 schedules of a 2x1x2 matmul too)."""
    monkeypatch.setattr(bfs, "MESHED_POSITIONS", True)
    a = arch([None, 6, 4], 2, [MeshAxis("x", 2, ("none",))], [None, Link(Fraction(2), Fraction(1), SEPARATE), FAST])
    total = meshed = fits = 0
    for n, (sched, fig) in enumerate(bfs.all_scored(matmul(2, 1, 1), a, positions=True)):
        total += 1
        meshed += any(lm.positions for lm in sched.levels[2:])
        fits += fig is not None
        if n % 40:
            continue
        direct = bf.evaluate_direct(sched)
        assert (fig is None) == (direct is None), sched.levels
        if fig is not None:
            assert differences(fig, direct) == [], sched.levels
    assert (total, meshed, fits) == (32000, 31500, 23500)
