"""Instances of a spatial schedule: who exists, which part each one gets (docs/spatial.md).

Structural only (no counting): the replay modes use it to name the instances
of every level, their part index along every split, their ancestors (the
link copy a word crosses) and which instances may share a tile of a tensor.

- A meshed level's instances are the product of its axes; the levels below
  it are replicated per instance, so level ``i``'s instances are the product
  of the axes of every meshed level at or above ``i``, outermost level first,
  axes in mesh order (``itertools.product`` order: the lowest index has the
  lowest coordinates).
- Along an axis, the splits mapped to it number their parts mixed-radix,
  the first listed split outermost. Coordinates at or past the product of the
  factors get no part: they are idle for the whole run, hold nothing and are
  left out of the instance lists here (they still count in
  ``compute_instances``).
- The *path* of an instance along dimension ``d`` at level ``i`` is the
  mixed-radix number of its part indices of the splits of ``d`` at levels
  ``<= i`` (outermost first); instances with one path see the same pieces
  of ``d``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mapsearch.schedule.schedule import Schedule


@dataclass(frozen=True)
class Split:
    """One spatial split: at ``level``, ``dim`` in parts of ``part``, ``factor`` parts, on ``axis``."""

    level: int
    dim: str
    part: int
    axis: str
    factor: int


def has_splits(schedule: Schedule) -> bool:
    return any(lm.spatial for lm in schedule.levels)


def compute_instances(schedule: Schedule) -> int:
    """Instances of L0: the product of the instance counts of every level (each meshed level replicates L0)."""
    return math.prod(max(1, lv.instances) for lv in schedule.architecture.levels)


class Layout:
    """The used instances of every level of a schedule and their part indices.

    ``collapse=True`` keeps one instance per *class* of every split: digits
    whose part has the same extent in every parent piece it can be cut from
    (:func:`split_classes`) do the same work, up to an offset, so the walk
    visits the lowest digit of each class and ``mult`` says how many digits
    it stands for (``walk_spatial`` weighs its counts with it). The lowest
    digits keep the instance order, so "lowest instance" decisions match the
    full layout. ``collapse=False`` lists every instance (the one-by-one walk).
    """

    def __init__(self, schedule: Schedule, collapse: bool = False):
        self.schedule = schedule
        wl = schedule.workload
        arch = schedule.architecture
        self.dims = wl.dims
        self.depth = arch.depth
        extent = wl.extent
        self.splits: list[Split] = []  # levels outermost first, listed order
        for i, lm in enumerate(schedule.levels):
            parent = extent if i == 0 else schedule.tile_extents(i - 1)
            for sp in lm.spatial:
                self.splits.append(Split(i, sp.dim, sp.part, sp.axis, -(-parent[sp.dim] // sp.part)))
        # (level, dim) -> (split column, part): where a placed buffer cuts its piece to its instance's part.
        self.split_of = {(sp.level, sp.dim): (c, sp.part) for c, sp in enumerate(self.splits)}
        nsplit = len(self.splits)
        classes = split_classes(schedule, self.splits) if collapse else [
            [(q, 1) for q in range(s.factor)] for s in self.splits]
        # Axes of meshed levels, outermost level first, mesh order; each with its used size.
        axes: list[tuple[int, str, int, list[int]]] = []  # (level, axis, used, split columns)
        rows_of_axis: list[list[tuple[tuple[int, ...], tuple[int, ...]]]] = []  # (digits, mults) per coordinate
        for i, lv in enumerate(arch.levels):
            for ax in lv.mesh:
                cols = [c for c, s in enumerate(self.splits) if s.level == i and s.axis == ax.name]
                used = math.prod(self.splits[c].factor for c in cols)
                axes.append((i, ax.name, used, cols))
                # first listed split outermost: itertools.product varies the last column fastest
                rows_of_axis.append([tuple(zip(*combo)) if combo else ((), ())
                                     for combo in itertools.product(*(classes[c] for c in cols))])
        self.axes = axes
        # digits[i]: (N_i, nsplit) part index of each split (0 for splits below level i);
        # mult[i]: (N_i, nsplit) how many digits of the split each row stands for (1 below level i).
        self.digits: list[np.ndarray] = []
        self.mult: list[np.ndarray] = []
        self.count: list[int] = []
        for i in range(self.depth):
            mine = [(a, r) for a, r in zip(axes, rows_of_axis) if a[0] <= i]
            digits, mults = [], []
            for combo in itertools.product(*(r for _, r in mine)):
                row, mrow = [0] * nsplit, [1] * nsplit
                for ((_, _, _, cols), _), (dig, mul) in zip(mine, combo):
                    for col, q, m in zip(cols, dig, mul):
                        row[col], mrow[col] = q, m
                digits.append(row)
                mults.append(mrow)
            self.digits.append(np.array(digits, dtype=np.int64).reshape(len(digits), nsplit))
            self.mult.append(np.array(mults, dtype=np.int64).reshape(len(mults), nsplit))
            self.count.append(len(digits))

    def weight(self, level: int, cols) -> np.ndarray:
        """Per instance of ``level``: how many instances it stands for, counting the digits of ``cols`` only."""
        cols = list(cols)
        if not cols:
            return np.ones(self.count[level], np.int64)
        return np.prod(self.mult[level][:, cols], axis=1)

    # ------------------------------------------------------------ per level
    def ancestor(self, level: int, above: int) -> np.ndarray:
        """For each instance of ``level``, the index of its instance at level ``above`` (<= level)."""
        n, m = self.count[level], self.count[above]
        return np.arange(n, dtype=np.int64) // (n // m)

    def link_copy(self, level: int, link: int) -> np.ndarray:
        """For each instance of ``level``, the copy of link ``link`` (into level ``link``) above it."""
        return self.ancestor(level, link - 1)

    def split_columns(self, level: int, dim: str | None = None) -> list[int]:
        return [c for c, s in enumerate(self.splits) if s.level <= level and (dim is None or s.dim == dim)]

    def path(self, level: int, dim: str) -> np.ndarray:
        """Each instance's path along ``dim`` at ``level`` (mixed radix of its part indices)."""
        p = np.zeros(self.count[level], np.int64)
        for c in self.split_columns(level, dim):
            p = p * self.splits[c].factor + self.digits[level][:, c]
        return p

    def paths(self, level: int, dim: str) -> int:
        """How many paths ``dim`` has at ``level``."""
        return math.prod(self.splits[c].factor for c in self.split_columns(level, dim))

    def shareable(self, split: Split, tensor: str) -> bool:
        """Instances differing in this split may share ``tensor``'s tile (multicast / in-network reduction)."""
        wl = self.schedule.workload
        if split.dim in wl.tensor(tensor).dims:
            return False
        axis = self.schedule.architecture.levels[split.level].axis(split.axis)
        return axis.reuses(tensor, wl.is_output(tensor))

    def group(self, level: int, tensor: str) -> np.ndarray:
        """Per instance of ``level``: a group id; instances with one id differ only in shareable splits."""
        cols = [c for c in self.split_columns(level) if not self.shareable(self.splits[c], tensor)]
        if not cols:
            return np.zeros(self.count[level], np.int64)
        _, inverse = np.unique(self.digits[level][:, cols], axis=0, return_inverse=True)
        return inverse.reshape(-1).astype(np.int64)


def split_classes(schedule: Schedule, splits: list[Split]) -> list[list[tuple[int, int]]]:
    """Per split: ``(lowest digit, digits in its class)`` for each class of digits that do the same work.

    Digit ``q`` of a split in parts of ``P`` gets ``clip(x - q*P, 0, P)`` of a
    parent piece of extent ``x``. The parent pieces of dimension ``d`` at a
    level are followed through every level above, whatever the instance:
    each split cuts the pieces into its parts (in listed order), each tile
    splits them into full tiles and a remainder. Two digits whose parts are
    equal for every such extent see pieces of equal extents at every step
    (their event sequences differ by an offset only), whatever the other
    digits are; so classes are exact, and a finer class would be too.
    """
    wl = schedule.workload
    sizes = {d: {int(wl.extent[d])} for d in wl.dims}
    out: list[list[tuple[int, int]]] = [[] for _ in splits]
    for i in range(len(schedule.levels)):
        for c, s in enumerate(splits):
            if s.level != i:
                continue
            parents = sorted(sizes[s.dim])
            first: dict[tuple[int, ...], list[int]] = {}
            for q in range(s.factor):
                sig = tuple(min(s.part, max(0, x - q * s.part)) for x in parents)
                first.setdefault(sig, []).append(q)
            out[c] = sorted((qs[0], len(qs)) for qs in first.values())
            sizes[s.dim] = {min(s.part, x - q * s.part) for x in parents for q in range(s.factor) if x > q * s.part}
        if i:
            tile = schedule.levels[i].tile_extent
            for d in wl.dims:
                t = int(tile(d))
                sizes[d] = {y for x in sizes[d] for y in (min(t, x), x % t) if y > 0}
    return out


# ---------------------------------------------------------------- the lockstep nest, in Python
Box = tuple[tuple[int, int], ...]


def lockstep_nest(schedule: Schedule, layout: Layout) -> "Sequence[list[Box | None]]":
    """Every step of the lockstep nest: per level, the tile box of each used instance (None: idle).

    A generator of lists (one per level, top first) of per-instance boxes.
    Each instance's part is cut from its parent instance's tile; a loop's
    trip count is the largest over the instances (the part with index 0).
    """
    wl = schedule.workload
    dims = wl.dims
    top: Box = tuple((0, wl.extent[d]) for d in dims)
    tiles = [tuple(lm.tile_extent(d) for d in dims) for lm in schedule.levels]
    orders = [tuple(dims.index(d) for d in lm.order) for lm in schedule.levels]
    by_level: list[list[tuple[int, Split]]] = [[] for _ in range(layout.depth)]
    for c, s in enumerate(layout.splits):
        by_level[s.level].append((c, s))
    anc = [None] + [layout.ancestor(i, i - 1) for i in range(1, layout.depth)]

    def parts_of(i: int, parents: list[Box | None]) -> list[list[tuple[int, int]] | None]:
        out: list[list[tuple[int, int]] | None] = []
        for x in range(layout.count[i]):
            pb = parents[int(anc[i][x])]
            if pb is None:
                out.append(None)
                continue
            part = list(pb)
            for c, s in by_level[i]:
                k = dims.index(s.dim)
                lo, size = part[k]
                off = int(layout.digits[i][x, c]) * s.part
                if off >= size:
                    part = None
                    break
                part[k] = (lo + off, min(s.part, size - off))
            out.append(part)
        return out

    def rec(i: int, levels: list[list[Box | None]]):
        if i == layout.depth:
            yield levels
            return
        parts = parts_of(i, levels[-1])
        trips = [max((-(-p[k][1] // tiles[i][k]) for p in parts if p is not None), default=0) for k in range(len(dims))]
        for combo in itertools.product(*(range(trips[k]) for k in orders[i])):
            idx = dict(zip(orders[i], combo))
            boxes: list[Box | None] = []
            for p in parts:
                if p is None:
                    boxes.append(None)
                    continue
                box = []
                for k, (lo, size) in enumerate(p):
                    off = idx.get(k, 0) * tiles[i][k]
                    if off >= size:
                        box = None
                        break
                    box.append((lo + off, min(tiles[i][k], size - off)))
                boxes.append(None if box is None else tuple(box))
            yield from rec(i + 1, levels + [boxes])

    yield from rec(1, [[top]])


# ---------------------------------------------------------------- the lockstep nest, as tables
@dataclass(frozen=True)
class VirtualTables:
    """Per level ``i`` and dimension index ``k``: the lockstep (virtual) pieces and each path's actual piece.

    ``start[i][k]``, ``size[i][k]``: shape ``(virtual pieces, paths)``; size 0
    means that path has no piece there (idle). ``n_children``/``first_child``
    give the virtual children at level ``i+1`` (the trip count of the part
    with index 0, the largest); ``parent[i][k]`` the virtual parent at ``i-1``.
    """

    dims: tuple[str, ...]
    start: tuple[tuple[np.ndarray, ...], ...]
    size: tuple[tuple[np.ndarray, ...], ...]
    n_children: tuple[tuple[np.ndarray, ...], ...]
    first_child: tuple[tuple[np.ndarray, ...], ...]
    parent: tuple[tuple[np.ndarray, ...], ...]

    def count(self, level: int, k: int) -> int:
        return self.size[level][k].shape[0]


def virtual_tables(schedule: Schedule, layout: Layout) -> VirtualTables:
    wl = schedule.workload
    dims = wl.dims
    i64 = np.int64
    starts = [[np.zeros((1, 1), i64) for _ in dims]]
    sizes = [[np.array([[wl.extent[d]]], i64) for d in dims]]
    nch, first, parent = [], [], [[np.zeros(1, i64) for _ in dims]]
    for i in range(1, layout.depth):
        tile = schedule.tile_extents(i)
        split = {s.dim: s for s in layout.splits if s.level == i}
        ls, lz, ln, lf, lp = [], [], [], [], []
        for k, d in enumerate(dims):
            t = int(tile[d])
            ps, pz = starts[-1][k], sizes[-1][k]
            s = split.get(d)
            q_part = s.part if s else None
            f = s.factor if s else 1
            part0 = np.minimum(pz[:, 0], q_part) if s else pz[:, 0]
            n = -(-part0 // t)
            fc = np.cumsum(n) - n
            rep = np.repeat(np.arange(len(n), dtype=i64), n)
            c = (np.arange(int(n.sum()), dtype=i64) - fc[rep])[:, None, None]
            q = np.arange(f, dtype=i64)[None, None, :]
            pstart = ps[rep][:, :, None]
            psize = pz[rep][:, :, None]
            if s:
                part_start = pstart + q * q_part
                part_size = np.clip(psize - q * q_part, 0, q_part)
            else:
                part_start, part_size = pstart, psize
            tsize = np.clip(part_size - c * t, 0, t)
            tstart = np.where(tsize > 0, part_start + c * t, 0)
            m = len(rep)
            ls.append(tstart.reshape(m, -1))
            lz.append(tsize.reshape(m, -1))
            ln.append(n)
            lf.append(fc)
            lp.append(rep)
        starts.append(ls)
        sizes.append(lz)
        nch.append(ln)
        first.append(lf)
        parent.append(lp)
    fz = lambda rows: tuple(tuple(r) for r in rows)  # noqa: E731
    return VirtualTables(tuple(dims), fz(starts), fz(sizes), fz(nch), fz(first), fz(parent))
