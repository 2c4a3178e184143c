"""Expected words per link and effectual ops of a schedule under a density model (no data).

``expected(schedule, densities, formats)`` walks the same entries as the
replay (:func:`mapsearch.sparse.replay.walk_words`) and prices each entered
region with the density's ``region_counts`` instead of the data:

- fixed-structured densities (``NofM``, ``Banded``, ``Dense``) give the
  **exact** counts, so the model equals the replay on their data;
- ``Uniform`` (the notebook's ``fromRandom``) gives the **expectation over
  seeds** (the word formula is linear in the counts, so the expectation of
  the words is the words of the expected counts).

Effectual ops: exact for product-form structures (``NofM``/``Dense``:
``prod_d sum_c prod_t present_t(c)``) and for one ``Banded`` input with dense
others; each ``Uniform`` input multiplies that by its ``prod_k d_k`` (in
expectation: inputs independent). The output is priced with its format on the dense volume
(the model does not predict the output's pattern): give the output a dense
format, or ``output_density``.

A dense schedule and a sparse one of the same einsum compare through
:func:`compare`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping

import numpy as np

from mapsearch.schedule.schedule import Schedule
from mapsearch.sparse.density import Banded, Dense, NofM, Uniform
from mapsearch.sparse.format import Format
from mapsearch.sparse.replay import LinkWords, _links, walk_words

DENOMINATOR = 10**6  # densities given as floats become the nearest fraction with this denominator bound


@dataclass(frozen=True)
class SparseModel:
    links: tuple[LinkWords, ...]
    effectual_ops: float
    dense_macs: int
    exact: bool
    compute_time: float

    @property
    def words_total(self) -> float:
        return sum(l.words for l in self.links)

    @property
    def time(self) -> float:
        return max([self.compute_time] + [float(l.time) for l in self.links])

    def link(self, name: str) -> LinkWords:
        return next(l for l in self.links if l.name == name)


def expected(schedule: Schedule, densities: Mapping[str, object], formats: Mapping[str, Format] | None = None,
             output_density=None) -> SparseModel:
    wl = schedule.workload
    formats = dict(formats or {})
    out = wl.einsum.output.name
    dens = dict(densities)
    for t in wl.einsum.inputs:
        dens.setdefault(t.name, Dense())
    if output_density is not None:
        dens[out] = output_density
    elif formats.get(out) is not None and formats[out].compressed:
        raise ValueError(f"the model needs output_density to price the compressed output {out}")
    else:
        dens[out] = Dense()

    def counts(t, space, keys, lo, hi):
        return dens[t].region_counts(lo, hi).astype(np.float64)

    acc = walk_words(schedule, formats, counts, None, dtype=np.float64)
    links = _links(schedule, acc, exact=False)
    exact = all(getattr(dens[t.name], "exact", False) for t in wl.tensors)
    eff = effectual_ops(schedule, dens)
    return SparseModel(links, eff, wl.macs, exact, eff * float(schedule.architecture.compute.clocks_per_call))


def effectual_ops(schedule: Schedule, densities: Mapping[str, object]) -> float:
    """Expected effectual ops of ``schedule``'s einsum (they do not depend on the schedule)."""
    return float(exact_effectual_ops(schedule.workload, densities))


def exact_effectual_ops(wl, densities: Mapping[str, object]) -> Fraction:
    """:func:`structured_ops` times ``prod_k d_k`` of each ``Uniform`` input, as a rational.

    Exact for fixed structures; in expectation with ``Uniform`` inputs, which
    are independent of everything else. Densities given as floats become the
    nearest fraction with denominator at most :data:`DENOMINATOR` (what the
    solver's objective uses too).
    """
    p = Fraction(structured_ops(wl, densities))
    for t in wl.einsum.inputs:
        d = densities.get(t.name)
        if isinstance(d, Uniform):
            for v in d.densities:
                p *= Fraction(v).limit_denominator(DENOMINATOR)
    return p


def structured_ops(wl, densities: Mapping[str, object]) -> int:
    """Points of the iteration space where every fixed-structured input is present (``Uniform``: as dense).

    Exact for product-form structures (``NofM``/``Dense``:
    ``prod_d sum_c prod_t present_t(c)``) with at most one ``Banded`` input.
    """
    ext = wl.extent
    ins = [t.name for t in wl.einsum.inputs]
    dd = {t: densities.get(t) or Dense() for t in ins}
    dd = {t: Dense() if isinstance(v, Uniform) else v for t, v in dd.items()}
    banded = [t for t in ins if isinstance(dd[t], Banded)]
    if len(banded) > 1 or not all(isinstance(dd[t], (NofM, Dense, Banded)) for t in ins):
        raise NotImplementedError("the op model takes Uniform/Dense inputs, or NofM/Dense with at most one Banded")

    def dims_of(t):
        return tuple(ix.dims[0] for ix in wl.tensor(t).indices)

    present = {}
    for d in wl.dims:  # product-form presence per dim, from every NofM input
        p = np.ones(ext[d], bool)
        for t in ins:
            dims = dims_of(t)
            if d in dims and isinstance(dd[t], NofM):
                p &= dd[t].mask(dims.index(d), np.arange(ext[d]))
        present[d] = p.astype(np.int64)
    total = 1
    rest = list(wl.dims)
    if banded:
        b = dd[banded[0]]
        da, db = dims_of(banded[0])
        rest = [d for d in rest if d not in (da, db)]
        cs = np.concatenate([[0], np.cumsum(present[db])])
        i = np.arange(ext[da])
        lo = np.clip(i - b.lower, 0, ext[db])
        hi = np.clip(i + b.upper + 1, 0, ext[db])
        total = int((present[da] * np.maximum(0, cs[hi] - cs[lo])).sum())
    for d in rest:
        total *= int(present[d].sum())
    return total


def compare(schedule: Schedule, model: SparseModel) -> dict[str, tuple[float, float]]:
    """Per link: (dense predicted words, sparse expected words); and ``ops``: (MACs, effectual ops)."""
    out = {}
    fig = schedule.predicted
    if fig is None:
        from mapsearch.sim.walk import count_figures

        fig = count_figures(schedule)
    for lf, lw in zip(fig.links, model.links):
        out[lw.name] = (float(lf.words_down + lf.words_up), float(lw.words))
    out["ops"] = (float(fig.op_calls), float(model.effectual_ops))
    return out
