"""Instances that do the same work are walked once (issue 16): the collapsed walk equals the one-by-one walk."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mapsearch.schedule.figures import differences
from mapsearch.sim.spatial import Layout
from mapsearch.sim.walk_spatial import count_spatial
from mapsearch.spec.architecture import MeshAxis
from tests.sim.spatial_helpers import arch, conv1d, level, matmul, schedule, spatial_schedules


def both(s):
    whole, collapsed = count_spatial(s, one_by_one=True), count_spatial(s)
    assert differences(whole, collapsed) == []
    return collapsed


def test_classes_of_an_uneven_split() -> None:
    # m = 100 tiled by 37 at L1 (pieces 37, 37, 26), split at L0 in parts of 7 (factor 6 of 37):
    # digit q gets min(7, x - 7q) of x in {26, 37}: q 0..2 -> (7, 7); q 3 -> (5, 7); q 4 -> (0, 7); q 5 -> (0, 2).
    wl = matmul(100, 4, 4)
    a = arch(level("DRAM", None), level("L1", None), level("L0", None, [MeshAxis("x", 8)]))
    s = schedule(wl, a, [({"m": 37, "n": 4, "k": 4}, "mnk", "ABZ"), ({"m": 1, "n": 1, "k": 4}, "mnk", "ABZ", [("m", 7, "x")])])
    lay = Layout(s, collapse=True)
    assert lay.count[2] == 4
    assert lay.digits[2][:, 0].tolist() == [0, 3, 4, 5]
    assert lay.mult[2][:, 0].tolist() == [3, 1, 1, 1]
    assert Layout(s).count[2] == 6
    f = both(s)
    assert f.op_calls == 100 * 4 * 4 and f.compute_instances == 8


def test_a_16x16_array_is_walked_as_a_few_instances() -> None:
    # 64x64x64 on a 16x16 array (m over x may reuse inputs, k over y the output), parts of 4:
    # every digit does the same work: one walked instance for 256.
    wl = matmul(64, 64, 64)
    mesh = [MeshAxis("x", 16, ("input",)), MeshAxis("y", 16, ("output",))]
    a = arch(level("L1", None), level("L0", 64, mesh))
    s = schedule(wl, a, [({"m": 4, "n": 1, "k": 4}, "nmk", "ABZ", [("m", 4, "x"), ("k", 4, "y")])])
    assert Layout(s, collapse=True).count[1] == 1
    f = both(s)
    # A: each instance loads its own 4x4 once: 4,096. B (k4 x n1) per step, multicast along x:
    # 16 k-groups x 64 n-steps x 4 = 4,096. Z (m4 x n1) reduced along y: 16 x 64 x 4 = 4,096 up.
    tensors = {t.tensor: (t.words_down, t.words_up) for t in f.link("L1->L0").tensors}
    assert tensors == {"A": (4096, 0), "B": (4096, 0), "Z": (0, 4096)}
    # 64 steps of 4 x 1 x 4 scalar calls per instance: 1,024 = 64^3 / 256.
    assert (f.op_calls, f.busiest_calls, f.array_utilization) == (64**3, 1024, 1)


def test_uneven_parts_with_reloads_and_flushes() -> None:
    # 7x3x13 matmul on a 5x3 mesh; k = 13 in parts of 3 (3,3,3,3,1) reduced along x; m in parts of 3 along y.
    wl = matmul(7, 3, 13)
    mesh = [MeshAxis("x", 5, ("output",)), MeshAxis("y", 3, ("input",))]
    a = arch(level("DRAM", None), level("L1", 200), level("L0", 40, mesh))
    s = schedule(wl, a, [({"m": 7, "n": 2, "k": 13}, "nkm", "ABZ"),
                         ({"m": 2, "n": 1, "k": 1}, "knm", "ABZ", [("k", 3, "x"), ("m", 3, "y")])])
    both(s)


wide_axes = st.integers(1, 6)


@st.composite
def wide_schedules(draw):
    """Random legal spatial schedules with wider meshes, so that classes have several digits."""
    wl = draw(st.one_of(st.builds(matmul, st.integers(1, 12), st.integers(1, 6), st.integers(1, 12)),
                        st.builds(conv1d, st.integers(1, 4), st.integers(1, 2), st.integers(1, 8), st.integers(1, 3),
                                  st.integers(1, 2), st.integers(1, 2))))
    reuse = st.sampled_from([("all",), ("none",), ("input",), ("output",), ("A", "Z"), ("B",), ("I", "O"), ("W",)])
    mesh = [MeshAxis("x", draw(wide_axes), draw(reuse)), MeshAxis("y", draw(wide_axes), draw(reuse))]
    a = arch(level("DRAM", None), level("L1", None), level("L0", None, mesh))
    tile1 = {d: draw(st.integers(1, e)) for d, e in wl.extent.items()}
    splits, used, cap = [], {"x": 1, "y": 1}, dict(tile1)
    for d in draw(st.permutations(wl.dims)):
        if not draw(st.booleans()):
            continue
        part = draw(st.integers(1, tile1[d]))
        factor = -(-tile1[d] // part)
        options = [ax.name for ax in mesh if used[ax.name] * factor <= ax.size]
        if options:
            ax = draw(st.sampled_from(options))
            used[ax] *= factor
            splits.append((d, part, ax))
            cap[d] = part
    tile0 = {d: draw(st.integers(1, cap[d])) for d in wl.dims}
    keep1 = {t for t in wl.tensor_names if draw(st.booleans())}
    return schedule(wl, a, [(tile1, draw(st.permutations(wl.dims)), keep1),
                            (tile0, draw(st.permutations(wl.dims)), set(wl.tensor_names), splits)])


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(wide_schedules())
def test_collapsed_equals_one_by_one_on_wide_meshes(s) -> None:
    both(s)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(spatial_schedules())
def test_collapsed_equals_one_by_one_on_random_spatial_schedules(s) -> None:
    both(s)
