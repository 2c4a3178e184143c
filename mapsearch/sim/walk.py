"""Counting replay (``mode="count"``): a vectorised walk of the tile sequence.

The walk produces the same :class:`~mapsearch.schedule.figures.Figures` as the
event-by-event replay, by generating the tiles each level visits, in execution
order, as NumPy arrays and counting the region changes along them. It never
uses a closed-form traffic formula: the solver does, and sharing one would
make the solver/replay agreement circular.

How the walk counts (contract: ``shared/spec/cost-model.md``, replay semantics):

- Per dimension and level, a *piece table* lists the pieces of the
  split-with-remainder (``for x0 in range(0, s, T): piece = min(T, s - x0)``)
  of every parent piece: start, size, and the range of its children.
- The tiles of level ``i`` in execution order are generated in chunks from
  the tiles of level ``i-1``: each parent tile expands into the product of
  its per-dimension children, digits in the level's loop order (outer ->
  inner). A tile is a vector of per-dimension piece ids.
- A tensor kept at level ``i`` maps each level-``i`` tile to its region (one
  interval per axis; an affine axis ``sum c*d`` spans
  ``[sum c*lo_d, sum c*hi_d]``). An *entry* is a step whose region differs
  from the previous step's (the first step is an entry).
  - Input: every entry loads its region from the nearest holder above.
  - Output: every entered region is left exactly once (at the next entry or
    at the end of the run), so every entry's words are eventually stored up;
    an entry loads partial sums iff the same region was entered before at
    that level (first-occurrence mask over region keys), else zeros.
  Words count on every link between the level and the nearest holder above.
- Op calls: sum over innermost tiles of ``prod ceil(t_d / b_d)``.
- A schedule with spatial splits is walked with its instances by
  :mod:`mapsearch.sim.walk_spatial` (same principle: the visit sequence,
  region changes along it, no formula).
- Occupancy: homes at the level plus, per tensor kept there, its largest
  region words seen by the walk, twice with double buffering when the
  tensor's region changes during the walk (``docs/cost-model.md``).

Memory is bounded by the chunk size: counters carry the previous region
across chunks, and outputs keep one first-entry position per possible
region (at most the output's words).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterator

import numpy as np

from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.counters import ReplayResult

CHUNK = 1 << 20  # tiles per generated chunk; bounds the walk's working memory

_I64 = np.int64


@dataclass(frozen=True)
class PieceTables:
    """Per level ``i`` and dimension index ``d``: the level's pieces of that dimension.

    ``start[i][d]``, ``size[i][d]``: every level-``i`` piece in order.
    ``n_children[i][d]``, ``first_child[i][d]``: how many level-``i+1`` pieces
    each splits into and the id of its first one (absent for the innermost level).
    """

    dims: tuple[str, ...]
    start: tuple[tuple[np.ndarray, ...], ...]
    size: tuple[tuple[np.ndarray, ...], ...]
    n_children: tuple[tuple[np.ndarray, ...], ...]
    first_child: tuple[tuple[np.ndarray, ...], ...]

    def count(self, level: int, d: int) -> int:
        return len(self.size[level][d])


def piece_tables(schedule: Schedule) -> PieceTables:
    """Split every dimension level by level with the contract's split-with-remainder rule."""
    wl = schedule.workload
    dims = wl.dims
    extent = wl.extent
    starts = [[np.zeros(1, _I64) for _ in dims]]
    sizes = [[np.array([extent[d]], _I64) for d in dims]]
    nch: list[list[np.ndarray]] = []
    first: list[list[np.ndarray]] = []
    for i in range(1, len(schedule.levels)):
        tile = schedule.tile_extents(i)
        lvl_s, lvl_z, lvl_n, lvl_f = [], [], [], []
        for k, d in enumerate(dims):
            t = int(tile[d])
            ps, pz = starts[-1][k], sizes[-1][k]
            n = -(-pz // t)
            f = np.cumsum(n) - n
            parent = np.repeat(np.arange(len(pz), dtype=_I64), n)
            local = np.arange(int(n.sum()), dtype=_I64) - f[parent]
            lvl_s.append(ps[parent] + local * t)
            lvl_z.append(np.minimum(t, pz[parent] - local * t))
            lvl_n.append(n)
            lvl_f.append(f)
        starts.append(lvl_s)
        sizes.append(lvl_z)
        nch.append(lvl_n)
        first.append(lvl_f)
    freeze = lambda rows: tuple(tuple(r) for r in rows)  # noqa: E731
    return PieceTables(dims, freeze(starts), freeze(sizes), freeze(nch), freeze(first))


def tile_chunks(schedule: Schedule, tables: PieceTables, level: int, chunk: int = CHUNK) -> Iterator[np.ndarray]:
    """The level's tiles in execution order, as chunks of piece ids of shape ``(ndims, n)``.

    Row ``k`` holds the piece id of ``tables.dims[k]`` at that level.
    """
    nd = len(tables.dims)
    if level == 0:
        yield np.zeros((nd, 1), _I64)
        return
    order = [tables.dims.index(d) for d in schedule.levels[level].order]  # outer -> inner
    nch, first = tables.n_children[level - 1], tables.first_child[level - 1]
    for parent in tile_chunks(schedule, tables, level - 1, chunk):
        yield from _expand(parent, nch, first, order, chunk)


def _expand(parent: np.ndarray, nch, first, order: list[int], chunk: int) -> Iterator[np.ndarray]:
    """Children of each parent tile, parents in order, children in ``order`` (outer -> inner)."""
    nd, n_par = parent.shape
    cnt = np.stack([nch[k][parent[k]] for k in range(nd)])
    base = np.stack([first[k][parent[k]] for k in range(nd)])
    if n_par == 1 or bool((cnt == cnt[:, :1]).all()):
        c = cnt[:, 0]
        per = int(np.prod(c))
        if per <= chunk:
            # Every parent has the same children counts: one digit pattern, repeated.
            grid = np.indices([int(c[k]) for k in order], dtype=_I64).reshape(len(order), per)
            pattern = np.empty((nd, per), _I64)
            pattern[order] = grid
            step = max(1, chunk // per)
            for a in range(0, n_par, step):
                b = min(n_par, a + step)
                yield np.repeat(base[:, a:b], per, axis=1) + np.tile(pattern, (1, b - a))
            return
    # Children counts vary (remainder pieces): mixed-radix digits per child.
    per = cnt.prod(axis=0)
    cum = np.cumsum(per)
    total = int(cum[-1])
    for a in range(0, total, chunk):
        j = np.arange(a, min(total, a + chunk), dtype=_I64)
        p = np.searchsorted(cum, j, side="right")
        local = j - (cum[p] - per[p])
        out = np.empty((nd, len(j)), _I64)
        for k in reversed(order):
            ck = cnt[k, p]
            out[k] = base[k, p] + local % ck
            local //= ck
        yield out


class _Counter:
    """Entries, words and (outputs) partial-sum reloads of one tensor kept at one level."""

    def __init__(self, schedule: Schedule, tables: PieceTables, tensor: str, level: int):
        wl = schedule.workload
        dim_index = {d: k for k, d in enumerate(tables.dims)}
        access = wl.tensor(tensor)
        self.is_output = wl.is_output(tensor)
        self.axes = [tuple((dim_index[d], c) for d, c in ix.terms) for ix in access.indices]
        self.start = tables.start[level]
        self.size = tables.size[level]
        self.prev: list | None = None
        self.entries = 0
        self.words = 0  # words of all entered regions
        self.reload = 0  # outputs: words of entries into regions entered before
        self.largest = 0
        if self.is_output:
            out_dims = [dim_index[d] for d in access.dims_in_order()]
            self.out_dims = out_dims
            self.radix = tuple(tables.count(level, k) for k in out_dims)
            self.first_entry = np.full(math.prod(self.radix), np.iinfo(_I64).max, _I64)

    def _keys(self, pid: np.ndarray) -> list[np.ndarray]:
        keys = []
        for terms in self.axes:
            if len(terms) == 1 and terms[0][1] == 1:
                keys.append(pid[terms[0][0]])  # plain axis: the piece id is the interval
            else:
                lo = sum(c * self.start[k][pid[k]] for k, c in terms)
                span = sum(c * (self.size[k][pid[k]] - 1) for k, c in terms)
                keys.extend((lo, lo + span))
        return keys

    def feed(self, pid: np.ndarray) -> None:
        n = pid.shape[1]
        keys = self._keys(pid)
        change = np.zeros(n, bool)
        moved = change[1:]
        for key in keys:
            moved |= key[1:] != key[:-1]
        change[0] = self.prev is None or any(int(k[0]) != p for k, p in zip(keys, self.prev))
        self.prev = [int(k[-1]) for k in keys]
        idx = np.flatnonzero(change)
        if len(idx) == 0:
            return
        at = pid[:, idx]
        words = np.ones(len(idx), _I64)
        for terms in self.axes:
            if len(terms) == 1:
                k, c = terms[0]
                words *= c * (self.size[k][at[k]] - 1) + 1
            else:
                words *= sum(c * (self.size[k][at[k]] - 1) for k, c in terms) + 1
        self.words += int(words.sum())
        self.largest = max(self.largest, int(words.max()))
        if self.is_output:
            key = np.ravel_multi_index(tuple(at[k] for k in self.out_dims), self.radix)
            pos = np.arange(self.entries, self.entries + len(idx), dtype=_I64)
            np.minimum.at(self.first_entry, key, pos)
            seen_before = self.first_entry[key] < pos
            self.reload += int(words[seen_before].sum())
        self.entries += len(idx)


def _check_capacity(level: str, capacity: int | None, allocations: list[tuple[str, int]]) -> int:
    """Sum the level's buffers in allocation order; raise ``CapacityError`` at the first that does not fit."""
    used = 0
    for what, words in allocations:
        if capacity is not None and used + words > capacity:
            from mapsearch.sim.errors import CapacityError

            raise CapacityError(level, what, used, words, capacity)
        used += words
    return used


def chunk_calls(pid: np.ndarray, calls_per_piece: list) -> int:
    """Op calls of a chunk of innermost tiles: per tile, the product over dims of ``ceil(piece / block)``."""
    calls = np.ones(pid.shape[1], _I64)
    for k, cp in enumerate(calls_per_piece):
        if cp.max() > 1:
            calls *= cp[pid[k]]
    return int(calls.sum())


def route(counter, source: int, level: int, tensor: str, down: list, up: list) -> None:
    """Count a buffer's words on every link between its source level and its own level."""
    for j in range(source + 1, level + 1):
        if counter.is_output:
            up[j][tensor] += counter.words
            down[j][tensor] += counter.reload
        else:
            down[j][tensor] += counter.words


def _allocations(schedule: Schedule, i: int, counters: dict) -> list[tuple[str, int]]:
    """Level ``i``'s buffers: homes, then each kept tensor's largest tile so far (twice if double-buffered)."""
    wl, arch = schedule.workload, schedule.architecture
    out = [(f"{t} (home)", wl.tensor_words(t)) for t in wl.tensor_names if schedule.home(t) == i]
    for t, c in counters.items():
        out.append((t, c.largest))
        if arch.double_buffering and c.entries > 1:
            out.append((f"{t} (second buffer)", c.largest))
    return out


def count_figures(schedule: Schedule, chunk: int = CHUNK) -> Figures:
    """Figures of ``schedule`` counted by walking its tile sequence.

    Raises the simulator's ``CapacityError`` when a level's peak occupancy
    exceeds its capacity.
    """
    from mapsearch.sim.spatial import compute_instances, has_splits

    if has_splits(schedule):
        from mapsearch.sim.walk_spatial import count_spatial

        return count_spatial(schedule)
    if schedule.placed:
        from mapsearch.sim.placed import count_placed

        return count_placed(schedule, chunk)
    wl = schedule.workload
    arch = schedule.architecture
    depth = arch.depth
    names = wl.tensor_names
    tables = piece_tables(schedule)
    inner = depth - 1
    block = [arch.compute.block_extent(d) for d in tables.dims]
    down = [dict.fromkeys(names, 0) for _ in range(depth)]  # down[j][t]: link into level j
    up = [dict.fromkeys(names, 0) for _ in range(depth)]
    occupancy = []
    op_calls = 0
    for i in range(depth):
        counters = {t: _Counter(schedule, tables, t, i) for t in names if schedule.keeps(t, i)}
        calls_per_piece = None
        if i == inner:
            calls_per_piece = [-(-tables.size[i][k] // block[k]) for k in range(len(block))]
        if counters or calls_per_piece is not None:
            for n, pid in enumerate(tile_chunks(schedule, tables, i, chunk)):
                for c in counters.values():
                    c.feed(pid)
                if n == 0:  # the first tiles are the largest: an overflow shows now, not after the walk
                    _check_capacity(arch.levels[i].name, arch.levels[i].capacity, _allocations(schedule, i, counters))
                if calls_per_piece is not None:
                    op_calls += chunk_calls(pid, calls_per_piece)
        allocations = _allocations(schedule, i, counters)
        for t, c in counters.items():
            route(c, schedule.keeper_above(t, i), i, t, down, up)
        level = arch.levels[i]
        occupancy.append((level.name, _check_capacity(level.name, level.capacity, allocations)))
    links = []
    for j in range(1, depth):
        link = arch.levels[j].link
        wd, wu = sum(down[j].values()), sum(up[j].values())
        links.append(
            LinkFigures(
                name=arch.link_name(j),
                words_down=wd,
                words_up=wu,
                time=Fraction(link.time(wd, wu)),
                tensors=tuple(TensorTraffic(t, down[j][t], up[j][t]) for t in names),
            )
        )
    return Figures(
        links=tuple(links),
        op_calls=op_calls,
        compute_time=op_calls * Fraction(arch.compute.clocks_per_call),
        macs=wl.macs,
        block_macs=arch.compute.block_macs,
        occupancy=tuple(occupancy),
        compute_instances=compute_instances(schedule),  # unused instances idle (docs/spatial.md)
        busiest_calls=op_calls,  # one working instance: it is the busiest
    )


def replay_count(schedule: Schedule, *, chunk: int = CHUNK) -> ReplayResult:
    """``replay(schedule, mode="count")``: the walk's figures, no data."""
    return ReplayResult(count_figures(schedule, chunk))
