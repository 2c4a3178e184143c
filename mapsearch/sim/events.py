"""The event-by-event replay: walk a schedule's loop nest and drive the simulator.

This is the judge of the solver, so it counts nothing by formula: it builds
one ``Cache`` per architecture level chained by ``Bandwidth`` links, walks
every step of the loop nest and issues the loads, stores and op runs the
contract's replay semantics call for; the figures are what the links, caches
and op counted.

The walk (contract, "Schedule"): the top tile is the whole iteration space;
each level below it visits its tiles inside the parent tile in its ``order``
(outer -> inner), splitting ``for x0 in range(0, s, T): piece = min(T, s - x0)``.
Level 1's loops are outermost, the innermost level's loops innermost; one
step is one innermost tile.

At each step, for every (tensor, level) that keeps the tensor below its home,
the buffer must hold the tensor's region for that level's tile (an interval
per axis; an affine axis ``sum c*d`` covers ``[sum c*lo, sum c*hi]``). When
the region differs from the one held:

1. evict, innermost level first: an output's old tile is stored up into the
   nearest level above that holds the output (words on every link crossed);
   an input's old tile is dropped (no traffic);
2. fetch, outermost level first: an input's new tile is loaded from the
   nearest level above that holds it; an output's new tile is loaded (partial
   sums) when that region was an output tile at this level before, and
   created as zeros with no traffic otherwise;
3. the op runs on the innermost tiles: ``prod ceil(t_d / b_d)`` calls.

Evicting before fetching gives each kept tensor one buffer per level (with
double buffering, a second one is reserved at its first fetch, see
docs/cost-model.md). A region equal to the one held moves nothing, even when
a loop that indexes the tensor advanced (convolution inputs). At the end the
output tiles still below the home are stored up, innermost first.

With spatial splits (docs/spatial.md) every level has one cache per
instance, each parent instance one link shared by its children, each L0
instance its own op; the nest is the lockstep nest of
:func:`mapsearch.sim.spatial.lockstep_nest`. Inputs are multicast per
group (``Cache.multicast``), outputs reduced per group on the way up
(``Cache.reduce_into``), partial sums reloaded into a group's lowest
instance; see "Replay decisions" in docs/spatial.md.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Iterator, Sequence

import numpy as np

from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.bandwidth import Bandwidth
from mapsearch.sim.cache import Cache
from mapsearch.sim.compute import TileOp, calls_for_tile, einsum_kernel, einsum_reference
from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.sim.counters import Chain, ReplayResult, chain, link_figures
from mapsearch.sim.placed import buffer_stream
from mapsearch.sim.spatial import Layout, compute_instances, lockstep_nest
from mapsearch.sim.tensor import Tensor
from mapsearch.spec.architecture import SHARED
from mapsearch.spec.workload import TensorAccess

Box = tuple[tuple[int, int], ...]  # (start, extent) per workload dimension, in workload.dims order
Region = tuple[tuple[int, int], ...]  # (first, last) index per tensor axis, both inclusive


@dataclass(frozen=True)
class Event:
    """One thing the replay did; ``level`` is the architecture index (0 = top).

    ``kind``: ``"load"`` (down from ``source``), ``"store"`` (up into
    ``source``), ``"zero"`` (an output tile created with no traffic),
    ``"drop"`` (an input tile left, no traffic), ``"run"`` (the op, ``words`` = calls).
    """

    kind: str
    tensor: str
    level: int
    region: Region
    words: int
    source: int | None = None
    instance: int = 0  # which instance of the level (docs/spatial.md); 0 without a mesh


# ---------------------------------------------------------------- the walk
def tiles_inside(parent: Box, tile: Sequence[int], order: Sequence[int]) -> Iterator[Box]:
    """The tiles of extents ``tile`` inside ``parent``, the ``order`` axes outer -> inner.

    Each axis splits as ``for x0 in range(0, s, T): piece = min(T, s - x0)``.
    """
    pieces = [
        [(start + x0, min(t, size - x0)) for x0 in range(0, size, t)]
        for (start, size), t in zip(parent, tile, strict=True)
    ]
    box = list(parent)
    for combo in itertools.product(*(pieces[a] for a in order)):
        for a, piece in zip(order, combo):
            box[a] = piece
        yield tuple(box)


def loop_nest(schedule: Schedule) -> Iterator[tuple[Box, ...]]:
    """Every step of the nest: the tile of each level (top first) around one innermost tile."""
    dims = schedule.workload.dims
    extent = schedule.workload.extent
    top: Box = tuple((0, extent[d]) for d in dims)
    tiles = [tuple(lm.tile_extent(d) for d in dims) for lm in schedule.levels]
    orders = [tuple(dims.index(d) for d in lm.order) for lm in schedule.levels]

    def below(level: int, boxes: tuple[Box, ...]) -> Iterator[tuple[Box, ...]]:
        if level == len(schedule.levels):
            yield boxes
            return
        for box in tiles_inside(boxes[-1], tiles[level], orders[level]):
            yield from below(level + 1, boxes + (box,))

    yield from below(1, (top,))


def region_of(access: TensorAccess, dims: Sequence[str], box: Box) -> Region:
    """The interval per axis that a box touches: ``[sum c*start, sum c*(start+extent-1)]``."""
    where = dict(zip(dims, box))
    return tuple(
        (
            sum(c * where[d][0] for d, c in ix.terms),
            sum(c * (where[d][0] + where[d][1] - 1) for d, c in ix.terms),
        )
        for ix in access.indices
    )


def region_text(tensor: str, region: Region) -> str:
    """``A[0:2,2:4]`` (half-open, as Python slices): the key a tile is held under."""
    return f"{tensor}[{','.join(f'{a}:{b + 1}' for a, b in region)}]"


def _shape(region: Region) -> list[int]:
    return [b - a + 1 for a, b in region]


# ---------------------------------------------------------------- building
def build_chain(schedule: Schedule, kernel: Callable | None = None) -> Chain:
    """One cache per level (bottom-up, as the seed builds them), links with the level's costs."""
    arch = schedule.architecture
    op = TileOp(arch.compute.clocks_per_call, kernel)
    inner = arch.levels[-1]
    cache = Cache(inner.capacity, op, name=inner.name)
    for child in range(arch.depth - 1, 0, -1):
        link = arch.levels[child].link
        if link is None:
            raise ValueError(f"level {arch.levels[child].name} has no link to its parent")
        bw = Bandwidth(
            cache,
            link.input_clocks_per_word,
            None if link.lines == SHARED else link.output_clocks_per_word,
        )
        parent = arch.levels[child - 1]
        cache = Cache(parent.capacity, bw, name=parent.name)
    return chain(cache)


@dataclass
class _Held:
    region: Region
    tensor: Tensor


class _EventReplay:
    """The state of one replay: the caches of every instance, the homes, the tiles held, the outputs seen.

    Instances (docs/spatial.md): level ``i`` has one cache per instance of
    every meshed level at or above it (``Layout``); a parent instance's link
    is shared by its child instances (one ``Bandwidth`` per parent instance),
    and every L0 instance has its own op. A schedule without spatial splits
    has one instance per level and the classic chain.
    """

    def __init__(self, schedule: Schedule, with_data: bool, seed: int, on_event: Callable[[Event], None] | None):
        self.s = schedule
        self.w = schedule.workload
        self.with_data = with_data
        self.on_event = on_event
        self.layout = Layout(schedule)
        self._build(einsum_kernel(self.w) if with_data else None)
        self.out = self.w.einsum.output.name
        self.names = self.w.tensor_names  # inputs, then the output
        self.access = {a.name: a for a in self.w.tensors}
        depth = schedule.architecture.depth
        # Kept (tensor, level) pairs, outermost level first, tensors in workload order.
        self.kept = [(t, i) for i in range(1, depth) for t in self.names if schedule.keeps(t, i)]
        self.block = dict(schedule.architecture.compute.block)
        self.held: dict[tuple[str, int, int], _Held] = {}
        self.seen_out: set[tuple[int, int, Region]] = set()
        self.reserved: set[tuple[str, int, int]] = set()
        self.busiest = 0
        self.inputs: dict[str, np.ndarray] = {}
        self.homes: dict[str, Tensor] = {}
        rng = np.random.default_rng(seed)
        for t in self.names:
            shape = list(self.w.tensor_shape(t))
            home_level = schedule.home(t)
            if self.layout.count[home_level] != 1:
                raise ValueError(f"{t}'s home {schedule.architecture.levels[home_level].name} has several instances")
            home = self.caches[home_level][0]
            tensor = home.create(shape, name=t, key=f"{t} (home)", data=with_data)
            if with_data and not self.w.is_output(t):
                values = rng.standard_normal(shape)
                tensor.to_numpy()[...] = values
                self.inputs[t] = values
            self.homes[t] = tensor
        self.keeper = {
            (t, i): self.s.keeper_above(t, i) for t, i in self.kept
        }
        self.anc = {(i, j): self.layout.ancestor(i, j) for i in range(depth) for j in range(i + 1)}
        self.groups = {(t, i): self.layout.group(i, t) for t, i in self.kept}
        self.placement = {(t, i): buffer_stream(schedule, t, i) for t, i in self.kept}
        self.pieces = {(t, i): schedule.buffer_pieces(t, i) for t, i in self.kept}

    def _build(self, kernel: Callable | None) -> None:
        """Caches bottom-up, one per instance; one link per parent instance, shared by its children."""
        arch = self.s.architecture
        lay = self.layout
        depth = arch.depth
        caches: list[list[Cache]] = [[] for _ in range(depth)]
        links: list[list[Bandwidth]] = [[] for _ in range(depth)]  # links[j]: copies of the link into j
        inner = arch.levels[-1]
        self.ops = [TileOp(arch.compute.clocks_per_call, kernel) for _ in range(lay.count[-1])]
        caches[-1] = [Cache(inner.capacity, op, name=inner.name) for op in self.ops]
        for child in range(depth - 1, 0, -1):
            link = arch.levels[child].link
            if link is None:
                raise ValueError(f"level {arch.levels[child].name} has no link to its parent")
            parent = arch.levels[child - 1]
            owner = lay.ancestor(child, child - 1)
            for p in range(lay.count[child - 1]):
                kids = [caches[child][y] for y in np.flatnonzero(owner == p)]
                bw = Bandwidth(kids, link.input_clocks_per_word, None if link.lines == SHARED else link.output_clocks_per_word)
                links[child].append(bw)
                caches[child - 1].append(Cache(parent.capacity, bw, name=parent.name))
        self.caches = caches
        self.links = links

    def _emit(self, kind: str, tensor: str, level: int, region: Region, words: int, source: int | None = None,
              instance: int = 0) -> None:
        if self.on_event is not None:
            self.on_event(Event(kind, tensor, level, region, words, source, instance))

    def _view_at(self, tensor: str, level: int, x: int, region: Region) -> Tensor:
        """The part of what instance ``x`` of ``level`` holds of ``tensor`` (its home or its tile) that covers ``region``."""
        if level == self.s.home(tensor):
            holder, origin = self.homes[tensor], tuple(0 for _ in region)
        else:
            held = self.held[(tensor, level, x)]
            if held.region == region:
                return held.tensor
            holder, origin = held.tensor, tuple(a for a, _ in held.region)
        return holder[tuple(slice(a - o, b - o + 1) for (a, b), o in zip(region, origin))]

    def _grouped(self, tensor: str, level: int, members: list[int], regions: dict[int, Region]):
        """Members with one group id and one region, in order of their first (lowest) instance."""
        gid = self.groups[(tensor, level)]
        out: dict[tuple[int, Region], list[int]] = {}
        for x in members:
            out.setdefault((int(gid[x]), regions[x]), []).append(x)
        return list(out.items())

    def _evict_level(self, tensor: str, level: int, members: list[int]) -> None:
        """Leave the held tiles of ``members``: outputs go up (reduced per group), inputs are dropped."""
        if not self.w.is_output(tensor):
            for x in members:
                held = self.held.pop((tensor, level, x))
                self.caches[level][x].free(held.tensor)
                self._emit("drop", tensor, level, held.region, 0, instance=x)
            return
        up = self.keeper[(tensor, level)]
        regions = {x: self.held[(tensor, level, x)].region for x in members}
        for (_, region), xs in self._grouped(tensor, level, members, regions):
            by_keeper: dict[int, list[int]] = {}
            for x in xs:
                by_keeper.setdefault(int(self.anc[(level, up)][x]), []).append(x)
            for k, ys in by_keeper.items():
                sources = [(self.caches[level][y], self.held.pop((tensor, level, y)).tensor) for y in ys]
                self.caches[up][k].reduce_into(sources, self._view_at(tensor, up, k, region))
                for y, (_, tile) in zip(ys, sources):
                    self._emit("store", tensor, level, region, tile.size() if y == ys[0] else 0, up, y)

    def _fetch_level(self, tensor: str, level: int, members: list[int], want: dict[int, Region]) -> None:
        """Bring the wanted tiles into ``members``: inputs by multicast per group, outputs per the reload rule."""
        up = self.keeper[(tensor, level)]
        anc = self.anc[(level, up)]
        is_out = self.w.is_output(tensor)
        tiles: dict[int, Tensor] = {}
        loaders: list[int] = []
        for x in members:
            if is_out and (level, x, want[x]) not in self.seen_out:
                tiles[x] = self.caches[level][x].create(
                    _shape(want[x]), name=tensor, key=region_text(tensor, want[x]), data=self.with_data
                )
                self._emit("zero", tensor, level, want[x], 0, instance=x)
            else:
                loaders.append(x)
        for (_, region), xs in self._grouped(tensor, level, loaders, want):
            key = region_text(tensor, region)
            if is_out:
                # Partial sums go to the group's lowest instance; the others start from zeros.
                x = xs[0]
                view = self._view_at(tensor, up, int(anc[x]), region)
                tiles[x] = self.caches[up][int(anc[x])].load(view, into=self.caches[level][x], key=key)
                if self.with_data:
                    view.to_numpy()[...] = 0.0  # taken: the sum lives below until it is stored back
                self._emit("load", tensor, level, region, tiles[x].size(), up, x)
                for y in xs[1:]:
                    tiles[y] = self.caches[level][y].create(_shape(region), name=tensor, key=key, data=self.with_data)
                    self._emit("zero", tensor, level, region, 0, instance=y)
                continue
            by_source: dict[int, list[int]] = {}
            for x in xs:
                by_source.setdefault(int(anc[x]), []).append(x)
            for k, ys in by_source.items():
                view = self._view_at(tensor, up, k, region)
                copies = self.caches[up][k].multicast(view, [self.caches[level][y] for y in ys], key=key)
                for y, tile in zip(ys, copies):
                    tiles[y] = tile
                    self._emit("load", tensor, level, region, tile.size() if y == ys[0] else 0, up, y)
        for x in members:
            if is_out:
                self.seen_out.add((level, x, want[x]))
            self.held[(tensor, level, x)] = _Held(want[x], tiles[x])
            self._reserve_second_buffer(tensor, level, x, tiles[x])

    def _reserve_second_buffer(self, tensor: str, level: int, x: int, tile: Tensor) -> None:
        """Double buffering: a tensor that moves reserves a second buffer like its first tile.

        The first tile is the largest (every first piece is a full tile); a tile
        as big as the whole tensor never moves, so it needs no second buffer.
        """
        if not self.s.architecture.double_buffering or (tensor, level, x) in self.reserved:
            return
        self.reserved.add((tensor, level, x))
        if tile.size() < self.w.tensor_words(tensor):
            self.caches[level][x].create(tile.sz, name=tensor, key=f"{tensor} (second buffer)", data=False)

    def _run_ops(self, boxes: list[Box | None]) -> None:
        inner = len(self.caches) - 1
        dims = self.w.dims
        most = 0
        for x, box in enumerate(boxes):
            if box is None:
                continue
            operands = {t: self._view_at(t, inner, x, region_of(self.access[t], dims, box)) for t in self.names}
            extents = {d: size for d, (_, size) in zip(dims, box)}
            calls = calls_for_tile(extents, self.block)
            before = self.ops[x].calls
            self.ops[x].run(
                operands[self.out], [operands[a.name] for a in self.w.einsum.inputs], calls=calls, extents=extents
            )
            most = max(most, self.ops[x].calls - before)
            self._emit("run", self.out, inner, region_of(self.access[self.out], dims, box), calls, instance=x)
        self.busiest += most

    def _buffer_boxes(self, tensor: str, level: int, levels: list[list[Box | None]]) -> list[Box | None]:
        """Per instance, the box whose region ``tensor``'s buffer at ``level`` holds this step (None: idle).

        At the default position that is the level's tile. A buffer placed
        elsewhere (cost-model.md, "Buffer placement") holds, along each
        dimension, the piece of the innermost loop over it outside its
        position (:meth:`~mapsearch.schedule.schedule.Schedule.buffer_pieces`):
        its instance's piece at that loop's level, cut to the instance's part
        where the split below that level is outside the buffer too (a buffer
        of a level with instances sits inside the spatial loops that make
        them: docs/spatial.md, "Buffer placement at and below the mesh").
        """
        if self.placement[(tensor, level)][1] is None and self.placement[(tensor, level)][0] == level:
            return levels[level]
        out: list[Box | None] = []
        for x in range(self.layout.count[level]):
            box = []
            for (pick, cut), (k, d) in zip(self.pieces[(tensor, level)], enumerate(self.w.dims)):
                # A buffer below its default position reads a level below its own, with as many instances.
                piece = levels[pick][int(self.anc[(level, pick)][x]) if pick <= level else x]
                if piece is None:
                    break
                lo, size = piece[k]
                if cut:
                    c, part = self.layout.split_of[(pick + 1, d)]
                    off = int(self.layout.digits[level][x, c]) * part
                    lo, size = lo + off, min(part, size - off)
                    if size <= 0:
                        break
                box.append((lo, size))
            out.append(tuple(box) if len(box) == len(self.w.dims) else None)
        return out

    def _evict_all(self, moving: list[tuple[str, int, int]]) -> None:
        """Evictions, innermost level first, tensors in workload order, grouped per (tensor, level)."""
        by_pair: dict[tuple[str, int], list[int]] = {}
        for t, i, x in moving:
            if (t, i, x) in self.held:
                by_pair.setdefault((t, i), []).append(x)
        order = {t: n for n, t in enumerate(self.names)}
        for t, i in sorted(by_pair, key=lambda p: (-p[1], order[p[0]])):
            self._evict_level(t, i, by_pair[(t, i)])

    def run(self) -> ReplayResult:
        dims = self.w.dims
        for levels in lockstep_nest(self.s, self.layout):
            want: dict[tuple[str, int, int], Region | None] = {}
            moving: list[tuple[str, int, int]] = []
            moving_set: set[tuple[str, int, int]] = set()
            for t, i in self.kept:  # outermost level first
                up = self.keeper[(t, i)]
                flushable = self.w.is_output(t) and up != self.s.home(t)
                for x, box in enumerate(self._buffer_boxes(t, i, levels)):
                    held = self.held.get((t, i, x))
                    if box is not None:
                        w = region_of(self.access[t], dims, box)
                    elif held is not None and flushable and (t, up, int(self.anc[(i, up)][x])) in moving_set:
                        w = None  # idle, but the tile above it is leaving: store this one first
                    else:
                        w = held.region if held is not None else None
                    if (held.region if held is not None else None) != w:
                        want[(t, i, x)] = w
                        moving.append((t, i, x))
                        moving_set.add((t, i, x))
            self._evict_all(moving)
            fetch: dict[tuple[str, int], list[int]] = {}
            for t, i, x in moving:
                if want[(t, i, x)] is not None:
                    fetch.setdefault((t, i), []).append(x)
            for (t, i), xs in fetch.items():  # outermost level first, tensors in workload order
                self._fetch_level(t, i, xs, {x: want[(t, i, x)] for x in xs})
            self._run_ops(levels[-1])
        # The end: tiles still below the home go up innermost first; input tiles are dropped.
        self._evict_all(list(self.held))
        figures = self._figures()
        if not self.with_data:
            return ReplayResult(figures)
        got = self.homes[self.out].to_numpy()
        want_values = einsum_reference(self.w, self.inputs)
        error = float(np.max(np.abs(got - want_values))) if got.size else 0.0
        ok = bool(np.allclose(got, want_values, rtol=1e-9, atol=1e-9))
        return ReplayResult(figures, ok, error)

    def _figures(self) -> Figures:
        """Read the counters: words summed over link copies, a link's time the largest copy's."""
        arch = self.s.architecture
        out = []
        for j in range(1, arch.depth):
            copies = [link_figures(arch.link_name(j), bw, self.names) for bw in self.links[j]]
            per_tensor = tuple(
                TensorTraffic(t, sum(c.tensors[n].words_down for c in copies), sum(c.tensors[n].words_up for c in copies))
                for n, t in enumerate(self.names)
            )
            out.append(
                LinkFigures(
                    arch.link_name(j),
                    sum(c.words_down for c in copies),
                    sum(c.words_up for c in copies),
                    max(Fraction(c.time) for c in copies),
                    per_tensor,
                )
            )
        clocks = Fraction(arch.compute.clocks_per_call)
        calls = sum(op.calls for op in self.ops)
        return Figures(
            links=tuple(out),
            op_calls=calls,
            compute_time=self.busiest * clocks,
            macs=self.w.macs,
            block_macs=arch.compute.block_macs,
            occupancy=tuple((lv.name, max(c.peak for c in self.caches[i])) for i, lv in enumerate(arch.levels)),
            compute_instances=compute_instances(self.s),
            busiest_calls=self.busiest,
        )


def replay_events(schedule: Schedule, *, on_event: Callable[[Event], None] | None = None) -> ReplayResult:
    """Count the schedule's figures by replaying its events (no data moved).

    Raises ``CapacityError`` (level, tensor, words) when a level overflows.
    """
    return _EventReplay(schedule, with_data=False, seed=0, on_event=on_event).run()


def replay_events_data(
    schedule: Schedule, *, seed: int = 0, on_event: Callable[[Event], None] | None = None
) -> ReplayResult:
    """Like :func:`replay_events`, carrying random input values through the tiles.

    The output that ends at its home is compared with the einsum computed in
    one go; ``data_ok`` and ``max_abs_error`` report the comparison.
    """
    return _EventReplay(schedule, with_data=True, seed=seed, on_event=on_event).run()
