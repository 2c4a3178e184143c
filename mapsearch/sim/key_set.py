"""The set of (instance, region) keys an output's buffer entered, for the counting walk with instances.

A key is ``ravel_multi_index((instance, lo per axis), radix)``. The walk asks
two things of the set: which of a step's keys were entered before (a reload
of partial sums) and, in the fold (sim/spatial_fold.py), which keys lie in a
box. Both must cost what the walk costs, not what the output's size costs.
The set has one of three forms (:attr:`Seen.form`), by the number of
possible keys; none changes an answer, only its cost:

- ``"bitmap"`` (up to :data:`INDEXED_KEYS` possible keys): one byte per key.
- ``"cells"`` (up to :data:`DENSE_KEYS`): the key space is cut into cells of
  about :data:`CELL_KEYS` keys (a box of it, cut along the region axes; see
  :func:`cell_sides`) and only the cells that hold a key have a bitmap, a
  *page*, given out in the order cells are first entered (``page_of[cell]``,
  0 for none; page 0 is always empty, so a lookup needs no test). Memory
  touched and a box query's work go with the occupied cells, not with the
  output's size: on the 2024 Timeloop tutorial's layer (67 M possible output keys)
  the box queries scanned the whole output 270 times (23 s), and a bitmap
  over all keys paid a page fault for every 4 KiB it touched.
- ``"sorted"`` (more): a sorted array, membership by binary search.

Distinct keys are found by sorting (NumPy 2's hashed ``unique`` took 4 s on
4 M keys), with a merge sort: the fold adds keys in sorted runs.

The fold adds a run's keys as translates (:meth:`Seen.add_translates`): they
are kept as they are, pending, and go into the set only when the set is next
read (any query, any other add, or :attr:`Seen.added`). The set read is then
the same as if they had gone in at once; keys nobody reads again (those of
the walk's last fold) never go in.
"""

from __future__ import annotations

import numpy as np

_I64 = np.int64
# A set of output keys has pages of cells up to this many possible keys, else it is a sorted array.
DENSE_KEYS = 1 << 26
# A set of more possible keys than this has pages of cells; of fewer, one plain bitmap.
INDEXED_KEYS = 1 << 20
# About this many keys per cell.
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
    """Per axis of ``radix``, the side of a cell: powers of two, 1 on the instance axis (axis 0),
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


def _strides(shape) -> np.ndarray:
    """Row-major strides of ``shape``, in elements."""
    return np.cumprod((tuple(int(x) for x in shape[1:]) + (1,))[::-1])[::-1].astype(_I64)


class Seen:
    """The (instance, region) keys an output's buffer entered: a set of ``ravel_multi_index`` keys over ``radix``.

    ``added`` lists, per call of :meth:`add` (or per run of :meth:`add_translates`), the keys that were new
    then, so a caller can read which keys a stretch of the walk added (``added[mark:]``).
    """

    def __init__(self, radix: tuple[int, ...], *, indexed_keys: int | None = None, cell_keys: int | None = None):
        self.radix = radix
        size = 1
        for r in radix:
            size *= r
        self._added: list[np.ndarray] = []
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (keys, g, ms) not yet in the set
        self.side: np.ndarray | None = None
        self.dense: np.ndarray | None = None  # the "bitmap" form's bitmap
        self.keys = np.zeros(0, _I64)  # the "sorted" form's keys
        if size > DENSE_KEYS:
            self.form = "sorted"
        elif size <= (INDEXED_KEYS if indexed_keys is None else indexed_keys):
            self.form = "bitmap"
            self.dense = np.zeros(size, bool)
        else:
            self.form = "cells"
            self.side = cell_sides(radix, CELL_KEYS if cell_keys is None else cell_keys)
            self.cells = tuple(int(c) for c in -(-np.array(radix, _I64) // self.side))
            per_cell = int(self.side.prod())
            self.offsets = np.array(np.unravel_index(np.arange(per_cell), tuple(int(x) for x in self.side)),
                                    _I64).reshape(len(radix), -1)
            ncells = int(np.prod(self.cells))
            self.page_of = np.zeros(ncells, _I64)  # per cell, its page (0: none)
            # Untouched rows cost no memory (the zeros are mapped on first write), and pages are given out
            # in order, so the memory touched is that of the occupied cells.
            self.pages = np.zeros((ncells + 1, per_cell), bool)
            self.npages = 0
            # Per axis and coordinate c: its term of the cell's id, (c // side) * cell stride, and of the
            # position in the cell, (c % side) * stride in the cell (row-major both): a key's cell and
            # position are sums of table entries, one per axis.
            coord = [np.arange(r, dtype=_I64) for r in radix]
            self.cell_terms = [(c // int(sd)) * int(cs) for c, sd, cs in zip(coord, self.side, _strides(self.cells))]
            self.at_terms = [(c % int(sd)) * int(st) for c, sd, st in zip(coord, self.side, _strides(self.side))]

    # -- reading --------------------------------------------------------------------------------------------
    @property
    def added(self) -> list[np.ndarray]:
        self._flush()
        return self._added

    def contains(self, keys: np.ndarray) -> np.ndarray:
        self._flush()
        if self.form == "bitmap":
            return self.dense[keys]
        if self.form == "cells":
            cell, at = self._cell_of(keys)
            return self.pages[self.page_of[cell], at]
        if not len(self.keys):
            return np.zeros(len(keys), bool)
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return self.keys[at] == keys

    # -- adding ---------------------------------------------------------------------------------------------
    def add(self, keys: np.ndarray) -> None:
        """Add ``keys`` (any order, repeats allowed); the new ones go to :attr:`added`, sorted."""
        self._flush()
        self._add(keys)

    def _add(self, keys: np.ndarray) -> None:
        if self.form == "sorted":
            new = distinct(keys)
            new = new[~self.contains(new)]
        else:
            new = distinct(keys[~self.contains(keys)])  # known keys dropped before the sort: none is left after it
        if not len(new):
            return
        if self.form == "bitmap":
            self.dense[new] = True
        elif self.form == "cells":
            self._insert(*self._cell_of(new))
        else:
            self.keys = np.insert(self.keys, np.searchsorted(self.keys, new), new)
        self._added.append(new)

    def add_translates(self, keys: np.ndarray, g: np.ndarray, ms: np.ndarray) -> None:
        """Add the ``keys`` (distinct, not modified afterwards) moved by ``m * g`` (``g`` per region axis) for
        each ``m`` of ``ms``; every moved key must lie in the key space (else ValueError, at once).

        Pending until the set is next read (see the module's docstring); then as :meth:`_translate` says.
        """
        if not len(keys) or not len(ms):
            return
        coords = np.array(np.unravel_index(keys, self.radix), _I64).reshape(len(self.radix), -1)
        for a in np.flatnonzero(g):  # out of the key space: refused, as ``ravel_multi_index`` refuses it
            moves = (int(g[a] * ms.min()), int(g[a] * ms.max()))  # either end, whatever the sign of g
            if int(coords[a + 1].min()) + min(moves) < 0 or int(coords[a + 1].max()) + max(moves) >= self.radix[a + 1]:
                raise ValueError(f"keys moved out of the key space along axis {a + 1}")
        self._pending.append((keys, np.asarray(g, _I64), np.asarray(ms, _I64)))

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for keys, g, ms in pending:
            self._translate(keys, g, ms)

    def _translate(self, keys: np.ndarray, g: np.ndarray, ms: np.ndarray) -> None:
        """Add ``keys`` moved by ``m * g`` for ``m`` in ``ms``, the new ones going to :attr:`added`.

        A move of ``m * g`` moves a flat key by ``m * sum g[a] * stride[a]`` (the moved coordinates stay in
        the key space). When the moved copies are known distinct (along some axis ``a`` the keys span fewer
        than ``|g[a]|`` coordinates, so two copies never meet) and none is in the set (one lookup), they are
        all new: they go in as they are, with no sort, one entry of :attr:`added` (in ``ms`` order, each copy
        in the keys' order); their cells and positions are the unmoved ones' terms plus the moving axes'
        (the per-axis tables). Otherwise they go through :meth:`add`.
        """
        radix = self.radix
        coords = np.array(np.unravel_index(keys, radix), _I64).reshape(len(radix), -1)
        moving = [int(a) for a in np.flatnonzero(g)]
        stride = _strides(radix)
        shift = sum(int(g[a]) * int(stride[a + 1]) for a in moving)
        flat = (keys[None, :] + (shift * ms)[:, None]).reshape(-1)
        apart = any(int(coords[a + 1].max() - coords[a + 1].min()) < abs(int(g[a])) for a in moving)
        if not apart or self.form == "sorted":
            self._add(flat)
            return
        if self.form == "bitmap":
            if self.dense[flat].any():
                self._add(flat)
                return
            self.dense[flat] = True
        else:
            cell, at = self._moved_cells(coords, g, ms, moving)
            if self.pages[self.page_of[cell], at].any():
                self._add(flat)
                return
            self._insert(cell, at)
        self._added.append(flat)

    # -- cells ----------------------------------------------------------------------------------------------
    def _cell_of(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per key, its cell and its position in the cell (row-major in both), read off the key's coordinates
        axis by axis (last axis first, as ``ravel_multi_index`` lays them out)."""
        cell = np.zeros(len(keys), _I64)
        at = np.zeros(len(keys), _I64)
        rest = keys
        for a in range(len(self.radix) - 1, -1, -1):
            if self.radix[a] > 1:
                rest, coord = np.divmod(rest, self.radix[a])
                cell += self.cell_terms[a][coord]
                at += self.at_terms[a][coord]
        return cell, at

    def _moved_cells(self, coords: np.ndarray, g: np.ndarray, ms: np.ndarray, moving: list[int]):
        """Cells and positions of the keys at ``coords`` moved by ``m * g``, ``m`` in ``ms`` (``ms``-major)."""
        still = [a for a in range(len(self.radix)) if a - 1 not in moving]
        n = coords.shape[1]
        cell = sum((self.cell_terms[a][coords[a]] for a in still), np.zeros(n, _I64))
        at = sum((self.at_terms[a][coords[a]] for a in still), np.zeros(n, _I64))
        cell = np.repeat(cell[None, :], len(ms), axis=0)
        at = np.repeat(at[None, :], len(ms), axis=0)
        for a in moving:
            c = coords[a + 1][None, :] + (int(g[a]) * ms)[:, None]
            cell += self.cell_terms[a + 1][c]
            at += self.at_terms[a + 1][c]
        return cell.reshape(-1), at.reshape(-1)

    def _insert(self, cell: np.ndarray, at: np.ndarray) -> None:
        """Set the keys at (``cell``, ``at``), giving each cell without a page the next one."""
        need = cell[self.page_of[cell] == 0]
        if len(need):
            if len(need) * 8 < len(self.page_of):
                fresh = np.unique(need)
            else:  # many: mark them (one flag per cell) rather than sort them
                mark = np.zeros(len(self.page_of), bool)
                mark[need] = True
                fresh = np.flatnonzero(mark)
            self.page_of[fresh] = self.npages + 1 + np.arange(len(fresh), dtype=_I64)
            self.npages += len(fresh)
        self.pages[self.page_of[cell], at] = True

    # -- box queries ----------------------------------------------------------------------------------------
    def box_coords(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Coordinates ``(instance, lo per axis)`` of the keys whose region coordinates lie in the box
        ``lo .. hi`` (per region axis, inclusive; every instance), as ``(axes + 1, keys)`` in key order."""
        self._flush()
        radix = self.radix
        lo = np.maximum(lo, 0)
        hi = np.minimum(hi, np.array(radix[1:], _I64) - 1)
        if (lo > hi).any():
            return np.zeros((len(radix), 0), _I64)
        if self.form == "sorted":
            coords = np.array(np.unravel_index(self.keys, radix), _I64).reshape(len(radix), -1)
            inside = ((coords[1:] >= lo[:, None]) & (coords[1:] <= hi[:, None])).all(axis=0)
            return coords[:, inside]
        if self.form == "cells":
            return self._cell_keys(self._occupied_cells(lo, hi), lo, hi)
        block = self.dense.reshape(radix)[(slice(None),) + tuple(slice(a, b + 1) for a, b in zip(lo, hi))]
        coords = np.array(np.nonzero(block), _I64).reshape(len(radix), -1)
        coords[1:] += lo[:, None]
        return coords

    def _occupied_cells(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Coordinates ``(axes + 1, cells)`` of the occupied cells that meet the box."""
        c_lo, c_hi = lo // self.side[1:], hi // self.side[1:]
        block = self.page_of.reshape(self.cells)[(slice(None),) + tuple(slice(a, b + 1) for a, b in zip(c_lo, c_hi))]
        cells = np.array(np.nonzero(block), _I64).reshape(len(self.radix), -1)
        cells[1:] += c_lo[:, None]
        return cells

    def _cell_keys(self, cells: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The keys in the box that lie in ``cells``: those cells' pages, copied whole, then cut to the box."""
        per_cell = self.offsets.shape[1]
        ids = self.page_of[np.ravel_multi_index(tuple(cells), self.cells)]
        per = max(1, QUERY_BATCH // per_cell)
        found = []
        for b in range(0, len(ids), per):
            which, at = np.nonzero(self.pages[ids[b:b + per]])
            coords = cells[:, b + which] * self.side[:, None] + self.offsets[:, at]
            inside = ((coords[1:] >= lo[:, None]) & (coords[1:] <= hi[:, None])).all(axis=0)
            found.append(np.ravel_multi_index(tuple(coords[:, inside]), self.radix))
        keys = np.sort(np.concatenate(found)) if found else np.zeros(0, _I64)
        return np.array(np.unravel_index(keys, self.radix), _I64).reshape(len(self.radix), -1)
