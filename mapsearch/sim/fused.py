"""Replay of fused einsum chains (docs/fusion.md): events, count and data modes, and the unfused run.

``replay_fused(fs, mode)`` runs a :class:`~mapsearch.schedule.fused.FusedSchedule`:

- ``"events"``: one ``Cache`` per level, ``Bandwidth`` links with their
  counters and one ``TileOp``; the outer nest (levels ``1..f`` over the
  shared dimensions) is walked step by step; per outer step the tensors kept
  at levels ``<= f`` move as in one einsum (evict innermost first, then fetch
  outermost first), every intermediate's level-``f`` tile is created as
  zeros at level ``f``, the einsums run their sub-nests (levels ``f+1..L0``)
  one after the other in chain order, each ending with its buffers below
  ``f`` flushed (outputs stored up innermost first, inputs dropped), and the
  intermediates are dropped. Outputs are stored with ``store_to`` (the tile
  overwrites the region above), so a wrong reload decision shows as wrong
  values in data mode.
- ``"data"`` (alias ``"events-data"``): the same walk carrying random input
  values through the tiles; the chain's final outputs are compared with numpy
  computed einsum by einsum, and no intermediate word may cross a link at or
  above ``f``.
- ``"count"``: :mod:`mapsearch.sim.fused_count`: per stage the walk of its
  own loop nest (what the fused run visits), tile by tile or, for a large
  stage, folded over repeated loop bodies (:mod:`mapsearch.sim.walk_folded`),
  with every level below ``f`` re-entering its regions at the start of each
  sub-nest run (the run of a level-``i`` tile is its level-``f`` ancestor).
  No formula: region changes along the visited sequence.

Figures: per link the words of every tensor (intermediates are listed only
on links below ``f``), op calls and compute time summed over the einsums,
``time = max(compute total, slowest link)`` (``Figures.time``), occupancy per
level per the capacity rule of docs/fusion.md (the cache peaks in events
mode).

``mapsearch.sim.replay.replay_unfused(graph, stages, mode)`` runs the einsums one after the other
(each with the single-einsum replay of ``mode``), intermediates homed at the
top; its figures add up and ``time`` is the sum of the stages' times.

This module imports nothing from ``mapsearch.model`` or ``mapsearch.solve``.
See "Replay decisions" in docs/fusion.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.sim.counters import ReplayResult
from mapsearch.sim.errors import UnknownModeError
from mapsearch.sim.event_nest import Event
from mapsearch.sim.fused_chain import chain_inputs, chain_outputs, chain_reference, chain_tensor_names, check_fused
from mapsearch.sim.fused_count import count_fused
from mapsearch.sim.fused_events import RTOL, FusedEvents
from mapsearch.spec.workload import WorkloadGraph

__all__ = ["FUSED_MODES", "replay_fused", "UnfusedResult", "sum_figures", "chain_tensor_names", "chain_reference",
           "chain_inputs", "chain_outputs", "RTOL"]

FUSED_MODES = ("events", "count", "data", "events-data")


# ---------------------------------------------------------------- entry points
def replay_fused(fs: FusedSchedule, mode: str = "events", *, seed: int = 0,
                 on_event: Callable[[Event], None] | None = None, chunk: int | None = None) -> ReplayResult:
    """Replay a fused schedule in ``mode`` (``events``, ``count``, ``data``/``events-data``).

    Raises ``ScheduleError`` for a schedule that breaks the rules of docs/fusion.md
    and ``CapacityError`` when a level overflows.
    """
    if mode == "events":
        return FusedEvents(fs, False, seed, on_event).run()
    if mode in ("data", "events-data"):
        return FusedEvents(fs, True, seed, on_event).run()
    if mode == "count":
        check_fused(fs)
        return ReplayResult(count_fused(fs, chunk))
    raise UnknownModeError(f"unknown fused replay mode {mode!r}; expected one of {sorted(FUSED_MODES)}")


@dataclass(frozen=True)
class UnfusedResult:
    """The einsums run one after the other: ``figures`` add up (words, calls, compute time; occupancy is the
    largest per level over the stages), ``time`` is the sum of the stages' times, ``stages`` each stage's result."""

    figures: Figures
    time: Fraction
    stages: tuple[ReplayResult, ...]
    data_ok: bool | None = None
    max_abs_error: float | None = None


def sum_figures(graph: WorkloadGraph, parts: Sequence[Figures], arch) -> Figures:
    names = chain_tensor_names(graph)
    links = []
    for j, name in enumerate(arch.link_names):
        down = dict.fromkeys(names, 0)
        up = dict.fromkeys(names, 0)
        for p in parts:
            for tt in p.links[j].tensors:
                down[tt.tensor] += tt.words_down
                up[tt.tensor] += tt.words_up
        wd = sum(p.links[j].words_down for p in parts)
        wu = sum(p.links[j].words_up for p in parts)
        links.append(LinkFigures(name, wd, wu, Fraction(arch.levels[j + 1].link.time(wd, wu)),
                                 tuple(TensorTraffic(t, down[t], up[t]) for t in names)))
    occupancy = tuple((lv.name, max(dict(p.occupancy)[lv.name] for p in parts)) for lv in arch.levels)
    calls = sum(p.op_calls for p in parts)
    return Figures(
        links=tuple(links),
        op_calls=calls,
        compute_time=sum((Fraction(p.compute_time) for p in parts), Fraction(0)),
        macs=graph.macs,
        block_macs=arch.compute.block_macs,
        occupancy=occupancy,
        compute_instances=1,
        busiest_calls=calls,
    )
