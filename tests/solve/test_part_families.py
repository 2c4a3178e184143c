"""Which spatial parts the chains enumerate when every part is too many rows (model/part_families.py).

- The fallback where no combination of families fits the row limits:
  parts that divide, each level from the outermost widened to
  ``MESH_PARTS`` while the rows stay under the ceiling (a property on
  random chains, and simba-like's 1024^3 matmul, where it was measured).
- What ``MESH_PARTS`` buys, solved and replayed: a 10^3 matmul on the 4x4
  array with the limits lowered so that the fallback applies reaches the
  optimum of every part (75 clocks, 700 words), where parts that divide
  end at 100 clocks and 900 words.
- Its pairs are their definition: tests/solve/test_build_identity.py.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import mapsearch.model.part_families as pf
from mapsearch import api
from mapsearch.model.build import _chains_cached, dimension_chains
from mapsearch.model.problem import Problem
from mapsearch.presets import load_preset
from mapsearch.spec.constraints import Constraints
from mapsearch.spec.workload import Workload

ROOT = Path(__file__).resolve().parents[2]
MATMUL = "Z[m,n] += A[m,k] * B[k,n]"


def random_chains(rng: np.random.Generator, extent: int, depth: int, rows: int) -> np.ndarray:
    tiles = np.empty((rows, depth), dtype=np.int64)
    parent = np.full(rows, extent)
    for j in range(depth):
        parent = tiles[:, j] = rng.integers(1, parent + 1)
    return tiles


def split_rows(tiles, extent, spatial, commons, combo) -> float:
    total = np.ones(tiles.shape[0])
    for lv, (entry, fam) in enumerate(zip(spatial, combo)):
        total *= 1 + pf._choice_counts(tiles, extent, entry[0], entry[1], fam, commons[lv], pf.axis_sizes(entry))
    return float(total.sum()) - tiles.shape[0]


@pytest.mark.parametrize("seed", range(40))
def test_fallback_widens_levels_to_mesh_parts_under_the_ceiling(seed: int) -> None:
    rng = np.random.default_rng(seed)
    depth = int(rng.integers(1, 4))
    extent = int(rng.integers(8, 400))
    tiles = random_chains(rng, extent, depth, int(rng.integers(5, 200)))
    levels = sorted(rng.choice(np.arange(1, depth + 1), size=int(rng.integers(1, depth + 1)), replace=False).tolist())
    spatial = []
    for s in levels:
        axes = tuple(int(a) for a in rng.choice([2, 3, 4, 6, 7, 8, 12, 14, 16], size=int(rng.integers(1, 3))))
        spatial.append((s, max(axes), axes))
    commons = [tiles[:, s - 2] if s > 1 else np.full(tiles.shape[0], extent) for s in levels]
    even = tuple([pf.EVEN_PARTS] * len(spatial))
    all_limit = int(rng.integers(0, 3))
    narrower = int(split_rows(tiles, extent, spatial, commons, even)) - 1  # nothing fits
    if narrower < 0:
        pytest.skip("no split row at all: parts that divide fit any limit")
    got = pf.choose_families(tiles, extent, tuple(spatial), commons, (all_limit, narrower))
    assert set(got) <= {pf.MESH_PARTS, pf.EVEN_PARTS}
    ceiling = max(pf.MESH_ROWS_FACTOR * split_rows(tiles, extent, spatial, commons, even), all_limit)
    assert split_rows(tiles, extent, spatial, commons, got) <= ceiling
    for lv, fam in enumerate(got):  # a level left with parts that divide would pass the ceiling as mesh parts
        if fam == pf.EVEN_PARTS:
            wider = got[:lv] + (pf.MESH_PARTS,) + got[lv + 1:]
            assert split_rows(tiles, extent, spatial, commons, wider) > ceiling


def test_simba_1024_cube_takes_mesh_parts_at_the_chiplets() -> None:
    """Measured (model/part_families.py, MESH_ROWS_FACTOR): 9,398 rows with parts that divide, 15,700 with mesh
    parts at the 6x6 chiplets, past the limits either way; the chiplets' parts of 1024 may then be 342 or 171
    (3 or 6 of an axis) besides 512 and 256."""
    w = Workload.from_text("mm1024", MATMUL, {"m": 1024, "n": 1024, "k": 1024})
    _chains_cached.cache_clear()
    chains, _ = dimension_chains(Problem(w, load_preset("simba-like")), Constraints())
    assert chains["m"].parts_family == (pf.MESH_PARTS, pf.EVEN_PARTS, pf.EVEN_PARTS)
    chiplet_parts = set(np.unique(chains["m"].parts[:, 0]).tolist())
    assert {342, 171} <= chiplet_parts and 205 not in chiplet_parts  # ceil(1024/m): 3 and 6 divide 6; 5 divides no axis


def solve_with_limits(monkeypatch, all_limit: int, narrower: int, factor: int):
    monkeypatch.setattr(pf, "SPATIAL_ROWS_LIMIT", all_limit)
    monkeypatch.setattr(pf, "BALANCED_ROWS_LIMIT", narrower)
    monkeypatch.setattr(pf, "MESH_ROWS_FACTOR", factor)
    _chains_cached.cache_clear()
    w = Workload.from_text("mm10", MATMUL, {"m": 10, "n": 10, "k": 10})
    try:
        return api.solve(w, str(ROOT / "examples" / "arch-array-4x4.yaml"), time_limit=60)
    finally:
        _chains_cached.cache_clear()


def test_mesh_parts_reach_the_optimum_of_every_part_where_even_parts_do_not(monkeypatch) -> None:
    every = solve_with_limits(monkeypatch, 10**6, 1, 2)
    mesh = solve_with_limits(monkeypatch, 0, 1, 10**6)  # nothing fits: the fallback, every level widened
    even = solve_with_limits(monkeypatch, 0, 1, 0)  # nothing fits, no widening: parts that divide only
    for r in (every, mesh, even):
        assert r.status == "OPTIMAL_IN_FAMILY" and not r.mismatches and r.replayed is not None
    [spatial] = [x for x in mesh.family_restrictions if x.startswith("spatial parts")]
    assert spatial.count(pf.MESH_PARTS) == 3
    assert [(p.value, p.status) for p in every.phases] == [(Fraction(75), "OPTIMAL"), (Fraction(700), "OPTIMAL")]
    assert [p.value for p in mesh.phases] == [Fraction(75), Fraction(700)]
    assert [p.value for p in even.phases] == [Fraction(100), Fraction(900)]
