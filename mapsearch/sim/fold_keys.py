"""The geometry of the fold's state (sim/spatial_fold.py): regions held and output keys, moved by whole bodies.

Keys are ``ravel_multi_index((instance, lo per axis), radix)`` of a tracker's
``Seen``; a region is the ``(lo, hi)`` rows per axis of ``Tracker.carry``.
"""

from __future__ import annotations

import numpy as np

from mapsearch.sim.spatial_tracker import Tracker

_I64 = np.int64
KEY_BATCH = 1 << 22  # keys moved at once when a fold adds a run's keys


def add_moved(tr: Tracker, keys: np.ndarray, g: np.ndarray, times: int) -> None:
    """Add to ``tr.seen`` the ``keys`` (distinct) moved by ``m * g`` for ``m = 1 .. times``, in batches of
    about :data:`KEY_BATCH` keys (one union at the end where the set is sparse)."""
    per = times if tr.seen.form == "sorted" else max(1, KEY_BATCH // len(keys))
    for m0 in range(1, times + 1, per):
        tr.seen.add_translates(keys, g, np.arange(m0, min(times, m0 + per - 1) + 1, dtype=_I64))


def move(carry: np.ndarray, g: np.ndarray, times: int) -> np.ndarray:
    """``carry`` (lo, hi rows per axis; -1 where nothing is held) moved ``times`` bodies."""
    if not g.any():
        return carry.copy()
    held = carry[0] >= 0
    return carry + (times * np.repeat(g, 2))[:, None] * held[None, :]


def keys_in(seen, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Coordinates ``(instance, lo per axis)`` of the keys of ``seen`` whose ``lo`` lies in the box."""
    return seen.box_coords(lo, hi)


def in_union(coords: np.ndarray, lo: np.ndarray, hi: np.ndarray, g: np.ndarray, bodies: int) -> np.ndarray:
    """Which keys ``(instance, lo per axis)`` lie in their instance's box ``[lo + m g, hi + m g]`` (``lo``,
    ``hi``: ``(axes, instances)``) for some ``m = 0 .. bodies``."""
    x = coords[0]
    n = coords.shape[1]
    ok = np.ones(n, bool)
    m_lo = np.zeros(n, _I64)
    m_hi = np.full(n, bodies, _I64)
    for a in range(lo.shape[0]):
        v, lo_a, hi_a = coords[a + 1], lo[a][x], hi[a][x]
        ok &= lo_a <= hi_a
        if g[a] == 0:
            ok &= (v >= lo_a) & (v <= hi_a)
        else:
            m_lo = np.maximum(m_lo, -((hi_a - v) // g[a]))  # ceil((v - hi) / g)
            m_hi = np.minimum(m_hi, (v - lo_a) // g[a])
    return ok & (m_lo <= m_hi)
