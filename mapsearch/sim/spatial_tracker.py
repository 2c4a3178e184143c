"""One (tensor, level) of the counting walk with instances: its regions per instance, and what it counted.

Split from :mod:`mapsearch.sim.walk_spatial` (which drives the trackers over
the lockstep steps) so that :mod:`mapsearch.sim.spatial_fold` can read and
move a tracker's state: ``carry`` (the region each instance holds),
``largest`` (its largest region), ``seen`` (outputs: the (instance, region)
keys entered before, with ``seen.added`` the keys in the order they were
first entered) and the counters.
"""

from __future__ import annotations

import numpy as np

from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.key_set import Seen
from mapsearch.sim.spatial import Layout

_I64 = np.int64
END = np.iinfo(np.int64).max // 2  # the step of the final stores


def sum_by(copy: np.ndarray, values: np.ndarray, ncopies: int) -> np.ndarray:
    out = np.zeros(ncopies, _I64)
    np.add.at(out, copy, values)
    return out


def distinct(cols: list[np.ndarray], copy: np.ndarray) -> np.ndarray:
    """Indices of the first of each distinct row ``(cols..., copy)`` (one crossing per group and copy)."""
    rows = np.stack(cols + [copy], axis=1)
    _, first = np.unique(rows, axis=0, return_index=True)
    return first


class Tracker:
    """One (tensor, level): the wanted region per instance carried across chunks, and what was counted."""

    def __init__(self, schedule: Schedule, layout: Layout, tensor: str, level: int):
        wl = schedule.workload
        self.tensor = tensor
        self.level = level
        self.is_output = wl.is_output(tensor)
        dims = wl.dims
        axes = [tuple((dims.index(d), c) for d, c in ix.terms) for ix in wl.tensor(tensor).indices]
        # A rank-0 tensor gets one axis with no terms: its region is always [0, 0], one word.
        self.axes = axes or [()]
        self.n = layout.count[level]
        self.src = schedule.keeper_above(tensor, level)
        self.flushable = self.is_output and self.src != schedule.home(tensor)
        self.keeper = layout.ancestor(level, self.src)
        self.gid = layout.group(level, tensor)
        self.copies = {j: layout.link_copy(level, j) for j in range(self.src + 1, level + 1)}
        self.ncopies = {j: layout.count[j - 1] for j in self.copies}
        ncol = 2 * len(self.axes)
        self.carry = np.full((ncol, self.n), -1, _I64)  # -1: holds nothing
        self.largest = np.zeros(self.n, _I64)
        # Per link copy, the words of the copy a walked instance is (its own digits): for the link time.
        self.down = {j: np.zeros(self.ncopies[j], _I64) for j in self.copies}
        self.up = {j: np.zeros(self.ncopies[j], _I64) for j in self.copies}
        # All copies together, each walked crossing weighed by the instances it stands for (collapsed layout).
        self.down_total = dict.fromkeys(self.copies, 0)
        self.up_total = dict.fromkeys(self.copies, 0)
        self._weights(layout)
        self.radix = None
        self.seen: Seen | None = None  # outputs: keys (instance, region) entered before
        if self.is_output:
            self.radix = (self.n,) + tuple(int(x) for x in (wl.tensor_shape(tensor) or (1,)))
            self.seen = Seen(self.radix)
        self.change: np.ndarray | None = None  # this chunk's change mask, for the levels below

    def _weights(self, layout: Layout) -> None:
        """Weights of a walked crossing on link ``j`` (all 1 when every instance is walked).

        A walked instance stands for the instances whose digits are in its
        classes (``Layout.mult``). Below copy ``j`` (splits at levels >= j), a
        group is told apart by its digits of the splits that may not share the
        tensor: ``inside[j]`` groups of the copy cross alike. Above it, every
        digit tells copies apart: ``copies_alike[j]`` copies cross alike. A
        reload goes to the lowest instance of its group only, so only the
        copies whose shareable digits are the lowest of their class (the
        walked ones) take it: ``reload_alike[j]``.
        """
        cols = layout.split_columns(self.level)
        ns = [c for c in cols if not layout.shareable(layout.splits[c], self.tensor)]
        lvl = {c: layout.splits[c].level for c in cols}
        self.inside = {j: layout.weight(self.level, [c for c in ns if lvl[c] >= j]) for j in self.copies}
        self.copies_alike = {j: layout.weight(self.level, [c for c in cols if lvl[c] < j]) for j in self.copies}
        self.reload_alike = {j: layout.weight(self.level, [c for c in ns if lvl[c] < j]) for j in self.copies}

    def _cross(self, j: int, x: np.ndarray, words: np.ndarray, alike: dict, per_copy: dict, totals: dict) -> None:
        """Add the crossings of walked instances ``x`` (one row each) on link ``j``."""
        w = words * self.inside[j][x]
        per_copy[j] += sum_by(self.copies[j][x], w, self.ncopies[j])
        totals[j] += int((w * alike[j][x]).sum())

    def regions(self, start: list[np.ndarray], size: list[np.ndarray]) -> np.ndarray:
        """``(2*axes, steps, instances)``: lo, hi per axis of the tiles (valid where active)."""
        cols = []
        for terms in self.axes:
            zero = np.zeros_like(start[0])  # the shape of a region column, also for an axis with no terms
            lo = sum((c * start[k] for k, c in terms), zero)
            hi = sum((c * (start[k] + size[k] - 1) for k, c in terms), zero)
            cols += [lo, hi]
        return np.stack(cols)

    def feed(self, base: int, active: np.ndarray, region: np.ndarray, keeper_change: np.ndarray | None) -> None:
        n, nx = active.shape
        setm = active.copy()
        if self.flushable and keeper_change is not None:
            setm |= keeper_change[:, self.keeper]
        vals = np.where(active[None], region, -1)
        ext_vals = np.concatenate([self.carry[:, None, :], vals], axis=1)  # (ncol, n+1, nx)
        ext_set = np.concatenate([np.ones((1, nx), bool), setm], axis=0)
        idx = np.where(ext_set, np.arange(n + 1, dtype=_I64)[:, None], 0)
        np.maximum.accumulate(idx, axis=0, out=idx)
        filled = np.take_along_axis(ext_vals, np.broadcast_to(idx[None], ext_vals.shape), axis=1)
        prev, cur = filled[:, :-1], filled[:, 1:]
        change = (prev != cur).any(axis=0)
        self.change = change
        self.carry = filled[:, -1].copy()
        held_cur = cur[0] >= 0
        held_prev = prev[0] >= 0
        entry = change & held_cur
        exit_ = change & held_prev
        steps = base + np.arange(n, dtype=_I64)[:, None]
        # Entries.
        r, x = np.nonzero(entry)
        if len(r):
            reg = cur[:, r, x]
            words = self._words(reg)
            np.maximum.at(self.largest, x, words)
            st = steps[r, 0]
            if not self.is_output:
                for j in self.copies:
                    f = distinct([st, self.gid[x]] + list(reg), self.copies[j][x])
                    self._cross(j, x[f], words[f], self.copies_alike, self.down, self.down_total)
            else:
                self._reloads(st, x, reg, words)
        # Exits (outputs: stores).
        if self.is_output:
            r, x = np.nonzero(exit_)
            if len(r):
                reg = prev[:, r, x]
                self._stores(steps[r, 0], x, reg)

    def _words(self, reg: np.ndarray) -> np.ndarray:
        words = np.ones(reg.shape[1], _I64)
        for a in range(len(self.axes)):
            words *= reg[2 * a + 1] - reg[2 * a] + 1
        return words

    def _stores(self, st: np.ndarray, x: np.ndarray, reg: np.ndarray) -> None:
        words = self._words(reg)
        for j in self.copies:
            f = distinct([st, self.gid[x]] + list(reg), self.copies[j][x])
            self._cross(j, x[f], words[f], self.copies_alike, self.up, self.up_total)

    def _reloads(self, st: np.ndarray, x: np.ndarray, reg: np.ndarray, words: np.ndarray) -> None:
        """Entries into regions the instance entered before reload partial sums (lowest instance per group)."""
        key = np.ravel_multi_index((x,) + tuple(reg[2 * a] for a in range(len(self.axes))), self.radix)
        order = np.lexsort((st, key))  # by key, then step
        ks = key[order]
        first_in_chunk = np.ones(len(ks), bool)
        first_in_chunk[1:] = ks[1:] != ks[:-1]
        before = self.seen.contains(ks)
        reload = np.zeros(len(ks), bool)
        reload[order] = ~first_in_chunk | before
        self.seen.add(ks)
        r = np.flatnonzero(reload)
        if len(r) == 0:
            return
        st, x, reg, words = st[r], x[r], reg[:, r], words[r]
        by_x = np.argsort(x, kind="stable")  # the lowest instance of a group comes first
        st, x, reg, words = st[by_x], x[by_x], reg[:, by_x], words[by_x]
        rows = np.stack([st, self.gid[x]] + list(reg), axis=1)
        _, first = np.unique(rows, axis=0, return_index=True)
        for j in self.copies:
            self._cross(j, x[first], words[first], self.reload_alike, self.down, self.down_total)

    def finish(self) -> None:
        """The end: output tiles still held go up, grouped like the stores of one step."""
        if not self.is_output:
            return
        x = np.flatnonzero(self.carry[0] >= 0)
        if len(x):
            self._stores(np.full(len(x), END, _I64), x, self.carry[:, x])
