"""The pieces of a schedule's tiles and the tiles of each level in execution order, as NumPy arrays.

Per dimension and level, a *piece table* lists the pieces of the
split-with-remainder (``for x0 in range(0, s, T): piece = min(T, s - x0)``)
of every parent piece: start, size, and the range of its children. The tiles
of level ``i`` are generated in chunks from those of level ``i-1``, each a
vector of per-dimension piece ids. The counting walks (:mod:`mapsearch.sim.walk`,
:mod:`mapsearch.sim.walk_spatial`, :mod:`mapsearch.sim.data`) and the DRAM
address stream read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.errors import CapacityError
from mapsearch.sim.stop import poll

__all__ = ["CHUNK", "PieceTables", "piece_tables", "tile_chunks", "check_capacity"]

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

    Row ``k`` holds the piece id of ``tables.dims[k]`` at that level. Before each chunk it polls the stop
    hook (:func:`mapsearch.sim.stop.poll`): a walk stopped from outside ends between two chunks.
    """
    nd = len(tables.dims)
    if level == 0:
        yield np.zeros((nd, 1), _I64)
        return
    order = [tables.dims.index(d) for d in schedule.levels[level].order]  # outer -> inner
    nch, first = tables.n_children[level - 1], tables.first_child[level - 1]
    for parent in tile_chunks(schedule, tables, level - 1, chunk):
        for tiles in _expand(parent, nch, first, order, chunk):
            poll()
            yield tiles


def _expand(parent: np.ndarray, nch, first, order: list[int], chunk: int) -> Iterator[np.ndarray]:
    """Children of each parent tile, parents in order, children in ``order`` (outer -> inner)."""
    nd, n_par = parent.shape
    if nd == 0:  # no dimensions (a single MAC of scalars): every tile is its parent's only child
        yield parent
        return
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


def check_capacity(level: str, capacity: int | None, allocations: list[tuple[str, int]]) -> int:
    """Sum the level's buffers in allocation order; raise ``CapacityError`` at the first that does not fit."""
    used = 0
    for what, words in allocations:
        if capacity is not None and used + words > capacity:
            raise CapacityError(level, what, used, words, capacity)
        used += words
    return used
