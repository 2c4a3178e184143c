"""Density models: how a tensor's nonzeros are made, and how many lie in a box.

Every model answers two questions for a tensor of a given shape (ranks in
axis order, top first):

- ``sample(shape, seed)``: a :class:`~mapsearch.sparse.tensor.SparseTensor`;
- ``region_counts(lo, hi)``: for boxes ``[lo, hi)`` (arrays of shape
  ``(ndim, n)``), ``D[:, k]`` = the number of distinct non-empty prefixes
  ``(c_0..c_k)`` inside the box (so ``D[:, -1]`` is the box's nonzeros).
  These are the counts the format's word formula needs
  (:func:`mapsearch.sparse.format.words`).

``Uniform`` (the notebook's ``fromRandom``) answers with the **expectation**
over seeds; ``NofM``, ``Banded`` and ``Dense`` answer **exactly** (``exact``).

``Uniform(densities)`` reproduces the semantics of fibertree's
``Tensor.fromRandom(shape, density, seed)``: walking the ranks top down, each
coordinate of an existing fiber is present with probability ``density[k]``
(independently), leaves carry random integers in ``1..interval``, and a
fiber left empty is dropped (so its parent coordinate disappears). A leaf is
therefore present with probability ``prod(density)``; a prefix of length
``k+1`` is non-empty inside a box with probability
``prod_{m<=k} d_m * s_{k+1}``, where ``s_n = 1`` and
``s_k = 1 - (1 - d_k s_{k+1})^{e_k}`` for box extents ``e``. The bits differ
from fibertree's (NumPy's generator, not Python's ``random``); the
distribution is the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mapsearch.sparse.tensor import SparseTensor

_I64 = np.int64


def _values(rng: np.random.Generator, n: int, interval: int) -> np.ndarray:
    return rng.integers(1, interval + 1, size=n).astype(np.float64)


@dataclass(frozen=True)
class Uniform:
    """Per-rank density: the probability that a coordinate of an existing fiber is non-empty."""

    densities: tuple[float, ...]
    interval: int = 10
    exact = False

    def __post_init__(self):
        if any(not 0 <= d <= 1 for d in self.densities):
            raise ValueError(f"densities must lie in [0, 1]: {self.densities}")

    def sample(self, shape, seed: int = 0, name: str = "") -> SparseTensor:
        shape = tuple(int(s) for s in shape)
        if len(shape) != len(self.densities):
            raise ValueError(f"{len(self.densities)} densities for {len(shape)} ranks")
        rng = np.random.default_rng(seed)
        prefix = np.zeros((0, 1), _I64)  # (k, n_fibers): coordinates of the existing fibers
        for k, (e, d) in enumerate(zip(shape, self.densities)):
            nf = prefix.shape[1]
            if nf * e <= 1 << 24 or d > 0.25:
                keep = rng.random((nf, e)) < d
                f, c = np.nonzero(keep)
            else:  # binomial count per fiber, then a uniform subset (redraw duplicates)
                cnt = rng.binomial(e, d, size=nf)
                f, c = _subsets(rng, cnt, e)
            prefix = np.vstack([prefix[:, f], c[None, :].astype(_I64)])
        # Empty fibers never reach the leaves: the COO keeps exactly the present leaves.
        return SparseTensor.from_coo(shape, prefix, _values(rng, prefix.shape[1], self.interval), name)

    def region_counts(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        e = (np.asarray(hi) - np.asarray(lo)).astype(np.float64)
        n = e.shape[0]
        s = np.ones(e.shape[1])
        s_next = [None] * (n + 1)
        s_next[n] = s
        for k in range(n - 1, -1, -1):
            s = 1.0 - (1.0 - self.densities[k] * s) ** e[k]
            s_next[k] = s
        out = np.empty((e.shape[1], n))
        pos = np.ones(e.shape[1])
        for k in range(n):
            pos = pos * e[k] * self.densities[k]
            out[:, k] = pos * s_next[k + 1]
        return out

    def presence(self, axis: int, extent: int) -> float:
        """Expected fraction of leaves present, attributed to rank ``axis`` (for the op model)."""
        return self.densities[axis]


@dataclass(frozen=True)
class Dense:
    """Every coordinate present (exact)."""

    interval: int = 10
    exact = True

    def sample(self, shape, seed: int = 0, name: str = "") -> SparseTensor:
        rng = np.random.default_rng(seed)
        n = int(np.prod(shape))
        return SparseTensor.from_coo(shape, np.indices(shape).reshape(len(shape), n), _values(rng, n, self.interval), name)

    def region_counts(self, lo, hi):
        e = (np.asarray(hi) - np.asarray(lo)).astype(np.float64)
        return np.cumprod(e, axis=0).T.copy()

    def mask(self, axis: int, coords: np.ndarray) -> np.ndarray:
        return np.ones(len(coords), bool)


@dataclass(frozen=True)
class NofM:
    """Fixed structure: on rank ``k`` a coordinate ``c`` is present iff ``(c - offset_k) mod m_k < n_k``.

    Every fiber of a rank has the same pattern, so a box holds exactly
    ``prod_{m<=k} count_m`` prefixes of length ``k+1``. ``m_k = extent`` with
    ``offset 0`` is "exactly ``n_k`` nonzeros per fiber"; ``n:m`` per rank is
    structured (e.g. 2:4) sparsity; ``n_k = m_k`` is a dense rank.
    """

    n: tuple[int, ...]
    m: tuple[int, ...]
    offset: tuple[int, ...] | None = None
    interval: int = 10
    exact = True

    def _off(self, k):
        return 0 if self.offset is None else self.offset[k]

    def mask(self, axis: int, coords: np.ndarray) -> np.ndarray:
        return (np.asarray(coords) - self._off(axis)) % self.m[axis] < self.n[axis]

    def _count_below(self, k: int, x: np.ndarray) -> np.ndarray:
        """Present coordinates in ``[0, x)`` of rank ``k``."""
        x = np.asarray(x, _I64) - self._off(k)
        q, r = np.divmod(x, self.m[k])
        return q * self.n[k] + np.minimum(r, self.n[k])

    def box_factors(self, k: int, shape, whole=frozenset()) -> tuple:
        """``D_k`` of a box as a product over ranks of functions of the box's interval on each rank.

        ``D_k = prod_{r<=k} count_r([lo_r, hi_r)) * prod_{r>k} [count_r([lo_r, hi_r)) > 0]``:
        every fiber of a rank has the same pattern. Per rank: ``None`` (1),
        ``"x"`` (the interval's length: a dense rank) or ``g(lo, hi)``
        (vectorised). The sparse solver sums these over a schedule's pieces.
        """
        out = []
        for r in range(len(self.n)):
            dense_rank = self.n[r] >= self.m[r]
            if r <= k:
                out.append("x" if dense_rank else (lambda lo, hi, r=r: self._count_below(r, hi) - self._count_below(r, lo)))
            else:
                out.append(None if dense_rank else
                           (lambda lo, hi, r=r: (self._count_below(r, hi) > self._count_below(r, lo)).astype(_I64)))
        return tuple(out)

    def sample(self, shape, seed: int = 0, name: str = "") -> SparseTensor:
        rng = np.random.default_rng(seed)
        axes = [np.flatnonzero(self.mask(k, np.arange(e))) for k, e in enumerate(shape)]
        grid = np.array(np.meshgrid(*axes, indexing="ij"), dtype=_I64).reshape(len(shape), -1)
        return SparseTensor.from_coo(shape, grid, _values(rng, grid.shape[1], self.interval), name)

    def region_counts(self, lo, hi):
        lo, hi = np.asarray(lo), np.asarray(hi)
        per = np.stack([self._count_below(k, hi[k]) - self._count_below(k, lo[k]) for k in range(lo.shape[0])])
        D = np.cumprod(per.astype(np.float64), axis=0)
        # A prefix is non-empty in the box only if every rank below it has a coordinate there.
        below = np.flip(np.cumprod(np.flip(per > 0, axis=0), axis=0), axis=0)  # below[k]: ranks k.. all non-empty
        return (D * np.vstack([below[1:], np.ones((1, per.shape[1]))])).T.copy()


@dataclass(frozen=True)
class Banded:
    """Fixed structure for a matrix: ``(i, j)`` present iff ``-lower <= j - i <= upper``."""

    lower: int
    upper: int
    interval: int = 10
    exact = True

    def sample(self, shape, seed: int = 0, name: str = "") -> SparseTensor:
        if len(shape) != 2:
            raise ValueError("Banded is a matrix density (two ranks)")
        rng = np.random.default_rng(seed)
        i, j = np.indices(shape).reshape(2, -1)
        keep = (j - i >= -self.lower) & (j - i <= self.upper)
        return SparseTensor.from_coo(shape, np.vstack([i[keep], j[keep]]), _values(rng, int(keep.sum()), self.interval), name)

    def box_factors(self, k: int, shape, whole=frozenset()) -> tuple:
        """``D_k`` as per-rank functions (see :meth:`NofM.box_factors`), when one rank is held whole.

        With the columns whole (rank 1 in ``whole``) a box is a band of rows
        and its counts are sums over its rows ``i`` of ``w(i)``, the row's band
        width within the matrix (``D_1``), or of ``[w(i) > 0]`` (``D_0``). With
        the rows whole, ``D_1`` sums the column widths and ``D_0`` counts the rows
        ``i`` in ``[lo - upper, hi + lower)`` (those whose band meets columns
        ``[lo, hi)``). Otherwise the count depends on both intervals jointly:
        ``ValueError``.
        """
        R, S = (int(e) for e in shape)
        if 1 in whole:
            i = np.arange(R, dtype=_I64)
            w = np.maximum(0, np.minimum(S, i + self.upper + 1) - np.maximum(0, i - self.lower))
            per_row = w if k == 1 else (w > 0).astype(_I64)
            cum = np.concatenate([[0], np.cumsum(per_row)])
            return (lambda lo, hi: cum[hi] - cum[lo], None)
        if 0 in whole:
            if k == 1:
                j = np.arange(S, dtype=_I64)
                w = np.maximum(0, np.minimum(R, j + self.lower + 1) - np.maximum(0, j - self.upper))
                cum = np.concatenate([[0], np.cumsum(w)])
                return (None, lambda lo, hi: cum[hi] - cum[lo])
            return (None, lambda lo, hi: np.maximum(0, np.minimum(R, hi + self.lower) - np.maximum(0, lo - self.upper)))
        raise ValueError("a Banded box's counts depend on its row and column intervals jointly; "
                         "they factor per rank only when the rows or the columns are held whole")

    def region_counts(self, lo, hi):
        lo, hi = np.asarray(lo, _I64), np.asarray(hi, _I64)
        n = lo.shape[1]
        out = np.zeros((n, 2))
        # Per box, per row i: the band's columns clipped to the box (vectorised over rows of all boxes).
        rows = hi[0] - lo[0]
        box = np.repeat(np.arange(n), rows)
        i = np.arange(int(rows.sum()), dtype=_I64) - np.repeat(np.cumsum(rows) - rows, rows) + lo[0][box]
        a = np.maximum(lo[1][box], i - self.lower)
        b = np.minimum(hi[1][box], i + self.upper + 1)
        cnt = np.maximum(0, b - a)
        out[:, 1] = np.bincount(box, weights=cnt, minlength=n)
        out[:, 0] = np.bincount(box, weights=(cnt > 0), minlength=n)
        return out


def sample_inputs(workload, densities, seed: int = 0) -> dict[str, SparseTensor]:
    """Every input of ``workload``'s einsum drawn from its density (dense when none): input ``i`` with seed ``seed + i``."""
    return {t.name: (densities.get(t.name) or Dense()).sample(workload.tensor_shape(t.name), seed=seed + i, name=t.name)
            for i, t in enumerate(workload.einsum.inputs)}


def _subsets(rng: np.random.Generator, cnt: np.ndarray, e: int) -> tuple[np.ndarray, np.ndarray]:
    """For fiber ``f`` a uniform ``cnt[f]``-subset of ``range(e)``: (fiber ids, coordinates)."""
    f_all, c_all = np.zeros(0, _I64), np.zeros(0, _I64)
    need = cnt.astype(_I64)
    while need.sum():
        f = np.repeat(np.arange(len(need), dtype=_I64), need)
        c = rng.integers(0, e, size=len(f))
        f_all = np.concatenate([f_all, f])
        c_all = np.concatenate([c_all, c])
        key = np.unique(f_all * e + c_all)
        f_all, c_all = key // e, key % e
        need = cnt - np.bincount(f_all, minlength=len(cnt))
    return f_all, c_all


def power_law(shape, nnz: int, alpha: float = 1.5, seed: int = 0, interval: int = 10, name: str = "") -> SparseTensor:
    """A skewed tensor: slice ``i`` of the top rank holds about ``nnz * (i+1)^-alpha / sum`` nonzeros
    (at most the slice's volume), placed uniformly inside the slice. Heavy slices come first."""
    shape = tuple(int(s) for s in shape)
    rng = np.random.default_rng(seed)
    w = (np.arange(1, shape[0] + 1, dtype=np.float64)) ** -alpha
    vol = int(np.prod(shape[1:], dtype=np.int64))
    cnt = np.minimum(np.maximum(np.round(nnz * w / w.sum()).astype(_I64), 0), vol)
    f, c = _subsets(rng, cnt, vol)
    rest = np.array(np.unravel_index(c, shape[1:]), dtype=_I64).reshape(len(shape) - 1, -1)
    coords = np.vstack([f[None, :], rest])
    return SparseTensor.from_coo(shape, coords, _values(rng, coords.shape[1], interval), name)
