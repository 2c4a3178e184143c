"""Dominance among chain rows with equal counts: larger still sums and no larger extents win (model/chains.py).

Split out of :mod:`mapsearch.model.chains`: the front-based search for the
rows no other row dominates, and its use on the still sums.
"""

from __future__ import annotations

import numpy as np


def dominate_by_stillness(q: dict, idx: np.ndarray) -> np.ndarray:
    """Among chains with equal counts, sums and calls, drop those another beats on stillness and extents.

    The "still" sums ``W`` only ever enter the words subtracted, as factors of
    non-negative products (``traffic``), so with everything else equal a
    chain with componentwise larger ``W`` and no larger extents is at least
    as good in every objective and constraint.
    """
    if not any(q["small"][f] for f in q["small"]):
        return idx
    views = [q] + (list(q["flavoured"].values()) if q.get("flavoured") else [])
    exact_cols = [q["factors"][idx]] if q.get("flavoured") else []
    still_cols = []
    for v in views:
        exact_cols += [v["counts"][idx]] + [v["sums"][f][idx] for f in sorted(v["sums"])] + [v["calls"][idx][:, None]]
        still_cols += [np.stack([v["small"][f][k][idx] for k in sorted(v["small"][f])], axis=1)
                       for f in sorted(v["small"]) if v["small"][f]]
    exact = np.concatenate(exact_cols, axis=1)
    still = np.concatenate(still_cols, axis=1)
    tiles = q["tiles"][idx]
    _, group = np.unique(exact, axis=0, return_inverse=True)
    group = group.ravel()
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(group[order])) + 1
    survivors = []
    for members in np.split(order, bounds):
        if members.size == 1:
            survivors.append(members)
            continue
        # a beats b: a is at least as still and no larger than b, and differs from it
        survivors.append(members[undominated(np.concatenate([still[members], -tiles[members]], axis=1))])
    return idx[np.sort(np.concatenate(survivors))]


_BLOCK = 128  # rows compared at once by undominated


def undominated(v: np.ndarray) -> np.ndarray:
    """Mask of the rows of ``v`` that no other row dominates (``>=`` everywhere and ``!=`` somewhere).

    A dominating row has a strictly larger row sum, so in order of
    decreasing sums every row's dominators come before it or in its block;
    dominance is transitive, so it suffices to compare a row with the rows
    kept so far (the undominated ones) and with its own block: the cost is
    per row times the size of the front, not the square of the group.
    """
    order = np.argsort(-v.sum(axis=1), kind="stable")
    ordered = v[order]
    keep = np.zeros(v.shape[0], dtype=bool)
    front = ordered[:0]
    for start in range(0, v.shape[0], _BLOCK):
        block = ordered[start:start + _BLOCK]
        beaten = np.zeros(block.shape[0], dtype=bool)
        for others in (front, block):
            if others.shape[0]:
                ge = np.all(others[:, None, :] >= block[None, :, :], axis=2)
                ne = np.any(others[:, None, :] != block[None, :, :], axis=2)
                beaten |= np.any(ge & ne, axis=0)
        keep[start:start + block.shape[0]] = ~beaten
        front = np.concatenate([front, block[~beaten]])
    mask = np.zeros(v.shape[0], dtype=bool)
    mask[order] = keep
    return mask
