"""Per-piece measures of a dimension, the footprints the tile chains sum (:mod:`mapsearch.model.chains`).

A footprint is affine in the piece extent (``(alpha, beta)``: ``f(x) = alpha*x + beta``,
the words of a tensor axis), given by value (:func:`table_footprint`), or a
function of where the piece lies (:func:`positional_footprint`). The chains
and the spatial splits of :mod:`mapsearch.model.spatial_chains` both read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Footprint", "PieceFunction", "table_footprint", "positional_footprint", "is_positional", "footprint_values"]

Footprint = tuple[int, int]  # (alpha, beta): f(x) = alpha * x + beta; or a table or positional footprint


def table_footprint(name: str, values) -> tuple:
    """A per-piece measure given by value: ``f(x) = values[x]`` (integers, ``x`` the piece extent).

    Usable wherever an affine footprint is: the chains carry its sums and
    still sums and prune on them, so chains that differ only in it both
    survive. Spelled ``(-1, name, values)`` so footprints stay sortable
    tuples (an affine footprint has two entries). Used by the sparse solver
    (mapsearch/sparse/solve.py) for expected fiber counts, which are not
    affine in the extent.
    """
    return (-1, str(name), tuple(int(v) for v in values))


@dataclass(frozen=True)
class PieceFunction:
    """``g(lo, hi)``: a non-negative integer measure of the piece ``[lo, hi)`` of a dimension.

    Vectorised: ``g`` takes and returns int64 arrays. Equal (and hashed) by
    ``name`` only, so a footprint holding it stays a cheap dictionary key:
    the name must determine the function (chains are cached by footprint).
    """

    name: str
    g: Callable[[np.ndarray, np.ndarray], np.ndarray] = field(compare=False, repr=False)


def positional_footprint(name: str, g: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple:
    """A per-piece measure that depends on where the piece lies: ``f([lo, hi)) = g(lo, hi)``.

    Usable wherever a table footprint is (sums, still sums, pruning), except
    below a spatial split. The chains walk every piece of every level to sum
    it (:func:`_positional_quantities`), so it costs time proportional to the
    pieces. Used by the sparse solver for fixed-structured densities (an
    ``n:m`` rank holds ``count(hi) - count(lo)`` nonzeros in ``[lo, hi)``,
    which depends on ``lo mod m``, not on the extent alone). Spelled
    ``(-2, name, PieceFunction)``.
    """
    return (-2, str(name), PieceFunction(str(name), g))


def is_positional(f) -> bool:
    return len(f) == 3 and f[0] == -2


def footprint_values(f, size: np.ndarray) -> np.ndarray:
    """``f(size)`` for an affine footprint ``(alpha, beta)`` or a :func:`table_footprint`."""
    if is_positional(f):
        raise ValueError(f"footprint {f[1]} depends on piece positions, not on extents alone")
    if len(f) == 3:
        return np.asarray(f[2], dtype=np.int64)[size]
    return f[0] * size + f[1]
