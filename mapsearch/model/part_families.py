"""Which spatial part extents the chains enumerate per meshed level: the part families and their choice.

Per meshed level ``s`` a chain may cut each level-``(s-1)`` piece into
parts of extent ``P`` with factor ``ceil(T_{s-1} / P)`` at most the
largest mesh axis (model/spatial_chains.py). The families, widest first:

- :data:`ALL_PARTS`: every ``P`` with ``T_s <= P < T_{s-1}``;
- :data:`BALANCED_PARTS`: ``P = ceil(T_{s-1} / m)`` for every factor ``m``;
- :data:`MESH_PARTS`: the even divisions and ``P = ceil(T_{s-1} / m)`` for
  every ``m`` that divides the size of one of the level's mesh axes (a
  split that, alone or beside splits of other dimensions on the same axis,
  can use every instance of it);
- :data:`EVEN_PARTS`: ``P = T_{s-1} / m`` where ``P`` divides the parent
  tile and every piece of it.

:func:`choose_families` picks the widest combination within the row
limits; every family but :data:`ALL_PARTS` is a named restriction of the
result (model/family.py).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from mapsearch.budget import checkpoint

# (chain, part) rows per dimension before pruning. Nearly every row survives pruning (its
# per-instance views differ) and CP-SAT's time grows with the table rows: measured on the 16x16
# array, 100x37x61 with every part (36,240 rows for m) solves in 15 s instead of 0.7 s; 256^3
# with balanced parts (24,090 rows per dimension) in 33 s instead of 4 s with dividing parts;
# the ResNet-50 1x1 layer on eyeriss-like with every part of p and q (16,332 rows each, 28,000
# before pruning) in 64 s, with balanced ones (2,680 each) in 3.7 s, the same optimum.
SPATIAL_ROWS_LIMIT = 15_000  # every part at every meshed level up to this
BALANCED_ROWS_LIMIT = 8_000  # a narrower family at some level: up to this, else parts that divide
ALL_PARTS = "all parts"
BALANCED_PARTS = "balanced parts ceil(T/m) only"
MESH_PARTS = "even divisions and balanced parts ceil(T/m) with m dividing a mesh axis only"
EVEN_PARTS = "even divisions of the parent tile only"
FAMILIES = (ALL_PARTS, BALANCED_PARTS, MESH_PARTS, EVEN_PARTS)
# Where no combination fits the limits, levels take MESH_PARTS instead of EVEN_PARTS (outermost first) while the
# rows stay within this many times EVEN_PARTS' at every level, or within SPATIAL_ROWS_LIMIT. Measured on simba-like (6x6 chiplets, 16 PEs, 8x8
# lanes), 1024^3 at a 20 s limit: even parts everywhere (9,398 split rows per dimension) use 4 of 6 chiplets on an
# axis and end at 131,072 clocks; MESH_PARTS at the chiplets (15,700 rows) at 114,688; at every level (79,261 rows)
# also 114,688, but the build takes 14 s more. On eyeriss-like's BERT FFN, MESH_PARTS at its one level has 44x the
# rows of EVEN_PARTS (79,281 against 1,780) and no schedule is found in 20 s: the factor keeps such cases even.
MESH_ROWS_FACTOR = 2
_CELLS_AT_ONCE = 4_000_000  # (parent extent, factor) pairs tabled at once by part_choices


def _parents(tiles: np.ndarray, extent: int, s: int) -> np.ndarray:
    return np.full(tiles.shape[0], extent, dtype=np.int64) if s == 1 else tiles[:, s - 2]


def axis_sizes(entry: tuple) -> tuple[int, ...]:
    """The mesh axes' sizes of a ``(level, largest mesh axis[, axes' sizes])`` entry (one axis when not given)."""
    return tuple(entry[2]) if len(entry) > 2 and entry[2] else (int(entry[1]),)


def mesh_factors(max_factor: int, axes: tuple[int, ...], largest_parent: int) -> list[int]:
    """The factors ``2..max_factor`` that divide the size of some mesh axis, ascending; of those at least
    ``largest_parent`` (every part 1), the first only."""
    divisors = set()
    for a in axes:
        for d in range(1, math.isqrt(a) + 1):
            if a % d == 0:
                divisors.update((d, a // d))
    out = sorted(m for m in divisors if 2 <= m <= max_factor)
    beyond = [m for m in out if m >= largest_parent]
    return [m for m in out if m < largest_parent] + beyond[:1]


def part_choices(parent: np.ndarray, inner: np.ndarray, max_factor: int, family: str,
                 common: np.ndarray, axes: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """``(row, part)`` pairs of a family with factor 2..max_factor and ``T_s <= part < T_{s-1}``.

    ``ALL_PARTS``: every part; ``BALANCED_PARTS``: ``ceil(parent/m)``;
    ``EVEN_PARTS``: ``parent/m`` where that divides ``common`` (the gcd of
    the parent pieces); ``MESH_PARTS``: ``EVEN_PARTS`` and ``ceil(parent/m)``
    for the factors ``m`` that divide one of ``axes`` (the mesh axes' sizes;
    none given: ``max_factor``). The unsplit choice (``part = parent``) is
    not listed.
    """
    # A factor beyond the largest parent tile gives the same parts (ceil(P/m) = 1): exact, and a mesh of
    # a billion instances costs no more than one as wide as the extent.
    if family == MESH_PARTS:
        return _mesh_choices(parent, inner, max_factor, common, axes or (max_factor,))
    max_factor = min(max_factor, int(parent.max(initial=1)))
    if family == ALL_PARTS:
        lo = np.maximum(inner, -(-parent // max_factor))
        counts = np.maximum(parent - lo, 0)  # parts lo .. parent-1
        rows = np.repeat(np.arange(parent.size), counts)
        start = np.repeat(np.cumsum(counts) - counts, counts)
        return rows, np.repeat(lo, counts) + (np.arange(rows.size) - start)
    if max_factor < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if family == BALANCED_PARTS:  # few cheap passes, and the output is most of the work
        rows, parts = [], []
        previous = parent
        for m in range(2, max_factor + 1):
            if m % 256 == 0:
                checkpoint(f"splitting tiles over a mesh of {max_factor:,} instances")
            part = -(-parent // m)
            ok = (part >= inner) & (part < parent) & (part != previous)  # non-increasing in m: new values only
            previous = part
            rows.append(np.flatnonzero(ok))
            parts.append(part[ok])
        return np.concatenate(rows), np.concatenate(parts)
    row, m, p = _even_choices(parent, inner, max_factor, common)
    # Factor-major, then rows ascending (they are already): a stable sort on the factor, a radix sort when it fits 16 bits.
    order = np.argsort(m.astype(np.uint16) if max_factor < 2**16 else m, kind="stable")
    return row[order], p[order]


def _mesh_choices(parent: np.ndarray, inner: np.ndarray, max_factor: int, common: np.ndarray,
                  axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``(row, part)`` of :data:`MESH_PARTS`, each pair once: the axes' balanced parts by factor, then the even
    divisions none of those gives.

    ``ceil(parent/m)`` does not grow with ``m``, so dropping a value equal
    to the previous factor's keeps each balanced part once. An even division
    ``e = parent/m'`` is ``ceil(parent/m)`` exactly for ``m' <= m <=
    (parent-1) // (e-1)`` (every ``m >= m'`` when ``e = 1``): it is already
    listed iff an axis factor lies there. No sort: counting the family is on
    the chain enumeration's path."""
    largest = int(parent.max(initial=1))
    factors = np.array(mesh_factors(max_factor, axes, largest), dtype=np.int64)
    rows, parts = [], []
    previous = parent
    for m in factors.tolist():
        part = -(-parent // m)
        ok = (part >= inner) & (part < parent) & (part != previous)
        previous = part
        rows.append(np.flatnonzero(ok))
        parts.append(part[ok])
    if min(max_factor, largest) >= 2:
        row, m_even, even = _even_choices(parent, inner, min(max_factor, largest), common)
        lo = m_even + 2  # the factor of the even division
        hi = np.where(even > 1, (parent[row] - 1) // np.maximum(even - 1, 1), np.iinfo(np.int64).max)
        listed = np.searchsorted(factors, hi, side="right") > np.searchsorted(factors, lo, side="left")
        rows.append(row[~listed])
        parts.append(even[~listed])
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(rows).astype(np.int64), np.concatenate(parts).astype(np.int64)


def _even_choices(parent: np.ndarray, inner: np.ndarray, max_factor: int, common: np.ndarray):
    """``(row, factor - 2, part)`` of :data:`EVEN_PARTS`, by row then factor.

    The even parts of a parent tile are its divisors: tabled once per
    distinct parent, each row then keeps those >= its inner tile that
    divide its pieces, instead of a pass (two remainders) over every row
    per factor, which took seconds with 128 instances a side.
    """
    which, first, n, m_index, listed_part = _prefix_choices(parent, inner, max_factor, EVEN_PARTS)
    row = np.repeat(np.arange(parent.size), n)
    k = np.repeat(first[which], n) + (np.arange(row.size) - np.repeat(np.cumsum(n) - n, n))
    m, p = m_index[k], listed_part[k]
    ok = common[row] % p == 0
    return row[ok], m[ok], p[ok]


def _prefix_choices(parent: np.ndarray, inner: np.ndarray, max_factor: int, family: str):
    """The parts of the family per distinct parent (:func:`_listed_parts`, decreasing) and per row how many of
    its parent's are >= its inner tile (a prefix): ``(which parent, its first entry, count, factor - 2, part)``."""
    values, which = np.unique(parent, return_inverse=True)
    per_value, value_of, m_index, listed_part = _listed_parts(values, max_factor, family)
    first = np.cumsum(per_value) - per_value
    big = int(values.max()) + 1
    key = value_of * big - listed_part  # ascending: by value, then parts decreasing
    n = np.searchsorted(key, which * big - inner, side="right") - first[which]
    return which, first, n, m_index, listed_part


def _listed_parts(values: np.ndarray, max_factor: int, family: str):
    """Per parent extent of ``values``: its parts of the family with factor 2..max_factor, decreasing.

    ``(count per value, value index, factor - 2, part)`` per listed part, by
    value then factor. Tabled a block of values at a time (values x
    factors stays small even where both reach the extent).
    """
    factor = np.arange(2, max_factor + 1, dtype=np.int64)
    step = max(1, _CELLS_AT_ONCE // factor.size)
    value_of, m_index, parts = [], [], []
    for lo in range(0, values.size, step):
        checkpoint(f"splitting tiles over a mesh of {max_factor:,} instances")
        v = values[lo:lo + step, None]
        if family == BALANCED_PARTS:
            part = -(-v // factor[None, :])
            previous = np.concatenate([v, part[:, :-1]], axis=1)
            listed = (part < v) & (part != previous)  # non-increasing in m: each value at its first m
        else:
            part = v // factor[None, :]
            listed = (v % factor[None, :] == 0) & (part > 0)
        i, m = np.nonzero(listed)
        value_of.append(i + lo)
        m_index.append(m)
        parts.append(part[i, m])
    value_of = np.concatenate(value_of)
    return np.bincount(value_of, minlength=values.size), value_of, np.concatenate(m_index), np.concatenate(parts)


def _choice_counts(tiles: np.ndarray, extent: int, s: int, max_factor: int, family: str,
                   common: np.ndarray, axes: tuple[int, ...] = ()) -> np.ndarray:
    """Per row: how many split parts the family offers at level ``s``."""
    parent = _parents(tiles, extent, s)
    if family == ALL_PARTS:
        return np.maximum(parent - np.maximum(tiles[:, s - 1], -(-parent // max_factor)), 0)
    if family == MESH_PARTS:
        rows, _ = _mesh_choices(parent, tiles[:, s - 1], max_factor, common, axes or (max_factor,))
        return np.bincount(rows, minlength=tiles.shape[0]).astype(np.int64)
    max_factor = min(max_factor, int(parent.max(initial=1)))
    if max_factor < 2:
        return np.zeros(tiles.shape[0], dtype=np.int64)
    if family == BALANCED_PARTS:  # every balanced part >= the inner tile is listed: the prefix's length
        return _prefix_choices(parent, tiles[:, s - 1], max_factor, family)[2].astype(np.int64)
    rows, _, _ = _even_choices(parent, tiles[:, s - 1], max_factor, common)
    return np.bincount(rows, minlength=tiles.shape[0]).astype(np.int64)


def choose_families(tiles: np.ndarray, extent: int, spatial, commons,
                    limits: tuple[int, int] | None = None) -> tuple[str, ...]:
    """The widest part family per meshed level whose split (chain, part) rows fit the limits.

    Every part everywhere while the rows beyond the unsplit chains stay
    within ``limits[0]`` (:data:`SPATIAL_ROWS_LIMIT`); otherwise the
    combination with the most rows within ``limits[1]``
    (:data:`BALANCED_ROWS_LIMIT`; on a tie, the one with fewer
    :data:`MESH_PARTS` levels: the same rows under the narrower name); none
    fitting, parts that divide at every level, each level from the
    outermost taking :data:`MESH_PARTS` instead where the rows stay within
    :data:`MESH_ROWS_FACTOR` times those of parts that divide everywhere, or
    within ``limits[0]``.
    ``spatial``: ``(level, largest mesh axis[, the axes' sizes])`` per
    meshed level.
    """
    all_limit, narrower_limit = limits or (SPATIAL_ROWS_LIMIT, BALANCED_ROWS_LIMIT)
    counts = {(lv, fam): _choice_counts(tiles, extent, entry[0], entry[1], fam, commons[lv], axis_sizes(entry))
              for lv, entry in enumerate(spatial) for fam in FAMILIES}

    def split_rows(combo: tuple[str, ...]) -> float:
        total = np.ones(tiles.shape[0], dtype=np.float64)
        for lv, fam in enumerate(combo):
            total *= 1 + counts[(lv, fam)]
        return float(total.sum()) - tiles.shape[0]

    best, best_key = None, None
    for combo in itertools.product(FAMILIES, repeat=len(spatial)):
        rows = split_rows(combo)
        if all(f == ALL_PARTS for f in combo) and rows <= all_limit:
            return combo
        key = (rows, -combo.count(MESH_PARTS))
        if rows <= narrower_limit and (best_key is None or key > best_key):
            best, best_key = combo, key
    if best is not None:
        return best
    fallback = [EVEN_PARTS] * len(spatial)
    ceiling = max(MESH_ROWS_FACTOR * split_rows(tuple(fallback)), all_limit)
    for lv in range(len(spatial)):
        wider = fallback[:lv] + [MESH_PARTS] + fallback[lv + 1:]
        if split_rows(tuple(wider)) <= ceiling:
            fallback = wider
    return tuple(fallback)
