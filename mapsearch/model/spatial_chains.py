"""Spatial splits of the tile chains: part extents at every meshed level, counted per instance view.

At each meshed level ``s`` a chain may cut each level-``(s-1)`` piece ``x``
into parts of extent ``P_s`` (``T_s <= P_s <= T_{s-1}``; ``P_s = T_{s-1}`` is
"not split"), one part per instance along a mesh axis, by the contract's
split-with-remainder rule: digit ``q`` gets ``e_q(x) = clip(x - q*P_s, 0,
P_s)``. The *factor* is ``ceil(T_{s-1} / P_s)``, the parts of a full parent
piece, at most the level's largest mesh axis. Parts need not divide
anything: the last instances may get smaller or no parts.

Instance ``q`` (one digit per split) walks its own tree (docs/spatial.md):
at a split it keeps its own part of each parent piece, then tiles it. What
the model reads of a dimension below a split is a *view*: per meshed level,
``"rep"`` (digit 0, whose part is the largest in every piece) or ``"sum"``
(summed over every digit). A view's tables are sums over the view's
instances of that instance's counts, footprint sums, still sums and calls
(:func:`view_tables`), vectorised over the chain rows. Digits that get the
same part of every parent piece do the same work, so the tables walk the
lowest digit of each such class and weigh it by the class's size: the cost
is per class (a few per split), whatever the instance count. Why these
views are all the model needs is proved in docs/spatial.md ("Several
meshed levels").

Which parts are enumerated (:func:`choose_families`): per meshed level
every part, the balanced parts ``ceil(T_{s-1} / m)``, or the parts that
divide the parent tile and its pieces; the widest combination whose (chain,
part) rows stay within :data:`SPATIAL_ROWS_LIMIT` (every part at every
level) or :data:`BALANCED_ROWS_LIMIT` (otherwise). ``parts_family`` names
what was cut per level (a family restriction of the result unless every
level has :data:`ALL_PARTS`).
"""

from __future__ import annotations

import itertools

import numpy as np

from mapsearch.budget import checkpoint
from mapsearch.model.footprints import footprint_values

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
EVEN_PARTS = "even divisions of the parent tile only"
FAMILIES = (ALL_PARTS, BALANCED_PARTS, EVEN_PARTS)

Pieces = list[tuple[np.ndarray, np.ndarray]]  # (extent, count) per entry, one value per chain row


# ----------------------------------------------------------------------------- which parts
def _parents(tiles: np.ndarray, extent: int, s: int) -> np.ndarray:
    return np.full(tiles.shape[0], extent, dtype=np.int64) if s == 1 else tiles[:, s - 2]


def _common_divisor(pieces: Pieces) -> np.ndarray:
    """Per row, the gcd of the extents of the pieces present (0 when none)."""
    rows = pieces[0][0].shape[0]
    common = np.zeros(rows, dtype=np.int64)
    for size, count in pieces:
        common = np.gcd(common, np.where(count > 0, size, 0))
    return common


def part_choices(parent: np.ndarray, inner: np.ndarray, max_factor: int, family: str,
                 common: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(row, part)`` pairs of a family with factor 2..max_factor and ``T_s <= part < T_{s-1}``.

    ``ALL_PARTS``: every part; ``BALANCED_PARTS``: ``ceil(parent/m)``;
    ``EVEN_PARTS``: ``parent/m`` where that divides ``common`` (the gcd of
    the parent pieces). The unsplit choice (``part = parent``) is not listed.
    """
    # A factor beyond the largest parent tile gives the same parts (ceil(P/m) = 1): exact, and a mesh of
    # a billion instances costs no more than one as wide as the extent.
    max_factor = min(max_factor, int(parent.max(initial=1)))
    if family == ALL_PARTS:
        lo = np.maximum(inner, -(-parent // max_factor))
        counts = np.maximum(parent - lo, 0)  # parts lo .. parent-1
        rows = np.repeat(np.arange(parent.size), counts)
        start = np.repeat(np.cumsum(counts) - counts, counts)
        return rows, np.repeat(lo, counts) + (np.arange(rows.size) - start)
    rows, parts = [], []
    previous = parent
    for m in range(2, max_factor + 1):
        if m % 256 == 0:
            checkpoint(f"splitting tiles over a mesh of {max_factor:,} instances")
        if family == BALANCED_PARTS:
            part = -(-parent // m)
            ok = (part >= inner) & (part < parent) & (part != previous)  # non-increasing in m: new values only
            previous = part
        else:
            part = parent // m
            ok = (parent % m == 0) & (part >= inner) & (part > 0)
            ok &= np.where(part > 0, common % np.maximum(part, 1) == 0, False)
        rows.append(np.flatnonzero(ok))
        parts.append(part[ok])
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(rows), np.concatenate(parts)


def _choice_counts(tiles: np.ndarray, extent: int, s: int, max_factor: int, family: str,
                   common: np.ndarray) -> np.ndarray:
    """Per row: how many split parts the family offers at level ``s``."""
    parent = _parents(tiles, extent, s)
    if family == ALL_PARTS:
        return np.maximum(parent - np.maximum(tiles[:, s - 1], -(-parent // max_factor)), 0)
    rows, _ = part_choices(parent, tiles[:, s - 1], max_factor, family, common)
    return np.bincount(rows, minlength=tiles.shape[0]).astype(np.int64)


def choose_families(tiles: np.ndarray, extent: int, spatial, commons) -> tuple[str, ...]:
    """The widest part family per meshed level whose split (chain, part) rows fit the limits.

    Every part everywhere while the rows beyond the unsplit chains stay
    within :data:`SPATIAL_ROWS_LIMIT`; otherwise the combination with the
    most rows within :data:`BALANCED_ROWS_LIMIT`; none fitting, parts that
    divide at every level.
    """
    counts = {(lv, fam): _choice_counts(tiles, extent, s, mf, fam, commons[lv])
              for lv, (s, mf) in enumerate(spatial) for fam in FAMILIES}
    best, best_rows = None, -1
    for combo in itertools.product(FAMILIES, repeat=len(spatial)):
        total = np.ones(tiles.shape[0], dtype=np.float64)
        for lv, fam in enumerate(combo):
            total *= 1 + counts[(lv, fam)]
        split_rows = float(total.sum()) - tiles.shape[0]
        limit = SPATIAL_ROWS_LIMIT if all(f == ALL_PARTS for f in combo) else BALANCED_ROWS_LIMIT
        if all(f == ALL_PARTS for f in combo) and split_rows <= limit:
            return combo
        if split_rows <= limit and split_rows > best_rows:
            best, best_rows = combo, split_rows
    return best if best is not None else (EVEN_PARTS,) * len(spatial)


# ----------------------------------------------------------------------------- pieces
def cut(pieces: Pieces, t: np.ndarray) -> Pieces:
    """Split every piece into full pieces of ``t`` and a remainder (a tiling, or all the parts of a split)."""
    full_count = np.zeros_like(t)
    out = []
    for size, count in pieces:
        full = size // t
        rem = size - full * t
        full_count = full_count + count * full
        out.append((rem, count * (rem > 0)))
    return [(t, full_count)] + out


def _part(x: np.ndarray, q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Digit ``q``'s part of a piece of extent ``x`` split into parts of ``p``: ``clip(x - q*p, 0, p)``."""
    return np.clip(x - q * p, 0, p)


class _Instance:
    """One instance (a digit per meshed level, per chain row) and the quantities of its own tree.

    Its tree cuts, at each level ``k``, every parent piece into its own part
    (at a meshed level) and then into tiles of ``T_k``; a piece belongs to it
    when it has a part below it (it is *active*).
    """

    def __init__(self, tiles: np.ndarray, extent: int, parts: dict[int, np.ndarray], digits: dict[int, np.ndarray]):
        self.tiles = tiles
        self.depth = tiles.shape[1]
        self.parts = parts
        self.digits = digits
        rows = tiles.shape[0]
        level: Pieces = [(np.full(rows, extent, dtype=np.int64), np.ones(rows, dtype=np.int64))]
        self.levels = [level]
        for k in range(1, self.depth + 1):
            level = cut([(self.own(x, k), c) for x, c in level], tiles[:, k - 1])
            self.levels.append(level)

    def own(self, x: np.ndarray, k: int) -> np.ndarray:
        """The instance's part of a level-``(k-1)`` piece at level ``k``'s split (the piece itself without one)."""
        return _part(x, self.digits[k], self.parts[k]) if k in self.parts else x

    def active(self, x: np.ndarray, k: int) -> np.ndarray:
        """Whether the instance has a part below a level-``k`` piece of extent ``x``.

        Parts and tiles are non-decreasing in the piece's extent, so it has one
        below the piece exactly when it has one below the piece's first
        (largest) tile: follow that one down.
        """
        for m in range(k + 1, self.depth + 1):
            x = np.minimum(self.own(x, m), self.tiles[:, m - 1])
        return x > 0

    def idle_from(self, x: np.ndarray, k: int) -> np.ndarray:
        """The first level below ``k`` where the instance has no part below a level-``k`` piece ``x`` (depth+1: none)."""
        first = np.full(x.shape, self.depth + 1, dtype=np.int64)
        for m in range(k + 1, self.depth + 1):
            x = np.minimum(self.own(x, m), self.tiles[:, m - 1])
            first = np.where((x <= 0) & (first > self.depth), m, first)
        return first

    def single(self, x: np.ndarray, k: int, i: int) -> tuple[np.ndarray, np.ndarray]:
        """The one level-``i`` piece of the instance below a level-``k`` piece of extent ``x`` (0 if it has
        several), and the levels whose keepers end its stillness (a bit mask, 0 when nothing does).

        A tile cuts ``y`` into ``floor(y/T)`` full tiles and a remainder; the
        instance keeps one piece when ``y <= T``, or when there is one full
        tile and the instance has no part below the remainder. In the second
        case it idles in the level-``m`` remainder tile, keeping its region,
        unless it holds an output and a keeper of it at a level from ``m`` to
        just above the level ``l`` where the instance's part ends moves into
        the remainder (docs/spatial.md, "Replay decisions": the flush): the
        mask has the bits ``m .. l-1`` of every such remainder.
        """
        mask = np.zeros(x.shape, dtype=np.int64)
        for m in range(k + 1, i + 1):
            y = self.own(x, m)
            t = self.tiles[:, m - 1]
            rem = y - t
            one_full = (y > t) & (y < 2 * t) & ~self.active(rem, m)
            if one_full.any():
                idle = np.minimum(self.idle_from(np.maximum(rem, 0), m), i)
                mask |= np.where(one_full, (1 << idle) - (1 << m), 0)
            x = np.where(y <= t, y, np.where(one_full, t, 0))
        x = np.where(self.active(x, i), x, 0)
        return x, np.where(x > 0, mask, 0)


def _classes(zs: Pieces, part: np.ndarray, factor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Digits of a split that do the same work, per row: ``(lowest digit, digits in the class)`` per column.

    Digit ``q``'s part of a parent piece ``z`` is ``P`` when ``q < floor(z/P)``,
    ``z mod P`` when ``q == floor(z/P)`` and nothing after: between the
    breakpoints ``floor(z/P)`` and ``floor(z/P) + 1`` of every parent extent
    ``z`` (and 0, the factor) every digit has the same part of every parent
    piece, so the same tree (docs/spatial.md, as ``sim/spatial.split_classes``).
    Repeated breakpoints give empty classes (size 0).
    """
    cols = [np.zeros_like(part), factor]
    for z, count in zs:
        b = np.where(count > 0, z // part, factor)
        cols += [np.minimum(b, factor), np.minimum(b + 1, factor)]
    points = np.sort(np.stack(cols, axis=1), axis=1)
    return points[:, :-1], np.diff(points, axis=1)


def view_tables(tiles: np.ndarray, extent: int, parts: dict[int, np.ndarray], view: dict[int, str],
                footprints, block: int) -> dict:
    """Counts ``N[k]``, footprint sums ``F[f][k]``, still sums ``W[f][(k, i)]`` and calls of one view.

    Each is the sum over the view's instances (digit 0 at a ``"rep"`` level,
    every digit at a ``"sum"`` level) of that instance's own quantity
    (``model/chains.py`` defines them for one tree; a piece counts where the
    instance is active, and a level-``k`` piece is still up to ``i`` when the
    instance has one level-``i`` piece below it). A piece still only
    because the instance idles through remainders is summed apart, under
    ``W[f][(k, i, mask)]`` (:meth:`_Instance.single`: an output's keeper at a
    level of ``mask`` flushes it). Digits are walked one class of equal work
    at a time (:func:`_classes`), weighted by the class size, so the cost is
    per class, not per instance.
    """
    rows, depth = tiles.shape
    levels = sorted(parts)
    factors = {s: -(-(np.full(rows, extent) if s == 1 else tiles[:, s - 2]) // parts[s]) for s in levels}
    every = _Instance(tiles, extent, parts, {s: np.zeros(rows, dtype=np.int64) for s in levels})
    summed = {}
    for s in levels:
        if view[s] == "sum":
            above = _expanded(tiles, extent, parts, s - 1)
            summed[s] = _classes(above, parts[s], factors[s])
    counts = np.zeros((rows, depth + 1), dtype=np.int64)
    sums = {f: np.zeros((rows, depth + 1), dtype=np.int64) for f in footprints}
    small = {f: {(k, i): np.zeros(rows, dtype=np.int64) for i in range(1, depth + 1) for k in range(i)}
             for f in footprints}
    calls = np.zeros(rows, dtype=np.int64)
    zero = np.zeros(rows, dtype=np.int64)
    for combo in itertools.product(*(range(summed[s][0].shape[1]) if s in summed else range(1) for s in levels)):
        digits, weight = {}, np.ones(rows, dtype=np.int64)
        for s, c in zip(levels, combo):
            digits[s] = summed[s][0][:, c] if s in summed else zero
            weight = weight * (summed[s][1][:, c] if s in summed else 1)
        if not weight.any():
            continue
        inst = every if not summed else _Instance(tiles, extent, parts, digits)
        for k, level in enumerate(inst.levels):
            for size, count in level:
                on = weight * count * inst.active(size, k)
                counts[:, k] += on
                for f in footprints:
                    sums[f][:, k] += on * footprint_values(f, size)
                    for i in range(k + 1, depth + 1):
                        y, mask = inst.single(size, k, i)
                        still = on * (y > 0) * footprint_values(f, y)
                        small[f][(k, i)] += np.where(mask == 0, still, 0)
                        for bits in np.unique(mask[(mask > 0) & (still > 0)]):
                            idle = small[f].setdefault((k, i, int(bits)), np.zeros(rows, dtype=np.int64))
                            idle += np.where(mask == bits, still, 0)
        calls += weight * sum(c * (-(-x // block)) for x, c in inst.levels[-1])
    return {"counts": counts, "sums": sums, "small": small, "calls": calls}


def _expanded(tiles: np.ndarray, extent: int, parts: dict[int, np.ndarray], level: int) -> Pieces:
    """Every instance's level-``level`` pieces together: each split cuts every part (the summed tree)."""
    rows = tiles.shape[0]
    pieces: Pieces = [(np.full(rows, extent, dtype=np.int64), np.ones(rows, dtype=np.int64))]
    for k in range(1, level + 1):
        if k in parts:
            pieces = cut(pieces, parts[k])
        pieces = cut(pieces, tiles[:, k - 1])
    return pieces


# ----------------------------------------------------------------------------- the chains
def spatial_quantities(q: dict, spatial: tuple[tuple[int, int], ...], footprints, block: int) -> dict:
    """Add a part per meshed level to every chain: one row per (chain, parts); the unsplit part is the parent.

    ``spatial``: ``(level, largest mesh axis)`` per meshed level, outermost
    first. The rows gain ``parts``/``factors`` (one column per meshed level)
    and ``flavoured``: the tables of every view, keyed by a tuple of
    ``"rep"``/``"sum"`` per meshed level.
    """
    tiles, extent = q["tiles"], q["extent"]
    levels = [s for s, _ in spatial]
    commons = [_common_divisor(q["pieces"][s - 1]) for s in levels]
    families = choose_families(tiles, extent, spatial, commons)
    sel = np.arange(tiles.shape[0])
    part_cols: list[np.ndarray] = []
    split_rows = 0
    for lv, ((s, mf), family) in enumerate(zip(spatial, families)):
        parent = _parents(tiles[sel], extent, s)
        rows, parts = part_choices(parent, tiles[sel, s - 1], mf, family, commons[lv][sel])
        keep = np.concatenate([np.arange(sel.size), rows])
        part_cols = [c[keep] for c in part_cols] + [np.concatenate([parent, parts])]
        sel = sel[keep]
        split_rows = sel.size - tiles.shape[0]
    out = {k: (v[sel] if isinstance(v, np.ndarray) else v) for k, v in q.items() if k not in ("sums", "small", "pieces")}
    out["sums"] = {f: v[sel] for f, v in q["sums"].items()}
    out["small"] = {f: {k: v[sel] for k, v in d.items()} for f, d in q["small"].items()}
    out["pieces"] = [[(sz[sel], c[sel]) for sz, c in lv] for lv in q["pieces"]]
    part = np.stack(part_cols, axis=1)
    parents = np.stack([_parents(out["tiles"], extent, s) for s in levels], axis=1)
    out["parts"], out["factors"] = part, -(-parents // part)
    out["parts_family"] = families
    out["part_rows"] = int(split_rows)
    by_level = {s: part[:, lv] for lv, s in enumerate(levels)}
    out["flavoured"] = {view: view_tables(out["tiles"], extent, by_level, dict(zip(levels, view)), footprints, block)
                        for view in itertools.product(("rep", "sum"), repeat=len(levels))}
    return out
