"""Counting replay of schedules with placed buffers (the contract's "Buffer placement").

A buffer at nest position ``p`` (loops outside it, counted over the whole
nest: level 1's order, then level 2's, ...) holds, along each dimension,
the piece of the innermost loop over that dimension outside ``p``. With
``p = (j-1)*D + k`` (``1 <= k <= D``) the loops outside are all of levels
``< j`` and the first ``k`` of level ``j``: the buffer's region moves with
the level-``j`` tile stream, reading the level-``j`` piece of the dimensions
of those ``k`` loops and the level-``(j-1)`` piece (the parent) of the
others. ``p = 0`` holds the whole tensor. The walk feeds each buffer the
tile stream of its level ``j`` (:func:`mapsearch.sim.walk.tile_chunks`) with
the parent pieces substituted and counts region changes along it exactly as
for a default buffer (:class:`mapsearch.sim.walk._Counter`): loads on every
entry, output stores on every entry, partial-sum reloads on entries into a
region held before. No closed form is used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mapsearch.schedule.figures import Figures
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.buffers import BufferCounter, chunk_calls, figures_from_counts, level_occupancy, route
from mapsearch.sim.pieces import CHUNK, PieceTables, piece_tables, tile_chunks
from mapsearch.sim.spatial import compute_instances

_I64 = np.int64


def buffer_stream(schedule: Schedule, tensor: str, level: int) -> tuple[int, frozenset[str] | None]:
    """(the level whose tile stream moves the buffer, the dims read at that level's piece; None: all).

    :meth:`~mapsearch.schedule.schedule.Schedule.buffer_anchor`, named for the walks.
    """
    return schedule.buffer_anchor(tensor, level)


@dataclass(frozen=True)
class BufferPieces:
    """The pieces a placed buffer reads: per dimension, its stream level's or the parent level's.

    ``lift(pid)`` maps a chunk of stream-level tile ids to the ids of the
    pieces the buffer holds; ``start[k]``, ``size[k]`` describe those pieces.
    """

    lifted: dict[int, np.ndarray]  # dim index -> parent piece id of every stream-level piece
    start: tuple[np.ndarray, ...]
    size: tuple[np.ndarray, ...]
    radix: tuple[int, ...]  # pieces per dimension

    def lift(self, pid: np.ndarray) -> np.ndarray:
        if not self.lifted:
            return pid
        pid = pid.copy()
        for k, parent in self.lifted.items():
            pid[k] = parent[pid[k]]
        return pid


def buffer_pieces(tables: PieceTables, stream: int, outside: frozenset[str] | None) -> BufferPieces:
    """The :class:`BufferPieces` of a buffer on ``stream``'s tiles reading ``outside``'s dims there."""
    dims = tables.dims
    lifted = {} if outside is None or stream == 0 else {
        k: np.repeat(np.arange(len(n), dtype=_I64), n)
        for k, n in enumerate(tables.n_children[stream - 1]) if dims[k] not in outside}
    level = [stream - 1 if k in lifted else stream for k in range(len(dims))]
    return BufferPieces(lifted, tuple(tables.start[level[k]][k] for k in range(len(dims))),
                        tuple(tables.size[level[k]][k] for k in range(len(dims))),
                        tuple(tables.count(level[k], k) for k in range(len(dims))))


class _PlacedCounter(BufferCounter):
    """A buffer whose region reads, per dimension, either its stream level's piece or the parent's."""

    def __init__(self, schedule: Schedule, tables: PieceTables, tensor: str, stream: int,
                 outside: frozenset[str] | None):
        super().__init__(schedule, tables, tensor, stream)
        self.pieces = buffer_pieces(tables, stream, outside)
        self.start, self.size = list(self.pieces.start), list(self.pieces.size)
        if self.is_output:
            self.radix = tuple(self.pieces.radix[k] for k in self.out_dims)
            self.first_entry = np.full(int(np.prod(self.radix)), np.iinfo(_I64).max, _I64)

    def feed(self, pid: np.ndarray, start: np.ndarray | None = None) -> None:
        super().feed(self.pieces.lift(pid), start)


def count_placed(schedule: Schedule, chunk: int = CHUNK) -> Figures:
    """Figures of a schedule with placed buffers, by walking each level's tile stream (no spatial splits)."""
    wl, arch = schedule.workload, schedule.architecture
    depth = arch.depth
    names = wl.tensor_names
    tables = piece_tables(schedule)
    block = [arch.compute.block_extent(d) for d in tables.dims]
    by_stream: dict[int, dict[tuple[str, int], _PlacedCounter]] = {}
    for i in range(depth):
        for t in names:
            if schedule.keeps(t, i):
                j, outside = buffer_stream(schedule, t, i)
                by_stream.setdefault(j, {})[(t, i)] = _PlacedCounter(schedule, tables, t, j, outside)
    inner = depth - 1
    calls_per_piece = [-(-tables.size[inner][k] // block[k]) for k in range(len(block))]
    op_calls = 0
    for j in range(depth):
        counters = by_stream.get(j, {})
        if not counters and j != inner:
            continue
        for pid in tile_chunks(schedule, tables, j, chunk):
            for c in counters.values():
                c.feed(pid)
            if j == inner:
                op_calls += chunk_calls(pid, calls_per_piece)
    down = [dict.fromkeys(names, 0) for _ in range(depth)]
    up = [dict.fromkeys(names, 0) for _ in range(depth)]
    counters = {key: c for stream in by_stream.values() for key, c in stream.items()}
    for (t, i), c in counters.items():
        route(c, schedule.keeper_above(t, i), i, t, down, up)
    held: dict[int, list[tuple[str, int, int]]] = {}
    for (t, i), c in counters.items():
        held.setdefault(i, []).append((t, c.largest, c.entries))
    occupancy = level_occupancy(schedule, held)
    return figures_from_counts(schedule, down, up, occupancy, op_calls, compute_instances(schedule))
