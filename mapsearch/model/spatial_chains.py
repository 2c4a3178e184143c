"""Spatial splits of the tile chains: every part extent a meshed level may cut, counted per instance.

At the meshed level ``s`` a chain may cut each level-``(s-1)`` piece ``x``
into parts of extent ``P`` (``T_s <= P < T_{s-1}``), one per instance along
a mesh axis, by the contract's split-with-remainder rule: digit ``q`` gets
``e_q(x) = clip(x - q*P, 0, P)``. The *factor* is ``ceil(T_{s-1} / P)``, the
parts of a full parent piece, and at most the largest mesh axis. Parts need
not divide anything: the last instances may get smaller or no parts.

Instance ``q`` walks its own tree (docs/spatial.md): the level-``k`` pieces
above ``s`` in which it has a part (``min(x, T_{s-1}) > q*P``), and inside
each level-``(s-1)`` piece its part split by ``T_s..T_J``. Idle steps in the
lockstep repeat the region the instance holds, so its words are those of its
own tree. For every chain and part this module computes, exactly, that
tree's counts, footprint sums, still sums and calls, for the representative
(``q = 0``, whose part is the largest in every piece: ``"rep"``) and summed
over every instance (``"sum"``). Why those two views are all the model needs
with unequal parts is proved in docs/spatial.md ("Unequal parts").

Which parts are enumerated: every ``P`` with a factor from 2 to the largest
mesh axis while the (chain, part) rows stay within :data:`SPATIAL_ROWS_LIMIT`;
beyond it the balanced parts ``ceil(T_{s-1} / m)`` while within
:data:`BALANCED_ROWS_LIMIT`, and beyond that the parts that divide every
parent piece. ``parts_family`` says which (a family
restriction of the result unless it is :data:`ALL_PARTS`).
"""

from __future__ import annotations

import numpy as np

from mapsearch.budget import checkpoint
from mapsearch.model.footprints import footprint_values

# (chain, part) rows per dimension before pruning. Nearly every row survives pruning (its
# per-instance views differ) and CP-SAT's time grows with the table rows: measured on the 16x16
# array, 100x37x61 with every part (36,240 rows for m) solves in 15 s instead of 0.7 s; 256^3
# with balanced parts (24,090 rows per dimension) in 33 s instead of 4 s with dividing parts.
SPATIAL_ROWS_LIMIT = 40_000  # every part up to this
BALANCED_ROWS_LIMIT = 8_000  # then balanced parts ceil(T/m) up to this, else parts that divide
ALL_PARTS = "all parts"
BALANCED_PARTS = "balanced parts ceil(T/m) only"
EVEN_PARTS = "even divisions of the parent tile only"


def _part_choices(parent: np.ndarray, inner: np.ndarray, max_factor: int,
                  common: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    """``(row, part)`` pairs with factor 2..max_factor and ``part >= T_s``: the widest family within the limit.

    Every part; else the balanced parts ``ceil(T_{s-1}/m)``; else the parts
    that divide every level-``(s-1)`` piece (``common`` is their gcd).
    """
    # A factor beyond the largest parent tile gives the same parts (ceil(P/m) = 1): exact, and a mesh of
    # a billion instances costs no more than one as wide as the extent.
    max_factor = min(max_factor, int(parent.max(initial=1)))
    lo = np.maximum(inner, -(-parent // max_factor))
    counts = np.maximum(parent - lo, 0)  # parts lo .. parent-1
    if int(counts.sum()) <= SPATIAL_ROWS_LIMIT:
        rows = np.repeat(np.arange(parent.size), counts)
        start = np.repeat(np.cumsum(counts) - counts, counts)
        part = np.repeat(lo, counts) + (np.arange(rows.size) - start)
        return rows, part, ALL_PARTS
    for family in (BALANCED_PARTS, EVEN_PARTS):
        rows, parts = [], []
        for m in range(2, max_factor + 1):
            if m % 256 == 0:
                checkpoint(f"splitting tiles over a mesh of {max_factor:,} instances")
            if family == BALANCED_PARTS:
                part = -(-parent // m)
                ok = (part >= inner) & (part < parent)
            else:
                part = parent // m
                ok = (parent % m == 0) & (part >= inner) & (part > 0)
                ok &= np.where(part > 0, common % np.maximum(part, 1) == 0, False)
            rows.append(np.flatnonzero(ok))
            parts.append(part[ok])
        rows_a, parts_a = np.concatenate(rows), np.concatenate(parts)
        key = np.unique(np.stack([rows_a, parts_a], axis=1), axis=0)
        if key.shape[0] <= BALANCED_ROWS_LIMIT or family == EVEN_PARTS:
            return key[:, 0], key[:, 1], family
    raise AssertionError("unreachable")


def spatial_quantities(q: dict, s: int, max_factor: int, footprints, block: int) -> dict:
    """Add a spatial split at level ``s`` to every chain: one row per (chain, part), factor 1 for the unsplit chain."""
    tiles, extent = q["tiles"], q["extent"]
    rows, depth = tiles.shape
    parent = np.full(rows, extent, dtype=np.int64) if s == 1 else tiles[:, s - 2]
    common = np.zeros(rows, dtype=np.int64)
    for size, count in q["pieces"][s - 1]:
        common = np.gcd(common, np.where(count > 0, size, 0))
    split_rows, split_parts, family = _part_choices(parent, tiles[:, s - 1], max_factor, common)
    sel = np.concatenate([np.arange(rows), split_rows])
    part = np.concatenate([parent, split_parts])
    factor = -(-parent[sel] // part)
    out = {k: (v[sel] if isinstance(v, np.ndarray) else v) for k, v in q.items() if k not in ("sums", "small", "pieces")}
    out["sums"] = {f: v[sel] for f, v in q["sums"].items()}
    out["small"] = {f: {k: v[sel] for k, v in d.items()} for f, d in q["small"].items()}
    pieces = [[(sz[sel], c[sel]) for sz, c in lv] for lv in q["pieces"]]
    out["pieces"] = pieces
    out["parts"], out["factors"] = part, factor
    out["parts_family"] = family
    out["part_rows"] = int(split_rows.size)
    out["flavoured"] = _instance_views(out, pieces, s, part, factor, footprints, block)
    return out


def _split(pieces: list[tuple[np.ndarray, np.ndarray]], t: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """One level down: each (extent, count) splits into full tiles of ``t`` and a remainder."""
    full_count = np.zeros_like(t)
    level = []
    for size, count in pieces:
        full = size // t
        rem = size - full * t
        full_count = full_count + count * full
        level.append((rem, count * (rem > 0)))
    return [(t, full_count)] + level


def _instance_views(q: dict, pieces, s: int, part: np.ndarray, factor: np.ndarray, footprints, block: int) -> dict:
    """Per chain row: the counts, sums, still sums and calls of instance 0 (``rep``) and of all instances (``sum``)."""
    tiles = q["tiles"]
    rows, depth = tiles.shape
    split = factor > 1
    parent = np.full(rows, q["extent"], dtype=np.int64) if s == 1 else tiles[:, s - 2]
    f_of = footprint_values
    views = {}
    for name, instances in (("rep", [0]), ("sum", list(range(int(factor.max()))))):
        counts = np.zeros((rows, depth + 1), dtype=np.int64)
        sums = {f: np.zeros((rows, depth + 1), dtype=np.int64) for f in footprints}
        small = {f: {(k, i): np.zeros(rows, dtype=np.int64) for i in range(s, depth + 1) for k in range(i)}
                 for f in footprints}
        calls = np.zeros(rows, dtype=np.int64)
        for inst in instances:
            offset = inst * part
            if not np.any(offset < parent):
                continue
            # Levels above s: the pieces in which this instance has a part.
            for k in range(s):
                for sz, c in pieces[k]:
                    active = c * (np.minimum(sz, parent) > offset)
                    counts[:, k] += active
                    for f in footprints:
                        sums[f][:, k] += active * f_of(f, sz)
                    # Still above s: the piece is not split before s (sz <= parent) and its part is not split up to i.
                    e = np.clip(sz - offset, 0, part)
                    unsplit = active * (sz <= parent) * (e > 0)
                    for f in footprints:
                        for i in range(s, depth + 1):
                            small[f][(k, i)] += unsplit * (e <= tiles[:, i - 1]) * f_of(f, e)
            # Levels s..J: inside each level-(s-1) piece, this instance's part split by T_s..T_J.
            for sz, c in pieces[s - 1]:
                e = np.clip(sz - offset, 0, part)
                sub = [(e, c * (e > 0))]
                for k in range(s, depth + 1):
                    sub = _split(sub, tiles[:, k - 1])
                    counts[:, k] += sum(cc for _, cc in sub)
                    for f in footprints:
                        sums[f][:, k] += sum(cc * f_of(f, x) for x, cc in sub)
                        for i in range(k + 1, depth + 1):
                            small[f][(k, i)] += sum(cc * f_of(f, x) * (x <= tiles[:, i - 1]) for x, cc in sub)
                calls += sum(cc * (-(-x // block)) for x, cc in sub)
        # Unsplit chains: the one instance sees the plain tree.
        counts[~split] = q["counts"][~split]
        for f in footprints:
            sums[f][~split] = q["sums"][f][~split]
            for key in small[f]:
                small[f][key][~split] = q["small"][f][key][~split]
        calls[~split] = q["calls"][~split]
        views[name] = {"counts": counts, "sums": sums, "small": small, "calls": calls}
    return views
