"""Structural rules of a schedule, checkable without a solver or a replay.

Each rule returns the list of its violations as readable strings, so a caller
can report them all (``violations``) or stop at the first (``check``).
Capacity is not checked here: the replay counts occupancy by walking.
"""

from __future__ import annotations

from mapsearch.errors import ScheduleError
from mapsearch.schedule.schedule import Schedule
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.limits import describe
from mapsearch.spec.reading import join_path

_NAMES = 200  # characters of a name list in a message: a hostile file's names may be huge


def tiling_violations(s: Schedule) -> list[str]:
    """``T[top][d] = E_d`` and ``1 <= T[i][d] <= T[i-1][d]`` for every level and dim."""
    out = []
    dims = s.workload.dims
    extent = s.workload.extent
    for i, lm in enumerate(s.levels):
        tiles = lm.tile_extents
        if set(tiles) != set(dims):
            out.append(f"levels[{i}].tile: expected the dims {list(dims)}, got {describe(sorted(tiles), _NAMES)}")
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
            out.append(f"levels[{i}].order: expected a permutation of {sorted(dims)}, got {describe(list(lm.order), _NAMES)}")
    return out


def residency_violations(s: Schedule) -> list[str]:
    """Homes name real levels; buffers only below the home; every tensor at L0."""
    out = []
    names = set(s.workload.tensor_names)
    levels = set(s.architecture.level_names)
    for tensor, level in s.homes:
        if tensor not in names:
            out.append(f"{join_path(['homes', tensor])}: unknown tensor; expected one of {sorted(names)}")
        if level not in levels:
            out.append(f"{join_path(['homes', tensor])}: unknown level {describe(level)}; expected one of {sorted(levels)}")
    if out:
        return out
    innermost = s.architecture.depth - 1
    for i, lm in enumerate(s.levels):
        for t in sorted(lm.keep):
            if t not in names:
                out.append(f"levels[{i}].keep: unknown tensor {describe(t)}")
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
    return [] if want == got else [f"levels: expected one mapping per level {want}, got {describe(got, _NAMES)}"]


def spatial_violations(s: Schedule) -> list[str]:
    """Spatial splits (docs/spatial.md): only at meshed levels, on a real axis and dim, parts within the
    parent tile, the temporal tile within the part, each dim split once per level, factors within the axis."""
    out = []
    dims = s.workload.dims
    extent = s.workload.extent
    for i, lm in enumerate(s.levels):
        if not lm.spatial:
            continue
        level = s.architecture.levels[i]
        if not level.mesh:
            out.append(f"levels[{i}].spatial: {level.name} has no mesh; spatial splits need a meshed level")
            continue
        parent = extent if i == 0 else s.levels[i - 1].tile_extents
        tiles = lm.tile_extents
        axes = {a.name: a for a in level.mesh}
        used = dict.fromkeys(axes, 1)
        seen: set[str] = set()
        for j, sp in enumerate(lm.spatial):
            where = f"levels[{i}].spatial[{j}]"
            if sp.dim not in dims:
                out.append(f"{where}.dim: unknown dimension {describe(sp.dim)}; expected one of {', '.join(dims)}")
                continue
            if sp.axis not in axes:
                out.append(f"{where}.axis: unknown mesh axis {describe(sp.axis)} of {level.name}; expected one of {', '.join(axes)}")
                continue
            if sp.dim in seen:
                out.append(f"{where}.dim: {sp.dim} is split twice at {level.name}; split a dimension at most once per level")
                continue
            seen.add(sp.dim)
            top = parent.get(sp.dim, extent[sp.dim])
            if not 1 <= sp.part <= top:
                out.append(f"{where}.part: expected 1 <= part <= {top} (the parent tile), got {sp.part}")
                continue
            t = tiles.get(sp.dim)
            if t is not None and t > sp.part:
                out.append(f"levels[{i}].tile.{sp.dim}: expected tile <= {sp.part} (the part of the spatial split), got {t}")
            used[sp.axis] *= -(-top // sp.part)
        for name, n in used.items():
            if n > axes[name].size:
                out.append(
                    f"levels[{i}].spatial: the splits on axis {name} need {n} instances (product of ceil(parent/part)), "
                    f"the axis has {axes[name].size}"
                )
    if s.architecture.levels and s.architecture.levels[0].mesh:
        out.append(f"architecture: the top level {s.architecture.levels[0].name} cannot have a mesh")
    return out


def home_violations(s: Schedule) -> list[str]:
    """A home holds a tensor whole once: it must lie above every meshed level (docs/spatial.md, Replay decisions)."""
    meshed = [i for i, lv in enumerate(s.architecture.levels) if lv.instances > 1]
    if not meshed:
        return []
    out = []
    first = meshed[0]
    for tensor, level in s.homes:
        if level in s.architecture.level_names and s.architecture.index(level) >= first:
            out.append(
                f"homes.{tensor}: a home must be above every meshed level; "
                f"{level} is at or below {s.architecture.levels[first].name}, which has {s.architecture.levels[first].instances} instances"
            )
    return out


def position_violations(s: Schedule) -> list[str]:
    """Buffer positions (the contract's "Buffer placement"): only for kept tensors, within the nest,
    at or inside the buffer above and at or outside the buffer below; with spatial splits, on the right side of
    every meshed level's spatial loops (:func:`position_range`)."""
    out = []
    nest = (len(s.levels) - 1) * len(s.workload.dims)
    for i, lm in enumerate(s.levels):
        for t, p in lm.positions:
            if not s.keeps(t, i):
                out.append(f"levels[{i}].positions.{t}: {t} has no buffer at {lm.level}; positions place kept buffers")
            elif not 0 <= p <= nest:
                out.append(f"levels[{i}].positions.{t}: expected 0 <= position <= {nest} (the loops of the whole nest), got {p}")
    if out or not s.placed:
        return out
    if any(lm.spatial for lm in s.levels):
        out += _meshed_position_violations(s)
    for t in s.workload.tensor_names:
        kept = [i for i in range(len(s.levels)) if s.keeps(t, i)]
        for a, b in zip(kept, kept[1:]):
            if s.position(t, a) > s.position(t, b):
                out.append(f"levels[{b}].positions.{t}: {t}'s buffer at {s.levels[b].level} (position {s.position(t, b)}) "
                           f"sits outside its buffer at {s.levels[a].level} (position {s.position(t, a)}); "
                           "a buffer must sit at or inside the one above it")
    return out


def position_range(architecture: Architecture, n_dims: int, level: int) -> tuple[int, int]:
    """The positions a buffer at ``level`` may take when a schedule of ``n_dims`` dimensions on
    ``architecture`` has spatial splits: ``(lo, hi)``.

    Every meshed level ``m`` has its spatial loops at nest position
    ``(m-1)*D``, before its own temporal loops. A buffer of a level with
    instances sits inside the spatial loops that make them (those of every
    meshed level at or above it: ``lo``), and any buffer sits outside the
    spatial loops of the meshed levels below it (``hi``), whose instances it
    serves whole (docs/spatial.md, "Buffer placement at and below the mesh").
    """
    D = n_dims
    meshed = [m for m, lv in enumerate(architecture.levels) if lv.instances > 1]
    lo = max(((m - 1) * D for m in meshed if m <= level), default=0)
    hi = min(((m - 1) * D for m in meshed if m > level), default=architecture.depth * D - D)
    return lo, hi


def _meshed_position_violations(s: Schedule) -> list[str]:
    """With spatial splits, a buffer sits inside the spatial loops of the meshed levels at or above its own and
    outside those below it (:func:`position_range`)."""
    out = []
    for i, lm in enumerate(s.levels):
        for t, p in lm.positions:
            lo, hi = position_range(s.architecture, len(s.workload.dims), i)
            if not lo <= p <= hi:
                out.append(f"levels[{i}].positions.{t}: with spatial splits a buffer at {lm.level} sits inside the "
                           f"spatial loops of the meshed levels at or above it and outside those below it "
                           f"(expected {lo} <= position <= {hi}), got {p}")
    return out


def violations(s: Schedule) -> list[str]:
    out = shape_violations(s)
    if out:
        return out
    out = tiling_violations(s) + order_violations(s) + residency_violations(s)
    if out:
        return out
    return spatial_violations(s) + home_violations(s) + position_violations(s)


def check(s: Schedule) -> None:
    """Raise :class:`ScheduleError` naming the first violation."""
    v = violations(s)
    if v:
        raise ScheduleError(v[0])
