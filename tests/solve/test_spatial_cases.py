"""Matmuls on a 16x16 array and on 4 clusters of 8x8 (examples/array/, docs/arrays.md).

- 128x96x64 reaches utilization 1 *and* array utilization 1 (every PE busy
  on every step), proven optimal in time and then in words;
- 100x37x61 cannot: 37 and 61 are prime and 100 has no divisor in 11..16.
  With unequal parts (the contract's split with remainder) the solver
  reaches 988 clocks, array utilization 56425/63232 (0.892); when it could
  only cut parts that divide every parent piece it proved 1,184 clocks,
  array utilization 1525/2048 (0.745). The busiest PE's 988 calls are
  worked out here by hand, and the hand-written unequal schedule of 1,036
  clocks is beaten.
- 100x37x61 on four clusters of 8x8 PEs (two meshed levels in one path):
  1,000 clocks, whole-array utilization 88.16 % (95.31 % over the clusters
  times 92.50 % within the busiest one), replayed exactly in count and
  events modes.

Every figure asserted is the exact one; predicted == replayed.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import differences
from mapsearch.schedule.json_io import load_schedule
from mapsearch.sim.replay import replay
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.spec.load import load_architecture, load_workload

HERE = Path(__file__).resolve().parents[2] / "examples" / "array"
ARCH = HERE / "arch-16x16.yaml"


def solved(name: str, workload: str | None = None, arch: Path = ARCH):
    w = load_workload(HERE / f"{workload or name}.yaml")
    result = solve(Problem(w, load_architecture(arch)), options=SolveOptions(time_limit=300))
    replayed = replay(result.schedule, mode="count").figures
    assert differences(result.schedule.predicted, replayed) == []
    shipped = load_schedule(HERE / f"{name}.schedule.json")
    assert shipped.levels == result.schedule.levels, "examples/array/regenerate.py rewrites the shipped schedule"
    assert differences(shipped.predicted, replayed) == []
    return result, replayed


def words(f, link: str) -> dict[str, tuple[int, int]]:
    return {t.tensor: (t.words_down, t.words_up) for t in next(l for l in f.links if l.name == link).tensors}


@pytest.fixture(scope="module")
def full():
    return solved("matmul-128x96x64")


@pytest.fixture(scope="module")
def awkward():
    return solved("matmul-100x37x61")


def test_full_array_reaches_utilization_1_with_minimal_words(full) -> None:
    result, f = full
    assert result.proven
    assert [(p.name, p.status, p.value, p.bound) for p in result.phases] == [
        ("time", "OPTIMAL", 3072, 3072), ("words", "OPTIMAL", 94208, 94208)]
    # 128 x 96 x 64 = 786,432 MACs on 256 PEs: 3,072 clocks, every PE busy on every step.
    assert f.macs == 786432 and f.op_calls == 786432 and f.compute_instances == 256
    assert f.busiest_calls == 3072 == f.macs // 256
    assert f.time == f.compute_time == 3072
    assert f.utilization == 1 and f.array_utilization == 1
    # Fewest words at that time: DRAM moves each tensor once (A 8192, B 6144, Z 12288 up).
    assert words(f, "DRAM->GLB") == {"A": (8192, 0), "B": (6144, 0), "Z": (0, 12288)}
    assert words(f, "GLB->PE") == {"A": (24576, 0), "B": (6144, 0), "Z": (12288, 24576)}
    assert f.words_total == 94208
    assert [(l.name, l.time) for l in f.links] == [("DRAM->GLB", 1664), ("GLB->PE", 1536)]
    occupancy = dict(f.occupancy)  # GLB's is a tie between optima (which tiles it holds whole): within capacity
    assert (occupancy["DRAM"], occupancy["PE"]) == (26624, 8)
    assert occupancy["GLB"] <= result.schedule.architecture.levels[1].capacity
    # The 16x16 mesh is filled by n (its GLB tile in 16 parts) on x, where A is multicast,
    # and k (its GLB tile in 16 parts) on y, where partial sums of Z add up on the way up.
    pe = result.schedule.levels[2]
    assert {(s.dim, s.axis, result.schedule.levels[1].tile_extent(s.dim) // s.part) for s in pe.spatial} == {
        ("n", "x", 16), ("k", "y", 16)}


def test_awkward_shape_uses_unequal_parts(awkward) -> None:
    result, f = awkward
    assert result.proven
    assert [(p.name, p.status, p.value, p.bound) for p in result.phases] == [
        ("time", "OPTIMAL", 988, 988), ("words", "OPTIMAL", 45056, 45056)]
    assert f.macs == f.op_calls == 225700 and f.compute_instances == 256
    # Compute binds: the busiest PE does 988 calls where 225,700 / 256 = 881.6 would fill the array.
    assert f.time == f.compute_time == f.busiest_calls == 988
    assert f.utilization == 1
    assert f.array_utilization == Fraction(225700, 256 * 988) == Fraction(56425, 63232)
    assert f.words_total == 45056
    # The schedule: m = 100 in parts of 13 (8 PEs, the last part 9) and n = 37 in parts of 19
    # (2 PEs: 19 + 18) share x (8 x 2 = 16 PEs); the GLB tiles k by 31 (pieces 31, 30), cut in
    # parts of 2 along y (16 PEs in the 31 piece, the last with 1; 15 in the 30 piece). PE 0 covers
    # 13 rows, 19 columns and 2 + 2 = 4 of k: 13 x 19 x 4 = 988 calls. (GLB k tiles of 31 and 32 tie.)
    glb, pe = result.schedule.levels[1], result.schedule.levels[2]
    assert {(s.dim, s.part, s.axis) for s in pe.spatial} == {("m", 13, "x"), ("n", 19, "x"), ("k", 2, "y")}
    assert glb.tile_extent("k") == 31 and (glb.tile_extent("m"), glb.tile_extent("n")) == (100, 37)
    assert -(-100 // 13) * -(-37 // 19) == 16 == -(-31 // 2)
    assert 13 * 19 * (2 + 2) == 988
    # Before unequal parts the solver's family held 1,184 clocks (array utilization 1525/2048):
    # parts had to divide every GLB piece, so PE 0 covered 8 of m's 100 rows and 4 of k's 61 with n whole.
    assert 8 * 37 * 4 == 1184 > 988


def test_hand_written_unequal_schedule_is_beaten() -> None:
    """The replay counts any split: m in parts of 7 (15 PEs) and k in parts of 4 (16 PEs) give 1,036 clocks,
    more than the solver's 988."""
    s = load_schedule(HERE / "matmul-100x37x61-unequal.schedule.json")
    assert s.predicted is None
    f = replay(s, mode="count").figures
    assert f.busiest_calls == f.time == 7 * 37 * 4 == 1036 > 988
    assert f.array_utilization == Fraction(225700, 256 * 1036) == Fraction(1525, 1792)
    assert f.utilization == 1 and f.words_total == 38285
    # GLB tiles of 16 in m and k with parts of 1 reach the same 1,036 calls, but B crosses DRAM->GLB
    # once per m piece (7 x 2,257 words) and that link binds at 1,600 clocks.
    g = replay(load_schedule(HERE / "matmul-100x37x61-glb16.schedule.json"), mode="count").figures
    assert g.busiest_calls == g.compute_time == 1036
    assert words(g, "DRAM->GLB")["B"] == (7 * 2257, 0)
    assert g.time == next(l.time for l in g.links if l.name == "DRAM->GLB") == Fraction(25599, 16) > 988


def test_two_meshed_levels_split_parts_of_parts() -> None:
    """100x37x61 on 4 clusters (axis c, multicast of inputs over the GLB bus) of 8x8 PEs.

    The GLB tiles k by 16 (16 + 16 + 16 + 13) and holds A and B whole
    (placed above the mesh, an equal optimum); the clusters take m in halves
    (50 + 50) and k in parts of 8 (8 + 8, and 8 + 5 in the last piece); each
    cluster's LB holds its part, its PEs split n in parts of 5 (7 x 5 + 2 over
    x) and k in parts of 1 (8 over y). PE 0 makes 50 (m) x 5 (n: tiles 3 + 2)
    x 4 (k: one in each GLB piece) = 1,000 calls, and compute binds.
    """
    from mapsearch.report.spatial import spatial_dict

    result, f = solved("matmul-100x37x61-4x8x8", "matmul-100x37x61", HERE / "arch-4x8x8.yaml")
    assert result.proven
    assert [(p.name, p.value) for p in result.phases] == [("time", 1000), ("words", 96328)]
    assert f.time == f.compute_time == f.busiest_calls == 1000
    assert f.compute_instances == 4 * 64 and f.op_calls == 225700
    assert f.array_utilization == Fraction(225700, 256 * 1000)
    events = replay(result.schedule, mode="events").figures
    assert differences(result.schedule.predicted, events) == []
    lb, pe = result.schedule.levels[2], result.schedule.levels[3]
    assert {(s.dim, s.part, s.axis) for s in lb.spatial} == {("m", 50, "c"), ("k", 8, "c")}
    assert {(s.dim, s.part, s.axis) for s in pe.spatial} == {("n", 5, "x"), ("k", 1, "y")}
    # Per level: the busiest cluster does 50 x 37 x (4 x 8) = 59,200 calls of the 225,700;
    # within it the busiest PE does 1,000 of those 59,200. The two utilizations multiply to the array's.
    levels = spatial_dict(result.schedule, f)
    assert [(e["level"], e["busiest_calls"]) for e in levels] == [("LB", 59200), ("PE", 1000)]
    assert 50 * 37 * 32 == 59200
    assert levels[0]["array_utilization"] == pytest.approx(225700 / (4 * 59200))
    assert levels[1]["array_utilization"] == pytest.approx(59200 / (64 * 1000))
    assert levels[0]["array_utilization"] * levels[1]["array_utilization"] == pytest.approx(float(f.array_utilization))
