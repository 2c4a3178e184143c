"""Counting replay of spatial schedules: the vectorised walk with instances (docs/spatial.md).

Like :mod:`mapsearch.sim.walk`, this walks the actual visit sequence and
counts region changes along it; it never uses a closed-form traffic formula.
The sequence is the lockstep nest: the innermost steps in execution order
(chunks of virtual piece ids, :func:`mapsearch.sim.spatial.virtual_tables`),
and at each step every used instance of every level has its actual tile or
is idle. Per (tensor, level), an ``(steps, instances)`` array of regions is
built:

- an active instance wants its tile's region; an idle one keeps what it
  holds (forward fill), except that an idle instance holding an output tile
  stores it when the instance above it that it stores into (the nearest
  keeper above, not a home) leaves its own tile at that step (``flush``,
  docs/spatial.md "Replay decisions");
- a change of the wanted region is an exit of the old one (an output's
  store) and an entry of the new one (an input's load; an output's reload of
  partial sums when that instance entered the region before, else zeros).

A buffer placed away from its default position (legal only above the
mesh, docs/spatial.md "Buffer placement above the mesh") wants, at every
step, the pieces of its anchor level and its parent (``_held_pieces``), as
in :mod:`mapsearch.sim.placed`; its flushes and its children follow from its
own region changes.

Then the words per link copy: the crossings at one step are grouped by
(region, group id) where the group id tells instances apart by their parts
of the splits that may not share the tensor (``Layout.group``); on link
``j`` each group crosses once per link copy (instance of level ``j-1``) it
spans: multicast of inputs, in-network reduction of outputs. Reloads of
partial sums go to the lowest instance of each group only. The end stores
every output tile still held, grouped the same way.

Instances that do the same work are walked once (``Layout(collapse=True)``:
one digit per class of every split) and their crossings weighed by the
instances they stand for (``_Tracker._weights``; docs/spatial.md, "Walking
instances that do the same work once"); ``one_by_one=True`` walks them all.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.errors import WalkTooLong
from mapsearch.sim.pieces import check_capacity, tile_chunks
from mapsearch.sim.spatial import Layout, VirtualTables, compute_instances, virtual_tables

CHUNK_CELLS = 1 << 21  # (step, instance) cells per chunk and level
# The most (lockstep step, walked instance) cells the walk takes on: about 200k cells a second on this
# project's 2-core machines, so 2^30 is an hour and a half; past it the walk refuses at once (WalkTooLong)
# instead of running for days (a 65536^3 matmul on a 32x32 array has 2^38 steps).
MAX_WALK_CELLS = 1 << 30
# The walk's rate on a 2-core machine, (step, walked instance) cells a second: the limits' messages say how long
# a refused walk would have taken.
WALK_CELLS_PER_SECOND = 200_000
_I64 = np.int64
_END = np.iinfo(np.int64).max // 2  # the step of the final stores


def _sum_by(copy: np.ndarray, values: np.ndarray, ncopies: int) -> np.ndarray:
    out = np.zeros(ncopies, _I64)
    np.add.at(out, copy, values)
    return out


def _distinct(cols: list[np.ndarray], copy: np.ndarray) -> np.ndarray:
    """Indices of the first of each distinct row ``(cols..., copy)`` (one crossing per group and copy)."""
    rows = np.stack(cols + [copy], axis=1)
    _, first = np.unique(rows, axis=0, return_index=True)
    return first


class _Tracker:
    """One (tensor, level): the wanted region per instance carried across chunks, and what was counted."""

    def __init__(self, schedule: Schedule, layout: Layout, tensor: str, level: int):
        wl = schedule.workload
        self.tensor = tensor
        self.level = level
        self.is_output = wl.is_output(tensor)
        dims = wl.dims
        axes = [tuple((dims.index(d), c) for d, c in ix.terms) for ix in wl.tensor(tensor).indices]
        # A rank-0 tensor gets one axis with no terms: its region is always [0, 0], one word.
        self.axes = axes or [()]
        self.n = layout.count[level]
        self.src = schedule.keeper_above(tensor, level)
        self.flushable = self.is_output and self.src != schedule.home(tensor)
        self.keeper = layout.ancestor(level, self.src)
        self.gid = layout.group(level, tensor)
        self.copies = {j: layout.link_copy(level, j) for j in range(self.src + 1, level + 1)}
        self.ncopies = {j: layout.count[j - 1] for j in self.copies}
        ncol = 2 * len(self.axes)
        self.carry = np.full((ncol, self.n), -1, _I64)  # -1: holds nothing
        self.largest = np.zeros(self.n, _I64)
        # Per link copy, the words of the copy a walked instance is (its own digits): for the link time.
        self.down = {j: np.zeros(self.ncopies[j], _I64) for j in self.copies}
        self.up = {j: np.zeros(self.ncopies[j], _I64) for j in self.copies}
        # All copies together, each walked crossing weighed by the instances it stands for (collapsed layout).
        self.down_total = dict.fromkeys(self.copies, 0)
        self.up_total = dict.fromkeys(self.copies, 0)
        self._weights(layout)
        self.seen = np.zeros(0, _I64)  # outputs: keys (instance, region) entered before
        self.radix = None
        if self.is_output:
            self.radix = (self.n,) + tuple(int(x) for x in (wl.tensor_shape(tensor) or (1,)))
        self.change: np.ndarray | None = None  # this chunk's change mask, for the levels below

    def _weights(self, layout: Layout) -> None:
        """Weights of a walked crossing on link ``j`` (all 1 when every instance is walked).

        A walked instance stands for the instances whose digits are in its
        classes (``Layout.mult``). Below copy ``j`` (splits at levels >= j), a
        group is told apart by its digits of the splits that may not share the
        tensor: ``inside[j]`` groups of the copy cross alike. Above it, every
        digit tells copies apart: ``copies_alike[j]`` copies cross alike. A
        reload goes to the lowest instance of its group only, so only the
        copies whose shareable digits are the lowest of their class (the
        walked ones) take it: ``reload_alike[j]``.
        """
        cols = layout.split_columns(self.level)
        ns = [c for c in cols if not layout.shareable(layout.splits[c], self.tensor)]
        lvl = {c: layout.splits[c].level for c in cols}
        self.inside = {j: layout.weight(self.level, [c for c in ns if lvl[c] >= j]) for j in self.copies}
        self.copies_alike = {j: layout.weight(self.level, [c for c in cols if lvl[c] < j]) for j in self.copies}
        self.reload_alike = {j: layout.weight(self.level, [c for c in ns if lvl[c] < j]) for j in self.copies}

    def _cross(self, j: int, x: np.ndarray, words: np.ndarray, alike: dict, per_copy: dict, totals: dict) -> None:
        """Add the crossings of walked instances ``x`` (one row each) on link ``j``."""
        w = words * self.inside[j][x]
        per_copy[j] += _sum_by(self.copies[j][x], w, self.ncopies[j])
        totals[j] += int((w * alike[j][x]).sum())

    def regions(self, start: list[np.ndarray], size: list[np.ndarray]) -> np.ndarray:
        """``(2*axes, steps, instances)``: lo, hi per axis of the tiles (valid where active)."""
        cols = []
        for terms in self.axes:
            zero = np.zeros_like(start[0])  # the shape of a region column, also for an axis with no terms
            lo = sum((c * start[k] for k, c in terms), zero)
            hi = sum((c * (start[k] + size[k] - 1) for k, c in terms), zero)
            cols += [lo, hi]
        return np.stack(cols)

    def feed(self, base: int, active: np.ndarray, region: np.ndarray, keeper_change: np.ndarray | None) -> None:
        n, nx = active.shape
        setm = active.copy()
        if self.flushable and keeper_change is not None:
            setm |= keeper_change[:, self.keeper]
        vals = np.where(active[None], region, -1)
        ext_vals = np.concatenate([self.carry[:, None, :], vals], axis=1)  # (ncol, n+1, nx)
        ext_set = np.concatenate([np.ones((1, nx), bool), setm], axis=0)
        idx = np.where(ext_set, np.arange(n + 1, dtype=_I64)[:, None], 0)
        np.maximum.accumulate(idx, axis=0, out=idx)
        filled = np.take_along_axis(ext_vals, np.broadcast_to(idx[None], ext_vals.shape), axis=1)
        prev, cur = filled[:, :-1], filled[:, 1:]
        change = (prev != cur).any(axis=0)
        self.change = change
        self.carry = filled[:, -1].copy()
        held_cur = cur[0] >= 0
        held_prev = prev[0] >= 0
        entry = change & held_cur
        exit_ = change & held_prev
        steps = base + np.arange(n, dtype=_I64)[:, None]
        # Entries.
        r, x = np.nonzero(entry)
        if len(r):
            reg = cur[:, r, x]
            words = self._words(reg)
            np.maximum.at(self.largest, x, words)
            st = steps[r, 0]
            if not self.is_output:
                for j in self.copies:
                    f = _distinct([st, self.gid[x]] + list(reg), self.copies[j][x])
                    self._cross(j, x[f], words[f], self.copies_alike, self.down, self.down_total)
            else:
                self._reloads(st, x, reg, words)
        # Exits (outputs: stores).
        if self.is_output:
            r, x = np.nonzero(exit_)
            if len(r):
                reg = prev[:, r, x]
                self._stores(steps[r, 0], x, reg)

    def _words(self, reg: np.ndarray) -> np.ndarray:
        words = np.ones(reg.shape[1], _I64)
        for a in range(len(self.axes)):
            words *= reg[2 * a + 1] - reg[2 * a] + 1
        return words

    def _stores(self, st: np.ndarray, x: np.ndarray, reg: np.ndarray) -> None:
        words = self._words(reg)
        for j in self.copies:
            f = _distinct([st, self.gid[x]] + list(reg), self.copies[j][x])
            self._cross(j, x[f], words[f], self.copies_alike, self.up, self.up_total)

    def _reloads(self, st: np.ndarray, x: np.ndarray, reg: np.ndarray, words: np.ndarray) -> None:
        """Entries into regions the instance entered before reload partial sums (lowest instance per group)."""
        key = np.ravel_multi_index((x,) + tuple(reg[2 * a] for a in range(len(self.axes))), self.radix)
        order = np.lexsort((st, key))  # by key, then step
        ks = key[order]
        first_in_chunk = np.ones(len(ks), bool)
        first_in_chunk[1:] = ks[1:] != ks[:-1]
        before = np.isin(ks, self.seen)
        reload = np.zeros(len(ks), bool)
        reload[order] = ~first_in_chunk | before
        self.seen = np.union1d(self.seen, ks)
        r = np.flatnonzero(reload)
        if len(r) == 0:
            return
        st, x, reg, words = st[r], x[r], reg[:, r], words[r]
        by_x = np.argsort(x, kind="stable")  # the lowest instance of a group comes first
        st, x, reg, words = st[by_x], x[by_x], reg[:, by_x], words[by_x]
        rows = np.stack([st, self.gid[x]] + list(reg), axis=1)
        _, first = np.unique(rows, axis=0, return_index=True)
        for j in self.copies:
            self._cross(j, x[first], words[first], self.reload_alike, self.down, self.down_total)

    def finish(self) -> None:
        """The end: output tiles still held go up, grouped like the stores of one step."""
        if not self.is_output:
            return
        x = np.flatnonzero(self.carry[0] >= 0)
        if len(x):
            self._stores(np.full(len(x), _END, _I64), x, self.carry[:, x])


def _held_pieces(schedule: Schedule, tensor: str, level: int, starts, sizes):
    """``(start, size)`` per dimension of the pieces a placed buffer holds, or None at the default position.

    Legality keeps placed buffers above the outermost meshed level with
    every loop outside them above it too (docs/spatial.md, "Buffer placement
    above the mesh"): their anchor level ``j`` and its parent have one
    instance, so the pieces are the lockstep's, one column, as in
    :mod:`mapsearch.sim.placed` (level ``j``'s piece for the dimensions of
    the loops outside the buffer, the level-``(j-1)`` piece for the others).
    """
    j, outside = schedule.buffer_anchor(tensor, level)
    if j == level and outside is None:
        return None
    dims = schedule.workload.dims
    pick = [j if outside is None or d in outside else j - 1 for d in dims]
    return [starts[pick[k]][k] for k in range(len(dims))], [sizes[pick[k]][k] for k in range(len(dims))]


def _inner_steps(schedule: Schedule, vt: VirtualTables, chunk: int):
    yield from tile_chunks(schedule, vt, len(schedule.levels) - 1, chunk)  # type: ignore[arg-type]


def _occupancy(schedule: Schedule, lay, trackers) -> list[tuple[str, int]]:
    """Peak occupancy per level (over instances) from the largest tiles seen so far; raises on overflow."""
    wl, arch = schedule.workload, schedule.architecture
    out = []
    for i in range(arch.depth):
        level = arch.levels[i]
        mine = [(t, tr) for (t, li), tr in trackers.items() if li == i]
        homes = [(f"{t} (home)", wl.tensor_words(t)) for t in wl.tensor_names if schedule.home(t) == i]
        peak = 0
        for x in range(lay.count[i]):
            allocations = list(homes)
            for t, tr in mine:
                words = int(tr.largest[x])
                if words:
                    allocations.append((t, words))
                    if arch.double_buffering and words < wl.tensor_words(t):
                        allocations.append((f"{t} (second buffer)", words))
            peak = max(peak, check_capacity(level.name, level.capacity, allocations))
        out.append((level.name, peak))
    return out


def _check_size(vt: VirtualTables, lay: Layout, inner: int, nd: int, max_cells: int | None) -> None:
    """Raise WalkTooLong before walking more than ``max_cells`` (default :data:`MAX_WALK_CELLS`) (step,
    walked instance) cells."""
    limit = MAX_WALK_CELLS if max_cells is None else max_cells
    steps = math.prod(vt.count(inner, k) for k in range(nd))
    walked = max(lay.count)
    if steps * walked > limit:
        minutes = steps * walked / WALK_CELLS_PER_SECOND / 60
        raise WalkTooLong(
            f"the count replay would walk {steps:,} lockstep steps of {walked:,} instance(s) (about {minutes:,.0f} "
            f"minutes at the {WALK_CELLS_PER_SECOND:,} a second of a 2-core machine), more than its limit of "
            f"{limit:,}: a schedule with spatial splits is walked step by step (docs/cost-model.md), so this one is "
            "neither checked nor refuted")


def count_spatial(schedule: Schedule, one_by_one: bool = False, max_cells: int | None = None) -> Figures:
    """Figures of a spatial schedule counted by walking its lockstep visit sequence with instances.

    By default the instances that do the same work are walked once and
    counted with their multiplicity (``Layout(collapse=True)``); the walk
    itself is unchanged. ``one_by_one=True`` walks every instance (the check
    of the collapsed walk, and its reference in the tests). ``max_cells``:
    the most (step, walked instance) cells it walks (:func:`_check_size`).
    """

    wl = schedule.workload
    arch = schedule.architecture
    depth = arch.depth
    names = wl.tensor_names
    lay = Layout(schedule, collapse=not one_by_one)
    vt = virtual_tables(schedule, lay)
    nd = len(wl.dims)
    inner = depth - 1
    _check_size(vt, lay, inner, nd, max_cells)
    block = np.array([arch.compute.block_extent(d) for d in wl.dims], _I64)
    paths = [[lay.path(i, d) for d in wl.dims] for i in range(depth)]
    trackers = {(t, i): _Tracker(schedule, lay, t, i) for i in range(1, depth) for t in names if schedule.keeps(t, i)}
    chunk = max(64, CHUNK_CELLS // max(lay.count))
    everyone = lay.weight(inner, range(len(lay.splits)))  # the L0 instances each walked one stands for
    op_calls = 0
    busiest = 0
    base = 0
    checked = False
    for pid in _inner_steps(schedule, vt, chunk):
        n = pid.shape[1]
        pids = [None] * depth
        pids[inner] = pid
        for i in range(inner, 0, -1):
            pids[i - 1] = np.stack([vt.parent[i][k][pids[i][k]] for k in range(nd)])
        starts = [[vt.start[i][k][pids[i][k]][:, paths[i][k]] for k in range(nd)] for i in range(depth)]
        sizes = [[vt.size[i][k][pids[i][k]][:, paths[i][k]] for k in range(nd)] for i in range(depth)]
        for i in range(1, depth):
            start, size = starts[i], sizes[i]
            active = np.ones(size[0].shape, bool)
            for z in size:
                active &= z > 0
            for t in names:
                tr = trackers.get((t, i))
                if tr is None:
                    continue
                keeper = trackers.get((t, tr.src))
                held = _held_pieces(schedule, t, i, starts, sizes)
                tr.feed(base, active, tr.regions(*held) if held else tr.regions(start, size),
                        keeper.change if keeper is not None else None)
            if i == inner:
                calls = np.ones(size[0].shape, _I64)
                for k in range(nd):
                    calls *= -(-size[k] // block[k])
                calls = np.where(active, calls, 0)
                op_calls += int((calls * everyone[None, :]).sum())
                busiest += int(calls.max(axis=1).sum())
        base += n
        if not checked:
            # The first step holds every buffer's largest tile: an overflow shows now, not after the walk.
            _occupancy(schedule, lay, trackers)
            checked = True
    for tr in trackers.values():
        tr.finish()
    occupancy = _occupancy(schedule, lay, trackers)
    links = []
    for j in range(1, depth):
        link = arch.levels[j].link
        wd = np.zeros(lay.count[j - 1], _I64)  # per walked copy, for the link time
        wu = np.zeros(lay.count[j - 1], _I64)
        total_down = dict.fromkeys(names, 0)
        total_up = dict.fromkeys(names, 0)
        for (t, _), tr in trackers.items():
            if j in tr.copies:
                wd += tr.down[j]
                wu += tr.up[j]
                total_down[t] += tr.down_total[j]
                total_up[t] += tr.up_total[j]
        time = max(Fraction(link.time(int(a), int(b))) for a, b in zip(wd, wu))
        links.append(
            LinkFigures(
                name=arch.link_name(j),
                words_down=sum(total_down.values()),
                words_up=sum(total_up.values()),
                time=time,
                tensors=tuple(TensorTraffic(t, total_down[t], total_up[t]) for t in names),
            )
        )
    return Figures(
        links=tuple(links),
        op_calls=op_calls,
        compute_time=busiest * Fraction(arch.compute.clocks_per_call),
        macs=wl.macs,
        block_macs=arch.compute.block_macs,
        occupancy=tuple(occupancy),
        compute_instances=compute_instances(schedule),
        busiest_calls=busiest,
    )
