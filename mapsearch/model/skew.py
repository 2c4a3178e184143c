r"""A skewed axis split like any other: ``I[p+r,p]``'s region as a sum of products, one footprint per dimension.

A tensor whose dimension indexes an affine axis and another axis too
(``I[p+r,p]``, ``A[m,m+k]``) has no region of one factor per dimension: a
box of pieces ``x_d`` spans, along each axis ``a``,

    span_a = sum_{d in a} c_d (x_d - 1) + 1

words (never clipped: a piece of ``d`` starting at ``s_d`` reaches index
``sum_d c_d (s_d + x_d - 1)``, at most the axis's last), and its region is
``prod_a span_a`` (``(x_p + x_r - 1) x_p`` for ``I[p+r,p]``). Expanded, that
is a polynomial ``sum_k coeff_k prod_d (x_d - 1)^{k_d}`` (:func:`monomials`),
and each monomial *is* one footprint per dimension (``(x - 1)^k``;
``k = 0``: one per piece). So the words a buffer of the tensor takes in, the sum over its
region changes of the region, are ``sum_k coeff_k`` times the words
model/traffic.region_words counts with monomial ``k``'s footprints, each
exact, and its largest region is the polynomial at its largest pieces (every
coefficient of a span is positive, so the region grows with every piece).

That needs the region to change exactly when a piece of some dimension
indexing the tensor changes (region_words' rule, with no coincidences of a
filter window's kind): the box must determine the pieces
(:func:`held_for_box`): the axes' coefficients, one column per dimension,
must be independent, since the box's starts and spans are that linear map
of the pieces' starts and extents. ``I[p+r,p]``: ``p`` from the second
axis, then ``r`` from the first. Where the box does not determine every
piece because two dimensions index one skewed axis and nothing else
(``I[p+r+u,p]``), those two are a filter window hidden in the axis
(:func:`box_windows`): the box changes exactly when another piece or that
window's interval changes, so model/windows.py counts the window's
coincidences, and each monomial reads the window by its span or one per
interval. Otherwise the smaller dependent dimensions are held whole, a
named restriction (model/windows.split_windows), and the rest is split.

The monomials are in powers of ``x - 1``, whose coefficients are all
positive (each span is ``sum_d c_d (x_d - 1) + 1``): then a chain's larger
still sums only lower every monomial's words, the premise of pruning by
stillness (model/dominance.py). In powers of ``x`` a monomial can be
negative (``-2 x_p`` in ``I[2*p+r,p]``), and the still sums it reads
would add words.

Only where transfers are measured in words (DRAM rows and other measures
hold it whole, like every window there). On a meshed path and in a fused
stage alike: a part of a dimension on an instance, or a fused stage's
piece, is a piece like any other, read through the same footprints
(checked against the spatial and fused brute forces), and a hidden
window's dimensions are split over mesh axes like a filter window's. A
skewed axis whose box does not determine its pieces and hides no window is
refused there (model/problem.check_supported): its held family has no such
oracle.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Mapping

import numpy as np

from mapsearch.model.footprints import table_footprint
from mapsearch.spec.einsum import TensorAccess
from mapsearch.spec.workload import Workload

if TYPE_CHECKING:
    from mapsearch.model.problem import Problem

ONE_PER_PIECE = (0, 1)
EXTENT = (1, 0)

Monomial = tuple[int, tuple[tuple[str, tuple], ...]]  # (coefficient, ((dim, footprint), ...))


def repeated_dims(t: TensorAccess) -> tuple[str, ...]:
    """The dimensions that index more than one axis of ``t`` (``A[m,m]``: ``m``; ``I[p+r,p]``: ``p``)."""
    seen: set[str] = set()
    repeated: dict[str, None] = {}
    for ix in t.indices:
        for d in ix.dims:
            if d in seen:
                repeated[d] = None
            seen.add(d)
    return tuple(repeated)


def skewed_axes(t: TensorAccess, w: Workload | None = None) -> list[int]:
    """Indices of ``t``'s affine axes (two or more terms) over a dimension that indexes another axis too; with
    ``w``, over such a dimension of extent > 1 (``I[p+r+u,p]`` with ``p = 1`` is a plain filter window)."""
    again = {d for d in repeated_dims(t) if w is None or w.extent[d] > 1}
    return [a for a, ix in enumerate(t.indices) if len(ix.terms) > 1 and set(ix.dims) & again]


def held_for_box(t: TensorAccess, w: Workload) -> frozenset[str]:
    """The fewest dimensions to hold whole so that the box determines every other piece on ``t``'s axes but
    its filter windows (affine axes without a repeated dimension, whose coincidences model/windows.py
    counts; their dimensions index no other axis, so they are disjoint from these).

    A box's axis starts are ``sum_d c_d s_d`` and its spans ``sum_d c_d (x_d - 1) + 1``: the same linear
    map of the pieces' starts and of their extents, one row per axis. It determines them iff its columns
    (one per dimension of extent > 1) are independent: ``I[p+r,p]``, ``I[2*p+r,p+r]``. Otherwise the
    largest dimensions whose columns are independent are kept and the others held (``I[p+r+u,p]``: ``u``
    held, for ``R >= U``); empty where nothing need be held.
    """
    own = _own_axes(t)
    order = [d for ix in own for d in ix.dims if w.extent[d] > 1]
    live = sorted(set(order), key=lambda d: (-w.extent[d], order.index(d)))
    kept: list[str] = []
    for d in live:  # a column that adds to the rank is read off the box; the others are held
        if _rank(own, kept + [d]) > len(kept):
            kept.append(d)
    return frozenset(d for d in live if d not in kept)


def _own_axes(t: TensorAccess) -> list:
    """``t``'s axes but its filter windows (affine axes without a repeated dimension): the axes its box is
    read from."""
    again = set(repeated_dims(t))
    return [ix for ix in t.indices if len(ix.terms) == 1 or set(ix.dims) & again]


def _rank(axes, dims: list[str]) -> int:
    """Rank of the axes' coefficients (rows) over ``dims`` (columns): exact, small integers."""
    from fractions import Fraction

    rows = [[Fraction(dict(ix.terms).get(d, 0)) for d in dims] for ix in axes]
    rank = 0
    for col in range(len(dims)):
        pivot = next((r for r in range(rank, len(rows)) if rows[r][col] != 0), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        for r in range(len(rows)):
            if r != rank and rows[r][col] != 0:
                factor = rows[r][col] / rows[rank][col]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[rank])]
        rank += 1
    return rank


def determined(t: TensorAccess, w: Workload) -> bool:
    """The box determines every piece, nothing held (:func:`held_for_box`)."""
    return held_for_box(t, w) == frozenset()


def expands(p: Problem, unit_dims: frozenset[str], extra_footprints) -> dict[str, frozenset[str]]:
    """Per tensor of ``p`` whose skewed axes are split, its region expanded (the module's docstring), the
    dimensions held whole so that its box determines its pieces (a named restriction where not empty).
    Nothing is held where :func:`box_windows` reads the undetermined pieces as windows (unless
    ``p.hidden_windows`` is off: a first schedule's smaller family, solve/hidden_first.py)."""
    if unit_dims or extra_footprints:
        return {}
    w = p.workload
    out = {}
    for t in w.einsum.inputs:
        if skewed_axes(t, w):
            held = held_for_box(t, w)
            out[t.name] = frozenset() if held and p.hidden_windows and box_windows(t, w) else held
    return out


def hides_windows(p: Problem) -> bool:
    """Some input of ``p`` has a skewed axis whose box does not determine its pieces but hides a window."""
    w = p.workload
    return any(skewed_axes(t, w) and held_for_box(t, w) and box_windows(t, w) for t in w.einsum.inputs)


def box_windows(t: TensorAccess, w: Workload) -> tuple[tuple[tuple[str, int], ...], ...]:
    """The windows hidden in ``t``'s skewed axes where its box does not determine its pieces, or ``()``.

    ``I[p+r+u,p]``: ``r`` and ``u`` index the first axis alone, and ``p`` is
    read off the second. Take, on a skewed axis ``a``, the dimensions that
    index no other axis of ``t``, ``V_a``; if every other dimension's piece
    is determined by the other axes alone (their columns there are
    independent), then ``a``'s interval, less those pieces' known share, is
    the interval of the window ``sum_{g in V_a} c_g g``, and conversely. So
    the box changes exactly when a determined piece or a window's interval
    changes: the region changes of a tensor with those dimensions on axes of
    their own and the windows as filter windows, whose coincidences
    model/windows.py counts. The region itself is ``prod_a span_a`` with
    ``span_a = sum_{d not in V_a} c_d (x_d - 1) + S_a``, ``S_a`` the window's
    span (:func:`monomials`). Each window has two dimensions (their
    coincidence tables); ``()`` otherwise, and then :func:`held_for_box`'s
    dimensions are held whole.
    """
    live = {d for ix in t.indices for d in ix.dims if w.extent[d] > 1}
    own = _own_axes(t)
    windows, window_axes = [], []
    for ix in own:
        alone = [(d, c) for d, c in ix.terms if w.extent[d] > 1 and sum(d in jx.dims for jx in t.indices) == 1]
        if len(ix.terms) > 1 and len(alone) >= 2:
            if len(alone) > 2:
                return ()
            windows.append(tuple(alone))
            window_axes.append(ix)
    rest = sorted({d for ix in own for d in ix.dims if d in live} - {d for win in windows for d, _ in win})
    others = [ix for ix in own if ix not in window_axes]
    if not windows or _rank(others, rest) < len(rest):
        return ()
    return tuple(windows)


def window_key(dims) -> str:
    """The key of a box window (:func:`box_windows`) among a monomial's footprints: its span or one per interval."""
    return "window:" + "+".join(dims)


def monomials(t: TensorAccess, w: Workload, pinned: frozenset[str], axes: tuple[int, ...],
              windows: tuple[tuple[str, ...], ...] = ()) -> tuple[Monomial, ...]:
    """The region over ``axes`` of ``t`` as ``((coefficient, ((dim, footprint), ...)), ...)``.

    In powers of ``y_d = x_d - 1``: each span is ``sum_d c_d y_d + 1``, so
    every coefficient of the product is positive, and a chain's larger still
    sums only lower every monomial's words (model/dominance.py prunes on
    that; in powers of ``x`` a monomial such as ``-2 x_p`` of ``I[2*p+r,p]``
    would add them). Every dimension of those axes has a footprint in every
    monomial (``(x - 1)^k``, one per piece for ``k = 0``); a pinned
    dimension (whole at every level) or one of extent 1 enters as its
    extent, folded into the coefficient, with one per piece as its
    footprint. A box window's dimensions (``windows``, :func:`box_windows`)
    enter through the window's span ``S``, one more variable of power 0 or
    1, whose footprint is ``EXTENT`` (its span) or ``ONE_PER_PIECE`` (one per
    interval) under :func:`window_key`.
    """
    return _monomials(t, tuple(sorted(w.extents)), pinned, axes, windows)


@lru_cache(maxsize=256)
def _monomials(t: TensorAccess, extents: tuple[tuple[str, int], ...], pinned: frozenset[str],
               axes: tuple[int, ...], windows: tuple[tuple[str, ...], ...]) -> tuple[Monomial, ...]:
    ext = dict(extents)
    in_window = {d: window_key(win) for win in windows for d in win}
    dims = sorted({d for a in axes for d in t.indices[a].dims} - set(in_window))
    free = [d for d in dims if d not in pinned and ext[d] > 1] + [window_key(win) for win in windows]
    # A polynomial: exponents over ``free`` -> coefficient.
    poly: dict[tuple[int, ...], int] = {(0,) * len(free): 1}
    for a in axes:
        span: dict[tuple[int, ...], int] = {}
        const = 1
        for d, c in t.indices[a].terms:
            if d in in_window:  # the window's span S replaces the constant 1 (added once below)
                continue
            if d in free:  # c * y_d
                e = tuple(1 if g == d else 0 for g in free)
                span[e] = span.get(e, 0) + c
            else:  # held at its extent
                const += c * (ext[d] - 1)
        window = next((in_window[d] for d in t.indices[a].dims if d in in_window), None)
        if window is not None:
            e = tuple(1 if g == window else 0 for g in free)
            span[e] = span.get(e, 0) + 1
            const -= 1
        zero = (0,) * len(free)
        if const:
            span[zero] = span.get(zero, 0) + const
        product: dict[tuple[int, ...], int] = {}
        for e1, c1 in poly.items():
            for e2, c2 in span.items():
                e = tuple(x + y for x, y in zip(e1, e2))
                product[e] = product.get(e, 0) + c1 * c2
        poly = product
    held = tuple((d, ONE_PER_PIECE) for d in dims if d not in free)
    keys = set(in_window.values())
    grouped = _grouped(poly, [n for n, d in enumerate(free) if d not in keys])
    return tuple((coeff, tuple((d, (EXTENT if k else ONE_PER_PIECE) if d in keys else
                                _footprint(k if n == at else ((k, 1),), ext[d]))
                               for n, (d, k) in enumerate(zip(free, e))) + held)
                 for at, e, coeff in grouped)


def _grouped(poly: dict[tuple[int, ...], int], dims: list[int]) -> list[tuple[int | None, tuple, int]]:
    """The monomials with equal powers of every variable but one dimension's merged into one:
    ``(that dimension's position, exponents with its polynomial in its place, coefficient)``.

    ``y_p^2 + y_p + y_p S + S = (y_p^2 + y_p) 1 + (y_p + 1) S``: one term per
    distinct power of the other variables, the merged dimension's footprint
    the polynomial ``sum_k c_k y^k`` (positive coefficients, so still
    non-negative and growing with the piece); the dimension whose merge
    leaves the fewest terms (fewer monomials: fewer constraints, each as
    exact).
    """
    if not dims:
        return [(None, e, c) for e, c in sorted(poly.items()) if c]

    def rest(e: tuple[int, ...], at: int) -> tuple[int, ...]:
        return e[:at] + (0,) + e[at + 1:]

    at = min(dims, key=lambda n: len({rest(e, n) for e in poly}))
    merged: dict[tuple[int, ...], dict[int, int]] = {}
    for e, c in sorted(poly.items()):
        if c:
            merged.setdefault(rest(e, at), {})[e[at]] = c
    out = []
    for r, powers in merged.items():
        g = math.gcd(*powers.values())
        out.append((at, r[:at] + (tuple(sorted((k, c // g) for k, c in powers.items())),) + r[at + 1:], g))
    return out


def _footprint(powers: tuple[tuple[int, int], ...], extent: int):
    """``sum_k c_k (x - 1)^k`` for ``powers = ((k, c_k), ...)`` as a footprint: one per piece, the extent, or a
    table."""
    if powers == ((0, 1),):
        return ONE_PER_PIECE
    if powers == ((0, 1), (1, 1)):
        return EXTENT
    name = "+".join(f"{c}y^{k}" for k, c in powers)
    return table_footprint(f"{name}:{extent}", [0] + [sum(c * (x - 1) ** k for k, c in powers)
                                                      for x in range(1, extent + 1)])


def region_at(t: TensorAccess, axes: tuple[int, ...], x: Mapping[str, object]):
    """``prod_{a in axes} span_a`` at piece extents ``x`` (ints or numpy arrays): the box's words."""
    return math.prod(sum(c * (np.asarray(x[d]) - 1) for d, c in t.indices[a].terms) + 1 for a in axes)


def expanded_regions(p: Problem, unit_dims: frozenset[str], extra_footprints, pinned: frozenset[str],
                     windows) -> dict[str, tuple[Monomial, ...]]:
    """Per tensor :func:`expands` names, the monomials of its region over every axis but its split filter windows
    (model/windows.py, whose coincidences model/traffic.py counts as for any tensor), a box window
    (:func:`box_windows`, also among ``windows``) inside its axis's monomials."""
    w = p.workload
    out: dict[str, tuple[Monomial, ...]] = {}
    for name in sorted(expands(p, unit_dims, extra_footprints)):
        t = w.tensor(name)
        split = {frozenset(win.dims) for win in windows if win.tensor == name and not win.box}
        boxed = tuple(win.dims for win in windows if win.tensor == name and win.box)
        axes = tuple(a for a, ix in enumerate(t.indices)
                     if len(ix.terms) == 1 or frozenset(d for d in ix.dims if w.extent[d] > 1) not in split)
        out[name] = monomials(t, w, pinned, axes, boxed)
    return out
