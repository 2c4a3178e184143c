"""Sparse tensors as COO arrays (coords + values), with readers and fibertree helpers.

A :class:`SparseTensor` keeps ``coords`` of shape ``(ndim, nnz)`` (int64),
sorted lexicographically in axis order with no duplicates, and ``values``
(float64, all nonzero). Densities that make tensors live in
:mod:`mapsearch.sparse.density`; files are read with :func:`read_tensor`
(Matrix Market ``.mtx`` via ``scipy.io.mmread``, FROSTT ``.tns``: 1-based
coordinates then a value per line, NumPy COO ``.npz``: ``coords``, ``values``,
``shape``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

_I64 = np.int64


@dataclass(frozen=True, eq=False)
class SparseTensor:
    shape: tuple[int, ...]
    coords: np.ndarray  # (ndim, nnz) int64, lexicographically sorted, unique
    values: np.ndarray  # (nnz,) float64, nonzero
    name: str = ""

    @staticmethod
    def from_coo(shape, coords, values, name: str = "", *, sum_duplicates: bool = True) -> "SparseTensor":
        """Sort, merge duplicates (summed) and drop explicit zeros."""
        shape = tuple(int(s) for s in shape)
        coords = np.asarray(coords, _I64).reshape(len(shape), -1)
        values = np.asarray(values, np.float64).reshape(-1)
        if coords.shape[1] != values.shape[0]:
            raise ValueError(f"{coords.shape[1]} coordinates but {values.shape[0]} values")
        for a, e in enumerate(shape):
            if coords.shape[1] and (coords[a].min() < 0 or coords[a].max() >= e):
                raise ValueError(f"axis {a}: coordinates outside [0, {e})")
        if len(shape) == 0:
            lin = np.zeros(coords.shape[1], _I64)
        else:
            lin = np.ravel_multi_index(tuple(coords), shape) if coords.shape[1] else np.zeros(0, _I64)
        if sum_duplicates:
            u, inv = np.unique(lin, return_inverse=True)
            vals = np.bincount(inv.reshape(-1), weights=values, minlength=len(u)) if len(u) else np.zeros(0)
        else:
            order = np.argsort(lin, kind="stable")
            u, vals = lin[order], values[order]
        keep = vals != 0
        u, vals = u[keep], vals[keep]
        c = np.array(np.unravel_index(u, shape), dtype=_I64).reshape(len(shape), -1) if len(shape) else np.zeros((0, len(u)), _I64)
        return SparseTensor(shape, c, vals.astype(np.float64), name)

    @staticmethod
    def from_dense(array, name: str = "") -> "SparseTensor":
        a = np.asarray(array, np.float64)
        nz = np.nonzero(a)
        return SparseTensor(a.shape, np.array(nz, dtype=_I64).reshape(a.ndim, -1), a[nz], name)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nnz(self) -> int:
        return int(self.values.shape[0])

    @property
    def density(self) -> float:
        return self.nnz / max(1, int(np.prod(self.shape, dtype=np.float64)))

    def to_dense(self) -> np.ndarray:
        out = np.zeros(self.shape)
        out[tuple(self.coords)] = self.values
        return out

    def renamed(self, name: str) -> "SparseTensor":
        return SparseTensor(self.shape, self.coords, self.values, name)

    def slice_nnz(self, axis: int = 0) -> np.ndarray:
        """Nonzeros per coordinate of ``axis`` (per slice when ``axis`` is the top rank)."""
        return np.bincount(self.coords[axis], minlength=self.shape[axis]).astype(_I64)

    def fibertree(self, rank_order: tuple[int, ...] | None = None) -> list[dict[str, np.ndarray]]:
        """CSF arrays per rank in ``rank_order`` (axis indices, top first).

        Rank ``k`` gets ``coords`` (the coordinate of each distinct prefix of
        length ``k+1``) and ``ptr`` (``len = fibers_k + 1``: where each fiber of
        rank ``k`` starts in ``coords``); the leaf rank also gets ``values``.
        """
        order = tuple(range(self.ndim)) if rank_order is None else tuple(rank_order)
        c = self.coords[list(order)]
        perm = np.lexsort(c[::-1]) if self.nnz else np.zeros(0, _I64)
        c = c[:, perm]
        new = np.zeros(self.nnz, bool)
        if self.nnz:
            new[0] = True
        ranks = []
        parent_new = new.copy()  # prefix of length 0: one root fiber
        for k in range(self.ndim):
            changed = new.copy()
            changed[1:] |= c[k, 1:] != c[k, :-1]
            new = changed
            pos = np.flatnonzero(new)
            fiber_of_entry = np.cumsum(parent_new)[pos] - 1
            nfib = int(parent_new.sum())
            ptr = np.zeros(nfib + 1, _I64)
            np.add.at(ptr, fiber_of_entry + 1, 1)
            ranks.append({"coords": c[k, pos], "ptr": np.cumsum(ptr)})
            parent_new = new.copy()
        if ranks:
            ranks[-1]["values"] = self.values[perm]
        return ranks


def read_tensor(path: str | Path, name: str = "", shape: tuple[int, ...] | None = None) -> SparseTensor:
    """Read ``.mtx`` (Matrix Market), ``.tns`` (FROSTT, 1-based) or ``.npz`` (``coords``, ``values``, ``shape``)."""
    path = Path(path)
    name = name or path.stem
    suffix = path.suffix.lower()
    if suffix == ".mtx":
        import scipy.io
        import scipy.sparse

        m = scipy.io.mmread(str(path))
        if not scipy.sparse.issparse(m):
            return SparseTensor.from_dense(np.asarray(m), name)
        m = scipy.sparse.coo_matrix(m)
        return SparseTensor.from_coo(shape or m.shape, np.vstack([m.row, m.col]), m.data, name)
    if suffix == ".tns":
        rows = np.loadtxt(path, ndmin=2, comments="#")
        coords = rows[:, :-1].T.astype(_I64) - 1
        if shape is None:
            shape = tuple(int(x) + 1 for x in coords.max(axis=1)) if rows.size else ()
        return SparseTensor.from_coo(shape, coords, rows[:, -1], name)
    if suffix == ".npz":
        with np.load(path) as z:
            return SparseTensor.from_coo(tuple(z["shape"]) if shape is None else shape, z["coords"], z["values"], name)
    raise ValueError(f"{path}: unknown sparse file type {suffix!r}; expected .mtx, .tns or .npz")


def write_npz(tensor: SparseTensor, path: str | Path) -> None:
    np.savez(path, coords=tensor.coords, values=tensor.values, shape=np.array(tensor.shape, _I64))


def write_tns(tensor: SparseTensor, path: str | Path) -> None:
    rows = np.column_stack([tensor.coords.T + 1, tensor.values])
    np.savetxt(path, rows, fmt=["%d"] * tensor.ndim + ["%.17g"])
