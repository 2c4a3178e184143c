"""The state of one event replay: the caches of every instance, the tiles held, and the moves between them.

:mod:`mapsearch.sim.events` gives the replay's semantics and its entry points
(``replay_events``, ``replay_events_data``); this module holds the replay
itself, :class:`EventReplay`, which walks the lockstep nest and issues the
loads, stores and op runs those semantics call for.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable

import numpy as np

from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.bandwidth import Bandwidth
from mapsearch.sim.cache import Cache
from mapsearch.sim.compute import TileOp, calls_for_tile, einsum_kernel, einsum_reference
from mapsearch.sim.counters import ReplayResult, link_figures
from mapsearch.sim.event_nest import Box, Event, Held, Region, region_of, region_shape, region_text
from mapsearch.sim.placed import buffer_stream
from mapsearch.sim.spatial import Layout, compute_instances, lockstep_nest
from mapsearch.sim.tensor import Tensor
from mapsearch.spec.architecture import SHARED


class EventReplay:
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
        self.held: dict[tuple[str, int, int], Held] = {}
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
                    region_shape(want[x]), name=tensor, key=region_text(tensor, want[x]), data=self.with_data
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
                    tiles[y] = self.caches[level][y].create(region_shape(region), name=tensor, key=key, data=self.with_data)
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
            self.held[(tensor, level, x)] = Held(want[x], tiles[x])
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

