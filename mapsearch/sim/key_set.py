"""The set of (instance, region) keys an output's buffer entered, for the counting walk with instances.

A key is ``ravel_multi_index((instance, lo per axis), radix)``. The walk asks
two things of the set: which of a step's keys were entered before (a reload
of partial sums) and, in the fold (sim/spatial_fold.py), which keys lie in a
box. Both must cost what the walk costs, not what the output's size costs:

- Up to :data:`DENSE_KEYS` possible keys the set is a bitmap, else a sorted
  array (membership by binary search).
- A bitmap of more than :data:`INDEXED_KEYS` keys also keeps a coarse map:
  one flag per cell of about :data:`CELL_KEYS` keys (a box of the key space,
  cut along the region axes), set when some key of the cell is in the set.
  A box query reads only the cells that hold keys (their keys, not the
  box's volume), unless those cells cover a good part of the box anyway.
  The map is exact by construction (a cell's flag is set iff it holds a
  key, keys are never removed), so it changes no answer, only its cost: on
  the 2024 Timeloop tutorial's layer (67 M output keys) the fold's box
  queries scanned the whole output 270 times (23 s).
- Distinct keys are found by sorting (NumPy 2's hashed ``unique`` took 4 s
  on 4 M keys), with a merge sort: the fold adds keys in sorted runs.
"""

from __future__ import annotations

import numpy as np

_I64 = np.int64
# A set of output keys is a bitmap up to this many possible keys (one byte each), else a sorted array.
DENSE_KEYS = 1 << 26
# A bitmap of more keys than this keeps its coarse map of cells.
INDEXED_KEYS = 1 << 20
# About this many keys per cell of the coarse map.
CELL_KEYS = 512
# Candidate keys checked at once when a box query reads its occupied cells.
QUERY_BATCH = 1 << 22


def distinct(keys: np.ndarray) -> np.ndarray:
    """The distinct values of ``keys``, sorted."""
    if len(keys) < 2:
        return keys.copy()
    s = np.sort(keys, kind="stable")  # a merge of runs: the fold adds its keys as sorted runs, one per body
    keep = np.empty(len(s), bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def cell_sides(radix: tuple[int, ...], cell_keys: int = CELL_KEYS) -> np.ndarray:
    """Per axis of ``radix``, the side of a coarse cell: powers of two, 1 on the instance axis (axis 0),
    doubled on the region axis with the most cells until a cell holds about ``cell_keys`` keys."""
    side = np.ones(len(radix), _I64)
    extent = np.array(radix, _I64)
    while int(side.prod()) < cell_keys:
        cells = -(-extent // side)
        cells[0] = 1
        a = int(np.argmax(cells))
        if cells[a] <= 1:
            break
        side[a] *= 2
    return side


class Seen:
    """The (instance, region) keys an output's buffer entered: a set of ``ravel_multi_index`` keys over ``radix``.

    ``added`` lists, per call of :meth:`add`, the keys that were new then, so a
    caller can read which keys a stretch of the walk added (``added[mark:]``).
    """

    def __init__(self, radix: tuple[int, ...], *, indexed_keys: int | None = None, cell_keys: int | None = None):
        self.radix = radix
        size = 1
        for r in radix:
            size *= r
        self.dense = np.zeros(size, bool) if size <= DENSE_KEYS else None
        self.keys = np.zeros(0, _I64)  # the sparse form's sorted keys
        self.added: list[np.ndarray] = []
        self.side: np.ndarray | None = None
        if self.dense is not None and size > (INDEXED_KEYS if indexed_keys is None else indexed_keys):
            self.side = cell_sides(radix, CELL_KEYS if cell_keys is None else cell_keys)
            self.cells = tuple(int(c) for c in -(-np.array(radix, _I64) // self.side))
            self.occupied = np.zeros(int(np.prod(self.cells)), bool)
            self.offsets = np.array(np.unravel_index(np.arange(int(self.side.prod())), tuple(int(x) for x in self.side)),
                                    _I64).reshape(len(radix), -1)
            # The same bitmap laid out cell by cell (a cell's keys contiguous), so a query copies whole cells.
            self.by_cell = np.zeros(len(self.occupied) * self.offsets.shape[1], bool)

    def contains(self, keys: np.ndarray) -> np.ndarray:
        if self.dense is not None:
            return self.dense[keys]
        if not len(self.keys):
            return np.zeros(len(keys), bool)
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return self.keys[at] == keys

    def add(self, keys: np.ndarray) -> None:
        """Add ``keys`` (any order, repeats allowed); the new ones go to :attr:`added`."""
        if self.dense is not None:
            new = distinct(keys[~self.dense[keys]])  # known keys dropped before the sort: none is left after it
        else:
            new = distinct(keys)
            new = new[~self.contains(new)]
        if not len(new):
            return
        if self.dense is not None:
            self.dense[new] = True
            if self.side is not None:
                cell, at = self._cell_of(new)
                self.occupied[cell] = True
                self.by_cell[cell * self.offsets.shape[1] + at] = True
        else:
            self.keys = np.insert(self.keys, np.searchsorted(self.keys, new), new)
        self.added.append(new)

    def _cell_of(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per key, its cell of the coarse map and its position in the cell (row-major in both), read off the
        key's coordinates axis by axis (last axis first, as ``ravel_multi_index`` lays them out)."""
        cell = np.zeros(len(keys), _I64)
        at = np.zeros(len(keys), _I64)
        rest = keys
        cell_stride = at_stride = 1
        for a in range(len(self.radix) - 1, -1, -1):
            r, side = self.radix[a], int(self.side[a])
            if r > 1:
                rest, coord = np.divmod(rest, r)
                if side > 1:
                    q, off = np.divmod(coord, side)
                    cell += q * cell_stride
                    at += off * at_stride
                else:
                    cell += coord * cell_stride
            cell_stride *= self.cells[a]
            at_stride *= side
        return cell, at

    def box_coords(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Coordinates ``(instance, lo per axis)`` of the keys whose region coordinates lie in the box
        ``lo .. hi`` (per region axis, inclusive; every instance), as ``(axes + 1, keys)`` in key order."""
        radix = self.radix
        lo = np.maximum(lo, 0)
        hi = np.minimum(hi, np.array(radix[1:], _I64) - 1)
        if (lo > hi).any():
            return np.zeros((len(radix), 0), _I64)
        if self.dense is None:
            coords = np.array(np.unravel_index(self.keys, radix), _I64).reshape(len(radix), -1)
            inside = ((coords[1:] >= lo[:, None]) & (coords[1:] <= hi[:, None])).all(axis=0)
            return coords[:, inside]
        if self.side is not None:
            cells = self._occupied_cells(lo, hi)
            volume = radix[0] * int(np.prod(hi - lo + 1))
            if cells.shape[1] * int(self.side.prod()) < volume:
                return self._cell_keys(cells, lo, hi)
        block = self.dense.reshape(radix)[(slice(None),) + tuple(slice(a, b + 1) for a, b in zip(lo, hi))]
        coords = np.array(np.nonzero(block), _I64).reshape(len(radix), -1)
        coords[1:] += lo[:, None]
        return coords

    def _occupied_cells(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Coordinates ``(axes + 1, cells)`` of the occupied cells that meet the box."""
        c_lo, c_hi = lo // self.side[1:], hi // self.side[1:]
        block = self.occupied.reshape(self.cells)[(slice(None),) + tuple(slice(a, b + 1) for a, b in zip(c_lo, c_hi))]
        cells = np.array(np.nonzero(block), _I64).reshape(len(self.radix), -1)
        cells[1:] += c_lo[:, None]
        return cells

    def _cell_keys(self, cells: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The keys in the box that lie in ``cells``: those cells' rows of the cell-by-cell bitmap, copied whole."""
        per_cell = self.offsets.shape[1]
        rows = self.by_cell.reshape(-1, per_cell)
        ids = np.ravel_multi_index(tuple(cells), self.cells)
        per = max(1, QUERY_BATCH // per_cell)
        found = []
        for b in range(0, len(ids), per):
            which, at = np.nonzero(rows[ids[b:b + per]])
            coords = cells[:, b + which] * self.side[:, None] + self.offsets[:, at]
            inside = ((coords[1:] >= lo[:, None]) & (coords[1:] <= hi[:, None])).all(axis=0)
            found.append(np.ravel_multi_index(tuple(coords[:, inside]), self.radix))
        keys = np.sort(np.concatenate(found)) if found else np.zeros(0, _I64)
        return np.array(np.unravel_index(keys, self.radix), _I64).reshape(len(self.radix), -1)
