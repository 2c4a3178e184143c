"""What the CP-SAT encoding is given, and the per-dimension facts it derives.

The encoding covers one einsum whose tensor axes are a single dimension, a
*window* over two or more dimensions that are all split (``I[p*s + r*t]``,
``I[p + r + u]``, counted exactly with its coincidences by model/windows.py),
or an affine sum in which only one dimension is split below the top (the
*carrier*, the dimension of largest extent) while the others are *pinned*
whole at every level. Pinning applies to every window where windows are not
split (measures other than words), and to axes over three or more dimensions
under a spatial fanout or over their joint table's limit; the result names
it as a family restriction (model/family.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping

from mapsearch.errors import MapsearchError
from mapsearch.model.chains import Footprint
from mapsearch.model.footprints import table_footprint
from mapsearch.model.skew import box_windows, determined, repeated_dims, skewed_axes
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import TensorAccess, Workload


class UnsupportedProblem(MapsearchError):
    """The workload or architecture uses something the solver's encoding does not cover yet."""


@dataclass(frozen=True)
class Problem:
    """One einsum on one architecture.

    As a stage of a fused group (docs/fusion.md): ``fusion_level`` is the
    level whose loops and above are shared, ``shared_dims`` the dimensions
    those loops may tile (the others are whole there), ``fused`` the
    intermediates homed at the fusion level as a buffer of their level-``f``
    tile, and ``homes_counted`` the tensors whose homes this stage counts
    in capacity (so a group counts each home once).
    """

    workload: Workload
    architecture: Architecture
    homes: tuple[tuple[str, str], ...] = ()
    fusion_level: int | None = None
    shared_dims: tuple[str, ...] = ()
    fused: tuple[str, ...] = ()
    homes_counted: frozenset[str] | None = None
    # False: a filter window hidden in a skewed axis (model/skew.box_windows) is held whole instead, the smaller
    # family a first schedule is searched in (solve/hidden_first.py).
    hidden_windows: bool = True

    @property
    def depth(self) -> int:
        """J: the number of levels below the top."""
        return self.architecture.depth - 1

    def home(self, tensor: str) -> int:
        return self.architecture.index(dict(self.homes).get(tensor, self.architecture.levels[0].name))


def check_supported(p: Problem) -> None:
    if len(p.architecture.levels) < 2:
        raise UnsupportedProblem("the architecture needs at least two levels (a top and L0)")
    if p.architecture.compute.block_roles:  # mapsearch/solve/block_roles.py binds it first; never model it as scalar
        raise UnsupportedProblem("the op's block is given in GEMM roles, not yet bound to the workload's dimensions")
    if p.architecture.levels[0].instances != 1 or p.architecture.levels[0].mesh:
        raise UnsupportedProblem(f"the top level {p.architecture.levels[0].name} cannot have spatial instances")
    meshed = any(lv.instances > 1 for lv in p.architecture.levels)
    for t in p.workload.tensors:
        if (meshed or p.fusion_level is not None) and skewed_axes(t, p.workload) and not determined(t, p.workload) \
                and not (p.hidden_windows and box_windows(t, p.workload)):
            # Off a mesh and outside a chain such a tensor's smaller dependent dimensions are held whole, a
            # family the wide brute force checks and neither the spatial nor the fused one does (a diagonal, a
            # skewed axis whose box determines its pieces and one hiding a window are checked on both).
            raise UnsupportedProblem(f"tensor {t.name}: a skewed axis whose box does not determine its pieces and "
                                     "hides no filter window of two dimensions (a dimension held whole); supported "
                                     "by the solver only on a path without spatial fanout and outside a fused chain")


def pinned_dims(w: Workload, split: frozenset[tuple[str, frozenset[str]]] = frozenset()) -> frozenset[str]:
    """Dimensions held whole at every level: extent-1 dims, and the non-carriers of affine axes
    that are not split windows (``split``: ``(tensor, its dims)`` per window, model/windows.py)."""
    ext = w.extent
    pinned = {d for d, e in w.extents if e == 1}
    for t in w.tensors:
        for ix in t.indices:
            live = frozenset(d for d in ix.dims if ext[d] > 1)
            if len(ix.terms) > 1 and (t.name, live) not in split:
                carrier = _carrier(ix.dims, ext)
                pinned.update(d for d in ix.dims if d != carrier)
    return frozenset(pinned)


def _carrier(dims: tuple[str, ...], ext: Mapping[str, int]) -> str:
    return max(dims, key=lambda d: (ext[d], -dims.index(d)))


def footprint(t: TensorAccess, dim: str, w: Workload) -> Footprint | None:
    """The footprint ``f(x) = alpha*x + beta`` that ``dim``'s pieces give ``t``'s axis.

    ``None`` when ``dim`` does not index ``t``; ``(0, 1)`` when ``dim`` is a
    non-carrier of an affine axis (its pinned extent is folded into the
    carrier's ``beta``).
    """
    ext = w.extent
    if dim in repeated_dims(t):
        return _repeated_footprint(t, dim, ext)
    for ix in t.indices:
        if dim not in ix.dims:
            continue
        carrier = _carrier(ix.dims, ext) if len(ix.terms) > 1 else dim
        if dim != carrier:
            return (0, 1)
        coeff = dict(ix.terms)
        alpha = coeff[dim]
        beta = sum(c * (ext[d] - 1) for d, c in ix.terms if d != dim) + 1 - alpha
        return (alpha, beta)
    return None


def _repeated_footprint(t: TensorAccess, dim: str, ext: Mapping[str, int]):
    """The footprint of a dimension that indexes several axes of ``t`` (``A[m,m]``, ``A[2*m,m]``,
    ``I[p+r,p]``): the region is a box (holes included), so a piece of extent ``x`` gives the product of
    its spans along those axes, as a table (model/footprints.py). Along ``a*dim`` the span is
    ``a (x - 1) + 1``; along an affine axis, held whole (model/windows.py holds every window of such a
    tensor whole), ``alpha x + beta`` where ``dim`` carries it and 1 where another dimension does (its
    extent is folded into the carrier's ``beta``)."""
    spans = []
    for ix in t.indices:
        if dim not in ix.dims:
            continue
        coeff = dict(ix.terms)
        if len(ix.terms) == 1:
            spans.append((coeff[dim], 1 - coeff[dim]))
        elif _carrier(ix.dims, ext) == dim:
            spans.append((coeff[dim], sum(c * (ext[d] - 1) for d, c in ix.terms if d != dim) + 1 - coeff[dim]))
    values = [0] + [math.prod(a * x + b for a, b in spans) for x in range(1, ext[dim] + 1)]
    return table_footprint(f"{t.name}:{dim}:spans{spans}:{ext[dim]}", values)


def scale_of(values: list[Fraction]) -> int:
    """Least common multiple of the denominators: multiplies every clock count to an integer."""
    from math import lcm

    out = 1
    for v in values:
        out = lcm(out, Fraction(v).denominator)
    return out
