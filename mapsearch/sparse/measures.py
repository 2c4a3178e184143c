"""A sparse tensor's expected (or, for fixed structures, exact) words as per-dimension footprints.

The closed form the density-model search prices links with (the derivation is
in the docstring of :mod:`mapsearch.sparse.solve`): a format's words per box
as terms in the counts ``D_k`` (:func:`count_terms`), their expectations
under ``Uniform`` (:func:`format_terms`, :func:`presence`), and each term of a
tensor as per-dimension footprints whose link measure the model sums
(:class:`Measure`: :func:`tensor_measures` for ``Uniform`` and ``Dense``,
:func:`structured_measures` for ``NofM`` and ``Banded``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

from mapsearch.model.footprints import positional_footprint, table_footprint
from mapsearch.model.problem import Problem, UnsupportedProblem, footprint
from mapsearch.model.traffic import UNIT
from mapsearch.sparse.density import Banded, Dense, NofM, Uniform
from mapsearch.sparse.format import Format
from mapsearch.sparse.model import DENOMINATOR

TABLE_SCALE = 1 << 24


# ----------------------------------------------------------------------------- terms of a format
@dataclass(frozen=True)
class Term:
    """``(payload + meta) * prod_{r in xs} x_r * s_m(x_m..x_{n-1})`` words per box (``m == n``: no ``s``)."""

    payload: object  # coefficient (Fraction or float)
    meta: object
    xs: frozenset[int]
    m: int


@dataclass(frozen=True)
class CountTerm:
    """``(payload + meta) * prod_{r in xs} x_r * D_level`` words per box (``level`` None: no ``D``)."""

    payload: int
    meta: int
    xs: frozenset[int]
    level: int | None


def count_terms(fmt: Format) -> tuple[CountTerm, ...]:
    """A box's words in ``fmt`` as terms in the counts ``D_k`` themselves (mirrors ``format.words``).

    ``fibers_0 = 1``; a ``U`` group's entries are its fibers times its ranks'
    extents; a ``C`` group ending at rank ``b-1`` has ``D_{b-1}`` entries and
    ``size`` coordinates each; a group followed by a ``C`` group stores
    ``entries + fibers`` pointers; the last group's entries are the payload.
    Fixed structures use the terms as they are (their ``D_k`` are products of
    per-rank functions); ``Uniform`` through :func:`format_terms`.
    """
    fibers = [(1, frozenset(), None)]
    meta: list = []
    entries = fibers
    a = 0
    for g, (kind, size) in enumerate(fmt.groups):
        b = a + size
        if kind == "U":
            entries = [(c, xs | frozenset(range(a, b)), lv) for c, xs, lv in fibers]
        else:
            entries = [(1, frozenset(), b - 1)]
            meta += [(c * size, xs, lv) for c, xs, lv in entries]
        if g + 1 < len(fmt.groups) and fmt.groups[g + 1][0] == "C":
            meta += entries + fibers
        fibers = entries
        a = b
    merged: dict[tuple, list[int]] = {}
    for c, xs, lv in entries:
        merged.setdefault((xs, lv), [0, 0])[0] += c
    for c, xs, lv in meta:
        merged.setdefault((xs, lv), [0, 0])[1] += c
    return tuple(CountTerm(p, q, xs, lv) for (xs, lv), (p, q) in
                 sorted(merged.items(), key=lambda kv: (sorted(kv[0][0]), -1 if kv[0][1] is None else kv[0][1])))


def format_terms(fmt: Format, d: Sequence) -> tuple[Term, ...]:
    """The expected words of one box in ``fmt`` under ``Uniform(d)``, as terms (mirrors ``format.words``).

    :func:`count_terms` with each count replaced by its expectation,
    ``E[D_k] = prod_{r<=k} d_r * prod_{r<=k} x_r * s_{k+1}``; terms that land on the
    same ``(xs, m)`` are merged. Works on Fractions and floats alike.
    """
    n = len(d)
    one = d[0] ** 0 if n else 1
    merged: dict[tuple, list] = {}
    for t in count_terms(fmt):
        if t.level is None:
            coef, xs, m = one, t.xs, n
        else:
            coef, xs, m = math.prod(d[:t.level + 1], start=one), t.xs | frozenset(range(t.level + 1)), t.level + 1
        acc = merged.setdefault((xs, m), [0 * one, 0 * one])
        acc[0] += coef * t.payload
        acc[1] += coef * t.meta
    return tuple(Term(p, q, xs, m) for (xs, m), (p, q) in sorted(merged.items(), key=lambda kv: (sorted(kv[0][0]), kv[0][1]))
                 if p or q)


def presence(d: Sequence[float], x: Sequence[float], m: int) -> float:
    """``s_m(x_m..x_{n-1})``: the probability that a present prefix of length ``m`` has a leaf in the box."""
    s = 1.0
    for k in range(len(d) - 1, m - 1, -1):
        s = 1.0 - (1.0 - d[k] * s) ** x[k]
    return s


def term_value(term: Term, d: Sequence[float], x: Sequence[float]) -> float:
    """One box's words of a term (for checks): ``(payload + meta) * prod_{r in xs} x_r * s_m``."""
    return float(term.payload + term.meta) * math.prod(x[r] for r in term.xs) * presence(d, x, term.m)


# ----------------------------------------------------------------------------- per-dimension footprints
@dataclass(frozen=True)
class Measure:
    """A term of one tensor as per-dimension footprints: the link measure ``M`` and how to read it.

    Words per transfer ``= (payload + meta) * constant * prod_d f_d(x_d)``
    where one ``f_d`` may be a table scaled by ``scale``; so the expected
    words of a link are ``(payload + meta) * constant * M / scale``.
    """

    tensor: str
    payload: float
    meta: float
    exact_coef: Fraction  # (payload + meta) * constant as a rational, for the objective
    footprints: tuple[tuple[str, tuple], ...]
    scale: int
    rel_error: float  # bound on |M / scale - true| / true from the table's rounding


def _rank_dims(problem: Problem, t: str) -> tuple[str, ...]:
    access = problem.workload.tensor(t)
    dims = []
    for ix in access.indices:
        if not ix.is_plain or len(ix.dims) != 1:
            raise UnsupportedProblem(f"sparse solve: {t}'s axis {ix.text()} is not a plain dimension")
        dims.append(ix.dims[0])
    if len(set(dims)) != len(dims):
        raise UnsupportedProblem(f"sparse solve: {t} repeats a dimension ({dims})")
    return tuple(dims)




def _densities(t: str, density, ndim: int) -> tuple[tuple[float, ...], tuple[Fraction, ...]]:
    if density is None or isinstance(density, Dense):
        return (1.0,) * ndim, (Fraction(1),) * ndim
    if isinstance(density, Uniform):
        if len(density.densities) != ndim:
            raise ValueError(f"{t}: {len(density.densities)} densities for {ndim} ranks")
        return (tuple(float(v) for v in density.densities),
                tuple(Fraction(v).limit_denominator(DENOMINATOR) for v in density.densities))
    raise UnsupportedProblem(
        f"sparse solve: {t} has a {type(density).__name__} density; the solver searches with Uniform, NofM, Banded "
        "or Dense (give Uniform of its mean density per rank to search)")


def tensor_measures(problem: Problem, t: str, density, fmt: Format, whole: frozenset[str],
                    table_scale: int = TABLE_SCALE) -> tuple[Measure, ...]:
    """The terms of ``t``'s format as per-dimension footprints (see the module docstring)."""
    w = problem.workload
    dims = _rank_dims(problem, t)
    n = len(dims)
    if fmt.ndim != n:
        raise ValueError(f"format {fmt.text()} has {fmt.ndim} ranks, {t} has {n}")
    if isinstance(density, (NofM, Banded)):
        return structured_measures(problem, t, density, fmt, whole)
    df, dq = _densities(t, density, n)
    ext = [w.extent[d] for d in dims]
    out = []
    for tf, tq in zip(format_terms(fmt, df), format_terms(fmt, dq)):
        fps: dict[str, tuple] = {}
        for r in range(min(tf.m, n)):
            fps[dims[r]] = footprint(w.tensor(t), dims[r], w) if r in tf.xs else UNIT
        joint = list(range(tf.m, n))
        constant, scale, rel = 1.0, 1, 0.0
        exact_const = Fraction(1)
        if all(dq[r] == 1 for r in joint):  # s_m == 1 for every box: the joint part is prod x (affine)
            for r in joint:
                fps[dims[r]] = footprint(w.tensor(t), dims[r], w) if r in tf.xs else UNIT
        else:
            free = [r for r in joint if dims[r] not in whole]
            if len(free) > 1:
                raise UnsupportedProblem(
                    f"sparse solve: {t} in {fmt.text()} counts fibers of rank {tf.m - 1} whose presence depends on "
                    f"the tiles of {', '.join(dims[r] for r in free)} jointly, which is not a per-dimension product; "
                    "hold all but one of them whole (tile limits) or use a format without that count (COO, CSR of a matrix)")
            for r in joint:
                fps[dims[r]] = UNIT  # held whole: one per piece, its extent goes into the constant or the table

            def h(x: int, f=free) -> float:
                xs = list(ext)
                if f:
                    xs[f[0]] = x
                return math.prod(xs[r] for r in joint if r in tf.xs) * presence(df, xs, tf.m)

            if free:
                f = free[0]
                values = [0] + [round(table_scale * h(x)) for x in range(1, ext[f] + 1)]
                fps[dims[f]] = table_footprint(f"{t}:{sorted(tf.xs)}:{tf.m}:{table_scale}", values)
                scale = table_scale
                hmin = min(h(x) for x in range(1, ext[f] + 1))
                rel = 0.5 / (table_scale * hmin) if hmin > 0 else math.inf
            else:
                constant = h(0)
                exact_const = Fraction(constant).limit_denominator(DENOMINATOR)
        coef = (tq.payload + tq.meta) * exact_const
        out.append(Measure(t, float(tf.payload) * constant, float(tf.meta) * constant, coef,
                           tuple(sorted(fps.items())), scale, rel))
    return tuple(out)


def check_ranks(t: str, density, ndim: int) -> None:
    """One line when a density's rank count does not match its tensor's."""
    if isinstance(density, Uniform) and len(density.densities) != ndim:
        raise ValueError(f"{t}: {len(density.densities)} densities for {ndim} ranks")
    if isinstance(density, NofM) and not len(density.n) == len(density.m) == ndim:
        raise ValueError(f"{t}: NofM has {len(density.n)} ranks, {t} has {ndim}")
    if isinstance(density, Banded) and ndim != 2:
        raise ValueError(f"{t}: Banded is a matrix density, {t} has {ndim} ranks")


def structured_measures(problem: Problem, t: str, density, fmt: Format, whole: frozenset[str]) -> tuple[Measure, ...]:
    """Exact terms of a fixed-structured ``t`` (``NofM``, ``Banded``) as per-dimension footprints.

    ``D_k`` of a box is ``prod_r g_{k,r}([lo_r, hi_r))`` (``density.box_factors``),
    so a :class:`CountTerm` ``c * prod_{r in xs} x_r * D_k`` is the product over
    ranks of ``g_{k,r}`` times ``x_r`` for ``r`` in ``xs``: a positional
    footprint where ``g`` depends on where the piece lies, the axis footprint
    or one per piece otherwise. The sums over a link's transfers are integers
    the chains compute piece by piece: exact, no table, no scale.
    """
    w = problem.workload
    access = w.tensor(t)
    dims = _rank_dims(problem, t)
    shape = tuple(w.extent[d] for d in dims)
    whole_ranks = frozenset(r for r, d in enumerate(dims) if d in whole)
    try:
        factors = {k: density.box_factors(k, shape, whole_ranks) for k in range(len(dims))}
    except ValueError as e:
        raise UnsupportedProblem(
            f"sparse solve: {t} ({type(density).__name__}): {e}; hold {dims[0]} or {dims[1]} whole "
            "(tile limits in the constraints) or search with Uniform of its mean density") from None
    out = []
    for term in count_terms(fmt):
        fps = {}
        for r, d in enumerate(dims):
            g = None if term.level is None else factors[term.level][r]
            times_x = r in term.xs
            if g is None:
                fps[d] = footprint(access, d, w) if times_x else UNIT
            elif g == "x" and not times_x:
                fps[d] = footprint(access, d, w)
            else:
                base = (lambda lo, hi: hi - lo) if g == "x" else g
                fn = (lambda lo, hi, b=base: b(lo, hi) * (hi - lo)) if times_x else base
                # The name is the function's identity (chains are cached by footprint).
                name = f"{density!r}:{shape}:whole{sorted(whole_ranks)}:r{r}:D{term.level}:x{int(times_x)}"
                fps[d] = positional_footprint(name, fn)
        coef = Fraction(term.payload + term.meta)
        out.append(Measure(t, float(term.payload), float(term.meta), coef, tuple(sorted(fps.items())), 1, 0.0))
    return tuple(out)

