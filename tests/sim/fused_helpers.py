"""Building small fused schedules for the fused replay tests."""

from __future__ import annotations

from fractions import Fraction

from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.spec.architecture import Architecture, Level, Link
from mapsearch.spec.workload import WorkloadGraph


def arch(names=("DRAM", "L1", "L0"), caps=(None, None, None), cost=(None, 1, 1)) -> Architecture:
    levels = []
    for i, (n, c) in enumerate(zip(names, caps)):
        link = None if i == 0 else Link(Fraction(cost[i]))
        levels.append(Level(n, c, link))
    return Architecture("test", tuple(levels))


def stage(graph: WorkloadGraph, e: int, a: Architecture, tiles: list[dict], orders: list[list], keeps: list[set],
          homes: dict[str, str]) -> Schedule:
    """``tiles[i]`` / ``orders[i]`` / ``keeps[i]`` per level below the top (dims missing from a tile: whole)."""
    w = graph.stage(e)
    ext = w.extent
    levels = [LevelMapping(a.levels[0].name, tuple((d, ext[d]) for d in w.dims))]
    for i in range(1, a.depth):
        t = tiles[i - 1]
        order = [d for d in orders[i - 1] if d in w.dims] + [d for d in w.dims if d not in orders[i - 1]]
        levels.append(LevelMapping(a.levels[i].name, tuple((d, t.get(d, ext[d] if i == 1 else levels[-1].tile_extent(d))) for d in w.dims),
                                   tuple(order), frozenset(k for k in keeps[i - 1] if k in w.tensor_names)))
    h = tuple((t, l) for t, l in homes.items() if t in w.tensor_names)
    return Schedule(w, a, tuple(levels), h)


def fused(graph, a, f, per_stage) -> FusedSchedule:
    """``per_stage[e] = (tiles, orders, keeps, homes)``."""
    return FusedSchedule(graph, a, f, tuple(stage(graph, e, a, *per_stage[e]) for e in range(len(graph.einsums))))
