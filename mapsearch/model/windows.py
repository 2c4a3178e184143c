r"""Split filter windows: a convolution input axis over two split dimensions, counted exactly.

An input axis ``h = s*p + t*r`` (stride ``s``, dilation ``t``) whose two
dimensions are both split below the top holds, for pieces ``x`` of ``p`` and
``y`` of ``r``, the interval of ``s*(x-1) + t*(y-1) + 1`` words that starts
at ``s*p0 + t*r0``. :mod:`mapsearch.model.traffic` counts a buffer's words
as the words of every state of its prefix minus those of the steps that
change nothing (docs/solver.md, "Split filter windows", proves each part):

- states: ``sum over piece pairs of s(x-1) + t(y-1) + 1
  = s*F_p*N_r + t*N_p*F_r + (1-s-t)*N_p*N_r`` (``F``: sum of piece extents,
  ``N``: number of pieces), a sum of three per-dimension products;
- a loop over neither dimension advances: the axis stays iff every loop of
  ``p`` and of ``r`` inside it makes one trip (resetting loops only move the
  interval back, so two of them cannot cancel): the same three terms over
  the contexts with one trip (still sums of extents ``W`` and of counts);
- a loop of ``p`` (or ``r``) advances: its piece goes from ``a`` to the
  adjacent ``a'`` while the other's loops inside it go from their last to
  their first piece of its context piece ``c``. The interval is unchanged
  iff ``s*x_b = t*(|c| - y_b)`` and ``s*x_b + t*y_b = s*x_a + t*y_a``
  (``x_b``, ``x_a``: the advancing dimension's last piece inside ``a`` and
  first inside ``a'`` at the buffer's level; ``y_b``, ``y_a``: the other's
  last and first inside ``c``). These are the *coincidences*.

The coincidences depend on the two chains jointly. :func:`coincidence_table`
counts them, weighted by the interval's words, for every pair of chains,
from the advancing dimension's advance types and the other's context types
(both exact, from the split-with-remainder rule); the model reads the table
by an element constraint on ``choice_p * |chains of r| + choice_r``
(:func:`coincidences`), and model/traffic.py multiplies it by the other
axes' still factors and the other dimensions' counts, as it does for every
step that changes nothing.

In a fused group's stage the tables are the same: every advance they count
of a loop below the fusion level lies inside one sub-nest run, and those of
the loops at or above it are not read below it, where the runs start empty
(model/traffic.py's ``first_loop_level``; docs/solver.md, "Split windows in
a fused stage").

Split over mesh axes (docs/spatial.md, "Split windows over mesh axes"), a
window dimension has equal parts above L0 (model/spatial_chains.EQUAL_PARTS):
there every instance is instance 0 shifted, so a view's sum is instance
0's table times the view's instances along the two dimensions. At L0 its
parts may be unequal: a view summing L0 reads the table summed over that
split's digits, one instance per class of digits on its own tree
(window_types.instance_classes). Unequal parts above L0 are a named
restriction (:func:`mapsearch.model.family.spatial_restriction`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mapsearch.budget import checkpoint
from mapsearch.model.chains import DimChains
from mapsearch.model.dominance import beaten_in_groups
from mapsearch.model.encoding import Encoding, Q
from mapsearch.model.problem import Problem
from mapsearch.model.row_keys import distinct_rows, sorted_groups
from mapsearch.model.window_types import advance_types, context_types, instance_classes
from mapsearch.spec.workload import Workload

# Entries of the (chain of p, chain of r, type, type) block computed at once.
_BLOCK = 1 << 24


@dataclass(frozen=True)
class Window:
    """An input axis over two dimensions of extent > 1: ``coeffs[0]*dims[0] + coeffs[1]*dims[1]``."""

    tensor: str
    dims: tuple[str, str]
    coeffs: tuple[int, int]

    def coeff(self, d: str) -> int:
        return self.coeffs[self.dims.index(d)]

    def other(self, d: str) -> str:
        return self.dims[1 - self.dims.index(d)]


def find_windows(w: Workload) -> tuple[Window, ...]:
    """Every input axis indexed by exactly two dimensions of extent > 1 (extent-1 terms add nothing).

    Axes over three or more such dimensions are not windows: model/problem.py
    holds all but the largest whole (a named family restriction).
    """
    out = []
    for t in w.einsum.inputs:
        for ix in t.indices:
            live = [(d, c) for d, c in ix.terms if w.extent[d] > 1]
            if len(live) == 2:
                out.append(Window(t.name, (live[0][0], live[1][0]), (live[0][1], live[1][1])))
    return tuple(out)


def held_whole_restriction(dims, why: str | None) -> str:
    """The family restriction of windows whose smaller dimensions ``dims`` are held whole (``why``: split_windows')."""
    why = why or "an axis over three or more dimensions"
    return f"filter windows held whole: {', '.join(dims)} ({why}: such an axis is split only along its largest dimension)"


def split_windows(p: Problem, unit_dims: frozenset[str], extra_footprints) -> tuple[tuple[Window, ...], frozenset[str], str | None]:
    """``(windows split, pinned dims, why windows are held whole)`` for this problem.

    Windows are split wherever transfers are measured in words: one einsum
    (with a spatial fanout their dimensions are split over mesh axes, above
    L0 in equal parts only: model/family.spatial_restriction) and every stage
    of a fused group (below the fusion level its buffers are emptied between
    sub-nest runs: model/traffic.py then reads no coincidence of a loop at
    or above that level, docs/solver.md "Split windows in a fused stage").
    Under other measures, and for a window over a dimension pinned by an
    axis of three or more dimensions, the window's smaller dimension is held
    whole; the reason becomes a family restriction.
    """
    from mapsearch.model.problem import pinned_dims

    w = p.workload
    found = find_windows(w)
    reason = None
    if found and (unit_dims or extra_footprints):
        reason = "measures other than words"
    windows = () if reason else found
    while True:
        pinned = pinned_dims(w, frozenset((win.tensor, frozenset(win.dims)) for win in windows))
        kept = tuple(win for win in windows if not set(win.dims) & pinned)
        if kept == windows:
            return windows, pinned, reason
        windows = kept


# --------------------------------------------------------------------------- the table

def coincidence_table(advancing: DimChains, other: DimChains, se: int, so: int, j: int, le: int, lo: int,
                      other_outer: bool, memo: dict | None = None, summed: bool = False) -> np.ndarray:
    """Coincidences of the advancing dimension's level-``j`` loop, weighted by the interval's words.

    Rows: chains of the advancing dimension; columns: chains of the other.
    ``le``, ``lo``: the levels whose pieces the buffer holds along each
    (its level, or the one above where that dimension's loop is inside the
    buffer); ``other_outer``: the other's level-``j`` loop is outer to the
    advancing one, so its context is its level-``j`` piece (else its
    level-``(j-1)`` piece), taken no deeper than ``lo``. ``memo``: a dict
    kept across calls on the same chains (:func:`_distinct_types`).

    Chains split over mesh axes: instance 0's coincidences, or with
    ``summed`` those of every instance of the innermost level's split
    (one per class of digits, weighed by the class sizes of both
    dimensions: window_types.instance_classes).
    """
    memo = {} if memo is None else memo
    if not summed:
        table, row_of, col_of = _type_table(advancing, other, se, so, j, le, lo, other_outer, memo)
        return table[row_of][:, col_of]
    (_, sizes_a), (_, sizes_o) = _instances(memo, advancing), _instances(memo, other)
    out = np.zeros((len(advancing), len(other)), dtype=np.int64)
    for a in range(sizes_a.shape[1]):
        for o in range(sizes_o.shape[1]):
            table, row_of, col_of = _type_table(advancing, other, se, so, j, le, lo, other_outer, memo, (1 + a, 1 + o))
            out += sizes_a[:, a, None] * sizes_o[None, :, o] * table[row_of][:, col_of]
    return out


def _instances(memo: dict, ch: DimChains):
    """window_types.instance_classes of ``ch``, once per chains (``memo`` keeps them with the chains)."""
    key = (id(ch), "instances")
    if key not in memo:
        memo[key] = (ch, instance_classes(ch))
    return memo[key][1]


def _type_table(advancing: DimChains, other: DimChains, se: int, so: int, j: int, le: int, lo: int,
                other_outer: bool, memo: dict | None, which: tuple[int, int] = (0, 0)
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`coincidence_table` on distinct types: ``(table, row_of, col_of)``, the table is ``table[row_of][:, col_of]``.

    ``which``: the instance of each dimension (:func:`_instances`; 0 is instance 0)."""
    memo = {} if memo is None else memo
    (xb, xa, m, gap), row_of = _distinct_types(memo, advancing, "advance", j, le, which[0])
    (c, yb, ya, n), col_of = _distinct_types(memo, other, "context", min(j if other_outer else j - 1, lo), lo, which[1])
    rows, cols = xb.shape[0], c.shape[0]
    out = np.zeros((rows, cols), dtype=np.int64)
    per_row = max(1, cols * xb.shape[1] * c.shape[1])
    step = max(1, _BLOCK // per_row)
    for lo_row in range(0, rows, step):
        checkpoint(f"tabling the coincidences of {len(advancing):,} x {len(other):,} window chains")
        sl = slice(lo_row, lo_row + step)
        XB, XA, M, G = xb[sl, None, :, None], xa[sl, None, :, None], m[sl, None, :, None], gap[sl, None, :, None]
        C, YB, YA, N = c[None, :, None, :], yb[None, :, None, :], ya[None, :, None, :], n[None, :, None, :]
        same_start = se * G == so * (C - YB)
        same_length = se * XB + so * YB == se * XA + so * YA
        words = se * (XA - 1) + so * (YA - 1) + 1
        out[sl] = np.sum(M * N * (same_start & same_length) * words, axis=(2, 3))
    return out, row_of, col_of


def _distinct_types(memo: dict, ch: DimChains, kind: str, level_from: int, level_to: int, which: int = 0):
    """The advance (``kind="advance"``, of the level-``level_from`` loop) or context types of ``ch``'s chains
    (a type counted 0 times reads as 0), once per distinct row, and each chain's row among them. A chain
    split over mesh axes has the types of its instance ``which`` (:func:`_instances`).

    A coincidence reads its row's and its column's types alone, and
    thousands of chains share a few hundred types, so the table is computed
    on those; the types of one dimension's chains recur in every variant
    and direction, so ``memo`` keeps them (with the chains, whose ``id`` is
    the key).
    """
    key = (id(ch), kind, level_from, level_to, which)
    if key not in memo:
        parts = ch.parts_by_level()
        tree = _instances(memo, ch)[0][which]
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


def prune_window_chains(chains: dict[str, DimChains], windows: tuple[Window, ...], depth: int) -> dict[str, DimChains]:
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
    dominator is kept for every partner chain).
    """
    out = dict(chains)
    variants = table_variants(depth)
    memo: dict = {}
    for d in dict.fromkeys(d for win in windows for d in win.dims):
        # Per partner chain one column; partner chains of equal types give equal columns, and a
        # comparison of rows reads the same on one copy of a column as on all: one column per type.
        extra = []
        for win in (win for win in windows if d in win.dims):
            o = win.other(d)
            for j, le, lo, outer in variants:
                table, row_of, _ = _type_table(out[d], out[o], win.coeff(d), win.coeff(o), j, le, lo, outer, memo)
                extra.append(table[row_of])
                table, _, col_of = _type_table(out[o], out[d], win.coeff(o), win.coeff(d), j, le, lo, outer, memo)
                extra.append(table[:, col_of].T)
                if _unequal_innermost(out[d]) or _unequal_innermost(out[o]):  # the sum over instances too
                    extra.append(coincidence_table(out[d], out[o], win.coeff(d), win.coeff(o), j, le, lo, outer, memo,
                                                   summed=True))
                    extra.append(coincidence_table(out[o], out[d], win.coeff(o), win.coeff(d), j, le, lo, outer, memo,
                                                   summed=True).T)
        out[d] = out[d].take(_undominated(out[d], np.concatenate(extra, axis=1)))
    return out


def _unequal_innermost(ch: DimChains) -> bool:
    """Some chain splits the dimension at the innermost level (where its parts may be unequal)."""
    return ch.part_levels is not None and ch.depth in ch.part_levels and \
        int(ch.factors[:, ch.part_levels.index(ch.depth)].max()) > 1


def _undominated(ch: DimChains, coincidence_cols: np.ndarray) -> np.ndarray:
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


# --------------------------------------------------------------------------- the model

def pair_index(enc: Encoding, win: Window):
    """``choice_p * |chains of r| + choice_r``: one index over the pairs of the window's chains."""
    key = ("window_pair", win.dims)
    if key not in enc.cache:
        p, r = win.dims
        cols = len(enc.chains[r])
        cp, cr = enc.choice[p], enc.choice[r]
        if isinstance(cp, int) and isinstance(cr, int):
            enc.cache[key] = cp * cols + cr
        else:
            var = enc.model.new_int_var(0, len(enc.chains[p]) * cols - 1, f"pair_{p}_{r}")
            enc.model.add(var == cp * cols + cr)
            enc.cache[key] = var
    return enc.cache[key]


def coincidences(enc: Encoding, win: Window, e: str, j: int, le: int, lo: int, other_outer: bool,
                 summed: bool = False) -> Q:
    """:func:`coincidence_table` of the chosen pair of chains, as a quantity (``summed``: over the instances of
    the innermost level's split)."""
    o = win.other(e)
    k = min(j if other_outer else j - 1, lo)
    key = ("coincidences", win.dims, win.coeffs, e, j, le, lo, k, summed)
    if key in enc.cache:
        return enc.cache[key]
    table = coincidence_table(enc.chains[e], enc.chains[o], win.coeff(e), win.coeff(o), j, le, lo, other_outer,
                              enc.cache.setdefault("window_types", {}), summed)
    if e != win.dims[0]:
        table = table.T  # rows: chains of the window's first dimension
    values = table.ravel()
    lo_v, hi_v = int(values.min()), int(values.max())
    if lo_v == hi_v:
        q = Q.const(lo_v)
    else:
        index = pair_index(enc, win)
        if isinstance(index, int):
            q = Q.const(int(values[index]))
        else:
            var = enc.model.new_int_var(lo_v, hi_v, enc.name(f"coincide_{win.tensor}_{e}{j}"))
            enc.model.add_element(index, values.tolist(), var)
            q = Q(var, lo_v, hi_v)
    enc.cache[key] = q
    return q
