r"""DRAM rows as a model term: the rows each transfer across the DRAM link touches.

The replay counts row activations with a row-buffer machine over the whole
address stream (mapsearch/sim/dram_trace.py). What the model counts exactly
is the **row openings**: per transfer across the DRAM link (an input load, an
output store or partial-sum reload), the number of distinct DRAM rows its
elements touch, summed over transfers. With the elements of each transfer in
address order (the row is the top address field, so a bank never returns to
a row inside one transfer) a transfer activates at most the rows it touches:

    activations <= row_openings

with equality when no transfer finds one of its rows still open from an
earlier transfer. The replay checks both: openings equal, activations no more.

Layouts in the model's family: ``row_aligned`` with slice axes ``S`` whose
slices fit in one row (``prod_{a not in S} n_a * element_bytes <= row
stride``, and the row stride is one bank's row). Then a transfer of a box
touches exactly ``prod_{a in S} extent_a(box)`` rows: one per slice. That is
:func:`~mapsearch.model.traffic.region_words` with the dimensions of the
inner axes counted once per piece (``unit_dims``), so the row openings of a
tensor are the same exact closed form as its words, with another footprint.

A tensor without a given layout gets one chosen by the solver among the
minimal slice-axis sets that fit (a superset of a fitting set never touches
fewer rows): one literal per candidate, exactly one true.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

from mapsearch.dram.geometry import DramSpec
from mapsearch.dram.layout import ROW_ALIGNED, ROW_MAJOR, LayoutSpec
from mapsearch.model.encoding import Encoding, Q
from mapsearch.model.problem import Problem, UnsupportedProblem
from mapsearch.model.residency import link_measure
from mapsearch.spec.workload import Workload


@dataclass(frozen=True)
class LayoutCandidate:
    """A layout in the model's family and the dimensions its rows do not see (counted once per piece)."""

    spec: LayoutSpec
    unit_dims: frozenset[str]


def dram_of(p: Problem) -> DramSpec:
    dram = getattr(p.architecture, "dram", None)
    if dram is None:
        raise UnsupportedProblem(f"DRAM rows need a dram: entry in the architecture {p.architecture.name}")
    if dram.row_stride_bytes != dram.row_bytes:
        raise UnsupportedProblem(
            f"DRAM rows are modelled when a row-aligned block is one bank's row; mapping {dram.mapping} "
            f"puts fields between the column and the burst offset (row stride {dram.row_stride_bytes} B, "
            f"row {dram.row_bytes} B): use a mapping with the column field lowest")
    return dram


def _inner_dims(w: Workload, tensor: str, inner_axes) -> frozenset[str]:
    indices = w.tensor(tensor).indices
    return frozenset(d for a in inner_axes for d in indices[a].dims)


def _fits(w: Workload, tensor: str, inner_axes, dram: DramSpec) -> bool:
    shape = w.tensor_shape(tensor)
    return math.prod(shape[a] for a in inner_axes) * dram.element_bytes <= dram.row_stride_bytes


def fixed_candidate(w: Workload, tensor: str, spec: LayoutSpec, dram: DramSpec) -> LayoutCandidate:
    """The given layout as a candidate, or UnsupportedProblem saying why the model cannot count its rows."""
    n = len(w.tensor(tensor).indices)
    order = spec.order or tuple(range(n))
    if spec.base is not None and spec.base % dram.row_stride_bytes:
        raise UnsupportedProblem(f"DRAM rows of {tensor}: its base 0x{spec.base:x} is not row-aligned "
                                 f"({dram.row_stride_bytes} B); the model counts rows of row-aligned tensors")
    if spec.kind == ROW_ALIGNED and spec.align in (None, dram.row_stride_bytes):
        inner = order[spec.slice_axes:]
        if _fits(w, tensor, inner, dram):
            return LayoutCandidate(spec, _inner_dims(w, tensor, inner))
    if spec.kind == ROW_MAJOR and _fits(w, tensor, order, dram):
        return LayoutCandidate(spec, _inner_dims(w, tensor, order))  # the whole tensor in one row
    raise UnsupportedProblem(
        f"DRAM rows of {tensor}: the model counts row_aligned layouts whose slices fit one "
        f"{dram.row_stride_bytes}-byte row; {tensor}'s {spec.kind} layout is replayed but not modelled "
        "(give it such a layout, or leave it out and let the solver choose)")


def layout_candidates(w: Workload, tensor: str, dram: DramSpec) -> tuple[LayoutCandidate, ...]:
    """The minimal slice-axis sets whose slices fit one row, as row_aligned layouts (axes in tensor order)."""
    shape = w.tensor_shape(tensor)
    axes = [a for a in range(len(shape)) if shape[a] > 1]  # an axis of extent 1 changes no count
    found: list[frozenset[int]] = []
    for k in range(len(axes) + 1):
        for sliced in combinations(axes, k):
            s = frozenset(sliced)
            if any(f <= s for f in found):
                continue
            inner = [a for a in range(len(shape)) if a not in s]
            if _fits(w, tensor, inner, dram):
                found.append(s)
    out = []
    for s in found:
        order = tuple(sorted(s)) + tuple(a for a in range(len(shape)) if a not in s)
        out.append(LayoutCandidate(LayoutSpec(ROW_ALIGNED, order, (), len(s)),
                                   _inner_dims(w, tensor, order[len(s):])))
    return tuple(out)


@dataclass
class RowTerms:
    """What :func:`add_row_openings` adds: per tensor its candidates, their literals and its openings."""

    candidates: dict[str, tuple[LayoutCandidate, ...]]
    chosen: dict[str, tuple[object, ...]]  # tensor -> literal per candidate (True for a single one)
    openings: dict[str, Q]
    total: Q


def unit_dims_needed(p: Problem, layouts: dict[str, LayoutSpec]) -> frozenset[str]:
    """Dimensions whose chains need the one-per-piece footprint for the row model."""
    dram = dram_of(p)
    out: set[str] = set()
    for t in p.workload.tensor_names:
        for c in _candidates(p, t, layouts, dram):
            out |= c.unit_dims
    return frozenset(out)


def _candidates(p: Problem, t: str, layouts: dict[str, LayoutSpec], dram: DramSpec) -> tuple[LayoutCandidate, ...]:
    if t in layouts:
        return (fixed_candidate(p.workload, t, layouts[t], dram),)
    found = layout_candidates(p.workload, t, dram)
    if not found:
        raise UnsupportedProblem(f"DRAM rows of {t}: no slice of it fits one {dram.row_stride_bytes}-byte row")
    return found


def add_row_openings(enc: Encoding, layouts: dict[str, LayoutSpec]) -> RowTerms:
    """``openings[X] = sum_c chosen[X, c] * (down_c(X) + up_c(X))`` on the link out of DRAM (level 0).

    ``down_c``/``up_c`` are :func:`~mapsearch.model.residency.link_measure`
    with candidate ``c``'s ``unit_dims``; ``sum_c chosen[X, c] = 1``. Tensors
    homed below DRAM cross no DRAM link and open no row.
    """
    p = enc.problem
    dram = dram_of(p)
    terms = RowTerms({}, {}, {}, Q.const(0))
    for t in p.workload.tensor_names:
        if p.home(t) != 0:
            continue
        cands = _candidates(p, t, layouts, dram)
        measures = [enc.total(list(link_measure(enc, t, 1, c.unit_dims))) for c in cands]
        if len(cands) == 1:
            lits: tuple[object, ...] = (True,)
            openings = measures[0]
        else:
            lits = tuple(enc.model.new_bool_var(f"layout_{t}_{n}") for n in range(len(cands)))
            enc.model.add_exactly_one(lits)
            openings = enc.total([enc.select(lit, m, Q.const(0), f"rows_{t}_{n}")
                                  for n, (lit, m) in enumerate(zip(lits, measures))])
        terms.candidates[t] = cands
        terms.chosen[t] = lits
        terms.openings[t] = openings
    terms.total = enc.total(list(terms.openings.values()))
    return terms


def add_max_row_openings(enc: Encoding, terms: RowTerms, limit: int) -> None:
    """``sum_X openings[X] <= limit`` under a named guard (so an infeasible core can name it)."""
    guard = enc.model.new_bool_var("max_row_openings")
    enc.guards[f"DRAM row openings <= {limit}"] = guard
    enc.model.add(terms.total.expr <= limit).only_enforce_if(guard)
