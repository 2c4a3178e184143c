"""What a split window's coincidences read from one dimension's chains (model/windows.py).

Per chain, from the split-with-remainder rule alone: the *advance types* of
a level's loop (the last piece it leaves and the first it enters, at a
deeper level) and the *context types* of a level's pieces (a piece with its
last and first pieces at a deeper level). Both are exact histograms; chains
with equal histograms are interchangeable for the coincidences, so the chain
pruning compares them (:func:`window_signature`).

A chain split over mesh axes is seen by one instance at a time (an
:class:`~mapsearch.model.spatial_views.Instance`: a digit per meshed level),
on its own tree (docs/spatial.md, "Split windows over mesh axes"): at a
split it keeps its part ``clip(x - qP, 0, P)`` of each parent piece and
has no piece where that is empty. Its pieces then no longer start and end
where their ancestors do, so the types also carry the distance from the
start of the last piece to the start of the next first piece (``gap`` of
an advance) and from the first piece's start to the last piece's end
(``reach`` of a context); without a split these are ``x_b`` and ``|c|``.
"""

from __future__ import annotations

import numpy as np

from mapsearch.model.spatial_views import Instance

Parts = dict[int, np.ndarray] | None  # part extent per meshed level and row (the parent tile where unsplit)


def with_top(extent: int, tiles: np.ndarray) -> np.ndarray:
    """Tile extents per level with the top's: column ``j`` is ``T_j``, ``T_0 = E``."""
    return np.concatenate([np.full((tiles.shape[0], 1), extent, dtype=np.int64), tiles], axis=1)


class Tree:
    """One instance's own tree along a dimension, per chain row: digit ``digits[s]`` at each split (0 by default)."""

    def __init__(self, extent: int, tiles: np.ndarray, parts: Parts = None, digits: dict[int, np.ndarray] | None = None):
        parts = parts or {}
        digits = digits or {}
        zeros = np.zeros(tiles.shape[0], dtype=np.int64)
        self.inst = Instance(tiles, extent, parts, {k: digits.get(k, zeros) for k in parts})
        self.top = with_top(extent, tiles)

    def pieces(self, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """The instance's level-``k`` pieces: ``(extent, count)`` entries, counting only those it is active in."""
        return [(x, c * self.inst.active(x, k)) for x, c in self.inst.levels[k]]

    def offset(self, k: int) -> np.ndarray | int:
        """Where the instance's part starts in a level-``(k-1)`` piece (0 without a split at ``k``)."""
        return self.inst.offsets.get(k, 0)

    def last_inside(self, x: np.ndarray, frm: int, to: int) -> tuple[np.ndarray, np.ndarray]:
        """``(extent, trailing)`` of the instance's last level-``to`` piece inside an active level-``frm`` piece of
        extent ``x``: its extent, and how far the ancestor extends past its end.

        Going down, the last child the instance is active in: the remainder
        tile when it has a part there, else the last full tile (the
        remainder then trails); at a split only its own part counts, and
        the rest of the parent past that part trails.
        """
        trailing = np.zeros_like(x)
        for m in range(frm + 1, to + 1):
            own = self.inst.own(x, m)
            trailing = trailing + np.where(own > 0, x - self.offset(m) - own, 0)
            t = self.top[:, m]
            full, rem = own // t, own % t
            rem_on = (rem > 0) & self.inst.active(rem, m)
            trailing = trailing + np.where(rem_on | (full == 0), 0, rem)
            x = np.where(rem_on | (full == 0), rem, t)
        return x, trailing

    def first_inside(self, x: np.ndarray, frm: int, to: int) -> tuple[np.ndarray, np.ndarray]:
        """``(extent, lead)`` of the instance's first level-``to`` piece inside an active level-``frm`` piece ``x``:
        its extent, and how far it starts after the ancestor (its parts' offsets on the way down)."""
        lead = np.zeros_like(x)
        for m in range(frm + 1, to + 1):
            lead = lead + self.offset(m)
            x = np.minimum(self.inst.own(x, m), self.top[:, m])
        return x, lead


def _tree(extent: int, tiles: np.ndarray, tree: Tree | None) -> Tree:
    return tree if tree is not None else Tree(extent, tiles)


def advance_types(extent: int, tiles: np.ndarray, j: int, level: int, tree: Tree | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_b, x_a, count, gap)`` per chain (rows) and type (columns): every advance of the level-``j`` loop.

    Inside a level-``(j-1)`` piece of extent ``z`` (the instance's part of
    it when ``j`` splits the dimension) the loop goes through ``z // T_j``
    full pieces and a remainder ``z mod T_j``: an advance always leaves a
    full piece (``x_b``: the instance's last level-``level`` piece in it)
    for a full one or for the remainder, where the instance has a part
    there (``x_a``: its first level-``level`` piece). ``gap``: from the
    start of the piece left to the start of the piece entered. ``tree``:
    the instance (default: the chains without a split).
    """
    tree = _tree(extent, tiles, tree)
    tj = tree.top[:, j]
    last, trailing = tree.last_inside(tj, j, level)
    to_full = np.zeros(tiles.shape[0], dtype=np.int64)
    first, lead = tree.first_inside(tj, j, level)
    xb, xa, leads, count = [last], [first], [lead], []
    for z, m in tree.pieces(j - 1):
        own = tree.inst.own(z, j)
        full, rem = own // tj, own % tj
        to_full += m * np.maximum(full - 1, 0)
        first, lead = tree.first_inside(rem, j, level)
        xb.append(last)
        xa.append(first)
        leads.append(lead)
        count.append(m * ((full >= 1) & (rem > 0) & tree.inst.active(rem, j)))
    xb_types = np.stack(xb, 1)
    return xb_types, np.stack(xa, 1), np.stack([to_full] + count, 1), xb_types + trailing[:, None] + np.stack(leads, 1)


def context_types(extent: int, tiles: np.ndarray, k: int, level: int, tree: Tree | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(reach, y_b, y_a, count)`` per chain and type: every level-``k`` piece ``c`` of the instance's tree with
    its last and first level-``level`` pieces (``k <= level``).

    ``reach``: from the start of the first piece to the end of the last
    (``|c|`` without a split), so the loops inside ``c`` move the piece's
    start back by ``reach - y_b`` when they reset.
    """
    tree = _tree(extent, tiles, tree)
    entries = tree.pieces(k)
    c = np.stack([z for z, _ in entries], 1)
    n = np.stack([m for _, m in entries], 1)
    last = [tree.last_inside(z, k, level) for z, _ in entries]
    first = [tree.first_inside(z, k, level) for z, _ in entries]
    yb = np.stack([x for x, _ in last], 1)
    reach = c - np.stack([t for _, t in last], 1) - np.stack([lead for _, lead in first], 1)
    ya = np.stack([x for x, _ in first], 1)
    return reach, yb, ya, n


def window_signature(extent: int, tiles: np.ndarray, trees: list[Tree] | None = None) -> np.ndarray:
    """Every advance and context type of every level pair, as columns (a type with count 0 reads as 0), for each
    of ``trees`` (instances; default: the chain's one tree). With instances the advances' gaps too (without a
    split they equal ``x_b``)."""
    depth = tiles.shape[1]
    cols = []
    for tree in trees or [None]:
        for level in range(depth + 1):
            for j in range(1, level + 1):
                xb, xa, m, gap = advance_types(extent, tiles, j, level, tree=tree)
                live = m > 0
                cols += [xb * live, xa * live, m] + ([gap * live] if trees else [])
            for k in range(level + 1):
                c, yb, ya, n = context_types(extent, tiles, k, level, tree=tree)
                live = n > 0
                cols += [c * live, yb * live, ya * live, n]
    return np.concatenate(cols, axis=1) if cols else np.zeros((tiles.shape[0], 0), dtype=np.int64)


def instance_classes(ch) -> tuple[list[Tree], np.ndarray]:
    """The instances whose coincidences a window's views read, and how many instances each stands for.

    ``(trees, sizes)``: ``trees[0]`` is instance 0 (digit 0 at every
    split: the ``rep`` view); ``trees[1:]`` one instance per class of
    digits at the innermost level's split, the only split where a window
    dimension's parts may be unequal (docs/spatial.md, "Split windows over
    mesh axes"), with ``sizes[:, c]`` its class's digits per row (the
    ``sum`` view over that split weighs each class's coincidences by them).
    Splits above it have equal parts: every digit there is digit 0's tree.
    ``ch``: a dimension's chains (:class:`~mapsearch.model.chains.DimChains`).
    """
    from mapsearch.model.spatial_views import digit_classes, expanded_pieces

    parts = ch.parts_by_level()
    rep = Tree(ch.extent, ch.tiles, parts)
    rows, depth = ch.tiles.shape
    if not parts or depth not in parts:
        return [rep, rep], np.ones((rows, 1), dtype=np.int64)
    factor = ch.factors[:, ch.part_levels.index(depth)]
    lowest, sizes = digit_classes(expanded_pieces(ch.tiles, ch.extent, parts, depth - 1), parts[depth], factor)
    live = np.flatnonzero(sizes.any(axis=0))
    return [rep] + [Tree(ch.extent, ch.tiles, parts, {depth: lowest[:, c]}) for c in live], sizes[:, live]
