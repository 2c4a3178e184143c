"""What a split window's coincidences read from one dimension's chains (model/windows.py).

Per chain, from the split-with-remainder rule alone: the *advance types* of
a level's loop (the last piece it leaves and the first it enters, at a
deeper level) and the *context types* of a level's pieces (a piece with its
last and first pieces at a deeper level). Both are exact histograms; chains
with equal histograms are interchangeable for the coincidences, so the chain
pruning compares them (:func:`window_signature`).
"""

from __future__ import annotations

import numpy as np

from mapsearch.model.chains_pieces import level_pieces


def with_top(extent: int, tiles: np.ndarray) -> np.ndarray:
    """Tile extents per level with the top's: column ``j`` is ``T_j``, ``T_0 = E``."""
    return np.concatenate([np.full((tiles.shape[0], 1), extent, dtype=np.int64), tiles], axis=1)


def last_inside(x: np.ndarray, tiles: np.ndarray, frm: int, to: int) -> np.ndarray:
    """Extent of the last level-``to`` piece inside a level-``frm`` piece of extent ``x`` (``tiles``: :func:`with_top`)."""
    for level in range(frm + 1, to + 1):
        t = tiles[:, level]
        rem = x % t
        x = np.where(x > t, np.where(rem > 0, rem, t), x)
    return x


def advance_types(extent: int, tiles: np.ndarray, j: int, level: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x_b, x_a, count)`` per chain (rows) and type (columns): every advance of the level-``j`` loop.

    Inside a level-``(j-1)`` piece of extent ``z`` the loop goes through
    ``z // T_j`` full pieces and a remainder ``z mod T_j``: an advance always
    leaves a full piece (``x_b``: its last level-``level`` piece) for a full
    one (``x_a = T_level``) or for the remainder (``x_a = min(rem, T_level)``).
    """
    top = with_top(extent, tiles)
    parents = level_pieces(extent, tiles)[j - 1]
    tj, tl = top[:, j], top[:, level]
    last = last_inside(tj, top, j, level)
    to_full = np.zeros(tiles.shape[0], dtype=np.int64)
    xb, xa, count = [last], [tl], []
    for z, m in parents:
        full, rem = z // tj, z % tj
        to_full += m * np.maximum(full - 1, 0)
        xb.append(last)
        xa.append(np.minimum(rem, tl))
        count.append(m * ((full >= 1) & (rem > 0)))
    return np.stack(xb, 1), np.stack(xa, 1), np.stack([to_full] + count, 1)


def context_types(extent: int, tiles: np.ndarray, k: int, level: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(|c|, y_b, y_a, count)`` per chain and type: every level-``k`` piece ``c`` with its last and
    first level-``level`` pieces (``k <= level``)."""
    top = with_top(extent, tiles)
    entries = level_pieces(extent, tiles)[k]
    c = np.stack([z for z, _ in entries], 1)
    n = np.stack([m for _, m in entries], 1)
    yb = np.stack([last_inside(z, top, k, level) for z, _ in entries], 1)
    ya = np.minimum(c, top[:, level][:, None])
    return c, yb, ya, n


def window_signature(extent: int, tiles: np.ndarray) -> np.ndarray:
    """Every advance and context type of every level pair, as columns (a type with count 0 reads as 0)."""
    depth = tiles.shape[1]
    cols = []
    for level in range(depth + 1):
        for j in range(1, level + 1):
            xb, xa, m = advance_types(extent, tiles, j, level)
            live = m > 0
            cols += [xb * live, xa * live, m]
        for k in range(level + 1):
            c, yb, ya, n = context_types(extent, tiles, k, level)
            live = n > 0
            cols += [c * live, yb * live, ya * live, n]
    return np.concatenate(cols, axis=1) if cols else np.zeros((tiles.shape[0], 0), dtype=np.int64)
