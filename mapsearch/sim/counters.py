"""Reading the counters of a cache chain: utilization, reset, and the replay's figures.

The chain is walked from the top cache down through its links to the compute
node; nothing here computes traffic, it only reads what the links, caches and
op counted while a program ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.sim.bandwidth import Bandwidth
from mapsearch.sim.cache import Cache
from mapsearch.sim.compute import ComputeNode


@dataclass(frozen=True)
class ReplayResult:
    """What a replay returns: the counted figures and, in data modes, the check of the values.

    ``data_ok``/``max_abs_error`` are None when the mode carries no data.
    """

    figures: Figures
    data_ok: bool | None = None
    max_abs_error: float | None = None


@dataclass(frozen=True)
class Chain:
    """A built hierarchy: caches and the links into them (top first), and the compute node."""

    caches: tuple[Cache, ...]
    links: tuple[Bandwidth, ...]  # links[k] is the link from caches[k] down to caches[k+1]
    compute: ComputeNode


def chain(top: Cache) -> Chain:
    """The caches and links from ``top`` down to the compute node."""
    caches, links = [top], []
    c = top
    while isinstance(c.parent, Bandwidth):
        links.append(c.parent)
        c = c.parent.cache
        caches.append(c)
    if not isinstance(c.parent, ComputeNode):
        raise TypeError(f"{c.name} does not sit on a compute node")
    return Chain(tuple(caches), tuple(links), c.parent)


def utilization(cache: Cache) -> Fraction:
    """``compute_time / max(compute_time, slowest link time)`` along the chain below ``cache``.

    Exact (a Fraction); 0 when nothing has run nor moved yet, as in the seed.
    """
    ch = chain(cache)
    cpu = Fraction(ch.compute.time)
    slowest = max((Fraction(link.time) for link in ch.links), default=Fraction(0))
    denominator = max(cpu, slowest)
    return Fraction(0) if denominator == 0 else cpu / denominator


def reset_counters(cache: Cache) -> None:
    """Zero every link's words, the op's time and calls; peaks restart from what is resident."""
    ch = chain(cache)
    for link in ch.links:
        link.reset()
    ch.compute.reset()
    for c in ch.caches:
        c.peak = c.used


def link_figures(name: str, link: Bandwidth, tensor_names: Sequence[str]) -> LinkFigures:
    """One link's counted words (total and per tensor, in ``tensor_names`` order) and time."""
    per_tensor = tuple(
        TensorTraffic(t, link.input_by_tensor.get(t, 0), link.output_by_tensor.get(t, 0)) for t in tensor_names
    )
    return LinkFigures(name, link.input, link.output, Fraction(link.time), per_tensor)


def figures_of(
    ch: Chain,
    link_names: Sequence[str],
    tensor_names: Sequence[str],
    macs: int,
    block_macs: int,
) -> Figures:
    """The figures the chain counted: links top first, occupancy = each cache's peak."""
    return Figures(
        links=tuple(link_figures(n, l, tensor_names) for n, l in zip(link_names, ch.links, strict=True)),
        op_calls=ch.compute.calls,
        compute_time=Fraction(ch.compute.time),
        macs=macs,
        block_macs=block_macs,
        occupancy=tuple((c.name, c.peak) for c in ch.caches),
    )
