"""A first schedule built without search, for when the coarse search finds none in its time.

On deep hierarchies with filter windows the coarse search can use its whole
share of a short limit without a schedule (measured: ResNet-50's 3x3 layer
on the five-level ``cpu-core`` preset under a 10 s limit ended with no
schedule at all). This module builds one by hand, greedily, so the full
search starts from an incumbent and a cut-short solve ends FEASIBLE with a
gap instead of empty-handed.

How it is used (hint before or after the coarse search, fallback after a
search that found nothing): solve/greedy_start.py.

The construction (:func:`greedy_schedule`), level by level from L0 outwards:

1. *Keep.* L0 keeps every tensor homed above it (the contract requires it);
   a level above keeps every tensor homed above it while that fits, and
   bypasses the largest buffers first where it does not.
2. *Tile.* Start from the tile of the level below (L0: one element, or the
   op's block where that fits) and grow one dimension at a time to its next
   extent of the form ``ceil(E/n)``, taking the growth that gives the most
   MACs per word held, while the level's occupancy (homes, plus each kept
   tensor's region, twice when double-buffered and not whole) fits. Tiles
   grow outwards, so each level's tile holds the one below it.
3. *Order.* Innermost the loops whose advance reloads the fewest words held
   at the level (a tensor not indexed by a loop stays while it advances).

Nothing here is claimed optimal or even good: the schedule is only a start.
Buffers sit at their default positions and nothing is split over a mesh (a
legal schedule on any path: the other instances idle).
"""

from __future__ import annotations

import math

from mapsearch.model.problem import Problem
from mapsearch.schedule.legality import violations
from mapsearch.schedule.schedule import LevelMapping, Schedule


def greedy_schedule(problem: Problem) -> Schedule | None:
    """A legal schedule of ``problem`` built as the module docstring says, or None where L0 cannot hold
    one element of every tensor (then no schedule of the contract fits either)."""
    w, arch = problem.workload, problem.architecture
    J = arch.depth - 1
    tiles: dict[int, dict[str, int]] = {}
    keeps: dict[int, frozenset[str]] = {}
    # L0 starts from the op's block: per dimension the largest listed extent within it (1 without a block).
    below = {d: max(e for e in _extents(w.extent[d]) if e <= arch.compute.block_extent(d)) for d in w.dims}
    for i in range(J, 0, -1):
        start = below if i == J else tiles[i + 1]
        placed = _level(problem, i, start)
        if placed is None and i == J:  # the op's block does not fit: one element per dimension
            placed = _level(problem, i, {d: 1 for d in w.dims})
        if placed is None:
            return None
        tiles[i], keeps[i] = placed
    levels = [LevelMapping(arch.levels[0].name, w.extents)]
    for i in range(1, J + 1):
        parent = w.extent if i == 1 else tiles[i - 1]
        levels.append(LevelMapping(arch.levels[i].name, tuple((d, tiles[i][d]) for d in w.dims),
                                   _order(problem, i, tiles[i], parent, keeps[i]), keeps[i]))
    homes = tuple((t, arch.levels[problem.home(t)].name) for t in w.tensor_names)
    schedule = Schedule(w, arch, tuple(levels), homes)
    return schedule if not violations(schedule) else None


def _level(problem: Problem, i: int, start: dict[str, int]) -> tuple[dict[str, int], frozenset[str]] | None:
    """The tile and kept tensors of level ``i``, grown from ``start`` (module docstring, steps 1-2)."""
    w, arch = problem.workload, problem.architecture
    capacity = arch.levels[i].capacity
    keep = [t for t in w.tensor_names if problem.home(t) < i]
    if capacity is None:
        return dict(w.extent), frozenset(keep)
    homes = sum(w.tensor_words(t) for t in w.tensor_names if problem.home(t) == i)
    while _need(problem, homes, keep, start) > capacity:
        if i == arch.depth - 1 or not keep:
            return None
        keep.remove(max(keep, key=lambda t: _held(problem, t, start)))
    tile = dict(start)
    steps = {d: _block_extents(w.extent[d], arch.compute.block_extent(d)) for d in w.dims}
    while True:
        best, best_score = None, None
        for d in w.dims:
            grown = next((e for e in steps[d] if e > tile[d]), None)
            if grown is None:
                continue
            trial = {**tile, d: grown}
            if _need(problem, homes, keep, trial) > capacity:
                continue
            held = sum(w.tensor(t).words(trial) for t in keep) or 1
            score = math.prod(trial.values()) / held
            if best_score is None or score > best_score:
                best, best_score = trial, score
        if best is None:
            return tile, frozenset(keep)
        tile = best


def _need(problem: Problem, homes: int, keep: list[str], tile: dict[str, int]) -> int:
    """The level's occupancy with these kept tensors and this tile (homes included)."""
    return homes + sum(_held(problem, t, tile) for t in keep)


def _held(problem: Problem, tensor: str, tile: dict[str, int]) -> int:
    """Words a buffer of ``tensor`` holding this tile takes (twice when double-buffered and not whole)."""
    w = problem.workload
    words = w.tensor(tensor).words(tile)
    whole = w.tensor_words(tensor)
    return 2 * words if problem.architecture.double_buffering and words < whole else words


def _extents(extent: int) -> list[int]:
    """The extents ``ceil(E/n)``, ascending, each a different number of pieces of the whole: the ones the
    model lists at every level even where it reduces its tile families (model/chains.py), about
    ``2 sqrt(E)``. A small ``v`` is one iff ``ceil(E / ceil(E/v)) == v`` (``ceil(E/v)`` is the fewest
    pieces of at most ``v``)."""
    root = math.isqrt(extent) + 1
    large = {-(-extent // n) for n in range(1, root + 1)}
    small = {v for v in range(1, min(root, extent) + 1) if -(-extent // -(-extent // v)) == v}
    return sorted(large | small)


def _block_extents(extent: int, block: int) -> list[int]:
    """The candidate extents of a dimension the op's block covers ``block`` at a time: the multiples of the block
    among :func:`_extents` (and the whole), so that no piece but the last pads a call; all of them without a
    block."""
    extents = _extents(extent)
    if block <= 1:
        return extents
    return [e for e in extents if e % block == 0 or e == extent]


def _order(problem: Problem, i: int, tile: dict[str, int], parent: dict[str, int], keep: frozenset[str]) -> tuple[str, ...]:
    """Level ``i``'s loops, outermost first: innermost the ones whose advance reloads the fewest held words
    (module docstring, step 3); loops with one trip outermost."""
    w = problem.workload

    def reload(d: str) -> tuple:
        trips = -(-parent[d] // tile[d])
        cost = sum(w.tensor(t).words(tile) * (2 if w.is_output(t) else 1)
                   for t in keep if d in w.tensor(t).dims)
        return (trips > 1, -cost)

    return tuple(sorted(w.dims, key=reload))
