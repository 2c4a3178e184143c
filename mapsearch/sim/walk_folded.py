"""Counting replay of large schedules: the walk of the loop nest, folded over translated subtrees.

:mod:`mapsearch.sim.walk` visits every tile; a 65536^3 matmul with L0 tiles
of 16x16x2 has 2^39 of them, more than any machine walks. This module walks
the same sequence, loop by loop, but visits each *kind* of loop body once.

The nest is one sequence of loops (level 1's order, then level 2's, ...;
the contract's flat nest). A loop over dimension ``d`` of level ``i`` cuts
the current piece of ``d`` (size ``S``) into ``n = ceil(S/T)`` pieces:
``n-1`` full ones of ``T`` and a last one of ``S-(n-1)T``. What happens
inside one iteration (its *body*: every loop further in) depends only on the
sizes of the current pieces of every dimension, up to a translation: every
region a buffer reads is a box of intervals ``[sum c*lo, sum c*hi]`` over
the pieces' starts, so moving a piece moves every region by the same
vector and leaves every comparison between two regions of the body as it
was. So the walk summarises a body once per tuple of current piece sizes
(:class:`_Span`, memoised) and puts a loop's bodies together:

- the changes of region *inside* the bodies: ``n-1`` times a full body's,
  plus the last body's;
- the changes *between* bodies: the last region of body ``x-1`` against the
  first of body ``x`` moved by ``T`` along ``d``, compared as regions (every
  full-to-full step is the same comparison; the step into the last body is
  its own);
- an output's partial-sum reloads (an entry into a region entered before,
  keyed as in :class:`mapsearch.sim.buffers.BufferCounter` by the pieces of
  the output's dimensions): over a dimension of the output the bodies hold
  disjoint pieces of it, so each body reloads what it reloads alone; over
  any other dimension body ``x >= 1`` visits the same pieces of the
  output's dimensions as body 0, so every entry in it is a reload.

A buffer at nest position ``p`` (``Schedule.position``) sees the first ``p``
loops; inside the others its region stays put. Op calls add up the same
way. Every figure is an exact integer; nothing is a closed-form traffic
formula of the solver's, and ``tests/sim/test_walk_folded.py`` checks the
fold against the tile-by-tile walk on random schedules (windows, placed
buffers, remainders, homes, bypass, block ops, double buffering).

The fused chain's count replay (:mod:`mapsearch.sim.fused_count`) folds each
stage with one more rule (``fold_counts(..., runs_below=f)``): below the
fusion level ``f`` every level-``f`` tile is a sub-nest run that starts
empty, so for a buffer below ``f`` every step between two bodies of a loop
of levels ``1..f`` (the level-``f`` tile changes there, and only there) is
an entry, even into an equal region. The reload rule above is unchanged by
it: a forced entry is one more entry of the step between bodies, reloading
exactly when that step's regions were entered before.
``tests/sim/test_fused_fold.py`` checks it against the fused tile walk and
the events replay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from mapsearch.schedule.figures import Figures
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.buffers import figures_from_counts, level_occupancy, route
from mapsearch.sim.spatial import compute_instances

__all__ = ["BufferCount", "fold_counts", "fold_figures", "innermost_tiles"]

Region = tuple[tuple[int, int], ...]  # per axis: (lo, hi), relative to the body's piece starts


@dataclass(frozen=True)
class _Buffer:
    """One (tensor, level) buffer: how its region reads the pieces, and how many loops it sees."""

    tensor: str
    level: int
    axes: tuple[tuple[tuple[int, int], ...], ...]  # per axis: (dim index, coefficient) terms
    out_dims: frozenset[int] | None  # an output's dimensions; None for an input
    sees: int  # loops of the flat nest outside it (its position)
    forced: int = 0  # loops ``k < forced`` start a new run at every step between bodies: an entry even if equal

    def region(self, sizes: Sequence[int]) -> Region:
        """The region it holds at the start of a body whose pieces have ``sizes``."""
        return tuple((0, sum(c * (sizes[k] - 1) for k, c in terms)) for terms in self.axes)


@dataclass(frozen=True)
class _Span:
    """What one buffer counts over a body: entries after its first step, and the regions at its ends."""

    changes: int  # region changes between consecutive steps of the body
    words: int  # words of the regions entered at those changes
    reload: int  # outputs: of those words, the ones entering a region entered before
    largest: int  # the largest region held in the body
    first: Region
    last: Region


def _words(region: Region) -> int:
    return math.prod(hi - lo + 1 for lo, hi in region)


def _moved(region: Region, shift: tuple[int, ...]) -> Region:
    return tuple((lo + s, hi + s) for (lo, hi), s in zip(region, shift))


@dataclass(frozen=True)
class _Loop:
    dim: int
    tile: int


class _Fold:
    """The memoised walk: ``body(k, sizes)`` summarises loops ``k..`` given the current piece sizes."""

    def __init__(self, loops: list[_Loop], buffers: list[_Buffer], block: list[int]):
        self.loops = loops
        self.buffers = buffers
        self.block = block
        self.memo: dict[tuple[int, tuple[int, ...]], tuple[int, tuple[_Span, ...]]] = {}
        # Shift of each buffer's axes when the piece of each dim moves by one word.
        self.coef = [[tuple(dict(terms).get(d, 0) for terms in b.axes) for d in range(len(block))] for b in buffers]

    def body(self, k: int, sizes: tuple[int, ...]) -> tuple[int, tuple[_Span, ...]]:
        """(op calls, per buffer its span) of loops ``k..`` inside pieces of ``sizes``."""
        key = (k, sizes)
        got = self.memo.get(key)
        if got is not None:
            return got
        if k == len(self.loops):
            calls = math.prod(-(-s // b) for s, b in zip(sizes, self.block))
            spans = tuple(self._still(b, sizes) for b in self.buffers)
            got = (calls, spans)
        else:
            got = self._loop(k, sizes)
        self.memo[key] = got
        return got

    @staticmethod
    def _still(b: _Buffer, sizes: tuple[int, ...]) -> _Span:
        region = b.region(sizes)
        return _Span(0, 0, 0, _words(region), region, region)

    def _loop(self, k: int, sizes: tuple[int, ...]) -> tuple[int, tuple[_Span, ...]]:
        loop = self.loops[k]
        d, tile = loop.dim, loop.tile
        whole = sizes[d]
        n = -(-whole // tile)
        if n == 1:  # one piece, the whole parent: the body is the loop's only iteration
            return self.body(k + 1, sizes)
        full = self.body(k + 1, sizes[:d] + (tile,) + sizes[d + 1:])
        last = self.body(k + 1, sizes[:d] + (whole - (n - 1) * tile,) + sizes[d + 1:])
        calls = (n - 1) * full[0] + last[0]
        spans = []
        for b, buf in enumerate(self.buffers):
            f, l = full[1][b], last[1][b]
            if k >= buf.sees:  # a loop inside the buffer: its region stays the current pieces'
                spans.append(self._still(buf, sizes))  # (spans of loops further in are never read)
                continue
            shift = tuple(c * tile for c in self.coef[b][d])
            forced = k < buf.forced  # the step starts a new sub-nest run: an entry whatever the regions
            into_full = forced or _moved(f.first, shift) != f.last  # step from a full body into the next full one
            into_last = forced or _moved(l.first, shift) != f.last  # step from the last full body into the last
            steps_ff = n - 2
            words_ff = steps_ff * into_full * _words(f.first)
            words_fl = into_last * _words(l.first)
            changes = (n - 1) * f.changes + l.changes + steps_ff * into_full + into_last
            words = (n - 1) * f.words + l.words + words_ff + words_fl
            if buf.out_dims is None:
                reload = 0
            elif d in buf.out_dims:  # bodies hold disjoint pieces of the output: each reloads alone
                reload = (n - 1) * f.reload + l.reload
            else:  # bodies 1.. revisit body 0's pieces of the output: their every entry reloads
                reload = f.reload + (n - 2) * f.words + l.words + words_ff + words_fl
            last_region = _moved(l.last, tuple(c * (n - 1) * tile for c in self.coef[b][d]))
            spans.append(_Span(changes, words, reload, max(f.largest, l.largest), f.first, last_region))
        return calls, tuple(spans)


def _flat_loops(schedule: Schedule) -> list[_Loop]:
    dims = schedule.workload.dims
    return [_Loop(dims.index(d), int(schedule.tile_extents(i)[d]))
            for i in range(1, len(schedule.levels)) for d in schedule.levels[i].order]


def _buffers(schedule: Schedule, runs_below: int | None = None) -> list[_Buffer]:
    """Every kept buffer, levels top first, tensors in workload order (the walk's order).

    With ``runs_below = f`` (a fused stage) each buffer holds its level's tile (the fused replay walks
    level ``i``'s tiles for a buffer at level ``i``: no placement) and a buffer below ``f`` is forced to
    enter at every step of the loops of levels ``1..f``.
    """
    wl = schedule.workload
    dims = wl.dims
    out = []
    for i in range(len(schedule.levels)):
        for t in wl.tensor_names:
            if not schedule.keeps(t, i):
                continue
            access = wl.tensor(t)
            axes = tuple(tuple((dims.index(d), c) for d, c in ix.terms) for ix in access.indices)
            out_dims = frozenset(dims.index(d) for d in access.dims_in_order()) if wl.is_output(t) else None
            if runs_below is None:
                out.append(_Buffer(t, i, axes, out_dims, schedule.position(t, i)))
            else:
                forced = runs_below * len(dims) if i > runs_below else 0
                out.append(_Buffer(t, i, axes, out_dims, i * len(dims), forced))
    return out


def innermost_tiles(schedule: Schedule) -> int:
    """How many innermost tiles the tile-by-tile walk visits (the product over dims of their pieces)."""
    wl = schedule.workload
    total = 1
    for d in wl.dims:
        sizes = {wl.extent[d]: 1}
        for i in range(1, len(schedule.levels)):
            tile = int(schedule.tile_extents(i)[d])
            nxt: dict[int, int] = {}
            for s, m in sizes.items():
                n = -(-s // tile)
                if n > 1:
                    nxt[tile] = nxt.get(tile, 0) + (n - 1) * m
                r = s - (n - 1) * tile
                nxt[r] = nxt.get(r, 0) + m
            sizes = nxt
        total *= sum(sizes.values())
    return total


@dataclass(frozen=True)
class BufferCount:
    """What a walk counted of one (tensor, level) buffer: what :func:`mapsearch.sim.buffers.route` and the
    occupancy read (``words``: every entered region's, the first included; ``reload``: an output's entries
    into a region entered before; ``entries``: how many entries)."""

    tensor: str
    level: int
    is_output: bool
    words: int
    reload: int
    largest: int
    entries: int


def fold_counts(schedule: Schedule, runs_below: int | None = None) -> tuple[int, list[BufferCount]]:
    """Op calls and every kept buffer's count (levels top first, tensors in workload order), by the folded walk.

    ``runs_below = f``: ``schedule`` is a stage of a fused chain fused at level ``f``; its buffers below ``f``
    enter at the first step of every level-``f`` tile (docs/fusion.md, "Sub-nest runs"), and no buffer is
    placed. Exact for the same reason as the plain fold: a body's counts depend only on its pieces' sizes,
    and the forced entries fall exactly on the steps between bodies of the loops of levels ``1..f``.
    """
    wl, arch = schedule.workload, schedule.architecture
    buffers = _buffers(schedule, runs_below)
    fold = _Fold(_flat_loops(schedule), buffers, [arch.compute.block_extent(d) for d in wl.dims])
    op_calls, spans = fold.body(0, tuple(wl.extent[d] for d in wl.dims))
    counts = [BufferCount(buf.tensor, buf.level, buf.out_dims is not None, _words(span.first) + span.words,
                          span.reload, span.largest, 1 + span.changes) for buf, span in zip(buffers, spans)]
    return op_calls, counts


def fold_figures(schedule: Schedule) -> Figures:
    """Figures of ``schedule`` (no spatial splits) by the folded walk; raises ``CapacityError`` on overflow.

    Equal to :func:`mapsearch.sim.walk.count_figures` on every schedule it takes.
    """
    wl, arch = schedule.workload, schedule.architecture
    depth = arch.depth
    names = wl.tensor_names
    op_calls, counts = fold_counts(schedule)
    down = [dict.fromkeys(names, 0) for _ in range(depth)]
    up = [dict.fromkeys(names, 0) for _ in range(depth)]
    held: dict[int, list[tuple[str, int, int]]] = {}  # level -> (tensor, largest region, entries)
    for c in counts:
        route(c, schedule.keeper_above(c.tensor, c.level), c.level, c.tensor, down, up)
        held.setdefault(c.level, []).append((c.tensor, c.largest, c.entries))
    occupancy = level_occupancy(schedule, held)
    return figures_from_counts(schedule, down, up, occupancy, op_calls, compute_instances(schedule))
