"""Per-dimension tile chains and the exact quantities the model reads from them.

A *chain* of dimension ``d`` is its tile extents below the top,
``E >= T_1 >= ... >= T_J >= 1`` (level ``j`` is ``j`` levels below the top).
Splitting with remainders, a parent piece of extent ``s`` becomes
``s // T`` pieces of ``T`` and one piece of ``s % T`` when that is non-zero, so
the pieces of every level are a short list of (extent, count) pairs and every
count below is exact:

- ``N[j]``: number of level-``j`` pieces (``N[0] = 1``);
- ``F[f][j] = sum over level-j pieces x of f(x)``: words a tensor whose axis
  footprint is ``f(x) = alpha*x + beta`` moves when it loads every piece once;
- ``W[f][k][i] = sum over level-k pieces x <= T_i of f(x)`` (``k < i``): the
  words of the level-``k`` pieces that no level up to ``i`` splits further,
  which is where a loop that advances reloads nothing (see ``traffic``);
- ``calls``: op calls along the dimension, ``sum over level-J pieces ceil(x/b)``.

Tile extents beyond these quantities only cost capacity, so among chains with
equal quantities only those with minimal extents (componentwise) survive: this
is the exact form of the hint that only about ``2*sqrt(E)`` extents matter on
one level (there ``N[1] = ceil(E/T)`` is all that counts, and the smallest ``T``
per count fits best).

>>> c = enumerate_chains(10, 1, footprints=((1, 0),))
>>> sorted(zip(c.tiles[:, 0].tolist(), c.counts[:, 1].tolist()))
[(1, 10), (2, 5), (3, 4), (4, 3), (5, 2), (10, 1)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mapsearch.budget import checkpoint
from mapsearch.model.chains_pieces import level_pieces
from mapsearch.model.dominance import survivors as _survivors  # a name tests may replace (keep every row)
from mapsearch.model.footprints import Footprint, footprint_values, is_positional
from mapsearch.model.spatial_chains import spatial_quantities


# Chains enumerated before pruning; above this, levels draw from reduced
# candidate families (see _families) and the result says so.
FULL_ENUMERATION_LIMIT = 1_200_000
# Deeper chains leave more survivors per raw chain, so they get a smaller budget.
DEEP_ENUMERATION_LIMIT = 150_000


@dataclass(frozen=True)
class DimChains:
    """The surviving chains of one dimension, one row each.

    ``tiles[:, j-1]`` is ``T_j``; ``counts[:, j]`` is ``N[j]`` (column 0 is 1);
    ``sums[f][:, j]`` is ``F[f][j]``; ``small[f][(k, i)]`` is ``W[f][k][i]`` (views: ``(k, i, mask)`` too).
    """

    extent: int
    depth: int  # J, the number of levels below the top
    tiles: np.ndarray
    counts: np.ndarray
    sums: dict[Footprint, np.ndarray]
    small: dict[Footprint, dict[tuple[int, int], np.ndarray]]
    calls: np.ndarray
    raw_count: int  # chains enumerated before pruning
    reduced: bool  # True when some level drew from a reduced candidate family
    family: str = "full"  # which candidate family each level drew from
    # With meshed levels: the part extent and factor per chain and meshed level
    # (one column each, outermost first), and the same quantities seen per
    # instance view, keyed by a tuple of "rep" (part index 0) or "sum" (over
    # all instances) per meshed level. See model/spatial_chains.py.
    parts: np.ndarray | None = None
    factors: np.ndarray | None = None
    flavoured: dict | None = None
    parts_family: tuple[str, ...] | None = None  # which part extents were cut, per meshed level
    part_levels: tuple[int, ...] | None = None  # the meshed level of each column of ``parts``
    tied: int = 0  # levels 1..tied are tied to other chains (a fused group's outer nest): pruned only among equals

    def __len__(self) -> int:
        return int(self.tiles.shape[0])

    def parts_by_level(self) -> dict[int, np.ndarray] | None:
        """``{meshed level: part extent per row}`` (None without meshed levels); unsplit rows: the parent tile."""
        if self.parts is None or self.part_levels is None:
            return None
        return {s: self.parts[:, lv] for lv, s in enumerate(self.part_levels)}

    def take(self, idx: np.ndarray) -> "DimChains":
        """The chains of rows ``idx`` (same space, fewer survivors)."""
        from dataclasses import replace

        fl = self.flavoured
        return replace(
            self, tiles=self.tiles[idx], counts=self.counts[idx], calls=self.calls[idx],
            sums={f: v[idx] for f, v in self.sums.items()},
            small={f: {k: v[idx] for k, v in d.items()} for f, d in self.small.items()},
            parts=None if self.parts is None else self.parts[idx],
            factors=None if self.factors is None else self.factors[idx],
            flavoured=None if not fl else {
                name: {"counts": v["counts"][idx], "calls": v["calls"][idx],
                       "sums": {f: a[idx] for f, a in v["sums"].items()},
                       "small": {f: {k: a[idx] for k, a in d.items()} for f, d in v["small"].items()}}
                for name, v in fl.items()})


def candidate_values(extent: int, family: str) -> np.ndarray:
    """Tile extents a level may take: ``full`` 1..E; ``ceil`` {ceil(E/n)};
    ``coarse`` powers of two, ceil(E/2^k) and the divisors of E."""
    if family == "full":
        return np.arange(1, extent + 1, dtype=np.int64)
    if family == "ceil":
        n = np.arange(1, extent + 1, dtype=np.int64)
        return np.unique(-(-extent // n))
    values = {extent} | {d for d in range(1, int(extent**0.5) + 1) if extent % d == 0}
    values |= {extent // d for d in list(values) if extent % d == 0}
    k = 1
    while k <= extent:
        values.update((k, -(-extent // k)))
        k *= 2
    return np.array(sorted(values), dtype=np.int64)


def _candidates(extent: int, lo: int, hi: int, family: str) -> np.ndarray:
    values = candidate_values(extent, family)
    return values[(values >= lo) & (values <= hi)]


def _grow(parents: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (row, value) with value in candidates and value <= parents[row]."""
    counts = np.searchsorted(candidates, parents, side="right")
    rows = np.repeat(np.arange(parents.size), counts)
    starts = np.cumsum(counts) - counts
    pos = np.arange(rows.size) - np.repeat(starts, counts)
    return rows, candidates[pos]


def _enumerate_tiles(extent: int, bounds: list[tuple[int, int]], families: list[str]) -> np.ndarray:
    tiles = np.zeros((1, 0), dtype=np.int64)
    parent = np.array([extent], dtype=np.int64)
    for (lo, hi), family in zip(bounds, families):
        cand = _candidates(extent, lo, hi, family)
        rows, values = _grow(parent, cand)
        tiles = np.concatenate([tiles[rows], values[:, None]], axis=1)
        parent = values
    return tiles


def _raw_size(extent: int, bounds: list[tuple[int, int]], families: list[str] | None = None) -> int:
    """Number of monotone chains within the bounds and candidate families (exact, by a DP over extents)."""
    families = families or ["full"] * len(bounds)
    ways = np.zeros(extent + 2, dtype=np.float64)
    ways[extent] = 1.0
    t = np.arange(extent + 2)
    for (lo, hi), family in zip(bounds, families):
        suffix = np.cumsum(ways[::-1])[::-1]  # suffix[t] = ways of parents >= t
        allowed = np.zeros(extent + 2, dtype=bool)
        allowed[_candidates(extent, max(lo, 1), min(hi, extent), family)] = True
        ways = np.where(allowed & (t >= 1), suffix, 0.0)
    return int(ways.sum())


def _families(extent: int, bounds: list[tuple[int, int]]) -> tuple[list[str], str]:
    """The widest candidate families whose chain count stays within the limit.

    Tiers: every extent at every level; outer levels from {ceil(E/n)};
    every level from {ceil(E/n)}; every level from the coarse family.
    """
    depth = len(bounds)
    tiers = [(["full"] * depth, "full"),
             (["ceil"] * (depth - 1) + ["full"], "outer levels ceil(E/n)"),
             (["ceil"] * depth, "all levels ceil(E/n)"),
             (["coarse"] * depth, "all levels powers of two, ceil(E/2^k), divisors")]
    limit = FULL_ENUMERATION_LIMIT if depth <= 2 else DEEP_ENUMERATION_LIMIT
    for families, label in tiers:
        checkpoint(f"counting the tile chains of an extent of {extent:,}")
        if _raw_size(extent, bounds, families) <= limit:
            return families, label
    return tiers[-1]


def reduced_family(extent: int, depth: int) -> bool:
    """Whether the tile chains of an extent over ``depth`` levels below the top, without user limits, are
    drawn from a reduced family (more than the enumeration limit of raw chains)."""
    return _families(extent, [(1, extent)] * depth)[1] != "full"


def enumerate_chains(
    extent: int,
    depth: int,
    footprints: tuple[Footprint, ...] = ((1, 0),),
    block: int = 1,
    bounds: list[tuple[int, int]] | None = None,
    pinned: bool = False,
    spatial: tuple[tuple, ...] = (),
    window: bool = False,
    tied: int = 0,
    unequal_above: bool = True,
) -> DimChains:
    """Chains of one dimension of ``extent`` over ``depth`` levels below the top.

    ``bounds[j-1] = (lo, hi)`` limits ``T_j`` (user constraints); ``pinned``
    keeps the whole extent at every level (a filter dimension of a
    convolution axis, see :mod:`mapsearch.model.problem`). With ``spatial``
    (``(level s, largest mesh axis[, the axes' sizes])`` per meshed level,
    outermost first),
    each chain may also split its level-``(s-1)`` tile into parts across the
    instances of every meshed level
    (:func:`mapsearch.model.spatial_chains.spatial_quantities`). ``window``:
    the dimension is one of a split filter window (model/windows.py), whose
    coincidences read the chains' advance and context types; pruning then
    also compares those (so it stays exact) and does not drop chains on
    stillness (a window's still factor is not monotone in one chain's still
    sums); ``unequal_above=False`` keeps its parts above L0 equal
    (model/spatial_chains.py). ``tied``: the tiles of levels ``1..tied`` are tied to another
    model's chains (a shared dimension of a fused group's stage: its outer
    nest, model/fusion.py), so a chain is pruned only by one with the same
    tiles there: another stage may need exactly those tiles, and a chain
    that dominates in this stage need not dominate in that one.
    """
    if bounds is None:
        bounds = [(1, extent)] * depth
    if pinned:
        bounds = [(extent, extent)] * depth
    bounds = [(max(1, lo), min(extent, hi)) for lo, hi in bounds]
    doing = f"enumerating the tile chains of an extent of {extent:,}"
    checkpoint(doing)
    raw = _raw_size(extent, bounds)
    checkpoint(doing)
    families, label = _families(extent, bounds)
    reduced = label != "full"
    checkpoint(doing)
    tiles = _enumerate_tiles(extent, bounds, families)
    if tiles.shape[0] == 0:
        return _empty(extent, depth, footprints, raw, reduced)
    checkpoint(doing)
    q = _quantities(extent, tiles, footprints, block)
    q["tied"] = tied
    checkpoint(doing)
    spatial = tuple(entry for entry in spatial if entry[1] > 1)
    if spatial and not pinned:
        if any(is_positional(f) for f in footprints):
            raise ValueError("positional footprints are not summed below a spatial split")
        # A window dimension: unequal parts above the innermost level within limits, else equal ones
        # (docs/spatial.md, "Split windows over mesh axes").
        q = spatial_quantities(q, spatial, footprints, block, window=window, unequal_above=unequal_above)
        raw += q["part_rows"]  # each (chain, split part) row is a chain of the searched space too
    if window:
        from mapsearch.model.window_types import InstanceClasses, window_signature

        if q.get("parts") is None:
            q["window"] = window_signature(extent, q["tiles"])
        else:  # the types of every instance the views read, and how many instances each stands for
            classes = InstanceClasses(_select(q, np.arange(q["tiles"].shape[0]), raw, reduced, label))
            q["window"] = np.concatenate([window_signature(extent, q["tiles"], classes.trees), classes.signature()],
                                         axis=1)
    return _prune(q, raw, reduced, label)


def _empty(extent: int, depth: int, footprints, raw: int, reduced: bool) -> DimChains:
    z = np.zeros((0, depth), dtype=np.int64)
    return DimChains(
        extent, depth, z, np.zeros((0, depth + 1), dtype=np.int64),
        {f: np.zeros((0, depth + 1), dtype=np.int64) for f in footprints},
        {f: {} for f in footprints}, np.zeros(0, dtype=np.int64), raw, reduced,
    )


def _quantities(extent: int, tiles: np.ndarray, footprints, block: int) -> dict:
    pieces = level_pieces(extent, tiles)
    depth = tiles.shape[1]
    f_of = footprint_values

    counts = np.stack([sum(c for _, c in lv) for lv in pieces], axis=1)
    by_extent = [f for f in footprints if not is_positional(f)]
    sums = {f: np.stack([sum(c * f_of(f, s) for s, c in lv) for lv in pieces], axis=1) for f in by_extent}
    small: dict[Footprint, dict[tuple[int, int], np.ndarray]] = {}
    positional = [f for f in footprints if is_positional(f)]
    if positional:
        sums_p, small_p = _positional_quantities(extent, tiles, counts, positional)
        sums.update(sums_p)
        small.update(small_p)
    for f in by_extent:
        small[f] = {}
        for i in range(1, depth + 1):
            ti = tiles[:, i - 1]
            for k in range(i):
                small[f][(k, i)] = sum(c * f_of(f, s) * (s <= ti) for s, c in pieces[k])
    calls = sum(c * (-(-s // block)) for s, c in pieces[-1])
    return {"extent": extent, "tiles": tiles, "counts": counts, "sums": sums, "small": small, "calls": calls,
            "pieces": pieces}


# Pieces walked at once by _positional_quantities (memory: a few int64 arrays of this length).
PIECES_PER_BATCH = 2_000_000


def _positional_quantities(extent: int, tiles: np.ndarray, counts: np.ndarray, footprints) -> tuple[dict, dict]:
    """``F[f][j]`` and ``W[f][k][i]`` of positional footprints, by walking every piece with its position.

    A level-``(j-1)`` piece ``[lo, lo+s)`` splits into ``[lo + q T_j, lo + (q+1) T_j)``
    for ``q < s // T_j`` and the remainder ``[lo + (s // T_j) T_j, lo + s)``,
    the same split :func:`_quantities` counts by extent. Chains go in batches
    of about :data:`PIECES_PER_BATCH` pieces; every chain has at least one
    piece per level, so per-chain sums are ``np.add.reduceat`` over each
    chain's (contiguous) pieces.
    """
    rows, depth = tiles.shape
    sums = {f: np.zeros((rows, depth + 1), dtype=np.int64) for f in footprints}
    small = {f: {(k, i): np.zeros(rows, dtype=np.int64) for i in range(1, depth + 1) for k in range(i)}
             for f in footprints}
    load = np.cumsum(counts.sum(axis=1))
    first = 0
    while first < rows:
        checkpoint(f"summing the pieces of an extent of {extent:,}")
        done = load[first - 1] if first else 0
        last = max(first + 1, int(np.searchsorted(load, done + PIECES_PER_BATCH, side="right")))
        batch = np.arange(first, last)
        owner = np.arange(batch.size)
        lo = np.zeros(batch.size, dtype=np.int64)
        size = np.full(batch.size, extent, dtype=np.int64)
        for j in range(depth + 1):
            if j:
                t = tiles[batch[owner], j - 1]
                full = size // t
                rem = size - full * t
                children = full + (rem > 0)
                parent = np.repeat(np.arange(owner.size), children)
                q = np.arange(parent.size) - np.repeat(np.cumsum(children) - children, children)
                tp = t[parent]
                lo = lo[parent] + q * tp
                size = np.where(q < full[parent], tp, rem[parent])
                owner = owner[parent]
            starts = np.flatnonzero(np.concatenate([[True], owner[1:] != owner[:-1]]))
            for f in footprints:
                values = np.asarray(f[2].g(lo, lo + size), dtype=np.int64)
                sums[f][batch, j] = np.add.reduceat(values, starts)
                for i in range(j + 1, depth + 1):
                    still = values * (size <= tiles[batch[owner], i - 1])
                    small[f][(j, i)][batch] = np.add.reduceat(still, starts)
        first = last
    return sums, small


def _prune(q: dict, raw: int, reduced: bool, family: str = "full") -> DimChains:
    """Drop chains dominated by one with equal counts and words and no larger extents or calls.

    Exact for the model: every objective and constraint is monotone
    non-decreasing in tile extents (capacity) and in calls, and reads nothing
    else from a chain but its counts and sums.
    """
    return _select(q, _survivors(q), raw, reduced, family)


def _select(q: dict, idx: np.ndarray, raw: int, reduced: bool, family: str) -> DimChains:
    tiles = q["tiles"]
    return DimChains(
        extent=q["extent"],
        depth=tiles.shape[1],
        tiles=tiles[idx],
        counts=q["counts"][idx],
        sums={f: v[idx] for f, v in q["sums"].items()},
        small={f: {k: v[idx] for k, v in d.items()} for f, d in q["small"].items()},
        calls=q["calls"][idx],
        raw_count=raw,
        reduced=reduced,
        family=family,
        parts=None if q.get("parts") is None else q["parts"][idx],
        factors=None if q.get("factors") is None else q["factors"][idx],
        flavoured=None if not q.get("flavoured") else {
            name: {"counts": v["counts"][idx], "calls": v["calls"][idx],
                   "sums": {f: a[idx] for f, a in v["sums"].items()},
                   "small": {f: {k: a[idx] for k, a in d.items()} for f, d in v["small"].items()}}
            for name, v in q["flavoured"].items()},
        parts_family=q.get("parts_family"),
        part_levels=q.get("part_levels"),
        tied=q.get("tied", 0),
    )
