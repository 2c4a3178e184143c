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

import itertools

import numpy as np

from mapsearch.model.spatial_views import Instance, beyond_digit_zero, class_column

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


class InstanceClasses:
    """The instances whose coincidences a window dimension's views read: one per combination of digit classes.

    At every meshed level that splits the dimension, digits that get the
    same part of every parent piece do the same work
    (:func:`~mapsearch.model.spatial_views.digit_classes`; a class is one
    for every digit above, since the classes come from every instance's
    pieces together). Per meshed level ``lv`` (outermost first) the
    classes read are digit 0's (position 0) and ``columns[lv][1:]``, the
    raw columns of digit_classes that some row has digits beyond digit 0
    in (``spatial_views.beyond_digit_zero``; a row whose parent pieces are all
    smaller than the part has digit 0 in a later column). ``lowest[lv]``,
    ``sizes[lv]``: per row and position, the class's lowest digit and its
    digits (position 0: digit 0's class, wherever it lies; a later
    position counts only where digit 0 is not in it). ``trees[n]`` walks
    the lowest digit of class ``combos[n][lv]`` at each level;
    ``combos[0]`` is instance 0 (the ``rep`` view).
    """

    def __init__(self, ch):
        from mapsearch.model.spatial_views import digit_classes, expanded_pieces

        parts = ch.parts_by_level() or {}
        rows = self.rows = ch.tiles.shape[0]
        self.levels = sorted(parts)
        self.columns: list[tuple[int, ...]] = []  # raw columns per position, per meshed level (position 0: -1)
        self.lowest: list[np.ndarray] = []
        self.sizes: list[np.ndarray] = []
        for lv, s in enumerate(self.levels):
            factor = ch.factors[:, lv]
            zero_class = np.ones(rows, dtype=np.int64)
            lowest = sizes = np.zeros((rows, 0), dtype=np.int64)
            beyond: list[int] = []
            if int(factor.max(initial=1)) > 1:
                lowest, sizes = digit_classes(expanded_pieces(ch.tiles, ch.extent, parts, s - 1), parts[s], factor)
                zero_class = np.where(lowest == 0, sizes, 0).sum(axis=1)
                beyond = [c for c in range(sizes.shape[1]) if beyond_digit_zero(lowest[:, c], sizes[:, c]).any()]
            self.columns.append((-1, *beyond))
            self.lowest.append(np.stack([np.zeros(rows, dtype=np.int64)] + [lowest[:, c] for c in beyond], axis=1))
            self.sizes.append(np.stack([zero_class] + [sizes[:, c] * beyond_digit_zero(lowest[:, c], sizes[:, c])
                                                       for c in beyond], axis=1))
        self.combos = list(itertools.product(*(range(len(c)) for c in self.columns)))
        self.trees = [Tree(ch.extent, ch.tiles, parts,
                           {s: self.lowest[lv][:, c] for lv, (s, c) in enumerate(zip(self.levels, combo)) if c})
                      for combo in self.combos]

    @property
    def beyond(self) -> list[tuple[int, ...]]:
        """Per meshed level, the raw columns of the classes beyond digit 0's (a link copy's classes)."""
        return [c[1:] for c in self.columns]

    def weights(self, view: tuple[str, ...] | None) -> np.ndarray:
        """``(rows, combos)``: how much each instance counts in ``view`` (per meshed level ``"rep"``: digit 0
        alone, weight 1; ``"sum"``: every class, weighed by its digits; :func:`cls` ``(c)``: the class of
        digit_classes' column ``c`` alone, where it has digits beyond digit 0). ``None``: instance 0."""
        rows = self.rows
        out = np.ones((rows, len(self.combos)), dtype=np.int64)
        for n, combo in enumerate(self.combos):
            for lv, c in enumerate(combo):
                entry = "rep" if view is None else view[lv]
                if entry == "rep":
                    w = np.full(rows, int(c == 0), dtype=np.int64)
                elif entry == "sum":
                    w = self.sizes[lv][:, c]
                else:  # cls: the raw column of digit_classes, as model/spatial_views.py walks it
                    w = (self.sizes[lv][:, c] > 0).astype(np.int64) * int(self.columns[lv][c] == class_column(entry))
                out[:, n] *= w
        return out

    def simplified(self, view: tuple[str, ...] | None) -> tuple[tuple[str, ...] | None, np.ndarray | None]:
        """``(view', factor)``: ``view`` with ``"sum"`` read as ``"rep"`` at the levels where no class is beyond
        digit 0's, and the per-row factor that makes up for it (None: 1).

        At such a level every digit with work is in digit 0's class and walks
        digit 0's tree, whatever the digits elsewhere (the classes come from
        every instance's pieces together), so summing over its digits is
        digit 0's quantity times the class's size."""
        if view is None:
            return None, None
        factor = None
        entries = list(view)
        for lv, entry in enumerate(view):
            if entry == "sum" and not self.beyond[lv]:
                entries[lv] = "rep"
                factor = self.sizes[lv][:, 0] if factor is None else factor * self.sizes[lv][:, 0]
        return tuple(entries), factor

    def signature(self) -> np.ndarray:
        """Every level's class sizes, as columns (chains alike in their types and these read alike)."""
        return np.concatenate(self.sizes, axis=1) if self.sizes else np.zeros((self.rows, 0), dtype=np.int64)


def cls(column: int) -> str:
    """The view entry of one class column of a meshed level (column 0 is ``"rep"``)."""
    return "rep" if column == 0 else f"cls{column}"


