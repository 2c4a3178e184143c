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

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Mapping

import numpy as np

from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.pieces import CHUNK, piece_tables, tile_chunks
from mapsearch.sim.placed import buffer_pieces, buffer_stream
from mapsearch.sparse.effectual import (PRODUCTS_PER_CHUNK, axis_dims, compute, dense_reference, first_compressed,
                                        intersection_steps, join, pick_driver, products)
from mapsearch.sparse.format import Format, dense, words
from mapsearch.sparse.partition import Partition
from mapsearch.sparse.tensor import SparseTensor

__all__ = ["SPARSE_FIELDS", "TensorWords", "LinkWords", "SparseReplay", "RegionCounts", "walk_words", "replay_sparse",
           "PRODUCTS_PER_CHUNK", "pick_driver", "first_compressed", "join", "products", "compute", "dense_reference",
           "intersection_steps"]

_I64 = np.int64


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
            ks = [dim_index[d] for d in axis_dims(schedule, t)]
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
            ks = [self.dim_index[d] for d in axis_dims(self.schedule, t)]
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
        ks = [self.dim_index[d] for d in axis_dims(self.schedule, t)]
        radix = tuple(self.tables.count(i, k) for k in ks)
        key = np.ravel_multi_index(tuple(pid[k] for k in ks), radix)
        return np.isin(key, uk)


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
