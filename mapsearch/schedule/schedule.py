"""The schedule: tile extents, loop orders, residency and homes.

``levels[i]`` maps architecture level ``i`` (outermost first). The top level's
tile is the whole iteration space and it has no loop order. For every level
below the top, ``order`` lists the dimensions outer -> inner: the order in
which that level's tiles inside one parent tile are visited. Extents need not
divide: a parent piece of extent ``s`` splits as
``for x0 in range(0, s, T): piece = min(T, s - x0)``.

``keep`` holds the tensors that have a buffer at that level; a tensor's home
level holds it whole instead, and levels above its home never see it.

``positions`` places buffers (the contract's "Buffer placement"): the whole
nest is one sequence of loops, level 1's order (outer -> inner) first, then
level 2's, down to L0's, so with ``D`` dimensions it has ``J*D`` loops. A
buffer's position is the number of loops of that sequence outside it; the
buffer holds the region of the tensor that the loops inside it touch, for
the current values of the loops outside it. The default position of a
buffer at level ``i`` is ``i*D`` (just inside level ``i``'s loops: the
level-``i`` tile). ``positions`` lists only the tensors placed elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from mapsearch.dram.layout import LayoutSpec
from mapsearch.schedule.figures import Figures
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import Workload


@dataclass(frozen=True)
class SpatialSplit:
    """At a meshed level: split the parent tile along ``dim`` into parts of ``part``, one per instance along ``axis``."""

    dim: str
    part: int
    axis: str


@dataclass(frozen=True)
class LevelMapping:
    level: str
    tile: tuple[tuple[str, int], ...]  # tile extent per dimension
    order: tuple[str, ...] = ()  # outer -> inner; empty at the top
    keep: frozenset[str] = frozenset()
    spatial: tuple[SpatialSplit, ...] = ()  # only at a level with a mesh
    positions: tuple[tuple[str, int], ...] = ()  # tensor -> loops outside its buffer; default i*D

    def part_extent(self, dim: str) -> int | None:
        for s in self.spatial:
            if s.dim == dim:
                return s.part
        return None

    def tile_extent(self, dim: str) -> int:
        return dict(self.tile)[dim]

    @property
    def tile_extents(self) -> dict[str, int]:
        return dict(self.tile)


@dataclass(frozen=True)
class DramPlan:
    """How the schedule's tensors sit in DRAM and what the solver predicts of its rows (docs/dram.md).

    ``layouts``: tensor -> layout (tensors not listed are row-major).
    ``row_openings``: per tensor, the predicted number of DRAM rows its
    transfers touch, each transfer counted on its own (a row touched by two
    transfers counts twice): an upper bound on the row activations of the
    stream when every transfer's elements go in address order
    (``element_order`` ``"layout"``), and what the replay counts exactly.
    """

    layouts: tuple[tuple[str, LayoutSpec], ...] = ()
    element_order: str = "layout"
    row_openings: tuple[tuple[str, int], ...] | None = None

    @property
    def total_row_openings(self) -> int | None:
        return None if self.row_openings is None else sum(n for _, n in self.row_openings)


@dataclass(frozen=True)
class Schedule:
    workload: Workload
    architecture: Architecture
    levels: tuple[LevelMapping, ...]
    homes: tuple[tuple[str, str], ...]  # tensor -> level name
    predicted: Figures | None = None
    dram: DramPlan | None = None
    # The file it was read from ("" when built in memory), for messages about it (e.g. an export's refusal);
    # not part of the schedule: equality, hashing and the JSON ignore it.
    source: str = field(default="", compare=False, repr=False)

    def home(self, tensor: str) -> int:
        """Index of the tensor's home level (default: the top)."""
        return self.architecture.index(dict(self.homes).get(tensor, self.architecture.levels[0].name))

    def keeps(self, tensor: str, level: int) -> bool:
        """True when ``tensor`` has a buffer at ``level`` (strictly below its home)."""
        return level > self.home(tensor) and tensor in self.levels[level].keep

    def keeper_above(self, tensor: str, level: int) -> int:
        """Nearest level above ``level`` that holds the tensor (a buffer or its home)."""
        for j in range(level - 1, -1, -1):
            if j == self.home(tensor) or self.keeps(tensor, j):
                return j
        raise ValueError(f"{tensor} has no home above level {level}")

    def position(self, tensor: str, level: int) -> int:
        """Loops of the whole nest outside ``tensor``'s buffer at ``level`` (default ``level * D``)."""
        return dict(self.levels[level].positions).get(tensor, level * len(self.workload.dims))

    def buffer_anchor(self, tensor: str, level: int) -> tuple[int, frozenset[str] | None]:
        """Where ``tensor``'s buffer at ``level`` reads its region: ``(j, outside)``.

        Position ``p`` counts the loops of the whole nest outside the buffer:
        ``p = 0`` holds the whole tensor (``(0, None)``); ``p = (j-1)*D + k``
        (``1 <= k <= D``) has every loop of levels ``< j`` and the first ``k``
        loops of level ``j`` outside, so along each dimension the buffer holds
        level ``j``'s piece for the dimensions in ``outside`` (those ``k``
        loops) and the level-``(j-1)`` piece for the others; ``outside`` is
        None when all of level ``j``'s loops are outside (``k = D``: level
        ``j``'s tile, as the default position ``level * D`` is level
        ``level``'s). The region changes only when a loop outside it advances.
        """
        D = len(self.workload.dims)
        p = self.position(tensor, level)
        if p == 0:
            return 0, None
        j, k = (p - 1) // D + 1, (p - 1) % D + 1
        return (j, None) if k == D else (j, frozenset(self.levels[j].order[:k]))

    def buffer_pieces(self, tensor: str, level: int) -> tuple[tuple[int, bool], ...]:
        """Per dimension, where ``tensor``'s buffer at ``level`` reads its extent: ``(pick, cut)``.

        ``pick`` is the level of the innermost temporal loop over the
        dimension outside the buffer (:meth:`buffer_anchor`: ``j`` for the
        dimensions in ``outside``, ``j-1`` for the others): the buffer holds
        the instance's piece of that level. ``cut`` is True when the split of
        the dimension at level ``pick + 1`` is outside the buffer too, which
        is when ``pick + 1 <= level``: a buffer of a level with instances sits
        inside the spatial loops that make them (docs/spatial.md, "Buffer
        placement at and below the mesh"), so it holds only the instance's
        part of that piece. At the default position (``pick = level``) never.
        """
        j, outside = self.buffer_anchor(tensor, level)
        out = []
        for d in self.workload.dims:
            pick = j if outside is None or d in outside else j - 1
            cut = pick + 1 <= level and self.levels[pick + 1].part_extent(d) is not None
            out.append((pick, cut))
        return tuple(out)

    @property
    def placed(self) -> bool:
        """True when some buffer sits away from its default position."""
        return any(p != i * len(self.workload.dims) for i, lm in enumerate(self.levels) for _, p in lm.positions)

    def tile_extents(self, level: int) -> dict[str, int]:
        return self.levels[level].tile_extents

    def with_predicted(self, figures: Figures | None) -> "Schedule":
        return replace(self, predicted=figures)
