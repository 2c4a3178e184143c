"""Counting replay (``mode="count"``): a vectorised walk of the tile sequence.

The walk produces the same :class:`~mapsearch.schedule.figures.Figures` as the
event-by-event replay, by generating the tiles each level visits, in execution
order, as NumPy arrays and counting the region changes along them. It never
uses a closed-form traffic formula: the solver does, and sharing one would
make the solver/replay agreement circular.

How the walk counts (contract: ``shared/spec/cost-model.md``, replay semantics):

- Per dimension and level, a *piece table* lists the pieces of the
  split-with-remainder (``for x0 in range(0, s, T): piece = min(T, s - x0)``)
  of every parent piece: start, size, and the range of its children.
- The tiles of level ``i`` in execution order are generated in chunks from
  the tiles of level ``i-1``: each parent tile expands into the product of
  its per-dimension children, digits in the level's loop order (outer ->
  inner). A tile is a vector of per-dimension piece ids.
- A tensor kept at level ``i`` maps each level-``i`` tile to its region (one
  interval per axis; an affine axis ``sum c*d`` spans
  ``[sum c*lo_d, sum c*hi_d]``). An *entry* is a step whose region differs
  from the previous step's (the first step is an entry).
  - Input: every entry loads its region from the nearest holder above.
  - Output: every entered region is left exactly once (at the next entry or
    at the end of the run), so every entry's words are eventually stored up;
    an entry loads partial sums iff the same region was entered before at
    that level (first-occurrence mask over region keys), else zeros.
  Words count on every link between the level and the nearest holder above.
- Op calls: sum over innermost tiles of ``prod ceil(t_d / b_d)``.
- A schedule with spatial splits is walked with its instances by
  :mod:`mapsearch.sim.walk_spatial` (same principle: the visit sequence,
  region changes along it, no formula).
- Occupancy: homes at the level plus, per tensor kept there, its largest
  region words seen by the walk, twice with double buffering when the
  tensor's region changes during the walk (``docs/cost-model.md``).

Memory is bounded by the chunk size: counters carry the previous region
across chunks, and outputs keep one first-entry position per possible
region (at most the output's words).
"""

from __future__ import annotations

import numpy as np

from mapsearch.schedule.figures import Figures
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.counters import ReplayResult
from mapsearch.sim.buffers import BufferCounter, chunk_calls, figures_from_counts, route
from mapsearch.sim.pieces import CHUNK, check_capacity, piece_tables, tile_chunks
from mapsearch.sim.placed import count_placed
from mapsearch.sim.spatial import compute_instances, has_splits
from mapsearch.sim.walk_folded import fold_figures, innermost_tiles
from mapsearch.sim.walk_spatial import count_spatial

_I64 = np.int64
# Above this many innermost tiles the walk is folded (a few seconds of visiting tile by tile).
EXPLICIT_TILES = 1 << 22


def _allocations(schedule: Schedule, i: int, counters: dict) -> list[tuple[str, int]]:
    """Level ``i``'s buffers: homes, then each kept tensor's largest tile so far (twice if double-buffered)."""
    wl, arch = schedule.workload, schedule.architecture
    out = [(f"{t} (home)", wl.tensor_words(t)) for t in wl.tensor_names if schedule.home(t) == i]
    for t, c in counters.items():
        out.append((t, c.largest))
        if arch.double_buffering and c.entries > 1:
            out.append((f"{t} (second buffer)", c.largest))
    return out


def count_figures(schedule: Schedule, chunk: int = CHUNK, max_cells: int | None = None) -> Figures:
    """Figures of ``schedule`` counted by walking its tile sequence.

    A schedule without spatial splits whose innermost level has more than
    :data:`EXPLICIT_TILES` tiles is walked folded (:mod:`mapsearch.sim.walk_folded`:
    each kind of loop body once), which counts the same figures in time
    that does not grow with the tiles. Raises the simulator's
    ``CapacityError`` when a level's peak occupancy exceeds its capacity,
    and ``WalkTooLong`` when a schedule with spatial splits would take more
    than ``max_cells`` (step, instance) cells to walk (default
    ``walk_spatial.MAX_WALK_CELLS``).
    """
    if has_splits(schedule):
        return count_spatial(schedule, max_cells=max_cells)
    if innermost_tiles(schedule) > EXPLICIT_TILES:
        return fold_figures(schedule)
    return walk_figures(schedule, chunk)


def walk_figures(schedule: Schedule, chunk: int = CHUNK) -> Figures:
    """Figures of ``schedule`` (no spatial splits) counted by visiting every tile of every level."""
    if schedule.placed:
        return count_placed(schedule, chunk)
    wl = schedule.workload
    arch = schedule.architecture
    depth = arch.depth
    names = wl.tensor_names
    tables = piece_tables(schedule)
    inner = depth - 1
    block = [arch.compute.block_extent(d) for d in tables.dims]
    down = [dict.fromkeys(names, 0) for _ in range(depth)]  # down[j][t]: link into level j
    up = [dict.fromkeys(names, 0) for _ in range(depth)]
    occupancy = []
    op_calls = 0
    for i in range(depth):
        counters = {t: BufferCounter(schedule, tables, t, i) for t in names if schedule.keeps(t, i)}
        calls_per_piece = None
        if i == inner:
            calls_per_piece = [-(-tables.size[i][k] // block[k]) for k in range(len(block))]
        if counters or calls_per_piece is not None:
            for n, pid in enumerate(tile_chunks(schedule, tables, i, chunk)):
                for c in counters.values():
                    c.feed(pid)
                if n == 0:  # the first tiles are the largest: an overflow shows now, not after the walk
                    check_capacity(arch.levels[i].name, arch.levels[i].capacity, _allocations(schedule, i, counters))
                if calls_per_piece is not None:
                    op_calls += chunk_calls(pid, calls_per_piece)
        allocations = _allocations(schedule, i, counters)
        for t, c in counters.items():
            route(c, schedule.keeper_above(t, i), i, t, down, up)
        level = arch.levels[i]
        occupancy.append((level.name, check_capacity(level.name, level.capacity, allocations)))
    return figures_from_counts(schedule, down, up, occupancy, op_calls, compute_instances(schedule))


def replay_count(schedule: Schedule, *, chunk: int = CHUNK, max_cells: int | None = None) -> ReplayResult:
    """``replay(schedule, mode="count")``: the walk's figures, no data (``max_cells``: :func:`count_figures`)."""
    return ReplayResult(count_figures(schedule, chunk, max_cells))
