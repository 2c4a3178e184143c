"""The spatial count walk folded over repeated loop bodies (sim/spatial_fold.py) counts what the full walk counts.

The fold counts a run of loop bodies from one walked body once the walk's
state after a body is the state after the one before it, moved along the
loop. Every test here compares the folded walk with the unfolded one
(``fold=False``, every lockstep step walked) on the same schedule, with the
leaf size forced down to one cell so that every loop is folded where it can
be, not only the long ones.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings

from mapsearch.schedule.figures import differences
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim import key_set, spatial_fold
from mapsearch.sim.errors import CapacityError
from mapsearch.sim.spatial_fold import walk_folded
from mapsearch.sim.walk_spatial import SpatialWalk, count_spatial
from mapsearch.spec.architecture import SEPARATE, SHARED, Link, MeshAxis
from mapsearch.spec.workload import Workload
from tests.sim.spatial_helpers import arch, conv1d, level, matmul, random_below, schedule, spatial_schedules
from tests.sim.test_placed_spatial import place_above_mesh


def random_long(rng: random.Random) -> Schedule:
    """A legal schedule on 2-4 levels, one to three meshed, with extents up to 24 and tiles of a quarter of
    their parent or more (long loops: what the fold is for), uneven parts, windows, blocks, double buffers."""
    wl = rng.choice([matmul(rng.randint(1, 24), rng.randint(1, 12), rng.randint(1, 24)),
                     conv1d(rng.randint(1, 6), rng.randint(1, 3), rng.randint(2, 20), rng.randint(1, 4),
                            rng.randint(1, 2), rng.randint(1, 2))])
    depth = rng.choice([2, 3, 4])
    meshed = set(rng.sample(range(1, depth), rng.randint(1, depth - 1)))
    names = ["DRAM", "L2", "L1", "L0"][-depth:]
    reuse = [("all",), ("none",), ("input",), ("output",), ("A", "Z"), ("B",), ("I", "O"), ("W",)]
    levels = []
    for i in range(depth):
        mesh = tuple(MeshAxis(nm, rng.randint(2, 4), rng.choice(reuse)) for nm in ("x", "y")[:rng.randint(1, 2)]) \
            if i in meshed else ()
        link = None if i == 0 else Link(Fraction(rng.choice([1, 2])), Fraction(rng.choice([1, 2])),
                                        rng.choice([SHARED, SEPARATE]))
        levels.append(level(names[i], None if i == 0 else 10**6, mesh, link))
    block = tuple((d, rng.randint(1, 2)) for d in wl.dims if rng.random() < 0.3)
    a = arch(*levels, block=block, double=rng.random() < 0.3)
    below = random_below(rng, wl, a, shrink=True)
    s = schedule(wl, a, below)
    first = next((i for i, lv in enumerate(a.levels) if lv.instances > 1), depth)
    return place_above_mesh(s, rng) if first > 1 and rng.random() < 0.4 else s


def folded_cells(s: Schedule) -> tuple[int, int]:
    """(cells the folded walk walked, cells of the whole walk)."""
    walk = SpatialWalk(s, False, None)
    walk_folded(walk)
    return walk.cells, walk.total_cells


def agree(s: Schedule):
    """The folded walk, collapsed and one by one, equals the unfolded walk; returns the figures."""
    try:
        whole = count_spatial(s, fold=False)
    except CapacityError:
        with pytest.raises(CapacityError):
            count_spatial(s)
        return None
    assert differences(whole, count_spatial(s)) == []
    assert differences(whole, count_spatial(s, one_by_one=True)) == []
    return whole


@pytest.mark.parametrize("seed", range(40))
def test_folding_changes_no_figure(seed: int, monkeypatch) -> None:
    monkeypatch.setattr(spatial_fold, "LEAF_CELLS", 1)
    agree(random_long(random.Random(seed)))


@pytest.mark.parametrize("seed", range(40, 60))
def test_folding_with_the_output_keys_in_cells_changes_no_figure(seed: int, monkeypatch) -> None:
    """The same with every output key set keeping its coarse map of small cells (sim/key_set.py), which
    large outputs keep: the fold's box queries then read occupied cells only."""
    monkeypatch.setattr(spatial_fold, "LEAF_CELLS", 1)
    monkeypatch.setattr(key_set, "INDEXED_KEYS", 0)
    monkeypatch.setattr(key_set, "CELL_KEYS", 4)
    agree(random_long(random.Random(seed)))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(spatial_schedules())
def test_folding_changes_no_figure_on_small_schedules(s) -> None:
    old = spatial_fold.LEAF_CELLS
    spatial_fold.LEAF_CELLS = 1
    try:
        agree(s)
    finally:
        spatial_fold.LEAF_CELLS = old


def test_a_matmul_on_a_16x16_array_walks_a_fraction_of_its_steps() -> None:
    # 256^3 on a 16x16 array, m over x (inputs multicast), k over y (outputs reduced), L0 tiles of one MAC:
    # 65,536 lockstep steps of one walked instance; the fold walks 1,024 of them and adds 4,032 output keys.
    wl = matmul(256, 256, 256)
    a = arch(level("DRAM", None), level("L1", None),
             level("L0", None, [MeshAxis("x", 16, ("input",)), MeshAxis("y", 16, ("output",))]))
    s = schedule(wl, a, [({"m": 128, "n": 128, "k": 256}, "mnk", "ABZ"),
                         ({"m": 1, "n": 1, "k": 1}, "nmk", "ABZ", [("m", 8, "x"), ("k", 16, "y")])])
    f = agree(s)
    walked, total = folded_cells(s)
    assert total == 65_536 and walked <= total // 8
    # Each instance sums its 16 k of one Z word, then the 16 along y are reduced in the network: every Z
    # word goes up once.
    z = next(t for t in f.link("L1->L0").tensors if t.tensor == "Z")
    assert (z.words_down, z.words_up) == (0, 256**2)
    assert f.op_calls == 256**3


def test_a_convolution_with_windows_and_reuse_folds() -> None:
    wl = Workload.from_text("conv", "O[k,p,q] += I[c,p+r,q+s] * W[k,c,r,s]",
                            {"k": 64, "c": 32, "p": 28, "q": 28, "r": 3, "s": 3})
    a = arch(level("DRAM", None), level("L1", None),
             level("L0", None, [MeshAxis("x", 8, ("input",)), MeshAxis("y", 8, ("output",))]))
    s = schedule(wl, a, [({"k": 64, "c": 32, "p": 14, "q": 28, "r": 3, "s": 3}, "kpqcrs", "IOW"),
                         ({"k": 1, "c": 1, "p": 1, "q": 1, "r": 1, "s": 1}, "rskcpq", "IOW",
                          [("k", 8, "x"), ("c", 4, "y")])])
    agree(s)
    walked, total = folded_cells(s)
    assert total == 225_792 and walked <= total // 7
