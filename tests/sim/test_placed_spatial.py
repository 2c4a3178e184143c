"""Placed buffers above the mesh (docs/spatial.md, "Buffer placement above the mesh") replay alike in every mode.

With spatial splits a buffer may leave its default position only above the
outermost meshed level, to a position whose outside loops all belong to
levels above it. The event walk (``events``, ``events-data``) and the
spatial count walk (``count``, collapsed and one by one, ``data``) are
written separately and must agree; with splits of factor 1 the spatial
replay must equal the plain placed one (:mod:`mapsearch.sim.placed`).
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from fractions import Fraction

from mapsearch.errors import ScheduleError
from mapsearch.schedule.figures import differences
from mapsearch.schedule.legality import check, position_range, violations
from mapsearch.schedule.schedule import Schedule, SpatialSplit
from mapsearch.sim.errors import CapacityError
from mapsearch.sim.placed import count_placed
from mapsearch.sim.replay import replay
from mapsearch.sim.walk_spatial import count_spatial
from mapsearch.spec.architecture import SEPARATE, SHARED, Link, MeshAxis
from tests.sim.spatial_helpers import arch, conv1d, level, matmul, random_below, schedule


def _first_meshed(s: Schedule) -> int:
    """The outermost level with several instances (the depth when a mesh has one: no level is below it)."""
    return next((i for i, lv in enumerate(s.architecture.levels) if lv.instances > 1), len(s.levels))


def place_above_mesh(s: Schedule, rng: random.Random) -> Schedule:
    """``s`` with random legal positions for its buffers above the mesh (outermost level first, nested): the
    solver's family, an output's buffers too (docs/spatial.md, "Buffer placement above the mesh")."""
    D = len(s.workload.dims)
    first = _first_meshed(s)
    levels = list(s.levels)
    for t in s.workload.tensor_names:
        lowest = 0
        for i in range(1, first):
            if not s.keeps(t, i):
                continue
            p = rng.randint(lowest, (first - 1) * D)
            lowest = p
            if p != i * D:
                levels[i] = replace(levels[i], positions=tuple(sorted(levels[i].positions + ((t, p),))))
    return replace(s, levels=tuple(levels))


def place_anywhere(s: Schedule, rng: random.Random) -> Schedule:
    """``s`` with random legal positions for every buffer (outermost level first, nested): above the mesh as
    :func:`place_above_mesh`, and at and below meshed levels inside their spatial loops and outside those
    below them (docs/spatial.md, "Buffer placement at and below the mesh")."""
    levels = list(s.levels)
    for t in s.workload.tensor_names:
        lowest = 0
        for i in range(1, len(s.levels)):
            if not s.keeps(t, i):
                continue
            lo, hi = position_range(s.architecture, len(s.workload.dims), i)
            p = rng.randint(max(lo, lowest), hi)
            lowest = p
            if p != i * len(s.workload.dims):
                levels[i] = replace(levels[i], positions=tuple(sorted(levels[i].positions + ((t, p),))))
    return replace(s, levels=tuple(levels))


def _replays(s: Schedule):
    try:
        return {mode: replay(s, mode=mode) for mode in ("events", "count", "data", "events-data")}
    except CapacityError as e:
        return str(e)


def random_meshed(rng: random.Random) -> Schedule:
    """A legal schedule on 3-4 levels with a level above the mesh: one or two meshed levels of 2-3
    instances per axis, random splits (unequal parts too), keeps and reuse rules; tensors homed at the top."""
    wl = rng.choice([matmul(rng.randint(1, 5), rng.randint(1, 4), rng.randint(1, 5)),
                     conv1d(rng.randint(1, 2), rng.randint(1, 2), rng.randint(2, 5), rng.randint(1, 3),
                            rng.randint(1, 2), rng.randint(1, 2))])
    depth = rng.choice([3, 4])
    meshed = set(rng.sample(range(2, depth), rng.randint(1, depth - 2)))
    names = ["DRAM", "L2", "L1", "L0"][-depth:]
    reuse = [("all",), ("none",), ("input",), ("output",), ("A", "Z"), ("B",), ("I", "O"), ("W",)]
    levels = []
    for i in range(depth):
        mesh = tuple(MeshAxis(nm, rng.randint(2, 3), rng.choice(reuse)) for nm in ("x", "y")[:rng.randint(1, 2)]) \
            if i in meshed else ()
        link = None if i == 0 else Link(Fraction(rng.choice([1, 2])), Fraction(rng.choice([1, 2])),
                                        rng.choice([SHARED, SEPARATE]))
        levels.append(level(names[i], None if i == 0 else rng.choice([10**6, rng.randint(8, 40)]), mesh, link))
    a = arch(*levels, double=rng.random() < 0.3)
    below = random_below(rng, wl, a)
    return schedule(wl, a, below)


def _assert_modes_agree(s: Schedule, unfolded: bool = False) -> None:
    """Every replay mode gives ``s`` the same figures (or all refuse its capacity), data checked against NumPy;
    ``unfolded``: the count walk without folding repeated loop bodies too."""
    assert violations(s) == []
    got = _replays(s)
    if isinstance(got, str):
        for mode in ("events", "count"):
            with pytest.raises(CapacityError):
                replay(s, mode=mode)
        return
    count = got["count"].figures
    assert differences(count_spatial(s, one_by_one=True), count) == []
    if unfolded:
        assert differences(count_spatial(s, fold=False), count) == []
    for mode in ("events", "data", "events-data"):
        assert differences(got[mode].figures, count) == [], mode
    assert got["data"].data_ok and got["events-data"].data_ok


@pytest.mark.parametrize("seed", range(60))
def test_every_mode_agrees_on_buffers_placed_above_the_mesh(seed: int) -> None:
    rng = random.Random(seed)
    _assert_modes_agree(place_above_mesh(random_meshed(rng), rng))


@pytest.mark.parametrize("seed", range(120))
def test_every_mode_agrees_on_buffers_placed_at_and_below_the_mesh(seed: int) -> None:
    rng = random.Random(7000 + seed)
    _assert_modes_agree(place_anywhere(random_meshed(rng), rng), unfolded=True)


def _factor_one(s: Schedule) -> Schedule:
    """``s`` with a split of factor 1 (part = the parent tile) of every dim at every meshed level."""
    levels = list(s.levels)
    for i, lv in enumerate(s.architecture.levels):
        if lv.instances > 1:
            parent = s.levels[i - 1].tile_extents
            axis = lv.mesh[0].name
            levels[i] = replace(levels[i], spatial=tuple(SpatialSplit(d, parent[d], axis) for d in s.workload.dims))
    return replace(s, levels=tuple(levels))


@pytest.mark.parametrize("seed", range(30))
def test_splits_of_factor_one_replay_as_the_plain_placed_schedule(seed: int) -> None:
    rng = random.Random(seed)
    wl = matmul(rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 4))
    a = arch(level("DRAM", None), level("L2", 10**6), level("L1", 10**6), level("L0", 10**6, [MeshAxis("x", 2)]))
    below, parent = [], wl.extent
    for _ in range(3):
        tile = {d: rng.randint(1, parent[d]) for d in wl.dims}
        order = rng.sample(wl.dims, len(wl.dims))
        below.append((tile, order, {t for t in wl.tensor_names if rng.random() < 0.6}))
        parent = tile
    below[-1] = (below[-1][0], below[-1][1], set(wl.tensor_names))
    plain = place_above_mesh(schedule(wl, a, below), rng)
    split = _factor_one(plain)
    assert violations(split) == [] and split.placed == plain.placed
    want = count_placed(plain)
    for mode in ("count", "events"):
        got = replay(split, mode=mode).figures
        assert got.links == want.links and got.op_calls == want.op_calls, mode
        assert got.compute_time == want.compute_time and got.occupancy == want.occupancy, mode


def _hand_case(positions=()) -> Schedule:
    # Z[m,n] += A[m,k] * B[k,n], 2x2x2; L1 tiles m=1, n=1, k=2 (order m, n, k); two L0 instances
    # split k in parts of 1 (reduction of Z in the network), every L0 loop a single trip.
    wl = matmul(2, 2, 2)
    a = arch(level("DRAM", None), level("L1", 100), level("L0", 3, [MeshAxis("x", 2)]))
    s = schedule(wl, a, [({"m": 1, "n": 1, "k": 2}, "mnk", "AB"),
                         ({"m": 1, "n": 1, "k": 1}, "mnk", "ABZ", [("k", 1, "x")])])
    return replace(s, levels=(s.levels[0], replace(s.levels[1], positions=tuple(positions)), s.levels[2]))


@pytest.mark.parametrize("mode", ["events", "count", "data", "events-data"])
def test_a_hand_counted_placed_buffer_above_two_instances(mode: str) -> None:
    # B's L1 buffer at position 0 (or 1, outside the m loop, which does not index B) holds all of B:
    # 4 words down once instead of k2 x n1 = 2 words at each of the 4 (m, n) steps. Below it nothing
    # changes: each instance loads A[m, q] when m moves (2 x 2 = 4 words) and B[q, n] every step
    # (4 x 2 = 8); Z is reduced over the two instances, one word per step up both links.
    for positions, b_top, b_l1 in (((), 8, 2), ((("B", 0),), 4, 4), ((("B", 1),), 4, 4)):
        f = replay(_hand_case(positions), mode=mode).figures
        top = {t.tensor: (t.words_down, t.words_up) for t in f.link("DRAM->L1").tensors}
        low = {t.tensor: (t.words_down, t.words_up) for t in f.link("L1->L0").tensors}
        assert top == {"A": (4, 0), "B": (b_top, 0), "Z": (0, 4)}, positions
        assert low == {"A": (4, 0), "B": (8, 0), "Z": (0, 4)}, positions
        assert dict(f.occupancy) == {"DRAM": 12, "L1": 2 + b_l1, "L0": 3}
        assert (f.op_calls, f.busiest_calls, f.time) == (8, 4, 16)


def test_positions_outside_the_spatial_loops_of_their_level_are_refused_with_splits() -> None:
    # L0 (level 2) is meshed: its spatial loops sit at position 3, before its own loops. Z's L0 buffer at 2
    # would hold the whole L1 tile on each instance; B's L1 buffer at 4 would sit inside the split it serves.
    for bad, words in ((replace(_hand_case(), levels=_hand_case().levels[:2] + (
            replace(_hand_case().levels[2], positions=(("Z", 2),)),)), "expected 3 <= position <= 6"),
                       (_hand_case((("B", 4),)), "expected 0 <= position <= 3")):
        with pytest.raises(ScheduleError, match=words):
            check(bad)


@pytest.mark.parametrize("mode", ["events", "count", "data", "events-data"])
def test_a_hand_counted_buffer_placed_at_a_meshed_level(mode: str) -> None:
    # Z[m,n] += A[m,k] * B[k,n], 2x2x2. L1 holds everything; two L0 instances split m in parts of 1, L0 tiles
    # of 1, order (n, k, m): 4 steps per instance, A[q, k] changing at each (8 words down L1 -> L0). A's L0
    # buffer at position 3, inside the split and outside L0's loops, holds the instance's part of the L1 tile,
    # A[q, 0:2]: 2 words loaded once per instance (4 in all), 2 words of L0. B is multicast (4 words),
    # each instance stores its Z[q, n] twice (4 words up).
    wl = matmul(2, 2, 2)
    a = arch(level("DRAM", None), level("L1", 100), level("L0", 10, [MeshAxis("x", 2)]))
    base = schedule(wl, a, [({"m": 2, "n": 2, "k": 2}, "mnk", "ABZ"),
                            ({"m": 1, "n": 1, "k": 1}, "nkm", "ABZ", [("m", 1, "x")])])
    for positions, a_low, a_room in (((), 8, 1), ((("A", 3),), 4, 2)):
        s = replace(base, levels=base.levels[:2] + (replace(base.levels[2], positions=positions),))
        check(s)
        f = replay(s, mode=mode).figures
        low = {t.tensor: (t.words_down, t.words_up) for t in f.link("L1->L0").tensors}
        assert low == {"A": (a_low, 0), "B": (4, 0), "Z": (0, 4)}, positions
        assert dict(f.occupancy)["L0"] == a_room + 2
        if mode == "data" or mode == "events-data":
            assert replay(s, mode=mode).data_ok
