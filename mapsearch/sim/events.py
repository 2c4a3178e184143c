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
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.bandwidth import Bandwidth
from mapsearch.sim.cache import Cache
from mapsearch.sim.compute import TileOp, calls_for_tile, einsum_kernel, einsum_reference
from mapsearch.sim.counters import Chain, ReplayResult, chain, figures_of
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
    """The state of one replay: the chain, the homes, the tiles held and the output tiles seen."""

    def __init__(self, schedule: Schedule, with_data: bool, seed: int, on_event: Callable[[Event], None] | None):
        self.s = schedule
        self.w = schedule.workload
        self.with_data = with_data
        self.on_event = on_event
        self.chain = build_chain(schedule, einsum_kernel(self.w) if with_data else None)
        self.caches = self.chain.caches  # index = architecture level (top first)
        self.out = self.w.einsum.output.name
        self.names = self.w.tensor_names  # inputs, then the output
        self.access = {a.name: a for a in self.w.tensors}
        depth = schedule.architecture.depth
        # Kept (tensor, level) pairs, outermost level first, tensors in workload order.
        self.kept = [(t, i) for i in range(1, depth) for t in self.names if schedule.keeps(t, i)]
        self.block = dict(schedule.architecture.compute.block)
        self.held: dict[tuple[str, int], _Held] = {}
        self.seen_out: set[tuple[int, Region]] = set()
        self.reserved: set[tuple[str, int]] = set()
        self.inputs: dict[str, np.ndarray] = {}
        self.homes: dict[str, Tensor] = {}
        rng = np.random.default_rng(seed)
        for t in self.names:
            shape = list(self.w.tensor_shape(t))
            home = self.caches[schedule.home(t)]
            tensor = home.create(shape, name=t, key=f"{t} (home)", data=with_data)
            if with_data and not self.w.is_output(t):
                values = rng.standard_normal(shape)
                tensor.to_numpy()[...] = values
                self.inputs[t] = values
            self.homes[t] = tensor

    def _emit(self, kind: str, tensor: str, level: int, region: Region, words: int, source: int | None = None) -> None:
        if self.on_event is not None:
            self.on_event(Event(kind, tensor, level, region, words, source))

    def _view_at(self, tensor: str, level: int, region: Region) -> Tensor:
        """The part of what ``level`` holds of ``tensor`` (its home or its tile) that covers ``region``."""
        if level == self.s.home(tensor):
            holder, origin = self.homes[tensor], tuple(0 for _ in region)
        else:
            held = self.held[(tensor, level)]
            if held.region == region:
                return held.tensor
            holder, origin = held.tensor, tuple(a for a, _ in held.region)
        return holder[tuple(slice(a - o, b - o + 1) for (a, b), o in zip(region, origin))]

    def _evict(self, tensor: str, level: int) -> None:
        held = self.held.pop((tensor, level))
        if self.w.is_output(tensor):
            up = self.s.keeper_above(tensor, level)
            self.caches[up].store_to(held.tensor, self._view_at(tensor, up, held.region))
            self._emit("store", tensor, level, held.region, held.tensor.size(), up)
        else:
            self.caches[level].free(held.tensor)
            self._emit("drop", tensor, level, held.region, 0)

    def _fetch(self, tensor: str, level: int, region: Region) -> None:
        key = region_text(tensor, region)
        cache = self.caches[level]
        fresh_output = self.w.is_output(tensor) and (level, region) not in self.seen_out
        if fresh_output:
            tile = cache.create(_shape(region), name=tensor, key=key, data=self.with_data)
            self._emit("zero", tensor, level, region, 0)
        else:
            up = self.s.keeper_above(tensor, level)
            tile = self.caches[up].load(self._view_at(tensor, up, region), into=cache, key=key)
            self._emit("load", tensor, level, region, tile.size(), up)
        if self.w.is_output(tensor):
            self.seen_out.add((level, region))
        self.held[(tensor, level)] = _Held(region, tile)
        self._reserve_second_buffer(tensor, level, tile)

    def _reserve_second_buffer(self, tensor: str, level: int, tile: Tensor) -> None:
        """Double buffering: a tensor that moves reserves a second buffer like its first tile.

        The first tile is the largest (every first piece is a full tile); a tile
        as big as the whole tensor never moves, so it needs no second buffer.
        """
        if not self.s.architecture.double_buffering or (tensor, level) in self.reserved:
            return
        self.reserved.add((tensor, level))
        if tile.size() < self.w.tensor_words(tensor):
            self.caches[level].create(tile.sz, name=tensor, key=f"{tensor} (second buffer)", data=False)

    def _run_op(self, box: Box) -> None:
        inner = len(self.caches) - 1
        dims = self.w.dims
        operands = {t: self._view_at(t, inner, region_of(self.access[t], dims, box)) for t in self.names}
        extents = {d: size for d, (_, size) in zip(dims, box)}
        calls = calls_for_tile(extents, self.block)
        self.chain.compute.run(
            operands[self.out], [operands[a.name] for a in self.w.einsum.inputs], calls=calls, extents=extents
        )
        self._emit("run", self.out, inner, region_of(self.access[self.out], dims, box), calls)

    def run(self) -> ReplayResult:
        dims = self.w.dims
        for boxes in loop_nest(self.s):
            want = {(t, i): region_of(self.access[t], dims, boxes[i]) for t, i in self.kept}
            moving = [p for p in self.kept if p not in self.held or self.held[p].region != want[p]]
            for t, i in sorted((p for p in moving if p in self.held), key=lambda p: -p[1]):
                self._evict(t, i)
            for t, i in moving:  # self.kept is outermost first
                self._fetch(t, i, want[(t, i)])
            self._run_op(boxes[-1])
        # The end: output tiles still below the home go up innermost first; input tiles are dropped.
        for t, i in sorted(self.held, key=lambda p: -p[1]):
            self._evict(t, i)
        figures = figures_of(
            self.chain,
            self.s.architecture.link_names,
            self.names,
            self.w.macs,
            self.s.architecture.compute.block_macs,
        )
        if not self.with_data:
            return ReplayResult(figures)
        got = self.homes[self.out].to_numpy()
        want_values = einsum_reference(self.w, self.inputs)
        error = float(np.max(np.abs(got - want_values))) if got.size else 0.0
        ok = bool(np.allclose(got, want_values, rtol=1e-9, atol=1e-9))
        return ReplayResult(figures, ok, error)


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
