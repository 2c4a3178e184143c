"""What the event replays walk and report: the loop nest, the regions its tiles touch, the events.

The walk of :mod:`mapsearch.sim.events` (one einsum) and of
:mod:`mapsearch.sim.fused_events` (a fused chain) share these: the tiles of
each level inside its parent tile (``tiles_inside``, ``loop_nest``), the
region of a tensor a tile touches (``region_of``) and the key it is held
under (``region_text``), the :class:`Event` a replay reports, and the plain
cache chain of one instance per level (``build_chain``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.bandwidth import Bandwidth
from mapsearch.sim.cache import Cache
from mapsearch.sim.compute import TileOp
from mapsearch.sim.counters import Chain, chain
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


def region_shape(region: Region) -> list[int]:
    """The extent of each axis of a region."""
    return [b - a + 1 for a, b in region]


@dataclass
class Held:
    """A tile a buffer holds: the region it covers and its tensor."""

    region: Region
    tensor: Tensor


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

