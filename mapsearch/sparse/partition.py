"""Partitioning a tensor's nonzeros over spatial instances (the notebook's ``partitioning:`` operators).

Each function returns a :class:`Partition`: the part of every nonzero of the
tensor (``part_of``) and the nonzeros per part (``loads``). The replay uses
it to assign work (effectual products rooted at those nonzeros) to instances.

- ``uniform_shape(t, N, axis)``: TeAAL's coordinate-space split: parts of
  ``N`` consecutive coordinates of ``axis`` (``ceil(extent / N)`` parts).
- ``uniform_occupancy(t, N)``: parts of ``N`` consecutive nonzeros in rank
  order (the last part may hold fewer); a slice may be cut between parts.
  ``uniform_occupancy(t, N, axis)``: TeAAL's ``uniform_occupancy(T.N)`` of one
  rank (fibertree ``splitEqual``): each fiber of ``axis`` (the nonzeros that
  share ``c_0..c_{axis-1}``) is cut into parts of ``N`` non-empty coordinates
  of ``axis``; part ``p`` is the ``p``-th chunk of every fiber (for the top
  rank: ``N`` consecutive non-empty slices per part).
- ``uniform_slice(t, N, axis)``: the notebook's CISS partitioning: ``N``
  parts; whole slices (coordinates of ``axis``), visited in coordinate order,
  each given to the least-loaded part so far (ties: the lowest part), loads
  counted in nonzeros.

A partition built from a TeAAL spec (:mod:`mapsearch.sparse.teaal_partition`)
names the tensor it splits (``tensor``), so the replay can refuse a
partition of another tensor than its driver.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mapsearch.sparse.tensor import SparseTensor


@dataclass(frozen=True, eq=False)
class Partition:
    method: str
    parts: int
    part_of: np.ndarray  # (nnz,) part of each nonzero, in the tensor's COO order
    loads: np.ndarray  # (parts,) nonzeros per part
    axis: int = 0
    tensor: str | None = None  # the tensor whose nonzeros are split (None: not checked by the replay)

    @property
    def imbalance(self) -> float:
        """``max load / mean load`` (1.0 is perfect balance)."""
        mean = self.loads.sum() / self.parts
        return float(self.loads.max() / mean) if mean else 1.0


def _make(method, parts, part_of, axis):
    return Partition(method, parts, part_of, np.bincount(part_of, minlength=parts).astype(np.int64), axis)


def uniform_shape(t: SparseTensor, n: int, axis: int = 0) -> Partition:
    if n < 1:
        raise ValueError("uniform_shape(N) needs N >= 1")
    parts = -(-t.shape[axis] // n)
    return _make(f"uniform_shape({n})", parts, t.coords[axis] // n, axis)


def uniform_shape_parts(t: SparseTensor, parts: int, axis: int = 0) -> Partition:
    """``uniform_shape(ceil(extent / parts))``: the coordinate split giving (at most) ``parts`` parts."""
    n = -(-t.shape[axis] // parts)
    p = uniform_shape(t, n, axis)
    return Partition(p.method, parts, p.part_of, np.bincount(p.part_of, minlength=parts).astype(np.int64), axis)


def uniform_occupancy(t: SparseTensor, n: int, axis: int | None = None) -> Partition:
    """``axis`` None: ``N`` nonzeros per part (all ranks flattened); else ``N`` fiber elements of ``axis`` per part."""
    if n < 1:
        raise ValueError("uniform_occupancy(N) needs N >= 1")
    if axis is None:
        parts = max(1, -(-t.nnz // n))
        return _make(f"uniform_occupancy({n})", parts, np.arange(t.nnz, dtype=np.int64) // n, 0)
    pos = _fiber_position(t, axis)
    part_of = pos // n
    return _make(f"uniform_occupancy({n})", int(part_of.max()) + 1 if t.nnz else 1, part_of, axis)


def _fiber_position(t: SparseTensor, axis: int) -> np.ndarray:
    """Per nonzero: the position of its ``axis`` coordinate among the non-empty ones of its fiber.

    Relies on the COO order (lexicographic, axis order): a fiber of ``axis``
    is a run of equal ``c_0..c_{axis-1}``, its elements runs of equal ``c_axis``.
    """
    if not 0 <= axis < t.ndim:
        raise ValueError(f"axis {axis} out of range for a {t.ndim}-rank tensor")
    c = t.coords
    new_fiber = np.zeros(t.nnz, bool)
    if t.nnz:
        new_fiber[0] = True
        for k in range(axis):
            new_fiber[1:] |= c[k, 1:] != c[k, :-1]
    new_elem = new_fiber.copy()
    new_elem[1:] |= c[axis, 1:] != c[axis, :-1]
    elem = np.cumsum(new_elem) - 1  # global index of the nonzero's element (c_0..c_axis)
    fiber = np.cumsum(new_fiber) - 1
    return (elem - elem[np.flatnonzero(new_fiber)][fiber]).astype(np.int64)


def uniform_occupancy_parts(t: SparseTensor, parts: int) -> Partition:
    p = uniform_occupancy(t, max(1, -(-t.nnz // parts)))
    return Partition(p.method, parts, p.part_of, np.bincount(p.part_of, minlength=parts).astype(np.int64), 0)


def uniform_slice(t: SparseTensor, n: int, axis: int = 0) -> Partition:
    if n < 1:
        raise ValueError("uniform_slice(N) needs N >= 1")
    per_slice = t.slice_nnz(axis)
    slices = np.flatnonzero(per_slice)  # the notebook iterates the non-empty slices in coordinate order
    owner = np.zeros(t.shape[axis], np.int64)
    track = [0] * n
    if n <= 64:
        for s in slices.tolist():
            p = track.index(min(track))
            owner[s] = p
            track[p] += int(per_slice[s])
    else:  # same rule with a heap: (load, part) pops the least-loaded, lowest part
        import heapq

        heap = [(0, p) for p in range(n)]
        for s in slices.tolist():
            load, p = heapq.heappop(heap)
            owner[s] = p
            heapq.heappush(heap, (load + int(per_slice[s]), p))
    return _make(f"uniform_slice({n})", n, owner[t.coords[axis]], axis)


def by_name(t: SparseTensor, spec: str, parts: int, axis: int = 0) -> Partition:
    """``"uniform_shape"``, ``"uniform_occupancy"`` or ``"uniform_slice"`` over ``parts`` instances."""
    if spec == "uniform_shape":
        return uniform_shape_parts(t, parts, axis)
    if spec == "uniform_occupancy":
        return uniform_occupancy_parts(t, parts)
    if spec == "uniform_slice":
        return uniform_slice(t, parts, axis)
    raise ValueError(f"unknown partitioning {spec!r}; expected uniform_shape, uniform_occupancy, uniform_slice")
