"""Shared helpers of the spatial replay tests: small meshed architectures and random legal spatial schedules."""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import strategies as st

from mapsearch.schedule.legality import violations
from mapsearch.schedule.schedule import LevelMapping, Schedule, SpatialSplit
from mapsearch.spec.architecture import SEPARATE, SHARED, Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.workload import Workload

MATMUL = "Z[m,n] += A[m,k] * B[k,n]"


def matmul(m: int, n: int, k: int) -> Workload:
    return Workload.from_text("mm", MATMUL, {"m": m, "n": n, "k": k})


def conv1d(k: int, c: int, p: int, r: int, stride: int, dil: int) -> Workload:
    return Workload.from_text("conv1d", f"O[k,p] += I[c,p*{stride}+r*{dil}] * W[k,c,r]", {"k": k, "c": c, "p": p, "r": r})


def level(name: str, capacity: int | None, mesh=(), link: Link | None = Link()) -> Level:
    mesh = tuple(mesh)
    return Level(name, capacity, link, math.prod(a.size for a in mesh), mesh)


def arch(*levels: Level, block=(), clocks=Fraction(1), double=False) -> Architecture:
    levels = (Level(levels[0].name, levels[0].capacity),) + tuple(levels[1:])
    return Architecture("test", levels, Compute(tuple(block), Fraction(clocks)), double)


def schedule(wl: Workload, a: Architecture, below, homes=()) -> Schedule:
    """``below``: per level under the top, (tile dict, order string/list, kept tensors, spatial splits)."""
    levels = [LevelMapping(a.levels[0].name, tuple(wl.extents))]
    for i, item in enumerate(below):
        tile, order, keep = item[:3]
        spatial = item[3] if len(item) > 3 else ()
        levels.append(
            LevelMapping(
                a.levels[i + 1].name,
                tuple((d, tile[d]) for d in wl.dims),
                tuple(order),
                frozenset(keep),
                tuple(SpatialSplit(*s) if isinstance(s, tuple) else s for s in spatial),
            )
        )
    s = Schedule(wl, a, tuple(levels), tuple(homes))
    assert violations(s) == [], violations(s)
    return s


def random_below(rng, wl: Workload, a: Architecture, shrink: bool = False) -> list:
    """Random ``below`` for :func:`schedule`: per level under the top, splits over its mesh axes (unequal
    parts too, 60 % of dimensions), a tile inside the parts (``shrink``: down to a quarter of the parent, for
    long loops), a random order and keeps (every tensor at the innermost level)."""
    depth = len(a.levels)
    below, parent = [], wl.extent
    for i in range(1, depth):
        splits, cap = [], dict(parent)
        if a.levels[i].mesh:
            used = {ax.name: 1 for ax in a.levels[i].mesh}
            for d in rng.sample(wl.dims, len(wl.dims)):
                part = rng.randint(1, parent[d])
                factor = -(-parent[d] // part)
                options = [ax.name for ax in a.levels[i].mesh if used[ax.name] * factor <= ax.size]
                if options and rng.random() < 0.6:
                    ax = rng.choice(options)
                    used[ax] *= factor
                    splits.append(SpatialSplit(d, part, ax))
                    cap[d] = part
        tile = {d: rng.randint(1, max(1, cap[d] // rng.choice([1, 2, 3, 4])) if shrink else cap[d]) for d in wl.dims}
        keep = {t for t in wl.tensor_names if i == depth - 1 or rng.random() < 0.6}
        below.append((tile, rng.sample(wl.dims, len(wl.dims)), keep, splits))
        parent = tile
    return below


# ---------------------------------------------------------------- strategies
small_workloads = st.one_of(
    st.builds(matmul, st.integers(1, 6), st.integers(1, 5), st.integers(1, 6)),
    st.builds(conv1d, st.integers(1, 3), st.integers(1, 2), st.integers(1, 5), st.integers(1, 3), st.integers(1, 2), st.integers(1, 2)),
)
reuse_lists = st.sampled_from([("all",), ("none",), ("input",), ("output",), ("A", "Z"), ("B",), ("I", "O"), ("W",)])
clock_values = st.sampled_from([Fraction(1), Fraction(1, 2), Fraction(2)])


@st.composite
def spatial_schedules(draw, workloads=small_workloads) -> Schedule:
    """A legal schedule on 2-4 levels with one or two meshed levels (1 or 2 axes), random splits (unequal parts too)."""
    wl = draw(workloads)
    depth = draw(st.integers(2, 4))
    meshed = set(draw(st.lists(st.integers(1, depth - 1), min_size=1, max_size=2, unique=True)))
    names = ["DRAM", "L2", "L1", "L0"][-depth:]
    levels = []
    for i in range(depth):
        mesh = ()
        if i in meshed:
            n_axes = draw(st.integers(1, 2))
            mesh = tuple(MeshAxis(nm, draw(st.integers(1, 3)), draw(reuse_lists)) for nm in ("x", "y")[:n_axes])
        link = None if i == 0 else Link(draw(clock_values), draw(clock_values), draw(st.sampled_from([SHARED, SEPARATE])))
        levels.append(level(names[i], None if i == 0 else 10**6, mesh, link))
    block = tuple((d, draw(st.integers(1, 2))) for d in wl.dims if draw(st.booleans()))
    a = arch(*levels, block=block, clocks=draw(clock_values), double=draw(st.booleans()))
    parent = wl.extent
    below = []
    for i in range(1, depth):
        splits = []
        cap = parent
        if i in meshed:
            used = {ax.name: 1 for ax in a.levels[i].mesh}
            for d in draw(st.permutations(wl.dims)):
                if not draw(st.booleans()):
                    continue
                part = draw(st.integers(1, parent[d]))
                factor = -(-parent[d] // part)
                options = [ax.name for ax in a.levels[i].mesh if used[ax.name] * factor <= ax.size]
                if not options:
                    continue
                ax = draw(st.sampled_from(options))
                used[ax] *= factor
                splits.append(SpatialSplit(d, part, ax))
            cap = dict(parent)
            for sp in splits:
                cap[sp.dim] = sp.part
        tile = {d: draw(st.integers(1, cap[d])) for d in wl.dims}
        below.append([tile, draw(st.permutations(wl.dims)), set(), splits])
        parent = tile
    homes = []
    first_mesh = min(meshed)
    for t in wl.tensor_names:
        home = draw(st.integers(0, first_mesh - 1))
        if home:
            homes.append((t, a.levels[home].name))
        for i in range(home + 1, depth):
            if i == depth - 1 or draw(st.booleans()):
                below[i - 1][2].add(t)
    return schedule(wl, a, below, homes)
