"""Structural rules of a schedule, checkable without a solver or a replay.

Each rule returns the list of its violations as readable strings, so a caller
can report them all (``violations``) or stop at the first (``check``).
Capacity is not checked here: the replay counts occupancy by walking.
"""

from __future__ import annotations

from mapsearch.errors import ScheduleError
from mapsearch.schedule.schedule import Schedule


def tiling_violations(s: Schedule) -> list[str]:
    """``T[top][d] = E_d`` and ``1 <= T[i][d] <= T[i-1][d]`` for every level and dim."""
    out = []
    dims = s.workload.dims
    extent = s.workload.extent
    for i, lm in enumerate(s.levels):
        tiles = lm.tile_extents
        if set(tiles) != set(dims):
            out.append(f"levels[{i}].tile: expected the dims {list(dims)}, got {sorted(tiles)}")
            continue
        for d in dims:
            parent = extent[d] if i == 0 else s.levels[i - 1].tile_extents.get(d, extent[d])
            t = tiles[d]
            if i == 0 and t != extent[d]:
                out.append(f"levels[0].tile.{d}: the top tile must be the whole extent {extent[d]}, got {t}")
            elif not 1 <= t <= parent:
                out.append(f"levels[{i}].tile.{d}: expected 1 <= tile <= {parent} (the parent tile), got {t}")
    return out


def order_violations(s: Schedule) -> list[str]:
    """Every level below the top orders all dims exactly once; the top has no order."""
    out = []
    dims = set(s.workload.dims)
    for i, lm in enumerate(s.levels):
        if i == 0:
            if lm.order:
                out.append("levels[0].order: the top level has no loops; expected []")
        elif sorted(lm.order) != sorted(dims):
            out.append(f"levels[{i}].order: expected a permutation of {sorted(dims)}, got {list(lm.order)}")
    return out


def residency_violations(s: Schedule) -> list[str]:
    """Homes name real levels; buffers only below the home; every tensor at L0."""
    out = []
    names = set(s.workload.tensor_names)
    levels = set(s.architecture.level_names)
    for tensor, level in s.homes:
        if tensor not in names:
            out.append(f"homes.{tensor}: unknown tensor; expected one of {sorted(names)}")
        if level not in levels:
            out.append(f"homes.{tensor}: unknown level {level!r}; expected one of {sorted(levels)}")
    if out:
        return out
    innermost = s.architecture.depth - 1
    for i, lm in enumerate(s.levels):
        for t in sorted(lm.keep):
            if t not in names:
                out.append(f"levels[{i}].keep: unknown tensor {t!r}")
            elif i <= s.home(t):
                out.append(f"levels[{i}].keep: {t} is kept at or above its home {s.architecture.levels[s.home(t)].name}")
    for t in sorted(names):
        if s.home(t) != innermost and t not in s.levels[innermost].keep:
            out.append(f"levels[{innermost}].keep: every tensor must be kept at the innermost level; {t} is not")
    return out


def shape_violations(s: Schedule) -> list[str]:
    """One mapping per architecture level, named as the levels are."""
    want = list(s.architecture.level_names)
    got = [lm.level for lm in s.levels]
    return [] if want == got else [f"levels: expected one mapping per level {want}, got {got}"]


def violations(s: Schedule) -> list[str]:
    out = shape_violations(s)
    if out:
        return out
    return tiling_violations(s) + order_violations(s) + residency_violations(s)


def check(s: Schedule) -> None:
    """Raise :class:`ScheduleError` naming the first violation."""
    v = violations(s)
    if v:
        raise ScheduleError(v[0])
