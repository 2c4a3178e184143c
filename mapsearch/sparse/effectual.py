"""The effectual products of a sparse einsum, found from its data (docs/sparse.md).

The inputs joined on their shared dimensions: every nonzero of the driver
(the first compressed input, :func:`first_compressed`) matched with the
nonzeros of the other inputs at its coordinates (:func:`join`), the products
that join yields in chunks (:func:`products`), the result they sum to
(:func:`compute`) and ``numpy.einsum``'s of the dense inputs to check it
(:func:`dense_reference`), and the coordinate comparisons of the two-finger
merges that find them (:func:`intersection_steps`). :mod:`mapsearch.sparse.replay`
counts these alongside the words its walk moves.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from mapsearch.schedule.schedule import Schedule
from mapsearch.sparse.format import Format, dense
from mapsearch.sparse.tensor import SparseTensor

_I64 = np.int64
PRODUCTS_PER_CHUNK = 1 << 22


def axis_dims(schedule: Schedule, tensor: str) -> tuple[str, ...]:
    """The dimension of each axis of ``tensor`` (plain indices only: the sparse replay has no affine axes)."""
    acc = schedule.workload.tensor(tensor)
    for ix in acc.indices:
        if not ix.is_plain:
            raise NotImplementedError(f"{acc.text()}: sparse replay needs plain indices (no affine axes)")
    return tuple(ix.dims[0] for ix in acc.indices)


@dataclass(frozen=True, eq=False)
class Join:
    """The driver's nonzeros matched with the other inputs' (:func:`join`)."""

    driver: str
    dims: tuple[str, ...]  # driver axis dims
    others: tuple[tuple[str, tuple[str, ...], tuple[str, ...], np.ndarray, np.ndarray, np.ndarray], ...]
    # per other input: (name, its axis dims, shared dims, order (sorted by shared key), start, count) per driver nnz
    multiplicity: np.ndarray  # effectual products rooted at each driver nonzero


def _ravel(coords_by_dim: Mapping[str, np.ndarray], dims, extent) -> np.ndarray:
    key = np.zeros(len(next(iter(coords_by_dim.values()))) if coords_by_dim else 0, _I64)
    for d in dims:
        key = key * extent[d] + coords_by_dim[d]
    return key


def pick_driver(schedule: Schedule, formats: Mapping[str, Format]) -> str:
    return first_compressed([t.name for t in schedule.workload.einsum.inputs], formats)


def first_compressed(inputs, formats: Mapping[str, Format]) -> str:
    """The driver rule: the first input with a compressed format, else the first input."""
    for t in inputs:
        f = formats.get(t)
        if f is not None and f.compressed:
            return t
    return inputs[0]


def join(schedule: Schedule, tensors: Mapping[str, SparseTensor], driver: str) -> Join:
    """Match every driver nonzero with the nonzeros of the other inputs that share its coordinates."""
    wl = schedule.workload
    ext = wl.extent
    x = tensors[driver]
    xdims = axis_dims(schedule, driver)
    xc = {d: x.coords[a] for a, d in enumerate(xdims)}
    m = np.ones(x.nnz, _I64)
    private_seen: set[str] = set()
    others = []
    for acc in wl.einsum.inputs:
        if acc.name == driver:
            continue
        y = tensors[acc.name]
        ydims = axis_dims(schedule, acc.name)
        shared = tuple(d for d in ydims if d in xdims)
        private = set(ydims) - set(xdims)
        if private & private_seen:
            raise NotImplementedError(f"inputs other than the driver {driver} share dims {sorted(private & private_seen)}")
        private_seen |= private
        yc = {d: y.coords[a] for a, d in enumerate(ydims)}
        ky = _ravel(yc, shared, ext) if shared else np.zeros(y.nnz, _I64)
        order = np.argsort(ky, kind="stable")
        ks = ky[order]
        kx = _ravel(xc, shared, ext) if shared else np.zeros(x.nnz, _I64)
        start = np.searchsorted(ks, kx, side="left")
        count = np.searchsorted(ks, kx, side="right") - start
        m *= count
        others.append((acc.name, ydims, shared, order, start, count))
    alone = [d for d in wl.dims if d not in xdims and d not in private_seen]
    for d in alone:  # a dim no input indexes: every point of it is a product
        m *= ext[d]
    return Join(driver, xdims, tuple(others), m)


def products(schedule: Schedule, tensors: Mapping[str, SparseTensor], jn: Join, chunk: int = PRODUCTS_PER_CHUNK):
    """Chunks of effectual products: (driver nonzero index, coords by dim, value)."""
    wl = schedule.workload
    x = tensors[jn.driver]
    if [d for d in wl.dims if d not in jn.dims and not any(d in o[1] for o in jn.others)]:
        raise NotImplementedError("a dim indexed by no input")
    cum = np.cumsum(jn.multiplicity)
    a = 0
    while a < x.nnz:
        base = cum[a - 1] if a else 0
        b = int(np.searchsorted(cum, base + chunk, side="right"))
        b = max(b, a + 1)
        idx = np.arange(a, b, dtype=_I64)
        sel: list[np.ndarray] = []
        for name, ydims, shared, order, start, count in jn.others:
            c = count[idx]
            rep = np.repeat(np.arange(len(idx), dtype=_I64), c)
            off = np.arange(len(rep), dtype=_I64) - np.repeat(np.cumsum(c) - c, c)
            ynew = order[start[idx][rep] + off]
            idx = idx[rep]
            sel = [q[rep] for q in sel] + [ynew]
        coords = {d: x.coords[k][idx] for k, d in enumerate(jn.dims)}
        val = x.values[idx].copy()
        for (name, ydims, *_), ys in zip(jn.others, sel):
            y = tensors[name]
            for k, d in enumerate(ydims):
                coords.setdefault(d, y.coords[k][ys])
            val *= y.values[ys]
        yield idx, coords, val
        a = b


def compute(schedule: Schedule, tensors: Mapping[str, SparseTensor], jn: Join) -> SparseTensor:
    """The einsum's result from the effectual products (summed per output coordinate)."""
    wl = schedule.workload
    out = wl.einsum.output
    odims = axis_dims(schedule, out.name)
    ext = wl.extent
    shape = tuple(ext[d] for d in odims)
    size = int(np.prod(shape, dtype=np.float64))
    if size <= 1 << 26:
        acc = np.zeros(size)
        for _, coords, val in products(schedule, tensors, jn):
            lin = _ravel(coords, odims, ext) if odims else np.zeros(len(val), _I64)
            acc += np.bincount(lin, weights=val, minlength=size)
        return SparseTensor.from_dense(acc.reshape(shape), out.name)
    lins, vals = [], []
    for _, coords, val in products(schedule, tensors, jn):
        lin = _ravel(coords, odims, ext)
        u, inv = np.unique(lin, return_inverse=True)
        lins.append(u)
        vals.append(np.bincount(inv.reshape(-1), weights=val, minlength=len(u)))
    lin = np.concatenate(lins) if lins else np.zeros(0, _I64)
    val = np.concatenate(vals) if vals else np.zeros(0)
    return SparseTensor.from_coo(shape, np.array(np.unravel_index(lin, shape), _I64).reshape(len(shape), -1), val, out.name)


def dense_reference(schedule: Schedule, tensors: Mapping[str, SparseTensor]) -> np.ndarray:
    wl = schedule.workload
    letter = {d: string.ascii_letters[k] for k, d in enumerate(wl.dims)}
    spec = ",".join("".join(letter[d] for d in axis_dims(schedule, t.name)) for t in wl.einsum.inputs)
    spec += "->" + "".join(letter[d] for d in axis_dims(schedule, wl.einsum.output.name))
    return np.einsum(spec, *[tensors[t.name].to_dense() for t in wl.einsum.inputs])


def intersection_steps(schedule: Schedule, tensors: Mapping[str, SparseTensor], formats: Mapping[str, Format],
                       jn: Join, notes: list[str] | None = None) -> int:
    """Two-finger merge comparisons, per driver fiber on each rank shared with another input.

    A merge of sorted ``A`` and ``S`` stops when either runs out; it compares
    ``#{a <= max S} + #{s <= max A} - |A & S|`` times (a match advances both).
    An uncompressed side is probed: one step per coordinate of the other.
    """
    ext = schedule.workload.extent
    x = tensors[jn.driver]
    fx = formats.get(jn.driver) or dense(x.ndim)
    kx = fx.rank_kinds()
    n = x.nnz
    total = 0
    for name, ydims, shared, *_ in jn.others:
        y = tensors[name]
        fy = formats.get(name) or dense(y.ndim)
        ky = fy.rank_kinds()
        for d in shared:
            r, q = jn.dims.index(d), ydims.index(d)
            above = ydims[:q]
            if not set(above) <= set(jn.dims[:r]):
                if notes is not None:
                    notes.append(f"intersection {jn.driver}&{name} on {d}: {name}'s ranks above {d} are not bound by "
                                 f"{jn.driver}'s fiber; not counted")
                continue
            if kx[r] == "U" and ky[q] == "U" or n == 0:
                continue
            c = x.coords
            new_r = np.zeros(n, bool)
            new_r[0] = True
            for k in range(r):
                new_r[1:] |= c[k, 1:] != c[k, :-1]
            new_e = new_r.copy()
            new_e[1:] |= c[r, 1:] != c[r, :-1]
            pos = np.flatnonzero(new_e)  # one entry per distinct prefix of length r+1
            group = (np.cumsum(new_r) - 1)[pos]
            ngroup = int(group[-1]) + 1
            a = c[r, pos]
            kappa = np.zeros(len(pos), _I64)
            for dd in above:
                kappa = kappa * ext[dd] + c[jn.dims.index(dd), pos]
            ycomb = np.zeros(y.nnz, _I64)
            for dd in above:
                ycomb = ycomb * ext[dd] + y.coords[ydims.index(dd)]
            uy = np.unique(ycomb * ext[d] + y.coords[q])
            E = ext[d]
            if ky[q] == "U":  # probe the uncompressed side once per driver coordinate
                total += len(pos)
                continue
            first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
            gk = kappa[first]
            s_lo = np.searchsorted(uy, gk * E)
            s_hi = np.searchsorted(uy, gk * E + E)
            if kx[r] == "U":  # the driver's rank is uncompressed: walk the other side
                total += int((s_hi - s_lo).sum())
                continue
            comb = kappa * E + a
            p = np.minimum(np.searchsorted(uy, comb), max(len(uy) - 1, 0))
            match = (uy[p] == comb) if len(uy) else np.zeros(len(comb), bool)
            has_s = s_hi > s_lo
            max_s = np.where(has_s, uy[np.maximum(s_hi - 1, 0)] - gk * E if len(uy) else -1, -1)
            last = np.r_[first[1:], len(pos)] - 1
            max_a = a[last]
            a_le = np.bincount(group, weights=a <= max_s[group], minlength=ngroup)
            s_le = np.searchsorted(uy, gk * E + max_a, side="right") - s_lo
            m = np.bincount(group, weights=match, minlength=ngroup)
            steps = np.where(has_s, a_le + s_le - m, 0)
            total += int(steps.sum())
    return total

