"""Counting one buffer's words along a tile stream: the count walks' common piece.

A :class:`BufferCounter` is fed chunks of piece ids in execution order and
counts the entries into new regions (loads, or stores of an output), their
words, the partial-sum reloads of outputs and the largest region; nothing
here is a formula, only region changes along the visited sequence
(mapsearch/sim/walk.py, placed.py and fused_count.py read it).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.pieces import PieceTables, check_capacity

_I64 = np.int64


class BufferCounter:
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

    def feed(self, pid: np.ndarray, start: np.ndarray | None = None) -> None:
        """Count the entries along the tiles ``pid``: a step whose region differs from the step before.

        ``start`` (the fused walk's) marks steps that enter whatever their region: the first tile of a
        sub-nest run, which starts empty (docs/fusion.md).
        """
        n = pid.shape[1]
        keys = self._keys(pid)
        change = np.zeros(n, bool) if start is None else start.copy()
        moved = change[1:]
        for key in keys:
            moved |= key[1:] != key[:-1]
        change[0] |= self.prev is None or any(int(k[0]) != p for k, p in zip(keys, self.prev))
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
            if self.out_dims:
                key = np.ravel_multi_index(tuple(at[k] for k in self.out_dims), self.radix)
            else:  # a rank-0 output has one region, key 0 (ravel_multi_index cannot take zero axes)
                key = np.zeros(len(idx), _I64)
            pos = np.arange(self.entries, self.entries + len(idx), dtype=_I64)
            np.minimum.at(self.first_entry, key, pos)
            seen_before = self.first_entry[key] < pos
            self.reload += int(words[seen_before].sum())
        self.entries += len(idx)


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


def figures_from_counts(schedule: Schedule, down: list, up: list, occupancy: list, op_calls: int,
                        compute_instances: int) -> Figures:
    """The figures of a walk without spatial splits: per link its tensors' words (``down[j][t]``, ``up[j][t]``).

    One instance works (the unused ones idle, docs/spatial.md), so it is the busiest.
    """
    wl, arch = schedule.workload, schedule.architecture
    links = []
    for j in range(1, arch.depth):
        wd, wu = sum(down[j].values()), sum(up[j].values())
        links.append(LinkFigures(arch.link_name(j), wd, wu, Fraction(arch.levels[j].link.time(wd, wu)),
                                 tuple(TensorTraffic(t, down[j][t], up[j][t]) for t in wl.tensor_names)))
    return Figures(links=tuple(links), op_calls=op_calls, compute_time=op_calls * Fraction(arch.compute.clocks_per_call),
                   macs=wl.macs, block_macs=arch.compute.block_macs, occupancy=tuple(occupancy),
                   compute_instances=compute_instances, busiest_calls=op_calls)


def level_occupancy(schedule: Schedule, held: dict[int, list[tuple[str, int, int]]]) -> list[tuple[str, int]]:
    """Per level, its name and peak words: homes, then ``held[level]``'s buffers ``(tensor, largest region, entries)``.

    A buffer entered more than once takes a second buffer of its largest region
    with double buffering (docs/cost-model.md). Raises ``CapacityError`` at the
    first buffer that does not fit.
    """
    wl, arch = schedule.workload, schedule.architecture
    occupancy = []
    for i, level in enumerate(arch.levels):
        allocations = [(f"{t} (home)", wl.tensor_words(t)) for t in wl.tensor_names if schedule.home(t) == i]
        for t, largest, entries in held.get(i, []):
            allocations.append((t, largest))
            if arch.double_buffering and entries > 1:
                allocations.append((f"{t} (second buffer)", largest))
        occupancy.append((level.name, check_capacity(level.name, level.capacity, allocations)))
    return occupancy
