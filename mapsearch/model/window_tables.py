r"""The coincidence tables of split filter windows, over every combination of their dimensions' chains.

A window's axis ``h = sum_g c_g * d_g`` holds, for pieces ``x_g`` of its
dimensions, the interval of ``sum_g c_g (x_g - 1) + 1`` words starting at
``sum_g c_g * d_g0``. When the level-``j`` loop of one of them, ``e``,
advances, ``e``'s piece goes from its last level-``le`` piece inside the
piece ``a`` it leaves (``x_b``) to its first inside the next piece ``a'``
(``x_a``), the start moving by ``gap`` (``x_b`` without a split), while
the loops inside ``e``'s of every other dimension ``g`` go from their last
(``y_b``) to their first (``y_a``) piece inside ``g``'s context piece
(``reach``: from the start of that first piece to the end of that last
one, ``|c|`` without a split). The interval is unchanged, a *coincidence*
(docs/solver.md, "Split filter windows"), iff

    c_e * gap = sum_g c_g * (reach_g - y_b,g)                 (same start)
    c_e * x_b + sum_g c_g * y_b,g = c_e * x_a + sum_g c_g * y_a,g   (same length)

A table entry sums, over the advance types of ``e``'s chain and the context
types of the others' (model/window_types.py), ``count * [coincidence] *
(c_e (x_a - 1) + sum_g c_g (y_a,g - 1) + 1)``. With two dimensions it is
:func:`coincidence_table` (pairs of chains); with more, :func:`joint_table`
folds the other dimensions into one *composite* context of the same form
(:func:`_composite`), so one kernel (:func:`_kernel`, model/window_kernel.py: a key match and two products
over the keys, or the pairwise broadcast where the keys are too many) serves both.
"""

from __future__ import annotations

import itertools

import numpy as np

from mapsearch.model.chains import DimChains
from mapsearch.model.row_keys import distinct_rows
from mapsearch.model.window_kernel import _kernel
from mapsearch.model.window_types import InstanceClasses, advance_types, context_types


def coincidence_table(advancing: DimChains, other: DimChains, se: int, so: int, j: int, le: int, lo: int,
                      other_outer: bool, memo: dict | None = None, views: tuple = (None, None),
                      unit: bool = False) -> np.ndarray:
    """Coincidences of the advancing dimension's level-``j`` loop, weighted by the interval's words.

    Rows: chains of the advancing dimension; columns: chains of the other.
    ``le``, ``lo``: the levels whose pieces the buffer holds along each
    (its level, or the one above where that dimension's loop is inside the
    buffer); ``other_outer``: the other's level-``j`` loop is outer to the
    advancing one, so its context is its level-``j`` piece (else its
    level-``(j-1)`` piece), taken no deeper than ``lo``. ``memo``: a dict
    kept across calls on the same chains (:func:`_distinct_types`).

    Chains split over mesh axes: ``views`` (one per dimension, a
    ``"rep"``/``"sum"``/``"cls<c>"`` per meshed level, None for instance 0)
    say which instances count and how often: the table is the sum over
    the instances of both dimensions (one per class of digits at each
    meshed level: window_types.InstanceClasses) of their own coincidences,
    weighed by the views. ``unit``: each coincidence weighs 1 instead of the interval's words (a box
    window's count of intervals, model/skew.py).
    """
    memo = {} if memo is None else memo
    (view_a, factor_a), (view_o, factor_o) = (instances_of(memo, advancing).simplified(views[0]),
                                              instances_of(memo, other).simplified(views[1]))
    if _instance_zero(view_a) and _instance_zero(view_o):
        table, row_of, col_of = type_table(advancing, other, se, so, j, le, lo, other_outer, memo, unit=unit)
    else:
        table, row_of, col_of = view_type_table(advancing, other, se, so, j, le, lo, other_outer, memo,
                                                (view_a, view_o), unit)
    out = table[row_of][:, col_of]
    if factor_a is not None:
        out = out * factor_a[:, None]
    if factor_o is not None:
        out = out * factor_o[None, :]
    return out


def _instance_zero(view) -> bool:
    return view is None or all(entry == "rep" for entry in view)


def view_type_table(advancing: DimChains, other: DimChains, se: int, so: int, j: int, le: int, lo: int,
                    other_outer: bool, memo: dict | None, views: tuple, unit: bool = False
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`coincidence_table` through ``views``, on distinct rows and columns: ``(table, row_of, col_of)``.

    The entry of chains ``r``, ``c`` is ``sum_a sum_o w_a[r] * w_o[c] *
    T_ao[row_of_a[r], col_of_o[c]]`` over the instances ``a``, ``o`` of the
    two dimensions (``T_ao``: :func:`type_table` of that pair; ``w``:
    :meth:`~mapsearch.model.window_types.InstanceClasses.weights` of each
    dimension's view). It depends on a row's weights and types alone, and
    on a column's: rows (columns) equal in those are equal in the table,
    which is computed once per distinct row and column. Summing over ``o``
    on the advancing dimension's types first leaves one product per
    instance ``a``. Instances of weight 0 on every row are skipped.
    """
    memo = {} if memo is None else memo
    weights_a = instances_of(memo, advancing).weights(views[0])
    weights_o = instances_of(memo, other).weights(views[1])
    live_a = np.flatnonzero(weights_a.any(axis=0))
    live_o = np.flatnonzero(weights_o.any(axis=0))
    if live_a.size == 0 or live_o.size == 0:
        return np.zeros((1, 1), dtype=np.int64), np.zeros(len(advancing), np.int64), np.zeros(len(other), np.int64)
    weights_a, weights_o = weights_a[:, live_a], weights_o[:, live_o]
    tables = [[type_table(advancing, other, se, so, j, le, lo, other_outer, memo, (int(a), int(o)), unit)
               for o in live_o]
              for a in live_a]
    rows_of = [row[0][1] for row in tables]  # an advance type depends on the instance a alone
    cols_of = [t[2] for t in tables[0]]  # a context type on the instance o alone
    first_row, row_of = distinct_rows(rows_of + [weights_a])
    first_col, col_of = distinct_rows(cols_of + [weights_o])
    out = np.zeros((first_row.size, first_col.size), dtype=np.int64)
    for a, row in enumerate(tables):
        by_type = sum(table[:, cols_of[o][first_col]] * weights_o[first_col, o] for o, (table, _, _) in enumerate(row))
        out += weights_a[first_row, a, None] * by_type[rows_of[a][first_row]]
    return out, row_of, col_of


def instances_of(memo: dict, ch: DimChains) -> InstanceClasses:
    """window_types.InstanceClasses of ``ch``, once per chains (``memo`` keeps them with the chains)."""
    key = (id(ch), "instances")
    if key not in memo:
        memo[key] = (ch, InstanceClasses(ch))
    return memo[key][1]


def type_table(advancing: DimChains, other: DimChains, se: int, so: int, j: int, le: int, lo: int,
               other_outer: bool, memo: dict | None, which: tuple[int, int] = (0, 0), unit: bool = False
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`coincidence_table` on distinct types: ``(table, row_of, col_of)``, the table is ``table[row_of][:, col_of]``.

    ``which``: the instance of each dimension (:func:`instances_of`; 0 is instance 0)."""
    memo = {} if memo is None else memo
    context_from = min(j if other_outer else j - 1, lo)
    advance, row_of = _distinct_types(memo, advancing, "advance", j, le, which[0])
    context, col_of = _distinct_types(memo, other, "context", context_from, lo, which[1])
    # Variants that differ only where the types do not (the context's level clipped to ``lo``) share a table.
    key = (id(advancing), id(other), se, so, j, le, context_from, lo, which, "kernel") + (("unit",) if unit else ())
    if key not in memo:
        memo[key] = (advancing, other, _kernel(advance, context, se, so, f"{len(advancing):,} x {len(other):,}",
                                               unit))
    return memo[key][2], row_of, col_of


def _distinct_types(memo: dict, ch: DimChains, kind: str, level_from: int, level_to: int, which: int = 0):
    """The advance (``kind="advance"``, of the level-``level_from`` loop) or context types of ``ch``'s chains
    (a type counted 0 times reads as 0), once per distinct row, and each chain's row among them. A chain
    split over mesh axes has the types of its instance ``which`` (:func:`instances_of`).

    A coincidence reads its row's and its column's types alone, and
    thousands of chains share a few hundred types, so the table is computed
    on those; the types of one dimension's chains recur in every variant
    and direction, so ``memo`` keeps them (with the chains, whose ``id`` is
    the key).
    """
    key = (id(ch), kind, level_from, level_to, which)
    if key not in memo:
        parts = ch.parts_by_level()
        tree = instances_of(memo, ch).trees[which]
        if kind == "advance":
            xb, xa, m, gap = advance_types(ch.extent, ch.tiles, level_from, level_to, tree=tree)
            types = [xb * (m > 0), xa * (m > 0), m] + ([gap * (m > 0)] if parts else [])
        else:
            c, yb, ya, n = context_types(ch.extent, ch.tiles, level_from, level_to, tree=tree)
            types = [c * (n > 0), yb * (n > 0), ya * (n > 0), n]
        first, inverse = distinct_rows(types)
        distinct = [t[first] for t in types]
        if kind == "advance" and not parts:
            distinct.append(distinct[0])  # the gap of a tree without parts is x_b
        memo[key] = (ch, distinct, inverse)
    return memo[key][1:]


def table_variants(depth: int) -> list[tuple[int, int, int, bool]]:
    """Every ``(j, le, lo, other_outer)`` a model over ``depth`` levels below the top may read.

    A buffer at level ``i`` (the anchor of its cut) holds each dimension's
    level-``i`` or level-``(i-1)`` pieces, so ``le`` and ``lo`` differ by at
    most one; variants whose other context is the same piece are listed once.
    """
    out: dict[tuple[int, int, int, int], bool] = {}
    for le in range(1, depth + 1):
        for lo in range(le - 1, min(depth, le + 1) + 1):
            for j in range(1, le + 1):
                for outer in (False, True):
                    out.setdefault((j, le, lo, min(j if outer else j - 1, lo)), outer)
    return [(j, le, lo, outer) for (j, le, lo, _), outer in sorted(out.items())]


# --------------------------------------------------------------------------- three or more dimensions

def joint_table(advancing: DimChains, coeff: int, j: int, le: int,
                others: list[tuple[DimChains, int, int, int]], memo: dict | None = None) -> np.ndarray:
    """Coincidences of ``advancing``'s level-``j`` loop on an axis over three or more dimensions, weighted by
    the interval's words: one entry per combination of chains, axes in the order ``advancing``, ``others``.

    ``coeff``: the advancing dimension's coefficient; ``le``: the level
    whose pieces the buffer holds along it. ``others``: per other dimension
    ``g`` of the axis ``(chains, coefficient, context level, pieces level)``:
    the loops of ``g`` inside the advancing one reset inside ``g``'s
    context piece (its level-``j`` piece when its level-``j`` loop is outer
    to the advancing one, else its level-``(j-1)`` piece, no deeper than
    the pieces level), down to the buffer's pieces of ``g``. Chains without
    spatial splits only (a mesh holds such an axis whole: model/windows.py).
    """
    table, row_ofs = joint_type_table(advancing, coeff, j, le, others, memo)
    for axis, row_of in enumerate(row_ofs):
        table = np.take(table, row_of, axis=axis)
    return table


def joint_type_table(advancing: DimChains, coeff: int, j: int, le: int,
                     others: list[tuple[DimChains, int, int, int]], memo: dict | None = None
                     ) -> tuple[np.ndarray, list[np.ndarray]]:
    """:func:`joint_table` on each dimension's distinct types: ``(table, row_ofs)``, the table over chains is
    ``table`` indexed along each axis by that dimension's ``row_ofs`` entry."""
    memo = {} if memo is None else memo
    advance, row_of = _distinct_types(memo, advancing, "advance", j, le)
    contexts, row_ofs = [], [row_of]
    for ch, _, k, lo in others:
        context, col_of = _distinct_types(memo, ch, "context", k, lo)
        contexts.append(context)
        row_ofs.append(col_of)
    composite = _composite(contexts, [c for _, c, _, _ in others])
    shape = [len(advancing)] + [len(ch) for ch, _, _, _ in others]
    table = _kernel(advance, composite, coeff, 1, " x ".join(f"{n:,}" for n in shape))
    return table.reshape([table.shape[0]] + [c[0].shape[0] for c in contexts]), row_ofs


def joint_variants(depth: int, others: int) -> list[tuple[int, int, tuple[tuple[bool, int], ...]]]:
    """Every ``(j, le, ((outer, lo) per other dimension))`` a model over ``depth`` levels below the top may
    read for an axis over ``others + 1`` dimensions (model/traffic.py, ``_coincidences``).

    A buffer at level ``i`` holds each dimension's level-``i`` or
    level-``(i-1)`` pieces, the advancing one's level-``i`` pieces when its
    level-``j = i`` loop moves the buffer; variants whose context pieces are
    the same are listed once.
    """
    out: dict[tuple, tuple[int, int, tuple[tuple[bool, int], ...]]] = {}
    for i in range(1, depth + 1):
        for j in range(1, i + 1):
            for le in ((i,) if j == i else (i, i - 1)):
                for los in itertools.product((i, i - 1), repeat=others):
                    for outers in itertools.product((False, True), repeat=others):
                        key = (j, le, tuple((lo, min(j if o else j - 1, lo)) for o, lo in zip(outers, los)))
                        out.setdefault(key, (j, le, tuple(zip(outers, los))))
    return [out[key] for key in sorted(out)]


def _composite(contexts: list, coeffs: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The other dimensions' context types as one context of the kernel's form, with coefficient 1.

    Rows: every combination of the dimensions' distinct rows (the first
    dimension's slowest); types: every combination of their types. With
    ``S = sum_g c_g (reach_g - y_b,g)``, ``B = sum_g c_g y_b,g``, ``A = sum_g
    c_g y_a,g`` and ``u = sum_g c_g - 1`` the composite has ``y_b = B - u``,
    ``y_a = A - u``, ``reach = S + y_b`` and count ``prod_g n_g``: then the
    kernel's ``gap * c_e == reach - y_b`` is the same start, its ``x_b c_e
    + y_b == x_a c_e + y_a`` the same length, and its words ``c_e (x_a - 1)
    + y_a`` the interval's, ``c_e (x_a - 1) + sum_g c_g (y_a,g - 1) + 1``.
    """
    k = len(contexts)
    shift = np.zeros((1,) * 2 * k, dtype=np.int64)
    before = np.zeros_like(shift)
    after = np.zeros_like(shift)
    count = np.ones_like(shift)
    for g, ((reach, yb, ya, n), c) in enumerate(zip(contexts, coeffs)):
        shape = [1] * 2 * k
        shape[g], shape[k + g] = reach.shape
        shift = shift + c * (reach - yb).reshape(shape)
        before = before + c * yb.reshape(shape)
        after = after + c * ya.reshape(shape)
        count = count * n.reshape(shape)
    full = [ctx[0].shape[0] for ctx in contexts] + [ctx[0].shape[1] for ctx in contexts]
    rows, types = int(np.prod(full[:k])), int(np.prod(full[k:]))
    u = sum(coeffs) - 1
    yb = np.broadcast_to(before - u, full).reshape(rows, types)
    ya = np.broadcast_to(after - u, full).reshape(rows, types)
    reach = np.broadcast_to(shift, full).reshape(rows, types) + yb
    return reach, yb, ya, np.broadcast_to(count, full).reshape(rows, types)
