"""Spatial fanouts in the replay (docs/spatial.md): hand-derived figures, and events == count == data on random schedules."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from mapsearch.schedule.figures import differences
from mapsearch.sim.data import replay_data
from mapsearch.sim.errors import CapacityError
from mapsearch.sim.events import replay_events, replay_events_data
from mapsearch.sim.replay import replay
from mapsearch.sim.walk import count_figures
from mapsearch.spec.architecture import SEPARATE, Link, MeshAxis
from tests.sim.spatial_helpers import arch, level, matmul, schedule, spatial_schedules


def words(figures, link: str) -> dict[str, tuple[int, int]]:
    return {t.tensor: (t.words_down, t.words_up) for t in figures.link(link).tensors}


def all_modes(s):
    """Figures of the three modes (they must agree) and the data checks."""
    e = replay_events_data(s)
    c = count_figures(s)
    d = replay_data(s)
    assert differences(e.figures, c) == []
    assert differences(d.figures, c) == []
    assert e.data_ok and d.data_ok
    return e.figures


def two_level(wl, mesh, tile, order, spatial, capacity=100):
    a = arch(level("L1", None), level("L0", capacity, mesh))
    return schedule(wl, a, [(tile, order, "ABZ", spatial)])


# ---------------------------------------------------------------- hand-derived
@pytest.mark.parametrize("reuse, b_words, link_time", [(("none",), 32, 112), (("all",), 16, 96)])
def test_rows_split_over_two_instances_multicast(reuse, b_words, link_time) -> None:
    # 4x4x4 matmul, L0 = 2 instances, m split in parts of 2; L0 tile m2 n1 k1, order m n k.
    # Per instance: 16 steps (n x k). A (2 words) changes every step: 2 x 16 x 2 = 64, never
    # shared (m indexes A). B (1 word) changes every step: 16 per instance, shared by both
    # instances when the axis may reuse it (m does not index B): 32 or 16. Z (2 words)
    # changes with n: 4 x 2 per instance = 16 up.
    s = two_level(matmul(4, 4, 4), [MeshAxis("x", 2, reuse)], {"m": 2, "n": 1, "k": 1}, "mnk", [("m", 2, "x")])
    f = all_modes(s)
    assert words(f, "L1->L0") == {"A": (64, 0), "B": (b_words, 0), "Z": (0, 16)}
    assert f.link("L1->L0").time == link_time
    # Each instance does 32 of the 64 calls in lockstep: compute time halves (64 -> 32).
    assert (f.op_calls, f.busiest_calls, f.compute_time, f.compute_instances) == (64, 32, 32, 2)
    assert f.array_utilization == 1
    assert f.occupancy == (("L1", 48), ("L0", 5))


def test_seven_rows_over_four_instances() -> None:
    # m = 7 in parts of 2 -> parts 2, 2, 2, 1: the fourth instance idles every second step.
    s = two_level(matmul(7, 1, 1), [MeshAxis("x", 4)], {"m": 1, "n": 1, "k": 1}, "mnk", [("m", 2, "x")])
    f = all_modes(s)
    assert (f.op_calls, f.busiest_calls, f.compute_time, f.compute_instances) == (7, 2, 2, 4)
    assert f.array_utilization == Fraction(7, 8)
    # B (one word) is multicast to all four once; A and Z: one word per row.
    assert words(f, "L1->L0") == {"A": (7, 0), "B": (1, 0), "Z": (0, 7)}


@pytest.mark.parametrize("reuse, z_up", [(("none",), 8), (("output",), 4)])
def test_reduction_split_with_and_without_in_network_reduction(reuse, z_up) -> None:
    # 2x2x4 matmul, k split in parts of 2 over 2 instances; L0 tile m2 n2 k1. Each instance
    # holds the one Z tile (4 words) and stores it at the end: 8 words up, or 4 when the
    # axis may reuse the output (reduced on the way up). A, B: 2 words x 2 steps x 2 instances.
    s = two_level(matmul(2, 2, 4), [MeshAxis("x", 2, reuse)], {"m": 2, "n": 2, "k": 1}, "mnk", [("k", 2, "x")])
    f = all_modes(s)
    assert words(f, "L1->L0") == {"A": (8, 0), "B": (8, 0), "Z": (0, z_up)}
    assert (f.op_calls, f.busiest_calls) == (16, 8)


def test_reduction_split_reloads_partial_sums_into_one_instance() -> None:
    # 2x2x4 matmul, k split in parts of 2; L0 tile m1 n2 k1, order k m n: each instance
    # visits Z rows m0, m1 for its first k, then again for its second k (reloads).
    # Reduced along x: every store is one crossing for the pair (2 words x 4 steps = 8 up);
    # the 2 reloads of the second k go to instance 0 only (2 words each = 4 down).
    for reuse, z in ((("all",), (4, 8)), (("none",), (8, 16))):
        s = two_level(matmul(2, 2, 4), [MeshAxis("x", 2, reuse)], {"m": 1, "n": 2, "k": 1}, "kmn", [("k", 2, "x")])
        f = all_modes(s)
        assert words(f, "L1->L0")["Z"] == z


def test_two_by_two_mesh_with_two_splits() -> None:
    # 4x4x4 matmul on a 2x2 mesh: m in parts of 2 along x (may reuse inputs), k in parts of 2
    # along y (may reuse the output); L0 tile m2 n1 k2, order n m k: 4 steps per instance.
    # A (m2 x k2) is loaded once per instance: 16. B (k2 x n1, 2 words) each step, shared
    # along x: 2 k-groups x 4 steps x 2 = 16. Z (m2 x n1) each step, reduced along y:
    # 2 m-groups x 4 x 2 = 16 up.
    mesh = [MeshAxis("x", 2, ("input",)), MeshAxis("y", 2, ("output",))]
    s = two_level(matmul(4, 4, 4), mesh, {"m": 2, "n": 1, "k": 2}, "nmk", [("m", 2, "x"), ("k", 2, "y")])
    f = all_modes(s)
    assert words(f, "L1->L0") == {"A": (16, 0), "B": (16, 0), "Z": (0, 16)}
    assert (f.op_calls, f.busiest_calls, f.compute_instances, f.array_utilization) == (64, 16, 4, 1)


@pytest.mark.parametrize("reuse, a_down", [(("none",), 32), (("all",), 16)])
def test_meshed_middle_level_link_time_is_the_largest_copy(reuse, a_down) -> None:
    # DRAM -> L1 (2 instances, n = 3 split in parts of 2: parts 2 and 1) -> L0 (one per L1
    # instance). L1 tile m4 n2 k4; L0 tile m2 n1 k2, order m n k; everything kept.
    # L1 -> L0, copy 0 (n 0..1): 8 steps; A 8 x 4 = 32, B 8 x 2 = 16, Z 4 regions x 2 = 8: 56.
    # copy 1 (n 2): active 4 of the 8 steps; A 16, B 8, Z 4: 28. Time 56 = max, words 84 = sum.
    # DRAM -> L1: A whole (16) per instance unless multicast, B 8 + 4, Z 8 + 4 up.
    wl = matmul(4, 3, 4)
    a = arch(level("DRAM", None), level("L1", 1000, [MeshAxis("x", 2, reuse)]), level("L0", 100))
    s = schedule(
        wl, a, [({"m": 4, "n": 2, "k": 4}, "mnk", "ABZ", [("n", 2, "x")]), ({"m": 2, "n": 1, "k": 2}, "mnk", "ABZ")]
    )
    f = all_modes(s)
    assert words(f, "L1->L0") == {"A": (48, 0), "B": (24, 0), "Z": (0, 12)}
    assert (f.link("L1->L0").words, f.link("L1->L0").time) == (84, 56)
    assert words(f, "DRAM->L1") == {"A": (a_down, 0), "B": (12, 0), "Z": (0, 12)}
    assert (f.op_calls, f.busiest_calls, f.compute_instances, f.array_utilization) == (48, 32, 2, Fraction(3, 4))


def test_capacity_is_per_instance() -> None:
    s = two_level(matmul(4, 4, 4), [MeshAxis("x", 2)], {"m": 2, "n": 1, "k": 1}, "mnk", [("m", 2, "x")], capacity=4)
    for run in (replay_events, lambda s: replay(s, mode="count")):
        with pytest.raises(CapacityError):
            run(s)
    s = two_level(matmul(4, 4, 4), [MeshAxis("x", 2)], {"m": 2, "n": 1, "k": 1}, "mnk", [("m", 2, "x")], capacity=5)
    assert replay(s, mode="count").figures.occupancy[-1] == ("L0", 5)


def test_unused_instances_lower_the_array_utilization_only() -> None:
    # A 4-instance mesh with no split: one instance works, the figures are the plain ones.
    wl = matmul(4, 4, 4)
    plain = two_level(wl, [], {"m": 2, "n": 2, "k": 2}, "mnk", [])
    meshed = two_level(wl, [MeshAxis("x", 4)], {"m": 2, "n": 2, "k": 2}, "mnk", [])
    for mode in ("events", "count", "data"):
        p, m = replay(plain, mode=mode).figures, replay(meshed, mode=mode).figures
        assert (m.links, m.op_calls, m.compute_time, m.occupancy) == (p.links, p.op_calls, p.compute_time, p.occupancy)
        assert (p.compute_instances, p.busiest_calls, m.compute_instances, m.array_utilization) == (1, 64, 4, Fraction(1, 4))


def test_separate_lines_take_the_largest_copy_per_direction() -> None:
    link = Link(Fraction(1), Fraction(2), SEPARATE)
    wl = matmul(4, 3, 4)
    a = arch(level("DRAM", None), level("L1", 1000, [MeshAxis("x", 2)], link), level("L0", 100, (), link))
    s = schedule(
        wl, a, [({"m": 4, "n": 2, "k": 4}, "mnk", "ABZ", [("n", 2, "x")]), ({"m": 2, "n": 1, "k": 2}, "mnk", "ABZ")]
    )
    f = all_modes(s)
    # copy 0: down 48, up 8 x 2 = 16 -> 48; copy 1: down 24, up 8 -> 24.
    assert f.link("L1->L0").time == 48


# ---------------------------------------------------------------- properties
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(spatial_schedules())
def test_events_count_and_data_agree_on_random_spatial_schedules(s) -> None:
    try:
        e = replay_events_data(s)
    except CapacityError:  # unbounded levels here: never
        raise
    c = count_figures(s)
    assert differences(e.figures, c) == []
    assert e.data_ok, e.max_abs_error
    d = replay_data(s)
    assert d.data_ok, d.max_abs_error
    assert differences(d.figures, c) == []
    assert c.op_calls * c.block_macs >= c.macs
    assert c.busiest_calls * c.compute_instances >= c.op_calls


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(spatial_schedules())
def test_walk_chunks_do_not_change_the_count(s) -> None:
    import mapsearch.sim.walk_spatial as ws

    whole = count_figures(s)
    old = ws.CHUNK_CELLS
    ws.CHUNK_CELLS = 1
    try:
        assert differences(whole, count_figures(s)) == []
    finally:
        ws.CHUNK_CELLS = old


def test_data_mode_equals_numpy_on_a_conv() -> None:
    from tests.sim.spatial_helpers import conv1d

    wl = conv1d(3, 2, 5, 3, 2, 1)
    a = arch(level("L1", None), level("L0", None, [MeshAxis("x", 3, ("W",)), MeshAxis("y", 2, ("output",))]))
    s = schedule(wl, a, [({"k": 1, "c": 1, "p": 2, "r": 1}, "kcpr", "IWO", [("k", 1, "x"), ("r", 2, "y")])])
    e, d = replay_events_data(s, seed=3), replay_data(s, seed=3)
    assert e.data_ok and d.data_ok
    assert differences(e.figures, d.figures) == []
    assert np.isfinite(d.max_abs_error)
