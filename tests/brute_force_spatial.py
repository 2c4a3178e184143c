"""Brute force over the solver's spatial family (one meshed level), scored by the replay.

An oracle for the CP-SAT mapper's spatial fanouts that shares nothing with
it: like ``tests/brute_force.py`` (whose pieces it reuses) it imports
nothing from ``mapsearch.model`` or ``mapsearch.solve``. It enumerates,
straight from docs/spatial.md ("What the solver searches"):

- every tile chain ``E >= T_1 >= ... >= T_J >= 1`` of every dimension, the
  pinned dimensions of ``tests/brute_force.py`` held whole, and the two
  dimensions of a filter window (an input axis over two) never split
  spatially, as the solver's family;
- at the one meshed level ``s``, per dimension, every part extent ``P`` with
  ``T_{s-1} >= P >= T_s`` (the contract's parts: each level-``(s-1)`` piece
  ``x`` is cut into ``min(P, x - x0)`` for ``x0 = 0, P, 2P, ...``, so the
  last parts may be smaller and some instances idle), ``factor =
  ceil(T_{s-1} / P)`` at most the largest axis (``T_0 = E``); ``P = T_{s-1}``
  is "not split". ``even_only=True`` keeps the older family (``P`` divides
  every level-``(s-1)`` piece), to measure what unequal parts gain;
- every assignment of the split dimensions (factor > 1) to mesh axes with
  the product of the factors on each axis at most its size, and no split
  on an axis over a dimension that indexes one of its ``must_reuse``
  tensors (two split dims
  on one axis are listed in workload order: the instance coordinates are
  then mixed-radix, first listed outermost);
- every loop order of every level below the top, dims that do not advance
  (``T_i`` equal to the parent extent, or to the part at the meshed level)
  innermost in workload order, as in ``tests/brute_force.py``;
- every keep/bypass choice of the levels strictly between a home and L0.

Scoring is the replay's (``replay(mode="count")``), with two shortcuts that
change nothing (``tests/solve/test_spatial_vs_brute_force.py`` checks both
against plain replays, schedule by schedule):

- *per-tensor keeps.* The replay's traffic of a tensor depends only on the
  nest and that tensor's own keep levels (every tracker, its keeper and the
  flush rule are per tensor). So when each tensor has one free level (three
  levels, homes at the top) and every link has a single copy (the mesh is
  at L0), one replay with every tensor kept and one with every tensor
  bypassed give every keep choice's words and link times; capacities are
  checked from the occupancy rule (homes + the first tile of each kept
  tensor, x2 double-buffered when smaller than the tensor), which is the
  replay's per-instance peak (instance 0's part is the largest, and its
  first tile is the level's tile).
  Otherwise (a mesh in the middle: the link below it has one copy per
  instance and its time is the busiest copy's) every schedule is replayed
  as it is.
- *compute-time bound* (objective ``time`` only): a nest's compute time
  depends on its tiles and splits, not its orders or keeps, and bounds its
  time from below; once it exceeds the best time found, the remaining
  orders and keeps of those tiles are skipped.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterator, Mapping, Sequence

import brute_force as bf
from brute_force import Objective, replay_figures

from mapsearch.schedule.figures import Figures, LinkFigures
from mapsearch.schedule.schedule import LevelMapping, Schedule, SpatialSplit
from mapsearch.sim.errors import CapacityError
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import Workload

__all__ = ["Objective", "SpatialResult", "brute_force_spatial", "family", "meshed_level", "pieces", "all_scored"]


def meshed_level(arch: Architecture) -> int:
    levels = [i for i, lv in enumerate(arch.levels) if lv.instances > 1 or lv.mesh]
    assert len(levels) == 1, "the solver's family has exactly one meshed level"
    return levels[0]


def pieces(extent: int, chain: Sequence[int], level: int) -> set[int]:
    """Sizes of the level-``level`` pieces of a dimension tiled by ``chain`` (``level`` 0: the whole extent)."""
    out = {extent}
    for t in chain[:level]:
        nxt = set()
        for x in out:
            for x0 in range(0, x, t):
                nxt.add(min(t, x - x0))
        out = nxt
    return out


EVEN_ONLY = False  # the family before unequal parts (parts dividing every parent piece)


def dim_options(extent: int, depth: int, s: int, max_factor: int, pinned: bool) -> list[tuple[tuple[int, ...], int, int]]:
    """Per dimension: every (chain, part, factor) of the family; ``part`` is the parent extent when unsplit."""
    if pinned:
        chain = (extent,) * depth
        return [(chain, extent, 1)]
    out = []
    for chain in bf.chains(extent, depth):
        parent = extent if s == 1 else chain[s - 2]
        above = pieces(extent, chain, s - 1)
        for part in range(chain[s - 1], parent + 1):
            if EVEN_ONLY and not all(x % part == 0 for x in above):
                continue
            factor = -(-parent // part)
            if factor <= max_factor:
                out.append((chain, part, factor))
    return out


@dataclass(frozen=True)
class Nest:
    tiles: dict  # dim -> chain
    splits: tuple[SpatialSplit, ...]
    orders: tuple[tuple[str, ...], ...]


def _orders(w: Workload, tiles: Mapping[str, tuple[int, ...]], parts: Mapping[str, int], s: int, level: int):
    parent = {d: w.extent[d] if level == 1 else tiles[d][level - 2] for d in w.dims}
    if level == s:
        parent = {d: parts[d] for d in w.dims}
    moving = [d for d in w.dims if tiles[d][level - 1] < parent[d]]
    still = tuple(d for d in w.dims if d not in moving)
    return [p + still for p in itertools.permutations(moving)]


def spatial_choices(w: Workload, arch: Architecture) -> Iterator[tuple[dict, dict, tuple[SpatialSplit, ...]]]:
    """Every (tiles, parts, splits): the tile chains, the part extents and the splits on mesh axes.

    Most parallel first (largest product of factors), so the compute-time bound bites early.
    """
    depth = arch.depth - 1
    s = meshed_level(arch)
    mesh = arch.levels[s].mesh
    max_factor = max(a.size for a in mesh)
    pinned = bf.pinned_dims(w)
    # The solver's spatial family keeps a filter window's two dimensions temporal (a named restriction).
    windowed = {d for t in w.einsum.inputs for ix in t.indices if sum(w.extent[e] > 1 for e in ix.dims) == 2
                for d in ix.dims if w.extent[d] > 1}
    per_dim = [dim_options(e, depth, s, 1 if d in windowed else max_factor, d in pinned) for d, e in w.extents]
    combos = []
    for combo in itertools.product(*per_dim):
        split = [(d, part, f) for d, (_, part, f) in zip(w.dims, combo) if f > 1]
        for axes in itertools.product(range(len(mesh)), repeat=len(split)):
            used = [1] * len(mesh)
            for (_, _, f), a in zip(split, axes):
                used[a] *= f
            if any(u > ax.size for u, ax in zip(used, mesh)):
                continue
            if any(d in w.tensor(t).dims for (d, _, _), a in zip(split, axes) for t in w.tensor_names
                   if mesh[a].must_share(t, w.is_output(t))):
                continue  # must_reuse: the instances along the axis share t, so the split may not index it
            tiles = {d: chain for d, (chain, _, _) in zip(w.dims, combo)}
            parts = {d: part for d, (_, part, _) in zip(w.dims, combo)}
            splits = tuple(SpatialSplit(d, part, mesh[a].name) for (d, part, _), a in zip(split, axes))
            combos.append((-math.prod(used), len(combos), tiles, parts, splits))
    combos.sort(key=lambda c: (c[0], c[1]))
    for _, _, tiles, parts, splits in combos:
        yield tiles, parts, splits


def make_schedule(w: Workload, arch: Architecture, homes: Mapping[str, str], tiles, splits, orders, keeps) -> Schedule:
    s = meshed_level(arch)
    levels = [LevelMapping(arch.levels[0].name, tuple(w.extents))]
    for i in range(1, arch.depth):
        levels.append(LevelMapping(arch.levels[i].name, tuple((d, tiles[d][i - 1]) for d in w.dims), tuple(orders[i - 1]),
                                   frozenset(t for t in w.tensor_names if i in keeps[t]),
                                   tuple(splits) if i == s else ()))
    home_pairs = tuple((t, homes.get(t, arch.levels[0].name)) for t in w.tensor_names)
    return Schedule(w, arch, tuple(levels), home_pairs)


def family(w: Workload, arch: Architecture) -> Iterator[tuple[dict, tuple[SpatialSplit, ...], tuple[tuple[str, ...], ...]]]:
    """Every (tiles, splits, orders) of the family, grouped by (tiles, splits)."""
    s = meshed_level(arch)
    depth = arch.depth - 1
    for tiles, parts, splits in spatial_choices(w, arch):
        per_level = [_orders(w, tiles, parts, s, i) for i in range(1, depth + 1)]
        for orders in itertools.product(*per_level):
            yield tiles, splits, orders


def family_size(w: Workload, arch: Architecture, homes: Mapping[str, str] = {}) -> tuple[int, int]:
    """(nests, schedules) of the family."""
    s = meshed_level(arch)
    depth = arch.depth - 1
    nests = 0
    for tiles, parts, _ in spatial_choices(w, arch):
        nests += math.prod(len(_orders(w, tiles, parts, s, i)) for i in range(1, depth + 1))
    return nests, nests * len(bf.keep_choices(w, arch, homes))


@dataclass
class SpatialResult:
    value: tuple[Fraction, ...]
    schedule: Schedule  # one optimum, ``predicted`` = the figures it was scored with
    figures: Figures
    optima: int
    nests: int  # (tiles, splits, orders) enumerated
    schedules: int  # nests x keep choices
    replays: int
    pruned: int  # nests skipped by the compute-time bound
    seconds: float
    all_optimal: list[Schedule] = field(default_factory=list)


def _composable(w: Workload, arch: Architecture, homes: Mapping[str, str]) -> bool:
    """Keeps may be scored per tensor: every link has one copy and every tensor at most one free level."""
    s = meshed_level(arch)
    if s != arch.depth - 1:
        return False
    inner = arch.depth - 1
    for t in w.tensor_names:
        home = arch.index(homes.get(t, arch.levels[0].name))
        if len(range(home + 1, inner)) > 1:
            return False
    return True


def _compose(w: Workload, arch: Architecture, home_of, keeps, per: Mapping[bool, Figures], occupancy) -> Figures:
    """Figures of one keep choice from the all-kept and all-bypassed replays (every link one copy)."""
    inner = arch.depth - 1
    links = []
    for a in range(1, arch.depth):
        tt = []
        for t in w.tensor_names:
            kept = any(home_of[t] < i < inner for i in keeps[t])
            tt.append(next(x for x in per[kept].links[a - 1].tensors if x.tensor == t))
        wd = sum(x.words_down for x in tt)
        wu = sum(x.words_up for x in tt)
        links.append(LinkFigures(arch.link_name(a), wd, wu, Fraction(arch.levels[a].link.time(wd, wu)), tuple(tt)))
    base = per[True]
    return Figures(tuple(links), base.op_calls, base.compute_time, base.macs, base.block_macs,
                   tuple((lv.name, o) for lv, o in zip(arch.levels, occupancy)), base.compute_instances, base.busiest_calls)


def _lifted(arch: Architecture) -> Architecture:
    return bf._unbounded(arch)


def brute_force_spatial(w: Workload, arch: Architecture, homes: Mapping[str, str] | Sequence[tuple[str, str]] = (),
                        objective: Objective = Objective(), *, direct: bool = False, keep_all_optima: bool = False,
                        bound: bool = True) -> SpatialResult | None:
    """The optimum of ``objective`` over the spatial family; None when nothing fits.

    ``direct``: replay every schedule as it is (no per-tensor keeps, capacity by the replay);
    ``bound``: use the compute-time bound (objective ``time`` only).
    """
    start = time.perf_counter()
    homes = dict(homes)
    names = w.tensor_names
    home_of = {t: arch.index(homes.get(t, arch.levels[0].name)) for t in names}
    keep_list = bf.keep_choices(w, arch, homes)
    compose = not direct and _composable(w, arch, homes)
    free = _lifted(arch)
    caps = [lv.capacity for lv in arch.levels]
    use_bound = bound and objective.kind == "time"
    best = best_sched = best_fig = None
    all_opt: list[Schedule] = []
    n_opt = n_nests = n_sched = n_replays = n_pruned = 0
    s = meshed_level(arch)
    depth = arch.depth - 1
    for tiles, parts, splits in spatial_choices(w, arch):
        per_level = [_orders(w, tiles, parts, s, i) for i in range(1, depth + 1)]
        order_list = list(itertools.product(*per_level))
        compute_time = None
        occ_of = [bf._occupancy(w, arch, home_of, tiles, keeps) for keeps in keep_list]
        # ``direct`` leaves capacity to the replay (CapacityError); otherwise the occupancy rule skips overflows.
        fits = [direct or all(c is None or o <= c for c, o in zip(caps, occ)) for occ in occ_of]
        if not any(fits):
            n_nests += len(order_list)
            n_sched += len(order_list) * len(keep_list)
            continue
        for orders in order_list:
            n_nests += 1
            n_sched += len(keep_list)
            if use_bound and compute_time is not None and best is not None and compute_time > best[0]:
                n_pruned += 1
                continue
            if compose:
                per = {}
                for kept in (True, False):
                    every = {t: frozenset(i for i in range(home_of[t] + 1, depth + 1) if kept or i == depth) for t in names}
                    per[kept] = replay_figures(make_schedule(w, free, homes, tiles, splits, orders, every))
                    n_replays += 1
                compute_time = Fraction(per[True].compute_time)
            for keeps, occ, ok in zip(keep_list, occ_of, fits):
                if not ok:
                    continue
                if use_bound and compute_time is not None and best is not None and compute_time > best[0]:
                    break
                sched = make_schedule(w, arch, homes, tiles, splits, orders, keeps)
                if compose:
                    fig = _compose(w, arch, home_of, keeps, per, occ)
                else:
                    n_replays += 1
                    try:
                        fig = replay_figures(sched)
                    except CapacityError:
                        continue
                    compute_time = Fraction(fig.compute_time)
                key = objective.key(fig)
                if key is None or (best is not None and key > best):
                    continue
                sched = sched.with_predicted(fig)
                if best is None or key < best:
                    best, n_opt, best_sched, best_fig, all_opt = key, 0, sched, fig, []
                n_opt += 1
                if keep_all_optima:
                    all_opt.append(sched)
    if best is None:
        return None
    return SpatialResult(best, best_sched, best_fig, n_opt, n_nests, n_sched, n_replays, n_pruned,
                         time.perf_counter() - start, all_opt)


def all_scored(w: Workload, arch: Architecture, homes: Mapping[str, str] | Sequence[tuple[str, str]] = ()
               ) -> Iterator[tuple[Schedule, Figures | None]]:
    """Every schedule of the family with its per-tensor-composed figures (None when it overflows): for self-checks."""
    homes = dict(homes)
    assert _composable(w, arch, homes)
    names = w.tensor_names
    home_of = {t: arch.index(homes.get(t, arch.levels[0].name)) for t in names}
    keep_list = bf.keep_choices(w, arch, homes)
    free = _lifted(arch)
    depth = arch.depth - 1
    caps = [lv.capacity for lv in arch.levels]
    for tiles, splits, orders in family(w, arch):
        per = {}
        for kept in (True, False):
            every = {t: frozenset(i for i in range(home_of[t] + 1, depth + 1) if kept or i == depth) for t in names}
            per[kept] = replay_figures(make_schedule(w, free, homes, tiles, splits, orders, every))
        for keeps in keep_list:
            occ = bf._occupancy(w, arch, home_of, tiles, keeps)
            ok = all(c is None or o <= c for c, o in zip(caps, occ))
            yield make_schedule(w, arch, homes, tiles, splits, orders, keeps), (_compose(w, arch, home_of, keeps, per, occ) if ok else None)
