"""``replay(schedule, mode)``: count a schedule's figures by running it, by one of several modes.

Modes (each a function ``(schedule, **options) -> ReplayResult``):

- ``"events"``: walk every step and drive the explicit-cache simulator
  (:mod:`mapsearch.sim.events`); counts only.
- ``"events-data"``: the same walk carrying random values through the tiles,
  compared with the einsum computed in one go.

Each mode is named by ``"module:function"`` and imported on first use, so a
mode's module may itself import this one (for :class:`ReplayResult`).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.counters import ReplayResult
from mapsearch.sim.errors import UnknownModeError

__all__ = ["MODES", "ReplayResult", "replay", "replay_function"]

ReplayFunction = Callable[..., ReplayResult]

# mode -> "module:function". Planned by their owners: "count" (the vectorised
# walk, mapsearch.sim.walk) and "data" (mapsearch.sim.data).
MODES: dict[str, str] = {
    "events": "mapsearch.sim.events:replay_events",
    "events-data": "mapsearch.sim.events:replay_events_data",
    "count": "mapsearch.sim.walk:replay_count",
    "data": "mapsearch.sim.data:replay_data",
}


def replay_function(mode: str) -> ReplayFunction:
    """The function that implements ``mode``; UnknownModeError names the known modes."""
    try:
        target = MODES[mode]
    except KeyError:
        raise UnknownModeError(f"unknown replay mode {mode!r}; expected one of {sorted(MODES)}") from None
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)


def replay(schedule: Schedule, mode: str = "events", **options: Any) -> ReplayResult:
    """Replay ``schedule`` in ``mode`` and return what it counted (and, in data modes, the check).

    A :class:`~mapsearch.schedule.fused.FusedSchedule` goes to :func:`mapsearch.sim.fused.replay_fused`
    (modes ``events``, ``count``, ``data``/``events-data``).
    """
    from mapsearch.schedule.fused import FusedSchedule

    if isinstance(schedule, FusedSchedule):
        from mapsearch.sim.fused import replay_fused

        return replay_fused(schedule, mode, **options)
    return replay_function(mode)(schedule, **options)
