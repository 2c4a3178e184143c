"""Replay a dense-style schedule on real sparse data (docs/sparse.md).

``replay_sparse(schedule, tensors, formats)`` walks the schedule's tiles
exactly as the dense counting replay does (:func:`mapsearch.sim.pieces.piece_tables`,
:func:`~mapsearch.sim.pieces.tile_chunks`: the same entries, i.e. region
changes of every tensor kept at a level), but an entered region costs the
payload and metadata words of the nonzeros inside it in the tensor's format
(:func:`mapsearch.sparse.format.words`) instead of its volume. It also counts,
from the data:

- **effectual ops**: products whose operands are all nonzero (the join of the
  inputs on their shared dimensions);
- **intersection steps**: coordinate comparisons of a two-finger merge, per
  fiber of the driver (the first compressed input) on each rank it shares with
  another input (a lookup per driver coordinate when the other side is
  uncompressed there);
- **per-instance work** under a :class:`~mapsearch.sparse.partition.Partition`
  of the driver's nonzeros: the effectual products rooted at each part, and
  the utilization ``mean / max`` that load imbalance leaves;
- in data mode the result, checked against ``numpy.einsum`` of the dense inputs.

Everything is vectorised (sorts, ``searchsorted``, ``bincount``); nothing loops
per nonzero in Python.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Mapping

import numpy as np

from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.pieces import CHUNK, piece_tables, tile_chunks
from mapsearch.sim.placed import buffer_pieces, buffer_stream
from mapsearch.sparse.format import Format, dense, words
from mapsearch.sparse.partition import Partition
from mapsearch.sparse.tensor import SparseTensor

_I64 = np.int64
PRODUCTS_PER_CHUNK = 1 << 22


SPARSE_FIELDS = ("payload_down", "meta_down", "payload_up", "meta_up")  # the word kinds of a TensorWords


@dataclass(frozen=True)
class TensorWords:
    tensor: str
    payload_down: float = 0
    meta_down: float = 0
    payload_up: float = 0
    meta_up: float = 0

    @property
    def words(self):
        return self.payload_down + self.meta_down + self.payload_up + self.meta_up


@dataclass(frozen=True)
class LinkWords:
    name: str
    tensors: tuple[TensorWords, ...]
    time: object  # Fraction (replay) or float (model)

    @property
    def words_down(self):
        return sum(t.payload_down + t.meta_down for t in self.tensors)

    @property
    def words_up(self):
        return sum(t.payload_up + t.meta_up for t in self.tensors)

    @property
    def words(self):
        return self.words_down + self.words_up

    @property
    def metadata(self):
        return sum(t.meta_down + t.meta_up for t in self.tensors)

    def tensor(self, name: str) -> TensorWords:
        return next(t for t in self.tensors if t.tensor == name)


@dataclass(frozen=True, eq=False)
class SparseReplay:
    links: tuple[LinkWords, ...]
    effectual_ops: int
    dense_macs: int
    intersection_steps: int
    compute_time: Fraction
    part_work: np.ndarray | None = None  # effectual ops per spatial instance
    part_nnz: np.ndarray | None = None
    result: SparseTensor | None = None
    data_ok: bool | None = None
    max_abs_error: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def utilization(self) -> float:
        """Mean over max work per instance (1.0 without a partition)."""
        if self.part_work is None or self.part_work.max() == 0:
            return 1.0
        return float(self.part_work.mean() / self.part_work.max())

    @property
    def words_total(self):
        return sum(l.words for l in self.links)

    @property
    def time(self):
        return max([self.compute_time] + [l.time for l in self.links])

    def link(self, name: str) -> LinkWords:
        return next(l for l in self.links if l.name == name)


# ----------------------------------------------------------------------------- the walk
def _axis_dims(schedule: Schedule, tensor: str) -> tuple[str, ...]:
    acc = schedule.workload.tensor(tensor)
    for ix in acc.indices:
        if not ix.is_plain:
            raise NotImplementedError(f"{acc.text()}: sparse replay needs plain indices (no affine axes)")
    return tuple(ix.dims[0] for ix in acc.indices)


RegionCounts = Callable[[str, tuple, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def walk_words(schedule: Schedule, formats: Mapping[str, Format], region_counts: RegionCounts,
               keep_tile: Callable[[int, np.ndarray], np.ndarray] | None = None, chunk: int = CHUNK, dtype=np.int64):
    """Per link (top first) and tensor: payload/metadata words down and up, over the schedule's entries.

    ``region_counts(tensor, space, keys, lo, hi)`` gives ``D`` (``(n, ndim)``)
    of the entered boxes ``[lo, hi)``; ``keys`` number the regions within
    ``space = (stream level, dims read at it)`` (:func:`~mapsearch.sim.placed.buffer_stream`),
    the pieces the buffer holds. ``keep_tile(level, pid)`` (optional)
    masks the tiles a level visits (tile skipping): a skipped level-``j``
    tile is a step no buffer on level ``j``'s stream sees.
    """
    from mapsearch.sim.spatial import has_splits

    if has_splits(schedule):
        raise NotImplementedError("sparse replay walks temporal schedules; give spatial work as a Partition")
    wl = schedule.workload
    depth = schedule.architecture.depth
    names = wl.tensor_names
    tables = piece_tables(schedule)
    dim_index = {d: k for k, d in enumerate(tables.dims)}
    acc = {(j, t): [0, 0, 0, 0] for j in range(depth) for t in names}  # payload_down, meta_down, payload_up, meta_up
    # Each kept buffer walks the tile stream of the level that moves it (its own, unless placed elsewhere).
    streams: dict[int, dict[tuple[str, int], dict]] = {}
    for i in range(1, depth):
        for t in names:
            if not schedule.keeps(t, i):
                continue
            j, outside = buffer_stream(schedule, t, i)
            ks = [dim_index[d] for d in _axis_dims(schedule, t)]
            pieces = buffer_pieces(tables, j, outside)
            streams.setdefault(j, {})[(t, i)] = dict(
                ks=ks, pieces=pieces, space=(j, outside), radix=tuple(pieces.radix[k] for k in ks), prev=None, seen=np.zeros(0, _I64),
                sums=[dtype(0)] * 4, fmt=formats.get(t) or dense(len(ks)), out=wl.is_output(t))
    for j, state in sorted(streams.items()):
        for chunk_pid in tile_chunks(schedule, tables, j, chunk):
            if keep_tile is not None:
                chunk_pid = chunk_pid[:, keep_tile(j, chunk_pid)]
                if chunk_pid.shape[1] == 0:
                    continue
            for (t, i), s in state.items():
                pid = s["pieces"].lift(chunk_pid)
                ks = s["ks"]
                key = np.ravel_multi_index(tuple(pid[k] for k in ks), s["radix"]) if ks else np.zeros(pid.shape[1], _I64)
                change = np.empty(len(key), bool)
                change[0] = s["prev"] is None or key[0] != s["prev"]
                change[1:] = key[1:] != key[:-1]
                s["prev"] = key[-1]
                at = np.flatnonzero(change)
                if len(at) == 0:
                    continue
                ek = key[at]
                lo = np.array([s["pieces"].start[k][pid[k, at]] for k in ks], _I64).reshape(len(ks), len(at))
                ext = np.array([s["pieces"].size[k][pid[k, at]] for k in ks], _I64).reshape(len(ks), len(at))
                D = region_counts(t, s["space"], ek, lo, lo + ext)
                pay, meta = words(s["fmt"], ext, D)
                if not s["out"]:
                    s["sums"][0] += pay.sum()
                    s["sums"][1] += meta.sum()
                else:
                    s["sums"][2] += pay.sum()
                    s["sums"][3] += meta.sum()
                    # Partial sums come back down when the region was entered before (at this level).
                    _, first = np.unique(ek, return_index=True)
                    again = np.ones(len(ek), bool)
                    again[first] = False
                    again |= np.isin(ek, s["seen"])
                    s["seen"] = np.union1d(s["seen"], ek)
                    s["sums"][0] += pay[again].sum()
                    s["sums"][1] += meta[again].sum()
    for state in streams.values():
        for (t, i), s in state.items():
            src = schedule.keeper_above(t, i)
            for link in range(src + 1, i + 1):
                for q in range(4):
                    acc[(link, t)][q] += s["sums"][q]
    return acc


def _links(schedule: Schedule, acc, exact: bool) -> tuple[LinkWords, ...]:
    arch = schedule.architecture
    names = schedule.workload.tensor_names
    out = []
    for j in range(1, arch.depth):
        tw = tuple(TensorWords(t, *[(int(v) if exact else float(v)) for v in acc[(j, t)]]) for t in names)
        down = sum(x.payload_down + x.meta_down for x in tw)
        up = sum(x.payload_up + x.meta_up for x in tw)
        link = arch.levels[j].link
        time = Fraction(link.time(down, up)) if exact else float(link.time(down, up))
        out.append(LinkWords(arch.link_name(j), tw, time))
    return tuple(out)


# ----------------------------------------------------------------------------- the data
class _RegionStats:
    """``D`` of every non-empty region of a tensor at a level, looked up by region key."""

    def __init__(self, schedule: Schedule, tensors: Mapping[str, SparseTensor], formats: Mapping[str, Format]):
        self.schedule = schedule
        self.tensors = tensors
        self.formats = formats
        self.tables = piece_tables(schedule)
        self.dim_index = {d: k for k, d in enumerate(self.tables.dims)}
        self.cache: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}

    def table(self, t: str, space: tuple[int, frozenset[str] | None]):
        if (t, space) not in self.cache:
            x = self.tensors[t]
            ks = [self.dim_index[d] for d in _axis_dims(self.schedule, t)]
            pieces = buffer_pieces(self.tables, *space)
            radix = tuple(pieces.radix[k] for k in ks)
            pid = [np.searchsorted(pieces.start[k], x.coords[a], side="right") - 1 for a, k in enumerate(ks)]
            key = np.ravel_multi_index(tuple(pid), radix) if ks else np.zeros(x.nnz, _I64)
            order = np.lexsort(tuple(x.coords[::-1]) + (key,)) if x.nnz else np.zeros(0, _I64)
            key, c = key[order], x.coords[:, order]
            n = x.nnz
            new = np.zeros(n, bool)
            if n:
                new[0] = True
                new[1:] = key[1:] != key[:-1]
            first = np.flatnonzero(new)
            region = np.cumsum(new) - 1
            D = np.zeros((len(first), x.ndim), _I64)
            for k in range(x.ndim):
                if n > 1:
                    new[1:] |= c[k, 1:] != c[k, :-1]
                D[:, k] = np.bincount(region, weights=new, minlength=len(first)).astype(_I64) if n else 0
            self.cache[(t, space)] = (key[first], D)
        return self.cache[(t, space)]

    def __call__(self, t, space, keys, lo, hi):
        nd = lo.shape[0]
        fmt = self.formats.get(t)
        if fmt is None or not fmt.compressed:
            return np.zeros((len(keys), nd), _I64)  # an uncompressed format needs only the extents
        uk, D = self.table(t, space)
        if len(uk) == 0:
            return np.zeros((len(keys), nd), _I64)
        pos = np.minimum(np.searchsorted(uk, keys), len(uk) - 1)
        found = uk[pos] == keys
        return np.where(found[:, None], D[pos], 0)

    def nonempty(self, t: str, i: int, pid: np.ndarray) -> np.ndarray:
        """Mask of level-``i`` tiles (piece ids ``pid``) whose region of ``t`` holds a nonzero."""
        uk, _ = self.table(t, (i, None))
        ks = [self.dim_index[d] for d in _axis_dims(self.schedule, t)]
        radix = tuple(self.tables.count(i, k) for k in ks)
        key = np.ravel_multi_index(tuple(pid[k] for k in ks), radix)
        return np.isin(key, uk)


@dataclass(frozen=True, eq=False)
class _Join:
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


def join(schedule: Schedule, tensors: Mapping[str, SparseTensor], driver: str) -> _Join:
    """Match every driver nonzero with the nonzeros of the other inputs that share its coordinates."""
    wl = schedule.workload
    ext = wl.extent
    x = tensors[driver]
    xdims = _axis_dims(schedule, driver)
    xc = {d: x.coords[a] for a, d in enumerate(xdims)}
    m = np.ones(x.nnz, _I64)
    private_seen: set[str] = set()
    others = []
    for acc in wl.einsum.inputs:
        if acc.name == driver:
            continue
        y = tensors[acc.name]
        ydims = _axis_dims(schedule, acc.name)
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
    return _Join(driver, xdims, tuple(others), m)


def products(schedule: Schedule, tensors: Mapping[str, SparseTensor], jn: _Join, chunk: int = PRODUCTS_PER_CHUNK):
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


def compute(schedule: Schedule, tensors: Mapping[str, SparseTensor], jn: _Join) -> SparseTensor:
    """The einsum's result from the effectual products (summed per output coordinate)."""
    wl = schedule.workload
    out = wl.einsum.output
    odims = _axis_dims(schedule, out.name)
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
    spec = ",".join("".join(letter[d] for d in _axis_dims(schedule, t.name)) for t in wl.einsum.inputs)
    spec += "->" + "".join(letter[d] for d in _axis_dims(schedule, wl.einsum.output.name))
    return np.einsum(spec, *[tensors[t.name].to_dense() for t in wl.einsum.inputs])


def intersection_steps(schedule: Schedule, tensors: Mapping[str, SparseTensor], formats: Mapping[str, Format],
                       jn: _Join, notes: list[str] | None = None) -> int:
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


def replay_sparse(schedule: Schedule, tensors: Mapping[str, SparseTensor], formats: Mapping[str, Format] | None = None,
                  *, partition: Partition | None = None, data: bool = True, driver: str | None = None,
                  skip_empty: bool = False, chunk: int = CHUNK) -> SparseReplay:
    """Replay ``schedule`` on the nonzeros of ``tensors`` (inputs; the output is computed).

    ``formats``: per tensor (missing: dense). ``partition``: of the driver's
    nonzeros over spatial instances. ``data``: compute the result and compare
    it with ``numpy.einsum`` (the output's nonzero pattern is also what a
    compressed output format is counted with: the final pattern, an upper
    bound on every partial sum's). ``skip_empty``: a level skips the tiles
    where the driver's region is empty (nothing is loaded for them).
    """
    wl = schedule.workload
    formats = dict(formats or {})
    for t in wl.einsum.inputs:
        if t.name not in tensors:
            raise KeyError(f"no data for input {t.name}")
        shape = tuple(wl.tensor_shape(t.name))
        if tuple(tensors[t.name].shape) != shape:
            raise ValueError(f"{t.name}: data shape {tensors[t.name].shape} != workload shape {shape}")
    driver = driver or pick_driver(schedule, formats)
    notes: list[str] = []
    jn = join(schedule, tensors, driver)
    out_name = wl.einsum.output.name
    out_fmt = formats.get(out_name)
    result = None
    if data or (out_fmt is not None and out_fmt.compressed):
        result = compute(schedule, tensors, jn)
    data_ok = err = None
    if data:
        ref = dense_reference(schedule, tensors)
        got = result.to_dense()
        err = float(np.max(np.abs(got - ref))) if ref.size else 0.0
        data_ok = bool(np.allclose(got, ref, rtol=1e-9, atol=1e-9 * max(1.0, float(np.abs(ref).max(initial=0)))))
    all_t = dict(tensors)
    if result is not None:
        all_t[out_name] = result
    stats = _RegionStats(schedule, all_t, formats)
    keep = (lambda i, pid: stats.nonempty(driver, i, pid)) if skip_empty else None
    acc = walk_words(schedule, formats, stats, keep, chunk)
    links = _links(schedule, acc, exact=True)
    eff = int(jn.multiplicity.sum())
    part_work = part_nnz = None
    busiest = eff
    if partition is not None:
        if partition.tensor is not None and partition.tensor != driver:
            raise ValueError(f"the partition splits {partition.tensor}'s nonzeros but the replay's driver is {driver}; "
                             f"pass driver={partition.tensor!r} or partition {driver}")
        if len(partition.part_of) != tensors[driver].nnz:
            raise ValueError(f"the partition has {len(partition.part_of)} nonzeros; the driver {driver} has {tensors[driver].nnz}")
        part_work = np.bincount(partition.part_of, weights=jn.multiplicity, minlength=partition.parts).astype(_I64)
        part_nnz = partition.loads
        busiest = int(part_work.max()) if len(part_work) else 0
    steps = intersection_steps(schedule, tensors, formats, jn, notes)
    return SparseReplay(links, eff, wl.macs, steps, busiest * Fraction(schedule.architecture.compute.clocks_per_call),
                        part_work, part_nnz, result, data_ok, err, tuple(notes))
