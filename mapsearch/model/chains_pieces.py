"""The pieces of tile chains by the contract's split-with-remainder rule, level by level."""

from __future__ import annotations

import numpy as np


def level_pieces(extent: int, tiles: np.ndarray) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """Per level ``j`` (0 = the top), the pieces of every chain as (size, count) array pairs.

    Level ``j``'s entries: the full tiles ``(T_j, how many)``, then one
    remainder per entry of level ``j-1`` (``(s mod T_j, count)`` with count 0
    where it divides). Entries of one level may repeat a size.
    """
    rows, depth = tiles.shape
    pieces: list[list[tuple[np.ndarray, np.ndarray]]] = [[(np.full(rows, extent), np.ones(rows, dtype=np.int64))]]
    for j in range(depth):
        t = tiles[:, j]
        full_count = np.zeros(rows, dtype=np.int64)
        level = []
        for size, count in pieces[-1]:
            full = size // t
            rem = size - full * t
            full_count += count * full
            level.append((rem, count * (rem > 0)))
        pieces.append([(t, full_count)] + level)
    return pieces
