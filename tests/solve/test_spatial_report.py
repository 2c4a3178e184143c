"""The solve report shows spatial splits as spatial (issue 15): per meshed level, axes, parts, idle instances, array utilization."""

from __future__ import annotations

from pathlib import Path

from mapsearch.report.loopnest import loop_nest_lines
from mapsearch.report.spatial import spatial_dict, spatial_lines
from mapsearch.schedule.json_io import load_schedule
from mapsearch.sim.replay import replay

HERE = Path(__file__).resolve().parents[2] / "examples" / "array"


def test_unequal_parts_shown_per_axis() -> None:
    s = load_schedule(HERE / "matmul-100x37x61-unequal.schedule.json")
    f = replay(s, mode="count").figures
    (pe,) = spatial_dict(s, f)
    # m = 100 in parts of 7 on x: 14 x 7 + 2 (15 PEs, one x PE idle); k = 61 in parts of 4 on y: 15 x 4 + 1.
    assert (pe["level"], pe["instances"], pe["used_instances"], pe["idle_instances"]) == ("PE", 256, 240, 16)
    x, y = pe["axes"]
    assert (x["axis"], x["used"], y["axis"], y["used"]) == ("x", 15, "y", 16)
    assert [(sp["dim"], sp["part"], sp["factor"], sp["cuts"], sp["equal"]) for sp in x["splits"]] == [
        ("m", 7, 15, ["100 -> 14 x 7 + 2 (15 instances)"], False)]
    assert [(sp["dim"], sp["part"], sp["factor"], sp["cuts"]) for sp in y["splits"]] == [
        ("k", 4, 16, ["61 -> 15 x 4 + 1 (16 instances)"])]
    # 225,700 calls over 256 PEs x 1,036 busiest calls.
    assert pe["busiest_calls"] == 1036 and abs(pe["array_utilization"] - 225700 / (256 * 1036)) < 1e-12
    text = "\n".join(spatial_lines(s, f))
    assert "240 get a part, 16 idle throughout" in text
    assert "array utilization 85.10%" in text


def test_loop_nest_marks_spatial_loops_and_loops_over_the_part() -> None:
    s = load_schedule(HERE / "matmul-100x37x61-glb16.schedule.json")
    lines = [l.strip() for l in loop_nest_lines(s)]
    assert "spatial for m in [0, 16) parts of 1 on axis x (16 instances)   # PE: in lockstep" in lines
    assert "spatial for k in [0, 16) parts of 1 on axis y (16 instances)   # PE: in lockstep" in lines
    # Inside a part of 1 the PE's m and k loops have one trip; n runs over the GLB tile.
    assert "for m in [0, 1) step 1   # PE: 1 trip" in lines
    assert "for n in [0, 37) step 1   # PE: 37 trips" in lines
    # The GLB pieces: m 16 (x6) and 4, k 16 (x3) and 13: fewer PEs get a part in the remainder pieces.
    (pe,) = spatial_dict(s)
    assert [sp["cuts"] for a in pe["axes"] for sp in a["splits"]] == [
        ["16 (x6) -> 16 x 1 (16 instances)", "4 -> 4 x 1 (4 instances)"],
        ["16 (x3) -> 16 x 1 (16 instances)", "13 -> 13 x 1 (13 instances)"]]


def test_no_mesh_no_section() -> None:
    s = load_schedule(Path(__file__).resolve().parents[2] / "examples" / "worked-example-mnk.schedule.json")
    assert spatial_dict(s) == [] and spatial_lines(s) == []
