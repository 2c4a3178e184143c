"""Matmuls on a 16x16 array (examples/array/, docs/arrays.md): one that fills it, one that cannot.

- 128x96x64 reaches utilization 1 *and* array utilization 1 (every PE busy
  on every step), proven optimal in time and then in words;
- 100x37x61 cannot: the solver's equal parts must divide every parent
  piece, so 37 and 61 (primes) and 100 (no divisor in 11..16) leave PEs idle.
  Its array utilization is exactly the product of per-dimension losses
  (m 100 of 128, k 61 of 64), and the busiest PE's calls are the least that
  equal parts allow (worked out here independently of the solver);
- a hand-written schedule with unequal parts (outside the solver's family,
  counted by the replay) does better on the same shape: what the family
  restriction costs.

Every figure asserted is the exact one; predicted == replayed.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from pathlib import Path

import pytest

from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import differences
from mapsearch.schedule.json_io import load_schedule
from mapsearch.sim.replay import replay
from mapsearch.solve.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.spec.load import load_architecture, load_workload

HERE = Path(__file__).resolve().parents[2] / "examples" / "array"
ARCH = HERE / "arch-16x16.yaml"


def solved(name: str):
    w = load_workload(HERE / f"{name}.yaml")
    result = solve(Problem(w, load_architecture(ARCH)), options=SolveOptions(time_limit=120))
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
    assert dict(f.occupancy) == {"DRAM": 26624, "GLB": 14336, "PE": 8}
    # The 16x16 mesh is filled by n (32 in parts of 2) on x, where A is multicast,
    # and k (64 in parts of 4) on y, where partial sums of Z add up on the way up.
    pe = result.schedule.levels[2]
    assert {(s.dim, s.axis, result.schedule.levels[1].tile_extent(s.dim) // s.part) for s in pe.spatial} == {
        ("n", "x", 16), ("k", "y", 16)}


def test_awkward_shape_cannot_fill_the_array(awkward) -> None:
    result, f = awkward
    assert result.proven
    assert [(p.name, p.status, p.value, p.bound) for p in result.phases] == [
        ("time", "OPTIMAL", 1184, 1184), ("words", "OPTIMAL", 55342, 55342)]
    assert f.macs == f.op_calls == 225700 and f.compute_instances == 256
    # Compute binds (utilization 1: the links have slack), but the busiest PE does 1,184 calls
    # where 225,700 / 256 = 881.6 would fill the array: 25.5% of the PE-steps idle.
    assert f.time == f.compute_time == f.busiest_calls == 1184
    assert f.utilization == 1
    assert f.array_utilization == Fraction(225700, 256 * 1184) == Fraction(1525, 2048)
    assert math.ceil(Fraction(225700, 256)) == 882 < 1184
    assert f.words_total == 55342
    assert [(l.name, l.time) for l in f.links] == [("DRAM->GLB", Fraction(7157, 8)), ("GLB->PE", 925)]
    # The schedule: GLB tiles m by 64 (pieces 64, 36) and k by 16 (pieces 16, 16, 16, 13);
    # the PEs split m in parts of 4 on x (16 and 9 PEs) and k in parts of 1 on y (16 and 13 PEs).
    glb, pe = result.schedule.levels[1], result.schedule.levels[2]
    assert (glb.tile_extent("m"), glb.tile_extent("k")) == (64, 16)
    assert {(s.dim, s.part, s.axis) for s in pe.spatial} == {("m", 4, "x"), ("k", 1, "y")}


def pieces(extent: int, tile: int) -> list[int]:
    return [min(tile, extent - x0) for x0 in range(0, extent, tile)]


def rep_extent(extent: int, factor_cap: int) -> dict[int, int]:
    """Per factor, the least extent the busiest PE covers along one dimension with equal parts.

    The GLB tiles the dimension by ``T`` (pieces of ``extent``); parts of ``P``
    must divide every piece, ``factor = T / P``; PE 0 holds one part of every
    piece: it covers ``len(pieces) * P``.
    """
    best: dict[int, int] = {1: extent}
    for t in range(1, extent + 1):
        ps = pieces(extent, t)
        for p in range(1, t + 1):
            if t % p == 0 and all(x % p == 0 for x in ps) and 1 < t // p <= factor_cap:
                best[t // p] = min(best.get(t // p, extent), len(ps) * p)
    return best


def least_calls(options: dict) -> tuple[int, tuple]:
    """The fewest calls of the busiest PE over per-dimension (factor, cover) choices on two 16-PE axes."""
    best = None
    dims = list(options)
    for choice in itertools.product(*[sorted(options[d].items()) for d in dims]):
        for axes in itertools.product((0, 1), repeat=len(dims)):
            used = [1, 1]
            for (factor, _), a in zip(choice, axes):
                used[a] *= factor
            if max(used) <= 16:
                calls = math.prod(cover for _, cover in choice)
                if best is None or calls < best[0]:
                    best = (calls, choice)
    return best


def test_the_loss_is_the_equal_part_rule(awkward) -> None:
    """Why 1,184: equal parts leave PEs idle unless the GLB tiles are small, and small GLB tiles cost DRAM words.

    With equal parts (the solver's family), PE 0 holds one part of every GLB
    piece, so along a split dim it covers ``pieces * P`` of the extent.
    """
    result, f = awkward
    ext = {"m": 100, "n": 37, "k": 61}
    options = {d: rep_extent(e, 16) for d, e in ext.items()}
    # The optimum: m by GLB tiles of 64 (pieces 64, 36) in parts of 4: PE 0 covers 2 x 4 = 8 of 100 rows;
    # k by GLB tiles of 16 (pieces 16, 16, 16, 13) in parts of 1: 4 of 61; n (prime 37) is not split.
    assert len(pieces(100, 64)) * 4 == 8 and all(x % 4 == 0 for x in pieces(100, 64))
    assert len(pieces(61, 16)) * 1 == 4
    assert f.busiest_calls == 8 * 37 * 4 == 1184
    # Array utilization = m 100 of 8 x 16 = 128, times k 61 of 4 x 16 = 64.
    assert f.array_utilization == Fraction(100, 128) * Fraction(61, 64)
    # A GLB tile that holds all of m (T = 100) allows parts that divide 100 with at most 16 of them:
    # parts of 10 at best, PE 0 covers 10 rows (and only 10 PEs work along that axis).
    assert min(p for p in range(1, 101) if 100 % p == 0 and 100 // p <= 16) == 10
    # Fewer calls exist in the family, but only with small GLB tiles: the least is 988 = 13 x 19 x 4
    # (m by GLB tiles of 8 on 8 PEs and n by tiles of 2 on 2 PEs along x, k by tiles of 16 along y).
    calls, choice = least_calls(options)
    assert calls == 988 < 1184 and sorted(c for _, c in choice) == [4, 13, 19]
    # Small GLB tiles cost DRAM words. E.g. m and k by GLB tiles of 16 (7 x 4 pieces) in parts of 1:
    # 7 x 37 x 4 = 1036 calls, but the GLB holds 16 rows of B at a time, so B (2,257 words) crosses
    # DRAM->GLB once per m piece: 7 x 2257 = 15,799 words, and that link binds at 1,600 clocks (the
    # best nest of that GLB tile). The solver proves that nothing in the family beats 1,184.
    s = load_schedule(HERE / "matmul-100x37x61-glb16.schedule.json")
    g = replay(s, mode="count").figures
    assert g.busiest_calls == g.compute_time == 1036
    assert words(g, "DRAM->GLB")["B"] == (7 * 2257, 0)
    assert g.time == next(l.time for l in g.links if l.name == "DRAM->GLB") == Fraction(25599, 16) > 1184
    assert result.proven


def test_unequal_parts_outside_the_family_do_better() -> None:
    """The replay counts any split: m in parts of 7 (15 PEs) and k in parts of 4 (16 PEs) give 1,036 clocks."""
    s = load_schedule(HERE / "matmul-100x37x61-unequal.schedule.json")
    assert s.predicted is None
    f = replay(s, mode="count").figures
    assert f.busiest_calls == f.time == 7 * 37 * 4 == 1036
    assert f.array_utilization == Fraction(225700, 256 * 1036) == Fraction(1525, 1792)
    assert f.utilization == 1 and f.words_total == 38285
    # The solver's family needs P to divide 100 (or every GLB piece of m): 7 does not.
    assert any(100 % sp.part for sp in s.levels[2].spatial if sp.dim == "m")
