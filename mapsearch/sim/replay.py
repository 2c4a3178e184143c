"""``replay(schedule, mode)``: count a schedule's figures by running it, by one of several modes.

Modes (each a function ``(schedule, **options) -> ReplayResult``):

- ``"count"``: the vectorised walk of the tile sequence (:mod:`mapsearch.sim.walk`);
- ``"data"``: the same walk carrying real values, checked against numpy (:mod:`mapsearch.sim.data`);
- ``"events"``: walk every step and drive the explicit-cache simulator
  (:mod:`mapsearch.sim.events`); counts only;
- ``"events-data"``: the same walk carrying random values through the tiles,
  compared with the einsum computed in one go.

A fused chain (:class:`~mapsearch.schedule.fused.FusedSchedule`) goes to
:func:`mapsearch.sim.fused.replay_fused`; :func:`replay_unfused` runs a chain's
einsums one after the other. This module sits above the modes it dispatches to.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Sequence

from mapsearch.errors import ScheduleError
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.counters import ReplayResult
from mapsearch.sim.data import replay_data
from mapsearch.sim.errors import UnknownModeError
from mapsearch.sim.events import replay_events, replay_events_data
from mapsearch.sim.fused import UnfusedResult, replay_fused, sum_figures
from mapsearch.sim.walk import replay_count
from mapsearch.spec.workload import WorkloadGraph

__all__ = ["MODES", "ReplayResult", "replay", "replay_function", "replay_unfused"]

ReplayFunction = Callable[..., ReplayResult]

MODES: dict[str, ReplayFunction] = {
    "events": replay_events,
    "events-data": replay_events_data,
    "count": replay_count,
    "data": replay_data,
}


def replay_function(mode: str) -> ReplayFunction:
    """The function that implements ``mode``; UnknownModeError names the known modes."""
    try:
        return MODES[mode]
    except KeyError:
        raise UnknownModeError(f"unknown replay mode {mode!r}; expected one of {sorted(MODES)}") from None


def replay(schedule: Schedule | FusedSchedule, mode: str = "events", **options: Any) -> ReplayResult:
    """Replay ``schedule`` in ``mode`` and return what it counted (and, in data modes, the check).

    A :class:`~mapsearch.schedule.fused.FusedSchedule` goes to :func:`mapsearch.sim.fused.replay_fused`
    (modes ``events``, ``count``, ``data``/``events-data``).
    """
    if isinstance(schedule, FusedSchedule):
        return replay_fused(schedule, mode, **options)
    return replay_function(mode)(schedule, **options)


def replay_unfused(graph: WorkloadGraph, stages: Sequence[Schedule], mode: str = "events",
                   walk: Callable[[Schedule], ReplayResult] | None = None, **options) -> UnfusedResult:
    """Run ``stages[e]`` (einsum ``e`` alone) one after the other with the single-einsum replay of ``mode``.

    Every intermediate must be homed at the top in the stages that use it
    (materialized whole, written up, read back). In data modes each stage is
    checked against numpy on its own random inputs; ``data_ok`` is their conjunction.
    ``walk`` replays one stage in ``mode`` instead of :func:`replay` (a caller's
    cache of walks, solve/chain_replay.py); it must return what ``replay`` would.
    """
    if len(stages) != len(graph.einsums):
        raise ScheduleError(f"stages: expected one stage per einsum ({len(graph.einsums)}), got {len(stages)}")
    arch = stages[0].architecture
    for e, st in enumerate(stages):
        if st.workload.einsum != graph.einsums[e]:
            raise ScheduleError(f"stages[{e}].workload: expected einsum {graph.einsums[e].text()!r}, got {st.workload.einsum.text()!r}")
        if st.architecture != arch:
            raise ScheduleError(f"stages[{e}].architecture: every stage must use one architecture")
        for t in graph.intermediates:
            if t in st.workload.tensor_names and st.home(t) != 0:
                raise ScheduleError(f"stages[{e}].homes.{t}: an unfused intermediate is materialized at the top "
                                    f"{arch.levels[0].name}, got {arch.levels[st.home(t)].name}")
    return replay_stages(graph, stages, mode, walk, **options)


def replay_stages(graph: WorkloadGraph, stages: Sequence[Schedule], mode: str = "events",
                  walk: Callable[[Schedule], ReplayResult] | None = None, **options) -> UnfusedResult:
    """Each of ``stages`` (one per einsum of ``graph``, on one architecture) replayed alone in ``mode``, in
    order: words and calls add up (``sum_figures``), ``time`` is the sum of the stages' times, ``data_ok``
    their conjunction. Its intermediates are where each stage homes them (a chain materialized at a level
    below the top: mapsearch/schedule/unfused_json.py); :func:`replay_unfused` checks they are at the top."""
    results = tuple(replay(st, mode, **options) if walk is None else walk(st) for st in stages)
    figures = sum_figures(graph, [r.figures for r in results], stages[0].architecture)
    time = sum((r.figures.time for r in results), Fraction(0))
    oks = [r.data_ok for r in results]
    data_ok = None if any(o is None for o in oks) else all(oks)
    errors = [r.max_abs_error for r in results if r.max_abs_error is not None]
    return UnfusedResult(figures, time, results, data_ok, max(errors) if errors else None)
