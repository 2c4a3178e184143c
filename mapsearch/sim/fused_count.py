"""Count replay of a fused chain (``replay_fused(fs, "count")``): each stage's walk, tile by tile or folded.

A fused chain (docs/fusion.md) runs every stage's own loop nest: levels
``1..f`` shared, levels ``f+1..L0`` a sub-nest run per level-``f`` tile. The
count replay walks each stage's tile sequence and counts region changes
along it, with one rule the single-einsum walk lacks: a buffer below ``f``
enters at the first step of every run, even into an equal region (the runs
start empty). Per stage it either

- visits every tile of every level it counts at (:func:`_walk_stage`:
  :func:`mapsearch.sim.pieces.tile_chunks` and ``BufferCounter.feed``'s ``start``), or
- above ``explicit_tiles`` innermost tiles, walks the same sequence folded
  (:func:`mapsearch.sim.walk_folded.fold_counts` with ``runs_below=f``):
  each kind of loop body counted once, the run starts forced on the steps
  between bodies of the loops of levels ``1..f``.

Both give every buffer's entries, words, partial-sum reloads and largest
region; :func:`count_fused` routes them onto the links and sums the
occupancy. No formula: region changes along the visited sequence.
``tests/sim/test_fused_fold.py`` checks the fold against the tile-by-tile
walk and the events replay. This module imports nothing from
``mapsearch.model`` or ``mapsearch.solve``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim import buffers
from mapsearch.sim.buffers import BufferCounter, route
from mapsearch.sim.pieces import CHUNK, check_capacity, piece_tables, tile_chunks
from mapsearch.sim.walk_folded import BufferCount, fold_counts, innermost_tiles

__all__ = ["count_fused", "fused_count_tiles", "EXPLICIT_TILES"]

# Above this many innermost tiles a stage is walked folded. Lower than the single-einsum walk's 2^22: a fused
# stage's walk visits about 5 M tiles a second and a chain has many stages (AlexNet's 2.3 M and 4.1 M tile stages
# walked took 1.2 s of the whole chain's 1.3 s), while a fold costs milliseconds; small stages are still walked
# tile by tile, so the fused tests' small chains keep checking the direct walk against the events replay.
EXPLICIT_TILES = 1 << 16


def _folds(stage: Schedule, explicit_tiles: int) -> bool:
    """True when the stage is walked folded: more innermost tiles than the tile-by-tile walk should visit."""
    return innermost_tiles(stage) > explicit_tiles


def fused_count_tiles(fs: FusedSchedule, explicit_tiles: int = EXPLICIT_TILES) -> int:
    """Tiles the count replay of ``fs`` visits one by one: per stage walked tile by tile, every tile of each level
    that keeps a tensor and of the innermost level; a folded stage visits none. From the piece tables, no walk."""
    total = 0
    for st in fs.stages:
        if _folds(st, explicit_tiles):
            continue
        tables = piece_tables(st)
        inner = st.architecture.depth - 1
        for i in range(st.architecture.depth):
            if i == inner or any(st.keeps(t, i) for t in st.workload.tensor_names):
                total += math.prod(tables.count(i, k) for k in range(len(tables.dims)))
    return total


def count_fused(fs: FusedSchedule, chunk: int | None = None, explicit_tiles: int = EXPLICIT_TILES) -> Figures:
    """The figures of ``fs`` counted by walking each stage (folded above ``explicit_tiles`` innermost tiles).

    The schedule must be legal (``fused_violations``); raises ``CapacityError`` when a level overflows.
    Occupancy per docs/fusion.md: levels ``<= f`` hold the homes, every stage's buffers and (at ``f``) each
    intermediate's level-``f`` tile; a level below ``f`` the largest over the stages of that stage's buffers.
    """
    chunk = CHUNK if chunk is None else chunk
    g, arch, f = fs.graph, fs.architecture, fs.fusion_level
    depth = arch.depth
    names = g.tensor_names
    inter = set(g.intermediates)
    down = [dict.fromkeys(names, 0) for _ in range(depth)]
    up = [dict.fromkeys(names, 0) for _ in range(depth)]
    op_calls = 0
    shared_alloc: list[list[tuple[str, int]]] = [[] for _ in range(depth)]  # levels <= f: every stage at once
    owner: dict[str, int] = {}
    for n, e in enumerate(g.einsums):
        for t in e.tensors:
            owner.setdefault(t.name, n)
    for t in names:
        if t not in inter:
            st = fs.stages[owner[t]]
            shared_alloc[st.home(t)].append((f"{t} (home)", st.workload.tensor_words(t)))
    stage_alloc: list[list[list[tuple[str, int]]]] = [[[] for _ in range(depth)] for _ in fs.stages]
    for e, st in enumerate(fs.stages):
        if _folds(st, explicit_tiles):
            calls, counts = fold_counts(st, runs_below=f)
        else:
            calls, counts = _walk_stage(st, f, chunk)
        op_calls += calls
        for c in counts:
            (shared_alloc[c.level] if c.level <= f else stage_alloc[e][c.level]).append((c.tensor, c.largest))
            route(c, st.keeper_above(c.tensor, c.level), c.level, c.tensor, down, up)
    for t in g.intermediates:
        p = fs.stages[owner[t]]
        shared_alloc[f].append((f"{t} (fused)", p.workload.tensor(t).words(p.tile_extents(f))))
    occupancy = []
    for i, level in enumerate(arch.levels):
        if i <= f:
            words = check_capacity(level.name, level.capacity, shared_alloc[i])
        else:
            words = max(check_capacity(level.name, level.capacity, stage_alloc[e][i]) for e in range(len(fs.stages)))
        occupancy.append((level.name, words))
    links = []
    for j in range(1, depth):
        link = arch.levels[j].link
        wd, wu = sum(down[j].values()), sum(up[j].values())
        listed = [t for t in names if j > f or t not in inter]  # intermediates never cross a link at or above f
        links.append(LinkFigures(arch.link_name(j), wd, wu, Fraction(link.time(wd, wu)),
                                 tuple(TensorTraffic(t, down[j][t], up[j][t]) for t in listed)))
    return Figures(
        links=tuple(links),
        op_calls=op_calls,
        compute_time=op_calls * Fraction(arch.compute.clocks_per_call),
        macs=g.macs,
        block_macs=arch.compute.block_macs,
        occupancy=tuple(occupancy),
        compute_instances=1,
        busiest_calls=op_calls,
    )


def _walk_stage(st: Schedule, f: int, chunk: int) -> tuple[int, list[BufferCount]]:
    """Op calls and every kept buffer's count (levels top first, tensors in workload order) of one stage, by
    visiting every tile of every level it counts at: a buffer at level ``i`` sees level ``i``'s tiles in
    execution order, and below ``f`` the first tile of each level-``f`` run (its level-``f`` ancestor
    changes) is an entry."""
    arch = st.architecture
    depth = arch.depth
    inner = depth - 1
    wl = st.workload
    tables = piece_tables(st)
    nd = len(tables.dims)
    block = [arch.compute.block_extent(d) for d in tables.dims]
    # anc[i][k]: the level-f piece of dim k that each level-i piece lies in.
    anc: dict[int, list[np.ndarray]] = {}
    for i in range(f + 1, depth):
        per = []
        for k in range(nd):
            m = np.arange(tables.count(i, k), dtype=np.int64)
            for lvl in range(i, f, -1):
                parent = np.repeat(np.arange(tables.count(lvl - 1, k), dtype=np.int64), tables.n_children[lvl - 1][k])
                m = parent[m]
            per.append(m)
        anc[i] = per
    radix_f = tuple(tables.count(f, k) for k in range(nd))
    op_calls = 0
    out: list[BufferCount] = []
    for i in range(depth):
        counters = {t: BufferCounter(st, tables, t, i) for t in wl.tensor_names if st.keeps(t, i)}
        calls_per_piece = [-(-tables.size[i][k] // block[k]) for k in range(nd)] if i == inner else None
        if not counters and calls_per_piece is None:
            continue
        prev_run = None
        for pid in tile_chunks(st, tables, i, chunk):
            start = None
            if i > f:
                run = np.ravel_multi_index(tuple(anc[i][k][pid[k]] for k in range(nd)), radix_f)
                start = np.zeros(pid.shape[1], bool)
                start[1:] = run[1:] != run[:-1]
                start[0] = prev_run is None or int(run[0]) != prev_run
                prev_run = int(run[-1])
            for c in counters.values():
                c.feed(pid, start)  # start: the first tile of a sub-nest run enters whatever its region
            if calls_per_piece is not None:
                op_calls += buffers.chunk_calls(pid, calls_per_piece)
        out += [BufferCount(t, i, c.is_output, c.words, c.reload, c.largest, c.entries) for t, c in counters.items()]
    return op_calls, out

