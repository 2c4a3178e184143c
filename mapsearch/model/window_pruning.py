"""Exact pruning of split windows' chains: drop a chain another chain of the same dimension beats everywhere.

docs/solver.md, "Split filter windows" ("Pruning stays exact"), proves it.
A window dimension's chains are compared on every coincidence table the
model may read in which the dimension takes part, advancing or as a
context, against every combination of its partners' chains (one column
per combination of their distinct types, each distinct column once).
"""

from __future__ import annotations

import itertools

import numpy as np

from mapsearch.model.chains import DimChains
from mapsearch.model.dominance import beaten_in_groups
from mapsearch.model.row_keys import distinct_rows, sorted_groups
from mapsearch.model.window_tables import (instances_of, joint_type_table, joint_variants, table_variants, type_table,
                                          view_type_table)


def prune_window_chains(chains: dict[str, DimChains], windows: tuple, depth: int) -> dict[str, DimChains]:
    """Drop window chains that another chain of the same dimension beats everywhere the model looks.

    A chain of a window dimension enters the words through its counts and
    sums (compared for equality), its still sums (a window's still factor is
    ``s*(W - C)*C_r + C*K_r`` with ``W``, ``C`` the still sums of extents and
    counts and ``C_r``, ``K_r >= 0`` from the other dimension, so it grows
    with ``W - C`` and with ``C``; a plain axis's grows with ``W``), its
    coincidences (subtracted, with non-negative factors), and its tile
    extents (capacity only). A chain with equal counts, sums and calls,
    no smaller ``W - C``, ``C`` or other still sums, no fewer coincidences
    against every chain of the partner, and no larger extents is at least as
    good in every objective and constraint, so the other is dropped: exact.
    A chain whose outer levels are tied to another stage's (``tied``, a
    fused group's outer nest) is dropped only for one with the same tiles
    there.
    Pruning one dimension against the partner's current chains, then the
    partner against the survivors, stays exact (a dropped chain's
    dominator is kept for every partner chain). ``windows``:
    model/windows.Window, of any number of dimensions; on an axis over
    ``k`` dimensions a chain is compared against every combination of the
    other ``k - 1`` dimensions' chains, in every table it takes part in.
    """
    out = dict(chains)
    variants = table_variants(depth)
    memo: dict = {}
    for d in dict.fromkeys(d for win in windows for d in win.dims):
        # Per partner chain one column; partner chains of equal types give equal columns, and a
        # comparison of rows reads the same on one copy of a column as on all: one column per type,
        # and of those each distinct column once (_distinct_columns).
        extra = []
        for win in (win for win in windows if d in win.dims and len(win.dims) == 2):
            o = win.others(d)[0]
            # A box window's monomials read its coincidences one per interval too (model/skew.py).
            for (j, le, lo, outer), unit in itertools.product(variants, (False, True) if win.box else (False,)):
                table, row_of, _ = type_table(out[d], out[o], win.coeff(d), win.coeff(o), j, le, lo, outer, memo,
                                              unit=unit)
                extra.append(_distinct_columns(table)[row_of])
                table, _, col_of = type_table(out[o], out[d], win.coeff(o), win.coeff(d), j, le, lo, outer, memo,
                                              unit=unit)
                extra.append(_distinct_columns(table.T)[col_of])
                for views in compared_views(out[d], out[o], memo):  # through every view the model may read
                    table, row_of, _ = view_type_table(out[d], out[o], win.coeff(d), win.coeff(o), j, le, lo, outer,
                                                       memo, views, unit)
                    extra.append(_distinct_columns(table)[row_of])
                    table, _, col_of = view_type_table(out[o], out[d], win.coeff(o), win.coeff(d), j, le, lo, outer,
                                                       memo, views[::-1], unit)
                    extra.append(_distinct_columns(table.T)[col_of])
        for win in (win for win in windows if d in win.dims and len(win.dims) > 2):
            extra += _joint_columns(out, win, d, depth, memo)
        out[d] = out[d].take(undominated(out[d], np.concatenate(extra, axis=1)))
    return out


def _joint_columns(chains: dict[str, DimChains], win, d: str, depth: int, memo: dict) -> list[np.ndarray]:
    """``d``'s rows of every joint table of ``win`` (an axis over three or more dimensions) the model may read:
    one column per combination of the other dimensions' distinct types."""
    out = []
    for e in win.dims:
        rest = win.others(e)
        axis = ([e] + list(rest)).index(d)
        for j, le, others in joint_variants(depth, len(rest)):
            spec = [(chains[g], win.coeff(g), min(j if outer else j - 1, lo), lo) for g, (outer, lo) in zip(rest, others)]
            table, row_ofs = joint_type_table(chains[e], win.coeff(e), j, le, spec, memo)
            out.append(_distinct_columns(np.moveaxis(table, axis, 0).reshape(table.shape[axis], -1))[row_ofs[axis]])
    return out


def _distinct_columns(table: np.ndarray) -> np.ndarray:
    """``table`` with each distinct column once (its first copy, in order).

    A row beats another iff it is ``>=`` in every column, so a second copy
    of a column changes no comparison; the tables repeat columns many times
    (partner types equal along the table's axis, variants alike), and
    every later step reads every column of every chain."""
    first, _ = distinct_rows([table.T])
    return table[:, np.sort(first)]


def compared_views(ch: DimChains, other: DimChains, memo: dict) -> list[tuple]:
    """The views of a window's two dimensions whose coincidences the chains are compared on, beyond instance 0's.

    Per meshed level the model reads both dimensions summed over their
    digits (the words of a link above it), both at digit 0 (below the
    buffer), or one class of digits each (a link copy below it: model/
    residency.py; never at L0, which has no link below it); every
    combination over the levels, but where neither dimension has digits
    beyond digit 0's class at a level: there every digit of a row is in
    that class, so the sum is the factor (compared for equality) times
    digit 0's.
    """
    from mapsearch.model.window_types import cls

    classes = (instances_of(memo, ch), instances_of(memo, other))
    per_level = []
    for lv in range(len(classes[0].levels)):
        if not classes[0].beyond[lv] and not classes[1].beyond[lv]:
            per_level.append([("rep", "rep")])
            continue
        columns = [[0, *k.beyond[lv]] for k in classes]
        if classes[0].levels[lv] == ch.depth:  # L0: no link below it, so no copy reads one class
            per_level.append([("rep", "rep"), ("sum", "sum")])
            continue
        per_level.append([("sum", "sum")] + [(cls(a), cls(b)) for a in columns[0] for b in columns[1]])
    out = []
    for combo in itertools.product(*per_level):
        views = (tuple(e for e, _ in combo), tuple(e for _, e in combo))
        if any(e != "rep" for v in views for e in v):
            out.append(views)
    return out


def undominated(ch: DimChains, coincidence_cols: np.ndarray) -> np.ndarray:
    """Rows of ``ch`` that no other row beats (see :func:`prune_window_chains`), in order.

    A row is beaten by another at least as good everywhere and no larger
    that differs from it, or by an earlier twin (equal everywhere).
    """
    exact = [ch.counts] + [ch.sums[f] for f in sorted(ch.sums)] + [ch.calls]
    exact += [ch.tiles[:, :ch.tied]] if ch.tied else []  # a fused stage's shared dim: only among equal outer tiles
    still = _still_columns(ch.small)
    if ch.flavoured:  # split over mesh axes: every view's tables too (the coincidences are instance 0's)
        exact.append(ch.factors)
        for view in ch.flavoured.values():
            exact += [view["counts"]] + [view["sums"][f] for f in sorted(view["sums"])] + [view["calls"]]
            still += _still_columns(view["small"])
    good = [coincidence_cols] + ([np.stack(still, axis=1)] if still else [])
    # First among rows that read alike everywhere (only their extents differ), then across them.
    rows = np.arange(len(ch))
    for columns in (exact + good, exact):
        v = np.concatenate([b[rows] for b in good] + [-ch.tiles[rows]], axis=1)
        beaten = beaten_in_groups(*sorted_groups(columns, rows), v)
        order, first_of_value = sorted_groups(columns + good + [ch.tiles], rows)
        beaten[order[~first_of_value]] = True  # a later twin
        rows = rows[~beaten]
    return rows


def _still_columns(small: dict) -> list[np.ndarray]:
    """The still sums a window's words grow with: ``W - C`` for the extents (``W`` where no counts), ``C``, others."""
    x, u = (1, 0), (0, 1)
    out = []
    for f in sorted(small):
        for key in sorted(small[f]):
            col = small[f][key]
            if f == x and u in small:
                col = col - small[u].get(key, 0)
            out.append(col)
    return out
