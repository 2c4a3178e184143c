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

A buffer placed away from its default position wants, at every step, the
pieces of its anchor level and its parent, cut to its instance's part where
the split is outside it (``_held_pieces``; docs/spatial.md "Buffer placement
above the mesh" and "... at and below the mesh"), as in
:mod:`mapsearch.sim.placed`; its flushes and its children follow from its own
region changes.

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
from mapsearch.sim.spatial_fold import foldable, walk_folded
from mapsearch.sim.spatial_tracker import Tracker
from mapsearch.sim.stop import poll

CHUNK_CELLS = 1 << 21  # (step, instance) cells per chunk and level
# The most cells one step of the walk (SpatialWalk._feed) takes on: a buffer's share of it is well under a second
# (about 1.4 us a cell per buffer on a loaded 2-core machine), so a walk stopped from outside (sim/stop.py) ends
# within about a second. Smaller steps than CHUNK_CELLS also walk faster (a third less time: cache).
FEED_CELLS = 1 << 19
# The most (lockstep step, walked instance) cells the walk takes on: about 200k cells a second on this
# project's 2-core machines, so 2^30 is an hour and a half; past it the walk refuses at once (WalkTooLong)
# instead of running for days (a 65536^3 matmul on a 32x32 array has 2^38 steps).
MAX_WALK_CELLS = 1 << 30
# The walk's rate on a 2-core machine, (step, walked instance) cells a second: the limits' messages say how long
# a refused walk would have taken.
WALK_CELLS_PER_SECOND = 200_000
_I64 = np.int64


def _held_plan(schedule: Schedule, lay: Layout, tensor: str, level: int):
    """How a placed buffer reads its pieces, once per walk: per dimension ``(pick, its instances' ancestors
    there, (offset per instance, part) or None)``; None at the default position.

    As in :mod:`mapsearch.sim.placed`, along each dimension the piece of the
    innermost loop over it outside the buffer
    (:meth:`~mapsearch.schedule.schedule.Schedule.buffer_pieces`), read for
    each instance from its ancestor at that loop's level, and cut to the
    instance's part where the split below that level is outside the buffer
    too (docs/spatial.md, "Buffer placement at and below the mesh").
    """
    if schedule.position(tensor, level) == level * len(schedule.workload.dims):
        return None
    plan = []
    for d, (pick, cut) in zip(schedule.workload.dims, schedule.buffer_pieces(tensor, level)):
        part = None
        if cut:
            c, size = lay.split_of[(pick + 1, d)]
            part = (lay.digits[level][:, c][None, :] * size, size)
        plan.append((pick, lay.ancestor(level, pick), part))
    return plan


def _held_pieces(plan, starts, sizes):
    """``(start, size)`` per dimension of the pieces a placed buffer holds this chunk (:func:`_held_plan`)."""
    out_start, out_size = [], []
    for k, (pick, anc, part) in enumerate(plan):
        lo, size = starts[pick][k][:, anc], sizes[pick][k][:, anc]
        if part is not None:
            off, extent = part
            size = np.clip(size - off, 0, extent)
            lo = np.where(size > 0, lo + off, 0)
        out_start.append(lo)
        out_size.append(size)
    return out_start, out_size


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


def _too_long(walk: "SpatialWalk", what: str) -> str:
    """The message of a walk past its ``max_cells``: its size unfolded, and how long that would take."""
    steps, walked = walk.base_steps(), max(walk.lay.count)
    minutes = walk.total_cells / WALK_CELLS_PER_SECOND / 60
    return (f"the count replay would walk {steps:,} lockstep steps of {walked:,} instance(s) unfolded (about "
            f"{minutes:,.0f} minutes at the {WALK_CELLS_PER_SECOND:,} a second of a 2-core machine), {what} its "
            f"limit of {walk.max_cells:,}: a schedule with spatial splits is walked step by step "
            "(docs/cost-model.md), so this one is neither checked nor refuted")


class SpatialWalk:
    """The walk's state: one :class:`Tracker` per kept (tensor, level) below the top, the op calls, the step
    count; :meth:`feed` walks a chunk of lockstep steps, :meth:`figures` ends the walk.

    ``max_cells``: the most (step, walked instance) cells :meth:`feed` walks before it raises WalkTooLong
    (default :data:`MAX_WALK_CELLS`); ``total_cells``: the unfolded walk's, for that message.
    """

    def __init__(self, schedule: Schedule, one_by_one: bool, max_cells: int | None):
        wl, arch = schedule.workload, schedule.architecture
        self.schedule = schedule
        self.depth = arch.depth
        self.inner = self.depth - 1
        self.nd = len(wl.dims)
        self.lay = Layout(schedule, collapse=not one_by_one)
        self.vt = virtual_tables(schedule, self.lay)
        self.block = np.array([arch.compute.block_extent(d) for d in wl.dims], _I64)
        self.paths = [[self.lay.path(i, d) for d in wl.dims] for i in range(self.depth)]
        self.trackers = {(t, i): Tracker(schedule, self.lay, t, i)
                         for i in range(1, self.depth) for t in wl.tensor_names if schedule.keeps(t, i)}
        self.held = {key: _held_plan(schedule, self.lay, *key) for key in self.trackers}
        self.chunk = max(64, CHUNK_CELLS // max(self.lay.count))
        self.feed_steps = max(64, min(self.chunk, FEED_CELLS // max(self.lay.count)))  # steps per _feed
        self.everyone = self.lay.weight(self.inner, range(len(self.lay.splits)))  # the L0 instances each walked one stands for
        self.op_calls = 0
        self.busiest = 0
        self.base = 0  # lockstep steps so far (walked or folded)
        self.cells = 0  # (step, walked instance) cells walked
        self.max_cells = MAX_WALK_CELLS if max_cells is None else max_cells
        self.total_cells = math.prod(self.vt.count(self.inner, k) for k in range(self.nd)) * max(self.lay.count)
        self.checked = False

    def base_steps(self) -> int:
        """The lockstep steps of the whole walk."""
        return self.total_cells // max(self.lay.count)

    def feed(self, pid: np.ndarray) -> None:
        """Walk the lockstep steps ``pid`` (innermost virtual piece ids, ``(dims, steps)``), in chunks."""
        for a in range(0, pid.shape[1], self.feed_steps):
            self._feed(pid[:, a:a + self.feed_steps])

    def _feed(self, pid: np.ndarray) -> None:
        schedule, vt, nd, depth, inner = self.schedule, self.vt, self.nd, self.depth, self.inner
        n = pid.shape[1]
        self.count_cells(n * max(self.lay.count))
        pids = [None] * depth
        pids[inner] = pid
        for i in range(inner, 0, -1):
            pids[i - 1] = np.stack([vt.parent[i][k][pids[i][k]] for k in range(nd)])
        starts = [[vt.start[i][k][pids[i][k]][:, self.paths[i][k]] for k in range(nd)] for i in range(depth)]
        sizes = [[vt.size[i][k][pids[i][k]][:, self.paths[i][k]] for k in range(nd)] for i in range(depth)]
        for i in range(1, depth):
            start, size = starts[i], sizes[i]
            active = np.ones(size[0].shape, bool)
            for z in size:
                active &= z > 0
            for t in schedule.workload.tensor_names:
                tr = self.trackers.get((t, i))
                if tr is None:
                    continue
                poll()  # each buffer of a step of many instances takes a good part of a second
                keeper = self.trackers.get((t, tr.src))
                plan = self.held[(t, i)]
                if plan is None:
                    tr.feed(self.base, active, tr.regions(start, size), keeper.change if keeper is not None else None)
                else:  # a placed buffer wants its region wherever it has one, active at this level or not
                    held = _held_pieces(plan, starts, sizes)
                    mine = np.ones(held[1][0].shape, bool)
                    for z in held[1]:
                        mine &= z > 0
                    tr.feed(self.base, mine, tr.regions(*held), keeper.change if keeper is not None else None)
            if i == inner:
                calls = np.ones(size[0].shape, _I64)
                for k in range(nd):
                    calls *= -(-size[k] // self.block[k])
                calls = np.where(active, calls, 0)
                self.op_calls += int((calls * self.everyone[None, :]).sum())
                self.busiest += int(calls.max(axis=1).sum())
        self.base += n
        if not self.checked:
            # The first step holds every buffer's largest tile: an overflow shows now, not after the walk.
            _occupancy(schedule, self.lay, self.trackers)
            self.checked = True

    def count_cells(self, cells: int) -> None:
        """Count ``cells`` of work (walked steps x instances, or keys a fold adds); past the limit, stop.

        Also where a walk stopped from outside ends (:func:`mapsearch.sim.stop.poll`): before each chunk, and
        at each step of a fold.
        """
        poll()
        self.cells += cells
        if self.cells > self.max_cells:
            raise WalkTooLong(_too_long(self, "and folding repeated loop bodies left more than"))

    def figures(self) -> Figures:
        """End the walk: the outputs still held go up; the figures."""
        schedule, lay = self.schedule, self.lay
        wl, arch = schedule.workload, schedule.architecture
        names = wl.tensor_names
        for tr in self.trackers.values():
            tr.finish()
        occupancy = _occupancy(schedule, lay, self.trackers)
        links = []
        for j in range(1, self.depth):
            link = arch.levels[j].link
            wd = np.zeros(lay.count[j - 1], _I64)  # per walked copy, for the link time
            wu = np.zeros(lay.count[j - 1], _I64)
            total_down = dict.fromkeys(names, 0)
            total_up = dict.fromkeys(names, 0)
            for (t, _), tr in self.trackers.items():
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
            op_calls=self.op_calls,
            compute_time=self.busiest * Fraction(arch.compute.clocks_per_call),
            macs=wl.macs,
            block_macs=arch.compute.block_macs,
            occupancy=tuple(occupancy),
            compute_instances=compute_instances(schedule),
            busiest_calls=self.busiest,
        )


def count_spatial(schedule: Schedule, one_by_one: bool = False, max_cells: int | None = None,
                  fold: bool = True) -> Figures:
    """Figures of a spatial schedule counted by walking its lockstep visit sequence with instances.

    By default the instances that do the same work are walked once and
    counted with their multiplicity (``Layout(collapse=True)``); the walk
    itself is unchanged. ``one_by_one=True`` walks every instance (the check
    of the collapsed walk, and its reference in the tests). ``fold=True``
    walks a run of loop bodies that repeat the walk's state, moved along the
    loop, once and counts the rest (:mod:`mapsearch.sim.spatial_fold`);
    ``fold=False`` walks every step (the fold's reference in the tests).
    ``max_cells``: the most (step, walked instance) cells it walks: unfolded,
    it refuses at once a walk longer than that; folded, it stops with
    WalkTooLong when it has walked that many.
    """
    walk = SpatialWalk(schedule, one_by_one, max_cells)
    if fold and foldable(walk):
        walk_folded(walk)
    else:
        if walk.total_cells > walk.max_cells:
            raise WalkTooLong(_too_long(walk, "more than"))
        for pid in _inner_steps(schedule, walk.vt, walk.chunk):
            walk.feed(pid)
    return walk.figures()
