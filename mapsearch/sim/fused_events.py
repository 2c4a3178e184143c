"""The explicit-cache walk of a fused chain: the ``events`` and ``data`` modes of :func:`~mapsearch.sim.fused.replay_fused`.

One ``Cache`` per level, ``Bandwidth`` links with their counters and one
``TileOp``; the outer nest (levels ``1..f`` over the shared dimensions) is
walked step by step, each einsum running its sub-nest (levels ``f+1..L0``)
per outer step, the intermediates created as zeros at level ``f`` and
dropped after the last einsum (the module doc of :mod:`mapsearch.sim.fused`
and "Replay decisions" in docs/fusion.md give the rules).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Iterator

import numpy as np

from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.bandwidth import Bandwidth
from mapsearch.sim.cache import Cache
from mapsearch.sim.compute import TileOp, calls_for_tile, einsum_kernel
from mapsearch.sim.counters import ReplayResult
from mapsearch.sim.event_nest import Box, Event, Held, Region, region_of, region_shape, region_text, tiles_inside
from mapsearch.sim.fused_chain import chain_inputs, chain_outputs, chain_reference, chain_tensor_names, check_fused
from mapsearch.sim.tensor import Tensor
from mapsearch.spec.architecture import SHARED

RTOL = 1e-9


def _nest(stage: Schedule, first: int, last: int, top: Box) -> Iterator[tuple[Box, ...]]:
    """Every step of the stage's levels ``first..last`` inside ``top``: the box of each of those levels."""
    dims = stage.workload.dims
    tiles = [tuple(lm.tile_extent(d) for d in dims) for lm in stage.levels]
    orders = [tuple(dims.index(d) for d in lm.order) for lm in stage.levels]

    def below(level: int, boxes: tuple[Box, ...], parent: Box) -> Iterator[tuple[Box, ...]]:
        if level > last:
            yield boxes
            return
        for box in tiles_inside(parent, tiles[level], orders[level]):
            yield from below(level + 1, boxes + (box,), box)

    yield from below(first, (), top)


class FusedEvents:
    """The events and data modes of :func:`mapsearch.sim.fused.replay_fused`: one explicit-cache walk of a fused schedule."""

    def __init__(self, fs: FusedSchedule, with_data: bool, seed: int, on_event: Callable[[Event], None] | None):
        check_fused(fs)
        self.fs = fs
        self.g = fs.graph
        self.arch = fs.architecture
        self.f = fs.fusion_level
        self.depth = self.arch.depth
        self.inner = self.depth - 1
        self.with_data = with_data
        self.on_event = on_event
        self.names = chain_tensor_names(self.g)
        self.inter = tuple(self.g.intermediates)
        self.producer = {e.output.name: n for n, e in enumerate(self.g.einsums)}
        self.owner: dict[str, int] = {}
        for n, e in enumerate(self.g.einsums):
            for t in e.tensors:
                self.owner.setdefault(t.name, n)
        self._build()
        self.kernels = [einsum_kernel(st.workload) for st in fs.stages] if with_data else None
        self.block = dict(self.arch.compute.block)
        self.held: dict[tuple[str, int], Held] = {}
        self.seen_out: set[tuple[str, int, Region]] = set()
        self.inter_buf: dict[str, Held] = {}
        # Homes of the tensors other than intermediates, created once.
        self.homes: dict[str, Tensor] = {}
        self.home_level: dict[str, int] = {}
        self.inputs: dict[str, np.ndarray] = {}
        rng = np.random.default_rng(seed)
        for t in self.names:
            if t in self.inter:
                continue
            st = fs.stages[self.owner[t]]
            h = st.home(t)
            shape = list(st.workload.tensor_shape(t))
            tensor = self.caches[h].create(shape, name=t, key=f"{t} (home)", data=with_data)
            if with_data and t in chain_inputs(self.g):
                values = rng.standard_normal(shape)
                tensor.to_numpy()[...] = values
                self.inputs[t] = values
            self.homes[t] = tensor
            self.home_level[t] = h
        # (stage, tensor, level) kept at levels 1..f: outermost level first, stages, tensors in workload order.
        self.kept_outer = [
            (e, t, i)
            for i in range(1, self.f + 1)
            for e, st in enumerate(fs.stages)
            for t in st.workload.tensor_names
            if st.keeps(t, i)
        ]
        self.kept_inner = [
            [(t, i) for i in range(self.f + 1, self.depth) for t in st.workload.tensor_names if st.keeps(t, i)]
            for st in fs.stages
        ]
        self.access = [{a.name: a for a in st.workload.tensors} for st in fs.stages]

    def _build(self) -> None:
        arch = self.arch
        inner = arch.levels[-1]
        self.op = TileOp(arch.compute.clocks_per_call, None)
        caches = [Cache(inner.capacity, self.op, name=inner.name)]
        links: list[Bandwidth] = []
        for child in range(arch.depth - 1, 0, -1):
            link = arch.levels[child].link
            if link is None:
                raise ValueError(f"level {arch.levels[child].name} has no link to its parent")
            bw = Bandwidth(caches[-1], link.input_clocks_per_word, None if link.lines == SHARED else link.output_clocks_per_word)
            links.append(bw)
            caches.append(Cache(arch.levels[child - 1].capacity, bw, name=arch.levels[child - 1].name))
        self.caches = caches[::-1]  # top first
        self.links = [None] + links[::-1]  # links[j]: the link into level j

    def _emit(self, kind: str, tensor: str, level: int, region: Region, words: int, source: int | None = None) -> None:
        if self.on_event is not None:
            self.on_event(Event(kind, tensor, level, region, words, source))

    def _view_at(self, tensor: str, level: int, region: Region) -> Tensor:
        if tensor in self.inter_buf and level == self.f:
            held = self.inter_buf[tensor]
        elif tensor in self.homes and level == self.home_level[tensor]:
            holder = self.homes[tensor]
            return holder[tuple(slice(a, b + 1) for a, b in region)]
        else:
            held = self.held[(tensor, level)]
        if held.region == region:
            return held.tensor
        origin = tuple(a for a, _ in held.region)
        return held.tensor[tuple(slice(a - o, b - o + 1) for (a, b), o in zip(region, origin))]

    # -- moves
    def _evict(self, e: int, t: str, i: int) -> None:
        st = self.fs.stages[e]
        held = self.held.pop((t, i))
        if st.workload.is_output(t):
            up = st.keeper_above(t, i)
            self.caches[up].store_to(held.tensor, self._view_at(t, up, held.region))
            self._emit("store", t, i, held.region, held.tensor.size(), up)
        else:
            self.caches[i].free(held.tensor)
            self._emit("drop", t, i, held.region, 0)

    def _fetch(self, e: int, t: str, i: int, region: Region) -> None:
        st = self.fs.stages[e]
        key = region_text(t, region)
        up = st.keeper_above(t, i)
        if st.workload.is_output(t) and (t, i, region) not in self.seen_out:
            tile = self.caches[i].create(region_shape(region), name=t, key=key, data=self.with_data)
            self._emit("zero", t, i, region, 0)
        else:
            tile = self.caches[up].load(self._view_at(t, up, region), into=self.caches[i], key=key)
            self._emit("load", t, i, region, tile.size(), up)
        if st.workload.is_output(t):
            self.seen_out.add((t, i, region))
        self.held[(t, i)] = Held(region, tile)

    def _move(self, want: dict[tuple[int, str, int], Region | None]) -> None:
        """Evict every pair whose region changes (innermost level first), then fetch (outermost first)."""
        moving = [k for k, w in want.items() if (self.held[(k[1], k[2])].region if (k[1], k[2]) in self.held else None) != w]
        for e, t, i in sorted(moving, key=lambda k: -k[2]):  # stable: stages, tensors in order within a level
            if (t, i) in self.held:
                self._evict(e, t, i)
        for e, t, i in moving:
            if want[(e, t, i)] is not None:
                self._fetch(e, t, i, want[(e, t, i)])

    # -- the run
    def _stage_box(self, e: int, shared_box: dict[str, tuple[int, int]]) -> Box:
        ext = self.g.extent
        return tuple(shared_box.get(d, (0, ext[d])) for d in self.fs.stages[e].workload.dims)

    def _outer_steps(self) -> Iterator[tuple[dict[str, tuple[int, int]], ...]]:
        """Per outer step, the shared-dimension box of each level ``0..f`` (from stage 0)."""
        st0 = self.fs.stages[0]
        dims = st0.workload.dims
        shared = set(self.g.shared_dims)
        top: Box = tuple((0, self.g.extent[d]) for d in dims)
        if self.f == 0:
            yield ({d: top[k] for k, d in enumerate(dims) if d in shared},)
            return
        for boxes in _nest(st0, 1, self.f, top):
            full = (top,) + boxes
            yield tuple({d: b[k] for k, d in enumerate(dims) if d in shared} for b in full)

    def _run_op(self, e: int, box: Box) -> None:
        st = self.fs.stages[e]
        dims = st.workload.dims
        acc = self.access[e]
        operands = {t: self._view_at(t, self.inner, region_of(acc[t], dims, box)) for t in st.workload.tensor_names}
        extents = {d: size for d, (_, size) in zip(dims, box)}
        calls = calls_for_tile(extents, self.block)
        if self.kernels is not None:
            self.op.kernel = self.kernels[e]
        out = st.workload.einsum.output.name
        self.op.run(operands[out], [operands[a.name] for a in st.workload.einsum.inputs], calls=calls, extents=extents)
        self._emit("run", out, self.inner, region_of(acc[out], dims, box), calls)

    def _sub_nest(self, e: int, fbox: Box) -> None:
        st = self.fs.stages[e]
        dims = st.workload.dims
        acc = self.access[e]
        if self.f == self.inner:
            self._run_op(e, fbox)
            return
        for boxes in _nest(st, self.f + 1, self.inner, fbox):
            want = {(e, t, i): region_of(acc[t], dims, boxes[i - self.f - 1]) for t, i in self.kept_inner[e]}
            self._move(want)
            self._run_op(e, boxes[-1])
        # End of the run: every buffer below f leaves, innermost first.
        self._move({(e, t, i): None for t, i in self.kept_inner[e]})

    def run(self) -> ReplayResult:
        f = self.f
        for shared_boxes in self._outer_steps():
            want = {}
            for e, t, i in self.kept_outer:
                st = self.fs.stages[e]
                want[(e, t, i)] = region_of(self.access[e][t], st.workload.dims, self._stage_box(e, shared_boxes[i]))
            self._move(want)
            fboxes = [self._stage_box(e, shared_boxes[f]) for e in range(len(self.fs.stages))]
            for t in self.inter:
                p = self.producer[t]
                region = region_of(self.access[p][t], self.fs.stages[p].workload.dims, fboxes[p])
                buf = self.caches[f].create(region_shape(region), name=t, key=region_text(t, region) + " (fused)", data=self.with_data)
                self.inter_buf[t] = Held(region, buf)
                self._emit("zero", t, f, region, 0)
            for e in range(len(self.fs.stages)):
                self._sub_nest(e, fboxes[e])
            for t in self.inter:
                held = self.inter_buf.pop(t)
                self.caches[f].free(held.tensor)
                self._emit("drop", t, f, held.region, 0)
        self._move({(e, t, i): None for e, t, i in self.kept_outer})
        figures = self._figures()
        if not self.with_data:
            return ReplayResult(figures)
        ref = chain_reference(self.g, self.inputs)
        error, ok = 0.0, True
        for t in chain_outputs(self.g):
            got = self.homes[t].to_numpy()
            want = ref[t]
            if got.size:
                error = max(error, float(np.max(np.abs(got - want))))
                scale = max(1.0, float(np.max(np.abs(want))))
                ok = ok and bool(np.max(np.abs(got - want)) <= RTOL * scale)
        for j in range(1, f + 1):
            for t in self.inter:
                if self.links[j].input_by_tensor.get(t, 0) or self.links[j].output_by_tensor.get(t, 0):
                    ok = False
        return ReplayResult(figures, ok, error)

    def _figures(self) -> Figures:
        arch = self.arch
        links = []
        for j in range(1, self.depth):
            bw = self.links[j]
            names = [t for t in self.names if j > self.f or t not in self.inter]
            links.append(
                LinkFigures(
                    arch.link_name(j),
                    bw.input,
                    bw.output,
                    Fraction(bw.time),
                    tuple(TensorTraffic(t, bw.input_by_tensor.get(t, 0), bw.output_by_tensor.get(t, 0)) for t in names),
                )
            )
        calls = self.op.calls
        return Figures(
            links=tuple(links),
            op_calls=calls,
            compute_time=calls * Fraction(arch.compute.clocks_per_call),
            macs=self.g.macs,
            block_macs=arch.compute.block_macs,
            occupancy=tuple((lv.name, self.caches[i].peak) for i, lv in enumerate(arch.levels)),
            compute_instances=1,
            busiest_calls=calls,
        )
