"""The fast forms of model building give exactly what their straightforward forms give.

Issue 16 made the build several times faster (benchmarks/build_speed.py)
by replacing algorithms, never results. Each replaced piece is checked
here against a small straightforward version kept in this file (the form
the code had before, or plainer), on random inputs and on chain tables
captured from real enumerations, for equal outputs: the same rows in the
same order, the same values, the same keys in the same order.

- dominance: ``undominated`` and ``beaten_in_groups`` against an all-pairs
  search; ``survivors`` (the whole pruning) against the sort of whole
  signature rows and ``np.unique`` grouping it replaced;
- ``sorted_groups`` / ``distinct_rows`` against ``np.unique``, also when every
  hash collides (the exact fallback);
- ``part_choices`` (and the counts that choose the family) against the
  pass per factor over every row;
- ``all_view_tables`` against the walk of one view at a time with one
  ``single`` walk per pair of levels;
- window pruning and coincidence tables against ``np.unique`` grouping,
  the pairwise ``_beaten`` and the table over every chain pair.

tests/solve/test_build_recorded.py pins the resulting tables to those of
the code before the change.
"""

from __future__ import annotations

import itertools
import math
import random
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import mapsearch.model.chains as chains_module  # noqa: E402
import mapsearch.model.row_keys as row_keys  # noqa: E402
from mapsearch.model.dominance import beaten_in_groups, survivors, undominated  # noqa: E402
from mapsearch.model.row_keys import distinct_rows, sorted_groups  # noqa: E402
from mapsearch.model.part_families import FAMILIES, BALANCED_PARTS, MESH_PARTS, _choice_counts, part_choices  # noqa: E402
from mapsearch.model.spatial_views import digit_classes, expanded_pieces, Instance, all_view_tables  # noqa: E402
from mapsearch.model.window_types import Tree, advance_types, context_types  # noqa: E402
from mapsearch.model import window_pruning, window_tables  # noqa: E402


# --------------------------------------------------------------------------- references
def ref_undominated(v: np.ndarray) -> np.ndarray:
    """Rows no other row beats (``>=`` everywhere, ``!=`` somewhere), by comparing every pair."""
    ge = np.all(v[:, None, :] >= v[None, :, :], axis=2)
    ne = np.any(v[:, None, :] != v[None, :, :], axis=2)
    return ~np.any(ge & ne, axis=0)


def ref_groups(table: np.ndarray) -> list[list[int]]:
    """Rows grouped by equal value, by ``np.unique``, as sorted lists (the groups in any order)."""
    _, inverse = np.unique(table, axis=0, return_inverse=True)
    return sorted(np.flatnonzero(inverse.ravel() == g).tolist() for g in range(inverse.max() + 1))


def ref_survivors(q: dict) -> np.ndarray:
    """Chain pruning as it was: one signature matrix, its rows sorted, ``np.unique`` groups for stillness."""
    tiles = q["tiles"]
    rows, depth = tiles.shape
    columns = [q["counts"]] + [q["sums"][f] for f in sorted(q["sums"])]
    columns += [np.stack([q["small"][f][k] for k in sorted(q["small"][f])], axis=1) for f in sorted(q["small"]) if q["small"][f]]
    columns.append(q["calls"][:, None])
    if q.get("window") is not None:
        columns.append(q["window"])
    if q.get("flavoured"):
        columns.append(q["factors"])
        for view in q["flavoured"].values():
            columns += [view["counts"], view["calls"][:, None]] + [view["sums"][f] for f in sorted(view["sums"])]
            columns += [np.stack([view["small"][f][k] for k in sorted(view["small"][f])], axis=1)
                        for f in sorted(view["small"]) if view["small"][f]]
    signature = np.concatenate(columns, axis=1)
    signature = signature[:, np.any(signature != signature[:1], axis=0)]
    weights = np.random.default_rng(12345).integers(1, 2**62, size=signature.shape[1], dtype=np.int64) | 1
    with np.errstate(over="ignore"):
        digest = (signature * weights).sum(axis=1) if signature.shape[1] else np.zeros(rows, dtype=np.int64)
    order = np.lexsort([tiles[:, j] for j in range(depth - 1, -1, -1)] + [digest])
    sig, til = signature[order], tiles[order]
    new_group = np.ones(rows, dtype=bool)
    new_group[1:] = np.any(sig[1:] != sig[:-1], axis=1)
    keep = new_group
    if depth >= 2:
        keep = new_group.copy()
        keep[1:] |= np.any(til[1:, :-1] != til[:-1, :-1], axis=1)
        if depth == 2:  # beaten by a smaller inner extent earlier in the group (outer ascending)
            best = {}
            for r, g in enumerate(np.cumsum(new_group)):
                keep[r] &= til[r, 1] < best.get(g, np.inf)
                best[g] = min(best.get(g, np.inf), til[r, 1])
    idx = order[keep]
    if q.get("window") is not None or not any(q["small"][f] for f in q["small"]):
        return idx
    views = [q] + (list(q["flavoured"].values()) if q.get("flavoured") else [])
    exact = [q["factors"][idx]] if q.get("flavoured") else []
    still = []
    for v in views:
        exact += [v["counts"][idx]] + [v["sums"][f][idx] for f in sorted(v["sums"])] + [v["calls"][idx][:, None]]
        still += [np.stack([v["small"][f][k][idx] for k in sorted(v["small"][f])], axis=1) for f in sorted(v["small"]) if v["small"][f]]
    better = np.concatenate(still + [-tiles[idx]], axis=1)
    kept = [m for g in ref_groups(np.concatenate(exact, axis=1)) for m, ok in zip(g, ref_undominated(better[g])) if ok]
    return idx[np.sort(np.array(kept, dtype=np.int64))]


def ref_part_choices(parent, inner, max_factor, family, common):
    """The family's (row, part) pairs, a pass over every row per factor (as it was)."""
    max_factor = min(max_factor, int(parent.max(initial=1)))
    rows, parts, previous = [], [], parent
    for m in range(2, max_factor + 1):
        if family == BALANCED_PARTS:
            part = -(-parent // m)
            ok = (part >= inner) & (part < parent) & (part != previous)
            previous = part
        else:
            part = parent // m
            ok = (parent % m == 0) & (part >= inner) & (part > 0) & np.where(part > 0, common % np.maximum(part, 1) == 0, False)
        rows.append(np.flatnonzero(ok))
        parts.append(part[ok])
    return (np.concatenate(rows), np.concatenate(parts)) if rows else (np.zeros(0, np.int64), np.zeros(0, np.int64))


class _RefInstance(Instance):
    """An instance walked as it was: ``clip`` parts, one walk down per pair of levels (``single``)."""

    def __init__(self, tiles, extent, parts, digits):
        self.digits = digits
        super().__init__(tiles, extent, parts, digits)

    def own(self, x, k):
        return np.clip(x - self.digits[k] * self.parts[k], 0, self.parts[k]) if k in self.parts else x

    def single(self, x, k, i):
        mask = np.zeros(x.shape, dtype=np.int64)
        for m in range(k + 1, i + 1):
            y, t = self.own(x, m), self.tiles[:, m - 1]
            one_full = (y > t) & (y < 2 * t) & ~self.active(y - t, m)
            if one_full.any():
                idle = np.minimum(self.idle_from(np.maximum(y - t, 0), m), i)
                mask |= np.where(one_full, (1 << idle) - (1 << m), 0)
            x = np.where(y <= t, y, np.where(one_full, t, 0))
        x = np.where(self.active(x, i), x, 0)
        return x, np.where(x > 0, mask, 0)


def ref_view_tables(tiles, extent, parts, view, footprints, block):
    """One view's tables, walking its instances one class combination at a time on every row."""
    rows, depth = tiles.shape
    levels = sorted(parts)
    factors = {s: -(-(np.full(rows, extent) if s == 1 else tiles[:, s - 2]) // parts[s]) for s in levels}
    summed = {s: digit_classes(expanded_pieces(tiles, extent, parts, s - 1), parts[s], factors[s]) for s in levels if view[s] == "sum"}
    counts = np.zeros((rows, depth + 1), dtype=np.int64)
    sums = {f: np.zeros((rows, depth + 1), dtype=np.int64) for f in footprints}
    small = {f: {(k, i): np.zeros(rows, dtype=np.int64) for i in range(1, depth + 1) for k in range(i)} for f in footprints}
    calls = np.zeros(rows, dtype=np.int64)
    for combo in itertools.product(*(range(summed[s][0].shape[1]) if s in summed else range(1) for s in levels)):
        digits = {s: summed[s][0][:, c] if s in summed else np.zeros(rows, dtype=np.int64) for s, c in zip(levels, combo)}
        weight = np.prod([summed[s][1][:, c] if s in summed else np.ones(rows, dtype=np.int64)
                          for s, c in zip(levels, combo)], axis=0)
        if not weight.any():
            continue
        inst = _RefInstance(tiles, extent, parts, digits)
        for k, level in enumerate(inst.levels):
            for size, count in level:
                on = weight * count * inst.active(size, k)
                counts[:, k] += on
                for f in footprints:
                    sums[f][:, k] += on * (f[0] * size + f[1])
                    for i in range(k + 1, depth + 1):
                        y, mask = inst.single(size, k, i)
                        still = on * (y > 0) * (f[0] * y + f[1])
                        small[f][(k, i)] += np.where(mask == 0, still, 0)
                        for bits in np.unique(mask[(mask > 0) & (still > 0)]):
                            small[f].setdefault((k, i, int(bits)), np.zeros(rows, dtype=np.int64))
                            small[f][(k, i, int(bits))] += np.where(mask == bits, still, 0)
        calls += weight * sum(c * (-(-x // block)) for x, c in inst.levels[-1])
    return {"counts": counts, "sums": sums, "small": small, "calls": calls}


# --------------------------------------------------------------------------- dominance and groups
def _random_table(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Small values (many ties, duplicates and dominated rows) and a constant column."""
    v = rng.integers(0, rng.integers(2, 6), size=(rows, cols))
    v[:, rng.integers(cols)] = 7
    return v[rng.integers(rows, size=rows)] if rng.random() < 0.5 else v


@pytest.mark.parametrize("seed", range(12))
def test_undominated_is_the_all_pairs_search(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for rows, cols in [(1, 3), (5, 1), (40, 4), (300, 3), (700, 6)]:
        v = _random_table(rng, rows, cols)
        assert np.array_equal(undominated(v), ref_undominated(v))
        big = v * (2**60) // 7  # sums would overflow: the comparison without them
        assert np.array_equal(undominated(big), ref_undominated(big))
        groups = [np.sort(g) for g in np.array_split(rng.permutation(rows), max(1, rows // rng.integers(1, 90))) if g.size]
        new = np.concatenate([np.arange(g.size) == 0 for g in groups])
        got = beaten_in_groups(np.concatenate(groups), new, v)
        for g in groups:
            assert np.array_equal(got[g], ~ref_undominated(v[g]))


@pytest.mark.parametrize("seed", range(6))
def test_sorted_groups_and_distinct_rows_are_np_unique(seed: int, monkeypatch) -> None:
    rng = np.random.default_rng(seed)
    table = _random_table(rng, 400, 5)
    rows = np.sort(rng.choice(400, size=150, replace=False))
    for collide in (False, True):
        if collide:  # every hash equal: the exact fallback must still group exactly
            monkeypatch.setattr(row_keys, "digest", lambda columns, seed, n: np.zeros(n, dtype=np.int64))
        blocks = [table[:, 0], table[:, 1:3], table[:, 3:]]
        order, new = sorted_groups(blocks, rows)
        groups = np.split(order, np.flatnonzero(new)[1:])
        assert all(np.all(np.diff(g) > 0) for g in groups)
        assert sorted(g.tolist() for g in groups) == ref_groups(table[rows])
        first, inverse = distinct_rows(blocks)
        assert np.array_equal(table[first][inverse], table)
        assert sorted(first.tolist()) == sorted(g[0] for g in ref_groups(table))


# Chain enumerations whose tables reach the pruning: depth 1-3, windows, one to three meshed levels.
ENUMERATIONS = [(40, 1, ((1, 0),)), (97, 2, ((1, 0), (0, 1)), 4), (36, 3, ((1, 0), (2, -1))),
                (20, 3, ((0, 1), (1, 0)), 1, None, False, (), True), (48, 2, ((1, 0),), 1, None, False, ((2, 6),)),
                (28, 3, ((1, 0), (2, -1)), 1, None, False, ((2, 4), (3, 16))),
                (30, 3, ((1, 0),), 2, None, False, ((1, 2), (2, 3), (3, 5)))]


@pytest.mark.parametrize("args", ENUMERATIONS, ids=lambda a: f"E{a[0]}-J{a[1]}-{len(a[6]) if len(a) > 6 else 0}mesh")
def test_survivors_are_the_whole_row_pruning(args, monkeypatch) -> None:
    seen = []
    monkeypatch.setattr(chains_module, "_survivors", lambda q: seen.append(q) or survivors(q))
    chains_module.enumerate_chains(*args)
    (q,) = seen
    assert np.array_equal(survivors(q), ref_survivors(q))


def random_parents(seed: int):
    """``(extent, rows, parent, inner, common, tiles)``: random parent tiles, inner tiles and piece gcds."""
    rng = np.random.default_rng(seed)
    extent, rows = int(rng.integers(1, 200)), int(rng.integers(1, 300))
    parent = rng.integers(1, extent + 1, rows)
    inner = np.minimum(rng.integers(1, extent + 1, rows), parent)
    common = np.gcd(parent, rng.integers(0, extent + 1, rows))
    return extent, rows, parent, inner, common, np.stack([parent, inner], axis=1)  # level 2's parent tile and its own


@pytest.mark.parametrize("seed", range(30))
def test_part_choices_are_the_pass_per_factor(seed: int) -> None:
    extent, rows, parent, inner, common, tiles = random_parents(seed)
    for max_factor in (1, 2, 5, 16, 1000):
        for family in FAMILIES[1:]:
            if family == MESH_PARTS:
                continue  # test_mesh_part_choices_are_their_definition
            got, want = part_choices(parent, inner, max_factor, family, common), ref_part_choices(parent, inner, max_factor, family, common)
            assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(got, want))
            counts = _choice_counts(tiles, extent, 2, max_factor, family, common)
            assert np.array_equal(counts, np.bincount(want[0], minlength=rows)) and counts.dtype == np.int64


def ref_mesh_choices(parent, inner, axes, max_factor, common):
    """MESH_PARTS by its definition: the even divisions, and ceil(parent/m) for every m <= max_factor dividing an axis."""
    pairs = set()
    for r, (p, t, c) in enumerate(zip(parent.tolist(), inner.tolist(), common.tolist())):
        for m in range(2, max_factor + 1):
            part = -(-p // m)
            axis = any(a % m == 0 for a in axes)
            even = p % m == 0 and part > 0 and c % part == 0
            if (axis or even) and t <= part < p:
                pairs.add((r, part))
    return pairs


@pytest.mark.parametrize("seed", range(30))
def test_mesh_part_choices_are_their_definition(seed: int) -> None:
    extent, rows, parent, inner, common, tiles = random_parents(seed)
    for axes in ((6,), (6, 6), (12, 14), (7,), (128, 4), (1000,), (2,)):
        max_factor = max(axes)
        row, part = part_choices(parent, inner, max_factor, MESH_PARTS, common, axes)
        got = list(zip(row.tolist(), part.tolist()))
        assert len(got) == len(set(got)) and set(got) == ref_mesh_choices(parent, inner, axes, max_factor, common)
        assert row.dtype == part.dtype == np.int64
        counts = _choice_counts(tiles, extent, 2, max_factor, MESH_PARTS, common, axes)
        assert np.array_equal(counts, np.bincount(row, minlength=rows))
        # a superset of the even divisions, a subset of the balanced parts
        even = set(zip(*(a.tolist() for a in part_choices(parent, inner, max_factor, FAMILIES[-1], common))))
        balanced = set(zip(*(a.tolist() for a in part_choices(parent, inner, max_factor, BALANCED_PARTS, common))))
        assert even <= set(got) <= balanced


# --------------------------------------------------------------------------- view tables
@pytest.mark.parametrize("seed", range(25))
def test_all_view_tables_are_one_view_at_a_time(seed: int) -> None:
    rng = random.Random(seed)
    depth = rng.choice([2, 3, 4])
    meshed = sorted(rng.sample(range(1, depth + 1), k=min(depth, rng.choice([1, 2, 3]))))
    extent, mesh = rng.randint(4, 40), rng.choice([2, 3, 5, 8])
    tiles, parts = [], {s: [] for s in meshed}
    for _ in range(60):
        row, parent = [], extent
        for k in range(1, depth + 1):
            if k in meshed:
                parts[k].append(rng.randint(max(1, -(-parent // mesh)), parent))
                parent = parts[k][-1]
            row.append(rng.randint(1, parent))
            parent = row[-1]
        tiles.append(row)
    tiles = np.array(tiles, dtype=np.int64)
    parts = {s: np.array(p, dtype=np.int64) for s, p in parts.items()}
    footprints, block = ((1, 0), (2, -1)), rng.choice([1, 3])
    views = list(itertools.product(("rep", "sum"), repeat=len(meshed)))
    got = all_view_tables(tiles, extent, parts, views, footprints, block)
    assert list(got) == views
    for view in views:
        want = ref_view_tables(tiles, extent, parts, dict(zip(meshed, view)), footprints, block)
        assert np.array_equal(got[view]["counts"], want["counts"]) and np.array_equal(got[view]["calls"], want["calls"])
        for f in footprints:
            assert np.array_equal(got[view]["sums"][f], want["sums"][f])
            assert list(got[view]["small"][f]) == list(want["small"][f])  # the same keys in the same order
            assert all(np.array_equal(got[view]["small"][f][key], want["small"][f][key]) for key in want["small"][f])


# --------------------------------------------------------------------------- windows
def ref_window_undominated(ch, coincidence_cols: np.ndarray) -> np.ndarray:
    """Window pruning as it was: ``np.unique`` groups, then every pair (a later twin is beaten)."""
    x, u = (1, 0), (0, 1)
    tables = [{"counts": ch.counts, "sums": ch.sums, "small": ch.small, "calls": ch.calls}]
    tables += list((ch.flavoured or {}).values())  # split over mesh axes: every view's tables too
    exact = np.concatenate([t["counts"] for t in tables[:1]] + [ch.sums[f] for f in sorted(ch.sums)] + [ch.calls[:, None]]
                           + ([ch.factors] if ch.flavoured else [])
                           + [np.concatenate([t["counts"]] + [t["sums"][f] for f in sorted(t["sums"])] + [t["calls"][:, None]],
                                             axis=1) for t in tables[1:]], axis=1)
    good = [coincidence_cols] + [(t["small"][f][k] - (t["small"][u].get(k, 0) if f == x and u in t["small"] else 0))[:, None]
                                 for t in tables for f in sorted(t["small"]) for k in sorted(t["small"][f])]
    good = np.concatenate(good, axis=1)
    rows = np.arange(len(ch))
    for columns in (np.concatenate([exact, good], axis=1), exact):
        kept = []
        for g in ref_groups(columns[rows]):
            v = np.concatenate([good[rows[g]], -ch.tiles[rows[g]]], axis=1)
            same = np.all(v[:, None] == v[None, :], axis=2)
            beaten = np.any((np.all(v[:, None] >= v[None, :], axis=2) & ~same) | (same & np.tri(len(g), k=-1, dtype=bool).T), axis=0)
            kept += [m for m, b in zip(g, beaten) if not b]
        rows = rows[np.sort(np.array(kept, dtype=np.int64))]
    return rows


def ref_coincidence_table(advancing, other, se, so, j, le, lo, other_outer, digits=({}, {})) -> np.ndarray:
    """The coincidence table over every pair of chains, of the instances with ``digits`` (per dimension, a digit
    per meshed level; 0 where absent)."""
    trees = [Tree(ch.extent, ch.tiles, ch.parts_by_level(),
                  {s: np.full(len(ch), q.get(s, 0)) for s in ch.part_levels or ()})
             for ch, q in zip((advancing, other), digits)]
    xb, xa, m, gap = advance_types(advancing.extent, advancing.tiles, j, le, tree=trees[0])
    c, yb, ya, n = context_types(other.extent, other.tiles, min(j if other_outer else j - 1, lo), lo, tree=trees[1])
    XB, XA, M, G = xb[:, None, :, None], xa[:, None, :, None], m[:, None, :, None], gap[:, None, :, None]
    C, YB, YA, N = c[None, :, None, :], yb[None, :, None, :], ya[None, :, None, :], n[None, :, None, :]
    hit = (se * G == so * (C - YB)) & (se * XB + so * YB == se * XA + so * YA)
    return np.sum(M * N * hit * (se * (XA - 1) + so * (YA - 1) + 1), axis=(2, 3))


def ref_summed_table(advancing, other, se, so, j, le, lo, other_outer, spatial, summed_levels) -> np.ndarray:
    """The coincidences summed over every digit of ``summed_levels`` one by one (digit 0 at the other levels)."""
    per_level = [range(size) if s in summed_levels else range(1) for s, size in spatial]
    levels = [s for s, _ in spatial]
    combos = [dict(zip(levels, q)) for q in itertools.product(*per_level)]
    return sum(ref_coincidence_table(advancing, other, se, so, j, le, lo, other_outer, (qa, qb))
               for qa in combos for qb in combos)


@pytest.mark.parametrize("extents, spatial", [((14, 3), ()), ((11, 5), ()), ((12, 4), ((2, 4),)), ((8, 4), ((1, 2), (3, 4))),
                                              ((9, 4), ((3, 3),)), ((7, 5), ((1, 3),)), ((6, 4), ((2, 2), (3, 3)))])
def test_window_pruning_and_coincidences_are_the_pairwise_forms(extents, spatial) -> None:
    """Also for window chains split over mesh axes, in unequal parts above L0 too (instance 0's types, and the
    sum over the digits of every meshed level and of L0's alone, against every digit one by one)."""
    (ep, er), depth = extents, 3
    cp = chains_module.enumerate_chains(ep, depth, ((0, 1), (1, 0)), 1, None, False, spatial, True)
    cr = chains_module.enumerate_chains(er, depth, ((0, 1), (1, 0)), 1, None, False, spatial, True)
    assert not spatial or (cp.factors.max() > 1 and cr.factors.max() > 1)
    levels = [s for s, _ in spatial]
    # Every level summed where its digits are few (the reference walks every pair of digit tuples).
    every = set(levels) if math.prod(size for _, size in spatial) <= 6 else set()
    summed_views = [tuple("sum" if s in summed else "rep" for s in levels)
                    for summed in ({levels[-1]} if levels and levels[-1] == depth else set(), every) if summed]
    for j, le, lo, outer in window_tables.table_variants(depth):
        for a, b, sa, sb in ((cp, cr, 1, 1), (cr, cp, 1, 1), (cp, cr, 2, 1)):
            assert np.array_equal(window_tables.coincidence_table(a, b, sa, sb, j, le, lo, outer),
                                  ref_coincidence_table(a, b, sa, sb, j, le, lo, outer))
            for view in summed_views:  # summed digit by digit, not per class
                want = ref_summed_table(a, b, sa, sb, j, le, lo, outer, spatial,
                                        {s for s, e in zip(levels, view) if e == "sum"})
                got = window_tables.coincidence_table(a, b, sa, sb, j, le, lo, outer, views=(view, view))
                assert np.array_equal(got, want)
    cols = np.concatenate([ref_coincidence_table(cp, cr, 1, 1, j, le, lo, outer)
                           for j, le, lo, outer in window_tables.table_variants(depth)], axis=1)
    assert np.array_equal(window_pruning.undominated(cp, cols), ref_window_undominated(cp, cols))
