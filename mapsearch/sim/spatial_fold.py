"""The counting walk with instances, folded over loop bodies that repeat (docs/spatial.md, "Folding the walk").

:class:`mapsearch.sim.walk_spatial.SpatialWalk` walks lockstep steps; this
module decides which steps it walks. It visits the lockstep nest loop by
loop (level 1's loops in its order, then level 2's, ...), outer to inner,
and walks a loop whose steps are few (:data:`LEAF_CELLS`) in one go. A
larger loop ``(i, k)`` (level ``i``, dimension ``k``) is walked body by
body, its iteration ``t`` being every step under the level-``i`` piece
``t`` of ``k``. Two bodies ``t-1``, ``t`` are *alike* when piece ``t`` has
the sizes of piece ``t-1`` on every instance path and starts ``delta``
further on all of them: then everything inside them has the same sizes and
body ``t`` is body ``t-1`` moved by ``delta`` along ``k``.

The walk's state after body ``t`` is, per tracker: ``carry`` (the region
each instance holds), ``largest``, and for an output the keys entered
before that a later body of the run can enter again (``seen`` within the
union ``F_t`` of the boxes of bodies ``t+1 .. r1``, the run's last alike
body). A tracker whose region follows the loop (its piece of ``k`` lies
inside the level-``i`` piece) *moves*: its regions move by ``c * delta`` on
every axis with a term ``c * k``; the others stay. Everything the walk
computes from regions is an equality between regions of one tracker, a
region's size, or a key that moves with the region, so if the state after
body ``t`` is the state after ``t-1`` moved (``carry_t = tau(carry_{t-1})``,
``largest_t = largest_{t-1}``, ``seen_t & F_t = tau(seen_{t-1} & F_{t-1}) &
F_t``), body ``t+1`` does what body ``t`` did, moved: the same counts, the
same reload decisions, new keys ``tau(new_t)``, and the state after it is
again the moved one (the ``seen`` condition carries over because
``F_{t+1}`` lies inside ``F_t`` and inside ``tau(F_t)``). By induction every
body up to ``r1`` repeats body ``t``: the fold adds ``r1 - t`` times body
``t``'s counts, moves ``carry`` by ``r1 - t`` steps, adds ``tau^m(new_t)``
to ``seen`` for ``m = 1 .. r1 - t`` and goes on after ``r1``. The condition
is checked on the walk's actual state, never assumed; where it fails the
bodies are walked. ``tests/sim/test_spatial_fold.py`` checks folded against
unfolded walks on random schedules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mapsearch.sim.fold_keys import add_moved, in_union, keys_in, move
from mapsearch.sim.pieces import _expand
from mapsearch.sim.spatial_tracker import Tracker

if TYPE_CHECKING:  # the walk drives this module, never the other way round
    from mapsearch.sim.walk_spatial import SpatialWalk

__all__ = ["foldable", "walk_folded", "LEAF_CELLS"]

_I64 = np.int64
# A loop with at most this many (step, walked instance) cells is walked in one go, not body by body.
LEAF_CELLS = 1 << 12
# Checks of one loop that fail before the rest of the loop is walked without trying again.
MAX_TRIES = 6
_HUGE = 1 << 62


@dataclass
class _Body:
    """What the check after the next body compares with: the state after body ``t`` of a run."""

    t: int
    delta: int
    last: int
    carry: dict
    largest: dict
    future: dict  # per output tracker: seen & F_t (sorted keys)


class _Folder:
    def __init__(self, walk: "SpatialWalk"):
        self.walk = walk
        schedule, vt = walk.schedule, walk.vt
        self.vt = vt
        self.nd = walk.nd
        self.depth = walk.depth
        self.orders = [[vt.dims.index(d) for d in schedule.levels[i].order] for i in range(self.depth)]
        self.loops = [(i, k) for i in range(1, self.depth) for k in self.orders[i]]
        self.first_of_level = {}
        for a, (i, _) in enumerate(self.loops):
            self.first_of_level.setdefault(i, a)
        walked = max(walk.lay.count)
        self.walked = walked
        most = [max(1, int(vt.n_children[i - 1][k].max(initial=1))) for i, k in self.loops]
        self.below = [1] * (len(self.loops) + 1)  # steps under one iteration of loop a, at most
        for a in range(len(self.loops) - 1, -1, -1):
            self.below[a] = self.below[a + 1] * most[a]
        # Whether some loop inside loop a could fold: three iterations or more, and not always a leaf.
        self.folds_inside = [False] * (len(self.loops) + 1)
        for a in range(len(self.loops) - 1, -1, -1):
            here = most[a] >= 3 and most[a] * self.below[a + 1] * walked > LEAF_CELLS
            self.folds_inside[a] = self.folds_inside[a + 1] or here
        self.trackers = list(walk.trackers.values())
        self.outputs = [tr for tr in self.trackers if tr.seen is not None]
        dims = schedule.workload.dims
        self.pick = {}
        self.cut = {}
        for tr in self.trackers:
            pieces = schedule.buffer_pieces(tr.tensor, tr.level)
            self.pick[id(tr)] = [pick for pick, _ in pieces]
            # Per dimension, (split column, part) when the buffer holds its instance's part of the piece.
            self.cut[id(tr)] = [walk.lay.split_of[(pick + 1, dims[e])] if cut else None
                                for e, (pick, cut) in enumerate(pieces)]

    # -- steps ------------------------------------------------------------------------------------------
    def steps(self, a: int, parent: np.ndarray, cur: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """The innermost piece ids of the steps of loop ``a``'s iterations ``lo .. hi-1`` in this context."""
        vt = self.vt
        i, _ = self.loops[a]
        rest = self.orders[i][a - self.first_of_level[i]:]
        counts, firsts = [], []
        for r, k in enumerate(rest):
            n = int(vt.n_children[i - 1][k][parent[k]])
            f = int(vt.first_child[i - 1][k][parent[k]])
            if r == 0:
                n, f = hi - lo, f + lo
            counts.append(n)
            firsts.append(f)
        grid = np.indices(counts, dtype=_I64).reshape(len(rest), -1)
        arr = np.repeat(cur[:, None], grid.shape[1], axis=1)
        for r, k in enumerate(rest):
            arr[k] = firsts[r] + grid[r]
        for lev in range(i + 1, self.depth):
            arr = np.concatenate(list(_expand(arr, vt.n_children[lev - 1], vt.first_child[lev - 1],
                                              self.orders[lev], _HUGE)), axis=1)
        return arr

    # -- the nest ---------------------------------------------------------------------------------------
    def node(self, a: int, parent: np.ndarray, cur: np.ndarray) -> None:
        """Walk loop ``a`` (and everything inside it) in the context ``parent`` (level ``i-1`` ids), ``cur``
        (the level-``i`` ids of the loops of level ``i`` outside it)."""
        vt = self.vt
        i, k = self.loops[a]
        n = int(vt.n_children[i - 1][k][parent[k]])
        f = int(vt.first_child[i - 1][k][parent[k]])
        if n * self.below[a + 1] * self.walked <= LEAF_CELLS:
            self.walk.feed(self.steps(a, parent, cur, 0, n))
            return

        def body(t: int) -> None:
            c = cur.copy()
            c[k] = f + t
            if a + 1 == len(self.loops):
                self.walk.feed(c[:, None])
            elif self.loops[a + 1][0] != i:
                self.node(a + 1, c, np.zeros(self.nd, _I64))
            else:
                self.node(a + 1, parent, c)

        if n == 1:
            body(0)
            return
        self.fold(a, i, k, n, f, parent, cur, body)

    def fold(self, a, i, k, n, f, parent, cur, body) -> None:
        """Loop ``a`` body by body; a run of alike bodies whose state repeats is counted, not walked."""
        vt, walk = self.vt, self.walk
        size = vt.size[i][k][f:f + n]
        start = vt.start[i][k][f:f + n]
        step = start[1:] - start[:-1]
        alike = (size[1:] == size[:-1]).all(axis=1) & (step == step[:, :1]).all(axis=1) & (step[:, 0] > 0)
        delta = step[:, 0]  # transition z-1 -> z is alike[z-1], by delta[z-1]
        # A fold after body t needs the transitions into and out of it alike, by one delta.
        check = np.zeros(n, bool)
        check[1:n - 1] = alike[:-1] & alike[1:] & (delta[:-1] == delta[1:])
        ahead = np.logical_or.accumulate(check[::-1])[::-1]  # some check at t or later
        prev: _Body | None = None
        tries = 0
        t = 0
        while t < n:
            if tries >= MAX_TRIES or not ahead[t]:  # nothing (more) to fold here
                self.bulk(a, parent, cur, t, n, body)
                return
            before = _read(walk)
            marks = [len(tr.seen.added) for tr in self.outputs]
            base = walk.base
            body(t)
            if t + 1 >= n or not alike[t]:
                prev = None
                t += 1
                continue
            d = int(delta[t])
            last = t + 1
            while last + 1 < n and alike[last] and int(delta[last]) == d:
                last += 1
            # Per output: the boxes of body t+1 (the run's next), once for the keys kept and the check.
            boxes = {id(tr): self.box(tr, i, k, t + 1, parent, cur, a, size, start) for tr in self.outputs}
            future = {id(tr): self.future(tr, boxes[id(tr)], self.axis_step(tr, i, k, d), last - t - 1)
                      for tr in self.outputs}
            if prev is not None and prev.t == t - 1 and prev.delta == d and prev.last == last:
                if self.repeats(prev, future, boxes, i, k, d, last - t - 1):
                    new = {id(tr): _concat(tr.seen.added[m:]) for tr, m in zip(self.outputs, marks)}
                    self.skip(last - t, i, k, d, _diff(_read(walk), before), walk.base - base, new)
                    t = last + 1
                    prev = None
                    continue
                tries += 1
            prev = _Body(t, d, last, {id(tr): tr.carry.copy() for tr in self.trackers},
                         {id(tr): tr.largest.copy() for tr in self.trackers}, future)
            t += 1

    def bulk(self, a, parent, cur, lo: int, n: int, body) -> None:
        """Loop ``a``'s iterations ``lo .. n-1`` without folding it: bodies that cannot fold inside (too small,
        :data:`LEAF_CELLS`, or no loop of three iterations) in blocks of about a chunk of the walk, the others
        one by one (their own loops may still fold)."""
        if self.below[a + 1] > self.walk.chunk or (self.folds_inside[a + 1] and
                                                    self.below[a + 1] * self.walked > LEAF_CELLS):
            for t in range(lo, n):
                body(t)
            return
        per = max(1, self.walk.chunk // max(1, self.below[a + 1]))
        for b in range(lo, n, per):
            self.walk.feed(self.steps(a, parent, cur, b, min(n, b + per)))

    # -- the state --------------------------------------------------------------------------------------
    def moves(self, tr: Tracker, i: int, k: int) -> bool:
        return self.pick[id(tr)][k] >= i

    def axis_step(self, tr: Tracker, i: int, k: int, d: int) -> np.ndarray:
        """Per region axis: how far the tracker's regions move when the loop's piece moves by ``d``."""
        if not self.moves(tr, i, k):
            return np.zeros(len(tr.axes), _I64)
        return np.array([sum(c * d for e, c in terms if e == k) for terms in tr.axes], _I64)

    def columns(self, tr: Tracker, level: int, e: int) -> np.ndarray:
        """Per instance of the tracker, its column (path) of dimension ``e``'s pieces at ``level``."""
        lay = self.walk.lay
        p = np.zeros(tr.n, _I64)
        for c in lay.split_columns(level, self.vt.dims[e]):
            p = p * lay.splits[c].factor + lay.digits[tr.level][:, c]
        return p

    def box(self, tr: Tracker, i: int, k: int, z: int, parent, cur, a: int, size, start
            ) -> tuple[np.ndarray, np.ndarray]:
        """Per region axis and instance ``(axes, instances)``: the least and greatest ``lo`` of the tracker's
        regions in body ``z`` of loop ``a`` (an instance with no piece there gets an empty box).

        Along ``k`` the tracker holds (its part of) a piece inside body ``z``'s level-``i`` piece if it
        moves, else its level-``pick`` piece. Along a dimension ``e`` whose level-``i`` loop is outside
        loop ``a`` the level-``i`` piece is fixed for the whole body (``cur[e]``), so a tracker that picks
        level ``i`` or deeper holds a piece inside it; otherwise its piece at ``min(pick, i-1)`` (inside
        ``parent``) bounds it. Each bound moves by ``g`` from a body to the next, as the fold needs."""
        vt = self.vt
        lo_e, hi_e = [], []
        empty = np.zeros(tr.n, bool)
        outer = self.orders[i][:a - self.first_of_level[i]]  # level-i loops outside loop a: fixed in ``cur``
        for e in range(self.nd):
            if e == k and self.moves(tr, i, k):
                level, s, z_ = i, start[z], size[z]
            elif e in outer and self.pick[id(tr)][e] >= i:
                level, s, z_ = i, vt.start[i][e][int(cur[e])], vt.size[i][e][int(cur[e])]
            else:
                level = min(self.pick[id(tr)][e], i - 1)
                pid = int(parent[e])
                for lev in range(i - 1, level, -1):
                    pid = int(vt.parent[lev][e][pid])
                s, z_ = vt.start[level][e][pid], vt.size[level][e][pid]
            cols = self.columns(tr, level, e)
            s, z_ = s[cols], z_[cols]
            cut = self.cut[id(tr)][e]
            if cut is not None and level == self.pick[id(tr)][e]:
                off = self.walk.lay.digits[tr.level][:, cut[0]] * cut[1]
                z_ = np.clip(z_ - off, 0, cut[1])
                s = s + off
            empty |= z_ <= 0
            lo_e.append(s)
            hi_e.append(s + z_ - 1)
        zero = np.zeros(tr.n, _I64)
        lo = np.array([sum((c * lo_e[e] for e, c in terms), zero) for terms in tr.axes], _I64).reshape(len(tr.axes), -1)
        hi = np.array([sum((c * hi_e[e] for e, c in terms), zero) for terms in tr.axes], _I64).reshape(len(tr.axes), -1)
        hi[:, empty] = lo[:, empty] - 1
        return lo, hi

    @staticmethod
    def future(tr: Tracker, box: tuple[np.ndarray, np.ndarray], g: np.ndarray, bodies: int) -> np.ndarray:
        """``seen & F_t``: the keys entered so far that lie in ``box`` (body ``t+1``'s) moved ``m * g`` for some
        ``m = 0 .. bodies`` (the run's bodies after ``t``), sorted."""
        lo, hi = box
        coords = keys_in(tr.seen, lo.min(axis=1), (hi + g[:, None] * bodies).max(axis=1))
        keep = in_union(coords, lo, hi, g, bodies)
        return np.ravel_multi_index(tuple(coords[:, keep]), tr.radix) if keep.any() else np.zeros(0, _I64)

    def repeats(self, prev: _Body, future: dict, boxes: dict, i: int, k: int, d: int, bodies: int) -> bool:
        """The state after body ``t`` is the state after ``t-1`` moved by one body."""
        for tr in self.trackers:
            g = self.axis_step(tr, i, k, d)
            if not np.array_equal(tr.largest, prev.largest[id(tr)]):
                return False
            if not np.array_equal(tr.carry, move(prev.carry[id(tr)], g, 1)):
                return False
        for tr in self.outputs:
            g = self.axis_step(tr, i, k, d)
            lo, hi = boxes[id(tr)]
            old = prev.future[id(tr)]
            coords = np.array(np.unravel_index(old, tr.radix), _I64).reshape(len(tr.radix), -1)
            coords[1:] += g[:, None]
            keep = in_union(coords, lo, hi, g, bodies)
            moved = np.sort(np.ravel_multi_index(tuple(coords[:, keep]), tr.radix)) if keep.any() else old[:0]
            if not np.array_equal(moved, future[id(tr)]):
                return False
        return True

    def skip(self, times: int, i, k, d, delta, steps: int, new: dict) -> None:
        """Count ``times`` more bodies like the last one, and move the state past them."""
        walk = self.walk
        _write(walk, delta, times)
        walk.base += times * steps
        for tr in self.trackers:
            g = self.axis_step(tr, i, k, d)
            tr.carry = move(tr.carry, g, times)
        for tr in self.outputs:
            keys = new[id(tr)]
            g = self.axis_step(tr, i, k, d)
            if len(keys) and g.any():
                walk.count_cells(times * len(keys))  # keys the unfolded walk would have entered: its work
                add_moved(tr, keys, g, times)


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, _I64)


def _read(walk: "SpatialWalk") -> list:
    """Every counter of the walk, in a fixed order."""
    out: list = [walk.op_calls, walk.busiest]
    for tr in walk.trackers.values():
        for j in tr.copies:
            out += [tr.down[j].copy(), tr.up[j].copy(), tr.down_total[j], tr.up_total[j]]
    return out


def _diff(after: list, before: list) -> list:
    return [x - y for x, y in zip(after, before)]


def _write(walk: "SpatialWalk", delta: list, times: int) -> None:
    """Add ``times`` x ``delta`` (as :func:`_read` lists them) to the walk's counters."""
    walk.op_calls += times * delta[0]
    walk.busiest += times * delta[1]
    a = 2
    for tr in walk.trackers.values():
        for j in tr.copies:
            tr.down[j] += times * delta[a]
            tr.up[j] += times * delta[a + 1]
            tr.down_total[j] += times * delta[a + 2]
            tr.up_total[j] += times * delta[a + 3]
            a += 4


def foldable(walk: "SpatialWalk") -> bool:
    """The fold moves regions forward along a loop: every index coefficient is >= 0."""
    return all(c >= 0 for tr in walk.trackers.values() for terms in tr.axes for _, c in terms)


def walk_folded(walk: "SpatialWalk") -> None:
    """Walk the whole lockstep nest with ``walk``, counting repeated bodies instead of walking them
    (:func:`foldable` schedules only)."""
    folder = _Folder(walk)
    if not folder.loops:
        walk.feed(np.zeros((walk.nd, 1), _I64))
        return
    folder.node(0, np.zeros(walk.nd, _I64), np.zeros(walk.nd, _I64))
