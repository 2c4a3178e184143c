"""The Timeloop mapping export: exact round trip for divisor tilings, loud padding otherwise."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mapsearch.report.timeloop import read_timeloop_mapping, timeloop_mapping, timeloop_yaml
from mapsearch.schedule.json_io import load_schedule
from mapsearch.schedule.schedule import Schedule
from mapsearch.spec.architecture import Architecture, Compute, Level, Link
from mapsearch.spec.workload import Workload
from schedule_builder import build_schedule

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MATMUL = "Z[m,n] += A[m,k] * B[k,n]"


def arch(*names: str, block=()) -> Architecture:
    levels = tuple(Level(n, None if i == 0 else 10**9, None if i == 0 else Link()) for i, n in enumerate(names))
    return Architecture("test", levels, Compute(tuple(block), Fraction(1)))


schedule = build_schedule


def held(s: Schedule, i: int) -> set[str]:
    return {t for t in s.workload.tensor_names if s.home(t) == i or s.keeps(t, i)}


def assert_round_trip(s: Schedule) -> dict:
    data = timeloop_mapping(s)
    assert data["warnings"] == [] or all("lives at" in w for w in data["warnings"])
    parsed = yaml.safe_load(timeloop_yaml(s))
    assert parsed == {"mapping": data["mapping"]}
    back = read_timeloop_mapping(parsed, s.workload.dims)
    assert [b["level"] for b in back] == list(s.architecture.level_names)
    for i, b in enumerate(back):
        assert b["tile"] == s.tile_extents(i)
        assert b["order"] == list(s.levels[i].order)
        assert set(b["keep"]) == held(s, i)
    return data


def test_worked_example_text():
    s = load_schedule(EXAMPLES / "worked-example-mkn.schedule.json")
    text = timeloop_yaml(s)
    assert "# WARNING" not in text
    # The L0 order is m, k, n (outer -> inner): Timeloop's permutation is innermost first.
    assert "  - target: L1\n    type: temporal\n    factors: M=2 N=2 K=2\n    permutation: NKM\n" in text
    assert "  - target: L0\n    type: bypass\n    keep: [A, B, Z]\n    bypass: []\n" in text
    assert_round_trip(s)


def test_bypass_and_three_levels_round_trip():
    w = Workload.from_text("mm", MATMUL, {"m": 8, "n": 12, "k": 6})
    s = schedule(w, arch("DRAM", "GLB", "RF"), [({"m": 4, "n": 12, "k": 3}, "kmn", "AZ"), ({"m": 2, "n": 4, "k": 1}, "nkm", "ABZ")])
    data = assert_round_trip(s)
    glb = [e for e in data["mapping"] if e["target"] == "GLB" and e["type"] == "bypass"][0]
    assert glb == {"target": "GLB", "type": "bypass", "keep": ["A", "Z"], "bypass": ["B"]}
    assert data["instance"] == {"M": 8, "N": 12, "K": 6}


def test_home_below_the_top_is_bypassed_above_it_with_a_warning():
    w = Workload.from_text("mm", MATMUL, {"m": 4, "n": 4, "k": 4})
    s = schedule(w, arch("L2", "L1", "L0"), [({"m": 4, "n": 4, "k": 2}, "mnk", ""), ({"m": 2, "n": 2, "k": 2}, "mnk", "ABZ")], homes=(("Z", "L1"),))
    data = assert_round_trip(s)
    top = [e for e in data["mapping"] if e["target"] == "L2" and e["type"] == "bypass"][0]
    assert top["bypass"] == ["Z"]
    assert any("Z lives at L1" in x for x in data["warnings"])


def test_remainders_are_padded_loudly():
    w = Workload.from_text("mm", MATMUL, {"m": 97, "n": 8, "k": 61})
    s = schedule(w, arch("L2", "L1", "L0"), [({"m": 49, "n": 8, "k": 61}, "mkn", "AZ"), ({"m": 16, "n": 4, "k": 1}, "nmk", "ABZ")])
    data = timeloop_mapping(s)
    # m: ceil(97/49) = 2 at L2, ceil(49/16) = 4 at L1, 16 at L0 -> 128.
    assert data["instance"] == {"M": 128, "N": 8, "K": 61}
    (warning,) = data["warnings"]
    assert "M 97 -> 128 (+31)" in warning
    assert "N 8" not in warning and "K 61" not in warning  # only the padded dimension is named
    assert f"{128 * 8 * 61:,} MACs instead of {97 * 8 * 61:,}" in warning
    text = timeloop_yaml(s)
    assert "# WARNING: remainder tiles" in text
    assert "factors: M=2 N=1 K=1" in text and "factors: M=16 N=4 K=1" in text
    # Read back, the tiles are the padded ones.
    back = read_timeloop_mapping(yaml.safe_load(text), w.dims)
    assert back[0]["tile"] == {"m": 128, "n": 8, "k": 61}
    assert back[1]["tile"] == {"m": 64, "n": 8, "k": 61}


def test_block_op_is_named():
    w = Workload.from_text("mm", MATMUL, {"m": 8, "n": 8, "k": 8})
    s = schedule(w, arch("L1", "L0", block=(("m", 4), ("n", 4), ("k", 4))), [({"m": 8, "n": 4, "k": 8}, "nmk", "ABZ")])
    assert "op covers a block M=4 N=4 K=4" in timeloop_yaml(s)
    assert_round_trip(s)


def test_convolution_round_trip():
    w = Workload.from_text("conv", "O[k,p] += I[c,p*2+r] * W[k,c,r]", {"k": 4, "c": 2, "p": 6, "r": 3})
    s = schedule(w, arch("L2", "L1", "L0"), [({"k": 2, "c": 2, "p": 6, "r": 3}, "kcpr", "IWO"), ({"k": 1, "c": 1, "p": 3, "r": 3}, "pkcr", "IWO")])
    data = assert_round_trip(s)
    assert data["mapping"][0]["factors"] == "K=2 P=1 C=1 R=1"


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def divisor_schedules(draw):
    w = Workload.from_text("mm", MATMUL, {d: draw(st.sampled_from([1, 2, 4, 6, 8, 12])) for d in "mnk"})
    depth = draw(st.integers(2, 4))
    a = arch(*(f"L{depth - 1 - i}" for i in range(depth)))
    parent, below = dict(w.extent), []
    for i in range(1, depth):
        tile = {d: draw(st.sampled_from(_divisors(parent[d]))) for d in w.dims}
        order = "".join(draw(st.permutations(list(w.dims))))
        keep = "".join(t for t in "ABZ" if i == depth - 1 or draw(st.booleans()))
        below.append((tile, order, keep))
        parent = tile
    return schedule(w, a, below)


@settings(max_examples=100, deadline=None)
@given(divisor_schedules())
def test_divisor_tilings_round_trip(s):
    assert_round_trip(s)


def test_spatial_splits_are_refused_not_dropped():
    import dataclasses

    import pytest

    from mapsearch.errors import MapsearchError
    from mapsearch.report.loopnest import loop_nest_code
    from mapsearch.schedule.schedule import SpatialSplit

    s = load_schedule(EXAMPLES / "worked-example-mnk.schedule.json")
    l0 = dataclasses.replace(s.levels[1], spatial=(SpatialSplit("m", 1, "x"),))
    s = dataclasses.replace(s, levels=(s.levels[0], l0))
    for export in (timeloop_mapping, loop_nest_code):
        with pytest.raises(MapsearchError, match="spatial splits yet"):
            export(s)
