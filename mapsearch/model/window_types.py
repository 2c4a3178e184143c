"""What a split window's coincidences read from one dimension's chains (model/windows.py).

Per chain, from the split-with-remainder rule alone: the *advance types* of
a level's loop (the last piece it leaves and the first it enters, at a
deeper level) and the *context types* of a level's pieces (a piece with its
last and first pieces at a deeper level). Both are exact histograms; chains
with equal histograms are interchangeable for the coincidences, so the chain
pruning compares them (:func:`window_signature`).

With ``parts`` (a chain split over mesh axes in equal parts, docs/spatial.md
"Split windows over mesh axes") the types are those of instance 0's own
tree, which keeps the first part ``min(x, P_s)`` of every level-``(s-1)``
piece: its pieces no longer end where their parent ends, so the types also
carry the distance from the start of the last piece to the end of its
ancestor (``gap`` of an advance, ``reach`` of a context).
"""

from __future__ import annotations

import numpy as np

from mapsearch.model.chains_pieces import level_pieces

Parts = dict[int, np.ndarray] | None  # part extent per meshed level (instance 0 keeps min(x, P)), per row


def with_top(extent: int, tiles: np.ndarray) -> np.ndarray:
    """Tile extents per level with the top's: column ``j`` is ``T_j``, ``T_0 = E``."""
    return np.concatenate([np.full((tiles.shape[0], 1), extent, dtype=np.int64), tiles], axis=1)


def last_inside(x: np.ndarray, tiles: np.ndarray, frm: int, to: int, parts: Parts = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(extent, trailing)`` of instance 0's last level-``to`` piece inside a level-``frm`` piece of extent
    ``x`` (``tiles``: :func:`with_top`): its extent, and how far the ancestor extends past its end.

    Without parts the last piece ends where the ancestor does (trailing 0);
    a split at a level in ``(frm, to]`` keeps the first part of its parent,
    so the rest of that parent lies past the piece.
    """
    trailing = np.zeros_like(x)
    for level in range(frm + 1, to + 1):
        if parts and level in parts:
            own = np.minimum(x, parts[level])
            trailing = trailing + x - own
            x = own
        t = tiles[:, level]
        rem = x % t
        x = np.where(x > t, np.where(rem > 0, rem, t), x)
    return x, trailing


def advance_types(extent: int, tiles: np.ndarray, j: int, level: int, parts: Parts = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_b, x_a, count, gap)`` per chain (rows) and type (columns): every advance of the level-``j`` loop.

    Inside a level-``(j-1)`` piece of extent ``z`` (instance 0's part of it
    when ``j`` is a meshed level that splits the dimension) the loop goes
    through ``z // T_j`` full pieces and a remainder ``z mod T_j``: an
    advance always leaves a full piece (``x_b``: its last level-``level``
    piece) for a full one (``x_a = T_level``) or for the remainder
    (``x_a = min(rem, T_level)``). ``gap``: from the start of that last
    piece to the start of the next level-``j`` piece, where instance 0's
    first piece of it starts (``x_b`` without parts).
    """
    top = with_top(extent, tiles)
    parents = level_pieces(extent, tiles, parts)[j - 1]
    tj, tl = top[:, j], top[:, level]
    last, trailing = last_inside(tj, top, j, level, parts)
    to_full = np.zeros(tiles.shape[0], dtype=np.int64)
    xb, xa, count = [last], [tl], []
    for z, m in parents:
        if parts and j in parts:
            z = np.minimum(z, parts[j])
        full, rem = z // tj, z % tj
        to_full += m * np.maximum(full - 1, 0)
        xb.append(last)
        xa.append(np.minimum(rem, tl))
        count.append(m * ((full >= 1) & (rem > 0)))
    xb_types = np.stack(xb, 1)
    return xb_types, np.stack(xa, 1), np.stack([to_full] + count, 1), xb_types + trailing[:, None]


def context_types(extent: int, tiles: np.ndarray, k: int, level: int, parts: Parts = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(reach, y_b, y_a, count)`` per chain and type: every level-``k`` piece ``c`` of instance 0's tree with
    its last and first level-``level`` pieces (``k <= level``).

    ``reach``: from the start of ``c`` to the end of its last piece (``|c|``
    without parts), so the loops inside ``c`` move the piece's start back
    by ``reach - y_b`` when they reset.
    """
    top = with_top(extent, tiles)
    entries = level_pieces(extent, tiles, parts)[k]
    c = np.stack([z for z, _ in entries], 1)
    n = np.stack([m for _, m in entries], 1)
    last = [last_inside(z, top, k, level, parts) for z, _ in entries]
    yb = np.stack([x for x, _ in last], 1)
    reach = c - np.stack([t for _, t in last], 1)
    ya = np.minimum(c, top[:, level][:, None])
    return reach, yb, ya, n


def window_signature(extent: int, tiles: np.ndarray, parts: Parts = None) -> np.ndarray:
    """Every advance and context type of every level pair, as columns (a type with count 0 reads as 0).

    With ``parts`` the advances' gaps too (without, they equal ``x_b``)."""
    depth = tiles.shape[1]
    cols = []
    for level in range(depth + 1):
        for j in range(1, level + 1):
            xb, xa, m, gap = advance_types(extent, tiles, j, level, parts)
            live = m > 0
            cols += [xb * live, xa * live, m] + ([gap * live] if parts else [])
        for k in range(level + 1):
            c, yb, ya, n = context_types(extent, tiles, k, level, parts)
            live = n > 0
            cols += [c * live, yb * live, ya * live, n]
    return np.concatenate(cols, axis=1) if cols else np.zeros((tiles.shape[0], 0), dtype=np.int64)
