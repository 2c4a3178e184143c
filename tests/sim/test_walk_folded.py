"""The folded walk (mapsearch/sim/walk_folded.py) counts what the tile-by-tile walk counts.

Random legal schedules of 2-4 levels: windows (stride, dilation, three
dimensions on one axis), a repeated dimension, a rank-0 output, remainder
pieces, random orders, keeps, homes, buffer positions, block ops and double
buffering. Every figure of the two walks must be equal, and a level that
overflows must overflow in both. The large schedule at the end is one the
tile-by-tile walk cannot visit (2^39 innermost tiles).
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from mapsearch.schedule.figures import differences
from mapsearch.schedule.legality import violations
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.errors import CapacityError
from mapsearch.sim.pieces import piece_tables
from mapsearch.sim.walk import EXPLICIT_TILES, count_figures, walk_figures
from mapsearch.sim.walk_folded import fold_figures, innermost_tiles
from mapsearch.spec.architecture import Architecture, Compute, Level, Link
from mapsearch.spec.workload import Workload

EINSUMS = [
    "Z[m,n] += A[m,k] * B[k,n]",
    "O[p] += I[p+r] * W[r]",
    "O[k,p] += I[c,p*2+r] * W[k,c,r]",
    "O[p] += I[p+r*2] * W[r]",
    "O[p,q] += I[p*2+r*3,q+s] * W[r,s]",
    "O[p] += I[p+r+u] * W[r,u]",
    "Z[m] += A[m,m] * B[m]",
    "Z[] += A[k] * B[k]",
    "Z[m,n] += A[m,k] * B[k]",
    "Z[b,m] += A[b,m,k] * B[k]",
]


def _random_schedule(rng: random.Random, capacities: bool = False) -> Schedule | None:
    text = rng.choice(EINSUMS)
    rhs = text.split("+=")[1] + text.split("+=")[0]
    dims = sorted({ch for ch in rhs if ch.islower()})
    w = Workload.from_text("w", text, {d: rng.randint(1, 9) for d in dims})
    depth = rng.randint(2, 4)
    names = ("L3", "L2", "L1", "L0")[-depth:]
    caps = [None] * depth
    if capacities:
        caps = [None] + sorted((rng.randint(2, 60) for _ in range(depth - 1)), reverse=True)
    lines = rng.choice(["shared", "separate"])
    levels = tuple(Level(names[i], caps[i], None if i == 0 else Link(Fraction(rng.randint(1, 3), rng.randint(1, 2)),
                                                                        Fraction(1), lines))
                   for i in range(depth))
    block = tuple((d, rng.randint(2, 3)) for d in w.dims if rng.random() < 0.25)
    a = Architecture("a", levels, Compute(block, Fraction(1)), rng.random() < 0.3)
    tiles = [dict(w.extent)]
    for _ in range(1, depth):
        tiles.append({d: rng.randint(1, tiles[-1][d]) for d in w.dims})
    home_level = {t: rng.choice(range(depth - 1)) if rng.random() < 0.2 else 0 for t in w.tensor_names}
    D = len(w.dims)
    mappings = [LevelMapping(names[0], tuple(w.extent.items()))]
    last_position = {t: 0 for t in w.tensor_names}
    for i in range(1, depth):
        order = list(w.dims)
        rng.shuffle(order)
        keep = frozenset(t for t in w.tensor_names if i > home_level[t] and rng.random() < 0.7)
        positions = []
        for t in sorted(keep):
            if rng.random() < 0.4:
                p = rng.randint(last_position[t], (depth - 1) * D)
            else:
                p = i * D
            last_position[t] = max(last_position[t], p)
            if p != i * D:
                positions.append((t, p))
        mappings.append(LevelMapping(names[i], tuple((d, tiles[i][d]) for d in w.dims), tuple(order), keep, (),
                                     tuple(positions)))
    homes = tuple((t, names[h]) for t, h in home_level.items() if h != 0)
    s = Schedule(w, a, tuple(mappings), homes)
    return s if not violations(s) else None


def _schedules(seed: int, count: int, capacities: bool = False):
    rng = random.Random(seed)
    made = 0
    while made < count:
        s = _random_schedule(rng, capacities)
        if s is not None:
            made += 1
            yield s


def _figures(s: Schedule, walk):
    try:
        return walk(s)
    except CapacityError as e:
        return f"overflow at {e.level}"  # both walks check the levels outermost first: the same level overflows first


@pytest.mark.parametrize("seed", range(8))
def test_fold_equals_the_tile_by_tile_walk(seed: int) -> None:
    placed = 0
    for s in _schedules(seed, 60):
        placed += s.placed
        folded, walked = fold_figures(s), walk_figures(s)
        assert differences(folded, walked) == [], (s, differences(folded, walked))
        tables = piece_tables(s)
        assert innermost_tiles(s) == math.prod(tables.count(len(s.levels) - 1, k) for k in range(len(s.workload.dims)))
    assert placed > 5  # the generator reaches placed buffers


@pytest.mark.parametrize("seed", range(3))
def test_fold_overflows_where_the_walk_does(seed: int) -> None:
    overflows = 0
    for s in _schedules(100 + seed, 60, capacities=True):
        folded, walked = _figures(s, fold_figures), _figures(s, walk_figures)
        if isinstance(folded, str) or isinstance(walked, str):
            assert folded == walked, (s, folded, walked)
            overflows += 1
        else:
            assert differences(folded, walked) == []
    assert overflows > 3


def test_a_matmul_too_large_to_visit_is_counted_by_the_fold() -> None:
    # 65536^3 on three levels, L1 tiles 16x256x512 (order k, n, m), L0 16x16x2 (order m, n, k):
    # 2^39 innermost tiles. Words counted by hand from the contract's rules:
    # A (m,k): an L1 tile enters at every step of the L1 loops that moves m or k (k outer, so every step):
    #   4096 * 256 * 128 tiles of 16*512 words; in L0, A's 16x2 piece changes at every L0 step (k innermost).
    e = 65536
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": e, "n": e, "k": e})
    a = Architecture("a", (Level("DRAM", None), Level("GLB", 1 << 18, Link(Fraction(1, 2), Fraction(1, 2), "shared")),
                           Level("L0", 512, Link(Fraction(1, 16), Fraction(1, 16), "separate"))), Compute((), Fraction(1, 16)))
    s = Schedule(w, a, (LevelMapping("DRAM", (("m", e), ("n", e), ("k", e))),
                        LevelMapping("GLB", (("m", 16), ("n", 256), ("k", 512)), ("k", "n", "m"), frozenset("ABZ")),
                        LevelMapping("L0", (("m", 16), ("n", 16), ("k", 2)), ("m", "n", "k"), frozenset("ABZ"))), ())
    assert violations(s) == []
    assert innermost_tiles(s) == 2 ** 39 > EXPLICIT_TILES
    f = count_figures(s)  # too many tiles to visit: the fold counts them
    steps_l1 = (e // 16) * (e // 256) * (e // 512)
    glb = {t.tensor: (t.words_down, t.words_up) for t in f.links[0].tensors}
    assert glb["A"] == (steps_l1 * 16 * 512, 0)  # m innermost of the L1 loops: A moves at every step
    assert glb["B"] == ((e // 512) * (e // 256) * 512 * 256, 0)  # B (k, n) moves when n or k moves: once per (k, n)
    # Z (m, n) moves at every step; every k-tile after the first reloads partial sums.
    assert glb["Z"] == (steps_l1 * 16 * 256 - e * e, steps_l1 * 16 * 256)
    assert f.op_calls == e ** 3
    # Each L0 step (1 x 16 x 256 pieces per L1 tile, k innermost) enters new A and B pieces; Z's (m, n) piece
    # moves with n: 16 entries per L1 tile of 16x16 words, the first entry of each piece of Z fresh.
    l0 = {t.tensor: (t.words_down, t.words_up) for t in f.links[1].tensors}
    steps_l0 = steps_l1 * 16 * 256
    assert l0["A"] == (steps_l0 * 16 * 2, 0) and l0["B"] == (steps_l0 * 2 * 16, 0)
    assert l0["Z"] == (steps_l1 * 16 * 256 - e * e, steps_l1 * 16 * 256)


def test_solve_checks_a_schedule_too_large_to_visit() -> None:
    # 2048^3 on edge-3level: the solver's schedule has more innermost tiles than the walk visits one by
    # one, so the check that every solve runs is the fold's (65536^3, 2^39 tiles, took hours before it).
    from mapsearch import api

    w = {"name": "mm", "einsum": "Z[m,n] += A[m,k] * B[k,n]", "extents": {"m": 2048, "n": 2048, "k": 2048}}
    r = api.solve(w, "edge-3level", work_limit=1, time_limit=60)
    assert innermost_tiles(r.schedule) > EXPLICIT_TILES
    assert r.mismatches == ()
    assert r.replayed.figures == r.schedule.predicted
    assert r.replayed.figures.op_calls == 2048 ** 3
