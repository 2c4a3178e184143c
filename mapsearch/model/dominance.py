"""Which chain rows survive pruning: equal quantities and no larger extents, then larger still sums (model/chains.py).

Split out of :mod:`mapsearch.model.chains`: the exact pruning of the rows
(:func:`survivors`), the search for the rows no other row dominates, and
its use on the still sums. Everything here decides *which* rows survive
and in which order, never their values, and the pruning is exact, so the
speed-ups are exact too: tables are compared column by column through a
verified hash (:mod:`mapsearch.model.row_keys`, never one wide matrix),
small groups are compared pairwise all at once, large ones against a
running front (:func:`undominated`). On the array presets this took the
pruning of one dimension from seconds to a fraction (issue 16);
tests/solve/test_build_identity.py checks each against its straightforward
form.
"""

from __future__ import annotations

import numpy as np

from mapsearch.model.row_keys import columns_of, differs_from_previous, digest, sorted_groups, varying

# Groups up to this size are compared pairwise, all such groups at once (their pairs cost size^2);
# larger ones go through undominated's front.
_PAIRWISE_GROUP = 48
# Values compared at once (pairs x columns, rows x columns); bounds one step's memory to some 100 MB.
_CELLS_AT_ONCE = 4_000_000
_BLOCK = 64  # rows compared at once by undominated (measured: smaller blocks leave fewer rows to compare among themselves)


def survivors(q: dict) -> np.ndarray:
    """The rows of the chain table ``q`` that :func:`mapsearch.model.chains._prune` keeps, in the model's order.

    Rows are sorted by a hash of every quantity the model reads (its
    *signature*), then by extents outermost first: a signature's rows are
    together, and within equal outer extents the smallest innermost comes
    first and dominates the rest. Groups are cut wherever neighbouring
    signatures differ, so a hash collision can only split a group (less
    pruning), never merge two. The hash (its seed, and the columns it
    reads in this order) and the sort fix the order of the surviving rows,
    so the values of the choice variables: changing either changes every
    model (tests/solve/test_build_recorded.py would say so).
    """
    tiles = q["tiles"]
    rows, depth = tiles.shape
    signature = varying(columns_of(_signature_blocks(q)))
    hashes = digest(signature, 12345, rows)
    order = np.lexsort([tiles[:, j] for j in range(depth - 1, -1, -1)] + [hashes])
    new_group = differs_from_previous(signature, order, hashes)
    til = tiles[order]
    if depth >= 2:
        # Within equal signature and equal outer extents, the smallest innermost extent dominates;
        # with one level below the top, the smallest extent per signature dominates.
        outer_change = np.ones(rows, dtype=bool)
        outer_change[1:] = np.any(til[1:, :-1] != til[:-1, :-1], axis=1)
        keep = new_group | outer_change
        if depth == 2:
            keep &= _skyline_2d(new_group, til[:, 0], til[:, 1])
    else:
        keep = new_group
    return order[keep] if q.get("window") is not None else dominate_by_stillness(q, order[keep])


def _signature_blocks(q: dict) -> list:
    """Every quantity of ``q`` the model reads, as blocks of columns (the signature's column order)."""
    blocks = [q["counts"]] + [q["sums"][f] for f in sorted(q["sums"])] + tied_tiles(q)
    blocks += [[q["small"][f][key] for key in sorted(q["small"][f])] for f in sorted(q["small"]) if q["small"][f]]
    blocks.append(q["calls"])
    if q.get("window") is not None:
        blocks.append(q["window"])
    if q.get("flavoured"):
        blocks.append(q["factors"])
        for view in q["flavoured"].values():
            blocks += [view["counts"], view["calls"]] + [view["sums"][f] for f in sorted(view["sums"])]
            blocks += [[view["small"][f][k] for k in sorted(view["small"][f])] for f in sorted(view["small"])
                       if view["small"][f]]
    return blocks


def tied_tiles(q: dict) -> list[np.ndarray]:
    """The tiles of the levels tied to other models (model/chains.enumerate_chains' ``tied``), as a block
    every pruning compares for equality; none when nothing is tied (the signature, its hash and so the
    order of the survivors stay as they were)."""
    tied = q.get("tied", 0)
    return [q["tiles"][:, :tied]] if tied else []


def _skyline_2d(new_group: np.ndarray, outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """Rows (sorted by group, then outer ascending) whose inner extent beats every earlier row of the group.

    A row with ``outer' <= outer`` and ``inner' <= inner`` earlier in its group dominates it.
    """
    group = np.cumsum(new_group) - 1
    big = int(inner.max()) + 2
    shifted = group * big + (big - 1 - inner)  # larger is a smaller inner extent
    running = np.maximum.accumulate(shifted)
    previous = np.empty_like(running)
    previous[0] = -1
    previous[1:] = running[:-1]
    prev_in_group = previous >= group * big  # an earlier row of the same group exists
    best_inner_before = np.where(prev_in_group, big - 1 - (previous - group * big), big)
    return inner < best_inner_before


def dominate_by_stillness(q: dict, idx: np.ndarray) -> np.ndarray:
    """Among chains with equal counts, sums and calls, drop those another beats on stillness and extents.

    The "still" sums ``W`` only ever enter the words subtracted, as factors of
    non-negative products (``traffic``), so with everything else equal a
    chain with componentwise larger ``W`` and no larger extents is at least
    as good in every objective and constraint. Keeps the order of ``idx``.
    """
    if not any(q["small"][f] for f in q["small"]):
        return idx
    views = [q] + (list(q["flavoured"].values()) if q.get("flavoured") else [])
    exact = ([q["factors"]] if q.get("flavoured") else []) + tied_tiles(q)
    still = []
    for v in views:
        exact += [v["counts"]] + [v["sums"][f] for f in sorted(v["sums"])] + [v["calls"]]
        still += [[v["small"][f][k] for k in sorted(v["small"][f])] for f in sorted(v["small"]) if v["small"][f]]
    order, new = sorted_groups(columns_of(exact), idx)
    # a beats b: a is at least as still and no larger than b, and differs from it
    better = np.stack([c[idx] for c in columns_of(still)] + [-q["tiles"][idx, j] for j in range(q["tiles"].shape[1])],
                      axis=1)
    return idx[~beaten_in_groups(order, new, better)]


def beaten_in_groups(order: np.ndarray, new: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per row of ``v``: some other row of its group dominates it (``>=`` everywhere, ``!=`` somewhere).

    The groups as :func:`mapsearch.model.row_keys.sorted_groups` gives them:
    rows ``order`` with each group together, ``new`` where one starts (no
    list of thousands of small arrays to build).
    """
    beaten = np.zeros(v.shape[0], dtype=bool)
    exact_sums = _sums_exact(v)  # then for every part of v too
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, order.size))
    small = (sizes > 1) & (sizes <= _PAIRWISE_GROUP)
    if small.any():
        size, at = sizes[small], starts[small]
        members = order[np.repeat(at, size) + (np.arange(size.sum()) - np.repeat(np.cumsum(size) - size, size))]
        beaten |= _beaten_pairwise(members, size, v, exact_sums)
    for at, size in zip(starts[sizes > _PAIRWISE_GROUP], sizes[sizes > _PAIRWISE_GROUP]):
        g = order[at:at + size]
        beaten[g] = ~undominated(v[g], exact_sums)
    return beaten


def _beaten_pairwise(members: np.ndarray, sizes: np.ndarray, v: np.ndarray, exact_sums: bool) -> np.ndarray:
    """:func:`beaten_in_groups` of the groups of ``sizes`` (their rows one after another in ``members``) by
    comparing every ordered pair of rows of each group, a batch of groups at once."""
    beaten = np.zeros(v.shape[0], dtype=bool)
    total = v.sum(axis=1) if exact_sums else None
    ends = np.cumsum(sizes)
    batch_end = np.searchsorted(np.cumsum(sizes * sizes), np.arange(1, sizes.size + 1) * _CELLS_AT_ONCE // 4)
    first = 0
    while first < sizes.size:
        last = max(first + 1, int(batch_end[first]))
        a, b = _pairs(members[ends[first] - sizes[first]:ends[last - 1]], sizes[first:last])
        if exact_sums:  # a >= b everywhere and a != b: a has the larger sum
            a, b = a[total[a] > total[b]], b[total[a] > total[b]]
        # Most pairs fail on the first columns: a slice at a time, on the pairs still standing.
        for lo in range(0, v.shape[1], 16):
            ok = np.all(v[a, lo:lo + 16] >= v[b, lo:lo + 16], axis=1)
            a, b = a[ok], b[ok]
        if not exact_sums:
            differ = np.any(v[a] != v[b], axis=1)
            a, b = a[differ], b[differ]
        beaten[b] = True
        first = last
    return beaten


def _pairs(members: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair ``(a, b)``, ``a != b``, of rows of one group (``members``: groups of ``sizes``)."""
    per_member = np.repeat(sizes, sizes)  # each member meets every member of its group
    group_start = np.repeat(np.cumsum(sizes) - sizes, sizes)
    a = np.repeat(np.arange(members.size), per_member)
    b = np.repeat(group_start, per_member) + (np.arange(a.size) - np.repeat(np.cumsum(per_member) - per_member, per_member))
    a, b = members[a], members[b]
    return a[a != b], b[a != b]


def _sums_exact(v: np.ndarray) -> bool:
    """No row sum of ``v`` can overflow int64 (so sums compare exactly)."""
    return v.size == 0 or max(float(v.max()), -float(v.min())) * v.shape[1] < 2.0**62


def undominated(v: np.ndarray, exact_sums: bool | None = None) -> np.ndarray:
    """Mask of the rows of ``v`` that no other row dominates (``>=`` everywhere and ``!=`` somewhere).

    A dominating row has a strictly larger row sum, so in order of
    decreasing sums every row's dominators come before it or in its block;
    dominance is transitive, so it suffices to compare a row with the rows
    kept so far (the undominated ones, the *front*) and with the rows of
    its own block the front does not beat: the cost is per row times the
    size of the front, not the square of the group. Columns equal in every
    row decide nothing and are left out first. Where no sum can overflow,
    "differs" among rows that are ``>=`` everywhere is "has a larger sum".
    """
    v = v[:, np.any(v != v[:1], axis=0)]
    keep = np.ones(v.shape[0], dtype=bool)
    if v.shape[1] == 0:
        return keep  # all rows equal: none dominates another
    total = v.sum(axis=1)
    exact_sums = _sums_exact(v) if exact_sums is None else exact_sums
    order = np.argsort(-total, kind="stable")
    ordered, total = v[order], total[order]

    def beats(others: np.ndarray, others_total: np.ndarray, rows: np.ndarray, rows_total: np.ndarray) -> np.ndarray:
        ge = np.all(others[:, None, :] >= rows[None, :, :], axis=2)
        if exact_sums:
            return np.any(ge & (others_total[:, None] > rows_total[None, :]), axis=0)
        return np.any(ge & np.any(others[:, None, :] != rows[None, :, :], axis=2), axis=0)

    front, front_total = ordered[:0], total[:0]
    for start in range(0, v.shape[0], _BLOCK):
        block, block_total = ordered[start:start + _BLOCK], total[start:start + _BLOCK]
        beaten = beats(front, front_total, block, block_total) if front.shape[0] else np.zeros(block.shape[0], bool)
        alive = np.flatnonzero(~beaten)
        if alive.size > 1:  # what a row the front beats would beat, the front beats too
            beaten[alive] = beats(block[alive], block_total[alive], block[alive], block_total[alive])
        keep[start:start + block.shape[0]] = ~beaten
        front = np.concatenate([front, block[~beaten]])
        front_total = np.concatenate([front_total, block_total[~beaten]])
    mask = np.zeros(v.shape[0], dtype=bool)
    mask[order] = keep
    return mask
