"""Brute force over the solver's spatial family (one or several meshed levels), scored by the replay.

An oracle for the CP-SAT mapper's spatial fanouts that shares nothing with
it: like ``tests/brute_force.py`` (whose pieces it reuses) it imports
nothing from ``mapsearch.model`` or ``mapsearch.solve``. It enumerates,
straight from docs/spatial.md ("What the solver searches"):

- every tile chain ``E >= T_1 >= ... >= T_J >= 1`` of every dimension, the
  pinned dimensions of ``tests/brute_force.py`` held whole; the two
  dimensions of a filter window (an input axis over two) split spatially
  as ``WINDOW_PARTS`` says: ``"all"`` in every part (the contract's
  whole family, and the solver's on cases this small, the default);
  ``"equal_above"`` in every part at the innermost level (L0, which has
  no link below it) and above it only in *equal* parts, which give every
  instance the same part of every parent piece (every level-``(s-1)``
  piece of the instance's tree, whose ancestors' parts are equal too, is
  ``factor * P``: the solver's family before unequal parts above L0, and
  its family still where those would pass its limits); ``"equal"`` in
  equal parts at every level; ``"none"`` never (the family before
  window dimensions were split over mesh axes);
- at every meshed level ``s`` (a level with more than one instance; there
  may be several), per dimension, every part extent ``P_s`` with
  ``T_{s-1} >= P_s >= T_s`` (the contract's parts: each level-``(s-1)``
  piece ``x`` is cut into ``min(P, x - x0)`` for ``x0 = 0, P, 2P, ...``, so
  the last parts may be smaller and some instances idle), ``factor =
  ceil(T_{s-1} / P_s)`` at most the level's largest axis (``T_0 = E``);
  ``P_s = T_{s-1}`` is "not split". A dimension may be split at several
  levels (parts of parts). ``even_only=True`` keeps the older family (``P``
  divides every level-``(s-1)`` piece of the unsplit tiles), to measure what
  unequal parts gain;
- at every meshed level, every assignment of its split dimensions (factor >
  1) to its mesh axes with the product of the factors on each axis at most
  its size, and no split on an axis over a dimension that indexes one of
  its ``must_reuse`` tensors, and every axis's ``split_bounds`` met (a
  dimension's bound on an axis: its factor there, 1 when it is not split
  on it; two split dims on one axis are listed in
  workload order: the instance coordinates are then mixed-radix, first
  listed outermost);
- every loop order of every level below the top, dims that do not advance
  (``T_i`` equal to the parent extent, or to the part at a meshed level)
  innermost in workload order, as in ``tests/brute_force.py``;
- every keep/bypass choice of the levels strictly between a home and L0;
- with ``POSITIONS`` (docs/spatial.md, "Buffer placement above the mesh"
  and "... at and below the mesh"), every position of every buffer within
  its level's range (``position_range``: inside the spatial loops of the
  meshed levels at or above it, outside those below it; above the outermost
  meshed level ``s`` that is ``0 .. (s-1)*D``), non-decreasing going inward,
  an output's too (its buffers are the meshed buffers' keepers: the replay
  flushes idle instances on their region changes). Without
  ``MESHED_POSITIONS`` buffers at and below ``s`` keep their default
  positions (the family before).

Scoring is the replay's (``replay(mode="count")``), with two shortcuts that
change nothing (``tests/solve/test_spatial_vs_brute_force.py`` checks both
against plain replays, schedule by schedule):

- *per-tensor keeps.* The replay's traffic of a tensor depends only on the
  nest and that tensor's own keep levels (every tracker, its keeper and the
  flush rule are per tensor). So when each tensor has one free level (three
  levels, homes at the top) and every link has a single copy (the only mesh
  is at L0), one replay with every tensor kept and one with every tensor
  bypassed give every keep choice's words and link times; capacities are
  checked from the occupancy rule (homes + the first tile of each kept
  tensor, x2 double-buffered when smaller than the tensor), which is the
  replay's per-instance peak (instance 0's part is the largest, and its
  first tile is the level's tile). A placed buffer's traffic is its own
  too, flushes included (they follow that tensor's own keeper): one more
  replay per (kept levels, positions) of a tensor, every tensor's buffers
  so, gives each tensor's words there; its first region is its largest
  (the pieces of its anchor level and the parent, instance 0's part of it
  where the buffer sits inside a split).
  Otherwise (a mesh above L0: the links below it have one copy per
  instance and their time is the busiest copy's) every schedule is replayed
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
from mapsearch.schedule.legality import position_range
from mapsearch.schedule.schedule import LevelMapping, Schedule, SpatialSplit
from mapsearch.sim.errors import CapacityError
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import Workload

__all__ = ["Objective", "SpatialResult", "brute_force_spatial", "family", "meshed_levels", "pieces", "all_scored",
           "equal_parts", "instance_pieces", "window_dims"]


def meshed_levels(arch: Architecture) -> list[int]:
    """The levels with more than one instance, outermost first (at least one)."""
    levels = [i for i, lv in enumerate(arch.levels) if lv.instances > 1]
    assert levels, "a spatial family needs a meshed level"
    return levels


def meshed_level(arch: Architecture) -> int:
    """The outermost meshed level."""
    return meshed_levels(arch)[0]


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
POSITIONS = True  # buffers above the mesh at every position above it (False: default positions only)
OUTPUT_POSITIONS = True  # False: an output's lowest buffer above the mesh at its default position (the family before)
# Buffers at and below meshed levels at every position too (the contract's whole family, docs/spatial.md "Buffer
# placement at and below the mesh"); False (the default): at their default positions, the solver's family.
MESHED_POSITIONS = False
WINDOW_PARTS = "all"  # a filter window's dims: "all", "equal_above" (equal parts above L0), "equal" or "none"


def _largest_axis(arch: Architecture, s: int) -> int:
    return max(a.size for a in arch.levels[s].mesh)


def instance_pieces(extent: int, chain: Sequence[int], parts: Mapping[int, int], digits: Mapping[int, int],
                    level: int) -> list[int]:
    """Extents of one instance's level-``level`` pieces: at a meshed level ``k`` it keeps part ``digits[k]`` of
    every level-``(k-1)`` piece (``parts[k]`` wide, the contract's split with remainder), then tiles it."""
    out = [extent]
    for k in range(1, level + 1):
        nxt = []
        for x in out:
            if k in parts:
                x = min(max(x - digits[k] * parts[k], 0), parts[k])
            nxt += [min(chain[k - 1], x - x0) for x0 in range(0, x, chain[k - 1])]
        out = nxt
    return out


def equal_parts(extent: int, chain: Sequence[int], parts: Mapping[int, int], factors: Mapping[int, int]) -> bool:
    """Every instance gets the same part of every parent piece at every split: each instance's level-``(s-1)``
    pieces are all ``factor * P`` (checked for every digit of every split above, one by one)."""
    split = sorted(s for s in parts if factors[s] > 1)
    for s in split:
        above = [k for k in split if k < s]
        for combo in itertools.product(*(range(factors[k]) for k in above)):
            digits = dict(zip(above, combo))
            own = {k: parts[k] for k in above}
            if any(x != factors[s] * parts[s] for x in instance_pieces(extent, chain, own, digits, s - 1)):
                return False
    return True


def dim_options(extent: int, depth: int, meshed: Sequence[tuple[int, int]], pinned: bool, window: str | None = None
                ) -> list[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    """Per dimension: every (chain, parts, factors) of the family, one part and factor per meshed level.

    ``meshed``: ``(level, largest axis)`` per meshed level; a part is the
    parent extent where the level does not split the dimension.
    ``window``: the dimension is a filter window's, split as ``WINDOW_PARTS``
    says (``"all"``, ``"equal_above"``, ``"equal"``, ``"none"``).
    """
    if pinned:
        chain = (extent,) * depth
        return [(chain, tuple(extent for _ in meshed), tuple(1 for _ in meshed))]
    if window == "none":
        meshed = [(s, 1) for s, _ in meshed]
    out = []
    for chain in bf.chains(extent, depth):
        per_level = []
        for s, max_factor in meshed:
            parent = extent if s == 1 else chain[s - 2]
            above = pieces(extent, chain, s - 1)
            options = []
            for part in range(chain[s - 1], parent + 1):
                if EVEN_ONLY and not all(x % part == 0 for x in above):
                    continue
                factor = -(-parent // part)
                if factor <= max_factor:
                    options.append((part, factor))
            per_level.append(options)
        for combo in itertools.product(*per_level):
            parts, factors = tuple(p for p, _ in combo), tuple(f for _, f in combo)
            levels = [s for s, _ in meshed]
            # "equal_above": the innermost level (depth) may have any part, the levels above equal ones.
            checked = [n for n, s in enumerate(levels) if window == "equal" or (window == "equal_above" and s < depth)]
            if checked and not equal_parts(extent, chain, {levels[n]: parts[n] for n in checked},
                                           {levels[n]: factors[n] for n in checked}):
                continue
            out.append((chain, parts, factors))
    return out


@dataclass(frozen=True)
class Nest:
    tiles: dict  # dim -> chain
    splits: tuple[SpatialSplit, ...]
    orders: tuple[tuple[str, ...], ...]


def _orders(w: Workload, tiles: Mapping[str, tuple[int, ...]], parts: Mapping[int, Mapping[str, int]], level: int):
    parent = {d: w.extent[d] if level == 1 else tiles[d][level - 2] for d in w.dims}
    if level in parts:
        parent = dict(parts[level])
    moving = [d for d in w.dims if tiles[d][level - 1] < parent[d]]
    still = tuple(d for d in w.dims if d not in moving)
    return [p + still for p in itertools.permutations(moving)]


def _axis_assignments(w: Workload, arch: Architecture, s: int, split: list[tuple[str, int, int]]):
    """Every mapping of the level's split dims (``(dim, part, factor)``) to its axes: the splits it gives."""
    mesh = arch.levels[s].mesh
    for axes in itertools.product(range(len(mesh)), repeat=len(split)):
        used = [1] * len(mesh)
        for (_, _, f), a in zip(split, axes):
            used[a] *= f
        if any(u > ax.size for u, ax in zip(used, mesh)):
            continue
        if any(d in w.tensor(t).dims for (d, _, _), a in zip(split, axes) for t in w.tensor_names
               if mesh[a].must_share(t, w.is_output(t))):
            continue  # must_reuse: the instances along the axis share t, so the split may not index it
        on = [{d: f for (d, _, f), a in zip(split, axes) if a == k} for k in range(len(mesh))]
        if not all(rule.holds(on[k]) for k, ax in enumerate(mesh) for rule in ax.split_bounds):
            continue  # split_bounds (loop_bounds): a dimension's bound on an axis is its factor there, else 1
        yield tuple(SpatialSplit(d, part, mesh[a].name) for (d, part, _), a in zip(split, axes)), math.prod(used)


def window_dims(w: Workload) -> set[str]:
    """The dimensions of filter windows: input axes over exactly two dimensions of extent > 1."""
    return {d for t in w.einsum.inputs for ix in t.indices if sum(w.extent[e] > 1 for e in ix.dims) == 2
            for d in ix.dims if w.extent[d] > 1}


def skewed_dims(w: Workload) -> set[str]:
    """The dimensions of extent > 1 of input axes over two or more dimensions one of which, of extent > 1,
    also indexes another axis of the tensor (``I[p+r+u,p]``: p, r, u)."""
    out = set()
    for t in w.einsum.inputs:
        for ix in t.indices:
            again = {d for d in ix.dims if w.extent[d] > 1 and sum(d in jx.dims for jx in t.indices) > 1}
            if len(ix.terms) > 1 and again:
                out |= {d for d in ix.dims if w.extent[d] > 1}
    return out


def hidden_window_dims(w: Workload) -> set[str]:
    """The two dimensions of extent > 1 that alone index a skewed axis (:func:`skewed_dims`) and no other axis of
    its tensor: a filter window hidden in it (``I[p+r+u,p]``: r, u)."""
    skewed = skewed_dims(w)
    out = set()
    for t in w.einsum.inputs:
        for ix in t.indices:
            alone = [d for d in ix.dims if w.extent[d] > 1 and sum(d in jx.dims for jx in t.indices) == 1]
            if set(ix.dims) & skewed and len(alone) == 2:
                out |= set(alone)
    return out


def spatial_choices(w: Workload, arch: Architecture) -> Iterator[tuple[dict, dict, dict]]:
    """Every (tiles, parts, splits): the tile chains, the part extents and the splits on mesh axes, per meshed level.

    ``parts[s][d]`` and ``splits[s]`` per meshed level ``s``. Most parallel
    first (largest product of factors), so the compute-time bound bites early.
    """
    depth = arch.depth - 1
    levels = meshed_levels(arch)
    meshed = [(s, _largest_axis(arch, s)) for s in levels]
    # An axis over three dimensions is held but for its largest (bf.pinned_dims), except a skewed one, whose
    # dimensions are all split (the whole family: I[p+r+u,p], a window r+u hidden beside p).
    pinned = bf.pinned_dims(w) - skewed_dims(w)
    # A filter window's two dimensions are split as WINDOW_PARTS says (by default the solver's family).
    windowed = window_dims(w) | hidden_window_dims(w)
    per_dim = [dim_options(e, depth, meshed, d in pinned, WINDOW_PARTS if d in windowed else None)
               for d, e in w.extents]
    combos = []
    for combo in itertools.product(*per_dim):
        tiles = {d: chain for d, (chain, _, _) in zip(w.dims, combo)}
        parts = {s: {d: ps[n] for d, (_, ps, _) in zip(w.dims, combo)} for n, s in enumerate(levels)}
        per_level = []
        for n, s in enumerate(levels):
            split = [(d, ps[n], fs[n]) for d, (_, ps, fs) in zip(w.dims, combo) if fs[n] > 1]
            per_level.append(list(_axis_assignments(w, arch, s, split)))
        for assignment in itertools.product(*per_level):
            splits = {s: sp for s, (sp, _) in zip(levels, assignment)}
            combos.append((-math.prod(u for _, u in assignment), len(combos), tiles, parts, splits))
    combos.sort(key=lambda c: (c[0], c[1]))
    for _, _, tiles, parts, splits in combos:
        yield tiles, parts, splits


def make_schedule(w: Workload, arch: Architecture, homes: Mapping[str, str], tiles, splits, orders, keeps,
                  positions: Mapping[tuple[str, int], int] = {}) -> Schedule:
    """``splits[s]``: the spatial splits of meshed level ``s``; ``positions[(t, i)]``: a placed buffer."""
    levels = [LevelMapping(arch.levels[0].name, tuple(w.extents))]
    for i in range(1, arch.depth):
        placed = tuple(sorted((t, p) for (t, lv), p in positions.items() if lv == i))
        levels.append(LevelMapping(arch.levels[i].name, tuple((d, tiles[d][i - 1]) for d in w.dims), tuple(orders[i - 1]),
                                   frozenset(t for t in w.tensor_names if i in keeps[t]), tuple(splits.get(i, ())),
                                   placed))
    home_pairs = tuple((t, homes.get(t, arch.levels[0].name)) for t in w.tensor_names)
    return Schedule(w, arch, tuple(levels), home_pairs)


def position_choices(w: Workload, arch: Architecture, keeps) -> list[dict[tuple[str, int], int]]:
    """Every assignment of non-default positions to the buffers (``[{}]`` without ``POSITIONS``).

    Each buffer within :func:`~mapsearch.schedule.legality.position_range` of its level (inside the spatial
    loops of the meshed levels at or above it, outside those below it), a tensor's buffers non-decreasing going
    inward; without ``MESHED_POSITIONS`` only the buffers above the outermost meshed level move.
    """
    if not POSITIONS:
        return [{}]
    D = len(w.dims)
    first = meshed_level(arch)
    ranges = {i: position_range(arch, D, i) for i in range(1, arch.depth)}
    per_tensor = []
    for t in w.tensor_names:
        levels = sorted(i for i in keeps[t] if MESHED_POSITIONS or i < first)
        options = []
        for seq in itertools.product(*(range(ranges[i][0], ranges[i][1] + 1) for i in levels)):
            if any(a > b for a, b in zip(seq, seq[1:])):
                continue
            moved = {i: p for i, p in zip(levels, seq) if p != i * D}
            if not OUTPUT_POSITIONS and w.is_output(t) and any(
                    i < first and not any(k in keeps[t] for k in range(i + 1, first)) for i in moved):
                continue  # the family before: the output's lowest buffer above the mesh at its default position
            options.append({(t, i): p for i, p in moved.items()})
        per_tensor.append(options)
    return [{k: v for part in combo for k, v in part.items()} for combo in itertools.product(*per_tensor)]


def held_extents(w: Workload, tiles, orders, level: int, position: int, parts=None) -> dict[str, int]:
    """Extents of a buffer's first (largest) region: per dimension its anchor level's piece or the parent's.

    Position ``p = (j-1)*D + k`` has the loops of levels ``< j`` and the
    first ``k`` of level ``j`` outside (cost-model.md, "Buffer placement").
    A buffer of a level with instances holds its instance's part of a piece
    whose split lies outside it (a meshed level ``pick + 1 <= level``,
    docs/spatial.md, "Buffer placement at and below the mesh"): instance 0's,
    the largest, ``min(part, piece)``.
    """
    D = len(w.dims)
    if position == 0:
        j, k = 0, D
    else:
        j, k = (position - 1) // D + 1, (position - 1) % D + 1

    def piece(d: str, lv: int) -> int:
        return w.extent[d] if lv == 0 else tiles[d][lv - 1]

    out = {}
    for d in w.dims:
        pick = j if k == D or d in orders[j - 1][:k] else j - 1
        x = piece(d, pick)
        if parts and pick + 1 <= level and pick + 1 in parts:
            x = min(x, parts[pick + 1][d])
        out[d] = x
    return out


def placed_occupancy(w: Workload, arch: Architecture, home_of, tiles, orders, keeps, positions, parts=None) -> list[int]:
    """The occupancy rule of ``tests/brute_force.py`` with placed buffers holding their own first region."""
    out = bf._occupancy(w, arch, home_of, tiles, keeps)
    for (t, i), p in positions.items():
        ext_i = {d: tiles[d][i - 1] for d in w.dims}
        for ext, sign in ((ext_i, -1), (held_extents(w, tiles, orders, i, p, parts), 1)):
            words = w.tensor(t).words(ext)
            out[i] += sign * words * (2 if arch.double_buffering and words < w.tensor_words(t) else 1)
    return out


def family(w: Workload, arch: Architecture) -> Iterator[tuple[dict, dict, tuple[tuple[str, ...], ...]]]:
    """Every (tiles, splits, orders) of the family, grouped by (tiles, splits)."""
    depth = arch.depth - 1
    for tiles, parts, splits in spatial_choices(w, arch):
        per_level = [_orders(w, tiles, parts, i) for i in range(1, depth + 1)]
        for orders in itertools.product(*per_level):
            yield tiles, splits, orders


def family_size(w: Workload, arch: Architecture, homes: Mapping[str, str] = {}) -> tuple[int, int]:
    """(nests, schedules) of the family."""
    depth = arch.depth - 1
    nests = 0
    for tiles, parts, _ in spatial_choices(w, arch):
        nests += math.prod(len(_orders(w, tiles, parts, i)) for i in range(1, depth + 1))
    return nests, nests * len(bf.keep_choices(w, arch, homes))


@dataclass
class SpatialResult:
    value: tuple[Fraction, ...]
    schedule: Schedule  # one optimum, ``predicted`` = the figures it was scored with
    figures: Figures
    optima: int
    nests: int  # (tiles, splits, orders) enumerated
    schedules: int  # nests x keep choices x their positions above the mesh
    replays: int
    pruned: int  # nests skipped by the compute-time bound
    seconds: float
    all_optimal: list[Schedule] = field(default_factory=list)


def _composable(w: Workload, arch: Architecture, homes: Mapping[str, str]) -> bool:
    """Keeps may be scored per tensor: every link has one copy and every tensor at most one free level."""
    if meshed_levels(arch) != [arch.depth - 1]:
        return False
    inner = arch.depth - 1
    for t in w.tensor_names:
        home = arch.index(homes.get(t, arch.levels[0].name))
        if len(range(home + 1, inner)) > 1:
            return False
    return True


def _placed_key(t: str, keeps, positions: Mapping[tuple[str, int], int]) -> tuple:
    """What a tensor's own figures depend on: its kept levels and their positions (``("at", ...)``: not a bool)."""
    return ("at", tuple(sorted(keeps[t])), tuple(sorted((i, p) for (u, i), p in positions.items() if u == t)))


def _placed_replays(w: Workload, free: Architecture, homes, tiles, splits, orders, keep_list, placed):
    """One replay per distinct (kept levels, positions) of a placed tensor, every tensor following it: each
    tensor's figures depend on its own buffers only, so they score every keep and position choice."""
    keys = {}
    for keeps, moves in zip(keep_list, placed):
        for positions in moves:
            for t in {u for u, _ in positions}:
                keys.setdefault(_placed_key(t, keeps, positions), None)
    out = {}
    for key in keys:
        _, levels, where = key
        every = {t: frozenset(levels) for t in w.tensor_names}
        at = {(t, i): p for t in w.tensor_names for i, p in where}
        out[key] = replay_figures(make_schedule(w, free, homes, tiles, splits, orders, every, at))
    return out


def _compose(w: Workload, arch: Architecture, home_of, keeps, per: Mapping[object, Figures], occupancy,
             positions: Mapping[tuple[str, int], int] = {}) -> Figures:
    """Figures of one keep choice from the all-kept, all-bypassed and placed replays (every link one copy)."""
    inner = arch.depth - 1
    links = []
    placed = {t for t, _ in positions}
    for a in range(1, arch.depth):
        tt = []
        for t in w.tensor_names:
            kept = any(home_of[t] < i < inner for i in keeps[t])
            key = _placed_key(t, keeps, positions) if t in placed else kept
            tt.append(next(x for x in per[key].links[a - 1].tensors if x.tensor == t))
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
    depth = arch.depth - 1
    placed = [[pos for pos in position_choices(w, arch, keeps) if pos] for keeps in keep_list]
    per_nest = sum(1 + len(moves) for moves in placed)  # schedules per nest: keep choices x their positions
    for tiles, parts, splits in spatial_choices(w, arch):
        per_level = [_orders(w, tiles, parts, i) for i in range(1, depth + 1)]
        order_list = list(itertools.product(*per_level))
        compute_time = None
        occ_of = [bf._occupancy(w, arch, home_of, tiles, keeps) for keeps in keep_list]
        # ``direct`` leaves capacity to the replay (CapacityError); otherwise the occupancy rule skips overflows
        # (a placed buffer may hold less than its tile: then per orders and positions below).
        fits = [direct or bool(placed[n]) or all(c is None or o <= c for c, o in zip(caps, occ))
                for n, occ in enumerate(occ_of)]
        if not any(fits):
            n_nests += len(order_list)
            n_sched += len(order_list) * per_nest
            continue
        for orders in order_list:
            n_nests += 1
            n_sched += per_nest
            if use_bound and compute_time is not None and best is not None and compute_time > best[0]:
                n_pruned += 1
                continue
            if compose:
                per = {}
                every = {t: frozenset(range(home_of[t] + 1, depth + 1)) for t in names}
                for kept in (True, False):
                    keeps = every if kept else {t: frozenset({depth}) for t in names}
                    per[kept] = replay_figures(make_schedule(w, free, homes, tiles, splits, orders, keeps))
                    n_replays += 1
                placed_per = _placed_replays(w, free, homes, tiles, splits, orders, keep_list, placed)
                per.update(placed_per)
                n_replays += len(placed_per)
                compute_time = Fraction(per[True].compute_time)
            for keeps, occ, ok, moves in zip(keep_list, occ_of, fits, placed):
                if not ok:
                    continue
                if use_bound and compute_time is not None and best is not None and compute_time > best[0]:
                    break
                for positions in [{}] + moves:
                    held = placed_occupancy(w, arch, home_of, tiles, orders, keeps, positions, parts) if positions else occ
                    if not direct and not all(c is None or o <= c for c, o in zip(caps, held)):
                        continue
                    sched = make_schedule(w, arch, homes, tiles, splits, orders, keeps, positions)
                    if compose:
                        fig = _compose(w, arch, home_of, keeps, per, held, positions)
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


def all_scored(w: Workload, arch: Architecture, homes: Mapping[str, str] | Sequence[tuple[str, str]] = (),
               positions: bool = False) -> Iterator[tuple[Schedule, Figures | None]]:
    """Every schedule of the family with its per-tensor-composed figures (None when it overflows): for self-checks.

    ``positions``: the placed schedules too (every position choice of every keep choice), scored as
    :func:`brute_force_spatial` scores them."""
    homes = dict(homes)
    assert _composable(w, arch, homes)
    home_of = {t: arch.index(homes.get(t, arch.levels[0].name)) for t in w.tensor_names}
    keep_list = bf.keep_choices(w, arch, homes)
    free = _lifted(arch)
    depth = arch.depth - 1
    caps = [lv.capacity for lv in arch.levels]
    placed = [[pos for pos in position_choices(w, arch, keeps) if pos] if positions else [] for keeps in keep_list]
    every = {t: frozenset(range(home_of[t] + 1, depth + 1)) for t in w.tensor_names}
    for tiles, parts, splits in spatial_choices(w, arch):
        for orders in itertools.product(*(_orders(w, tiles, parts, i) for i in range(1, depth + 1))):
            yield from _scored_nest(w, arch, homes, home_of, free, caps, every, keep_list, placed,
                                    tiles, parts, splits, orders)


def _scored_nest(w, arch, homes, home_of, free, caps, every, keep_list, placed, tiles, parts, splits, orders):
    """:func:`all_scored`'s schedules of one nest, scored by composing per-tensor replays."""
    depth = arch.depth - 1
    per = {}
    for kept in (True, False):
        keeps = every if kept else {t: frozenset({depth}) for t in w.tensor_names}
        per[kept] = replay_figures(make_schedule(w, free, homes, tiles, splits, orders, keeps))
    per.update(_placed_replays(w, free, homes, tiles, splits, orders, keep_list, placed))
    for keeps, moves in zip(keep_list, placed):
        for where in [{}] + moves:
            occ = placed_occupancy(w, arch, home_of, tiles, orders, keeps, where, parts)
            ok = all(c is None or o <= c for c, o in zip(caps, occ))
            yield (make_schedule(w, arch, homes, tiles, splits, orders, keeps, where),
                   _compose(w, arch, home_of, keeps, per, occ, where) if ok else None)
