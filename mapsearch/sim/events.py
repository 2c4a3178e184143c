"""The event-by-event replay: walk a schedule's loop nest and drive the simulator.

This is the judge of the solver, so it counts nothing by formula: it builds
one ``Cache`` per architecture level chained by ``Bandwidth`` links, walks
every step of the loop nest and issues the loads, stores and op runs the
contract's replay semantics call for; the figures are what the links, caches
and op counted.

The walk (contract, "Schedule"): the top tile is the whole iteration space;
each level below it visits its tiles inside the parent tile in its ``order``
(outer -> inner), splitting ``for x0 in range(0, s, T): piece = min(T, s - x0)``.
Level 1's loops are outermost, the innermost level's loops innermost; one
step is one innermost tile.

At each step, for every (tensor, level) that keeps the tensor below its home,
the buffer must hold the tensor's region for that level's tile (an interval
per axis; an affine axis ``sum c*d`` covers ``[sum c*lo, sum c*hi]``). When
the region differs from the one held:

1. evict, innermost level first: an output's old tile is stored up into the
   nearest level above that holds the output (words on every link crossed);
   an input's old tile is dropped (no traffic);
2. fetch, outermost level first: an input's new tile is loaded from the
   nearest level above that holds it; an output's new tile is loaded (partial
   sums) when that region was an output tile at this level before, and
   created as zeros with no traffic otherwise;
3. the op runs on the innermost tiles: ``prod ceil(t_d / b_d)`` calls.

Evicting before fetching gives each kept tensor one buffer per level (with
double buffering, a second one is reserved at its first fetch, see
docs/cost-model.md). A region equal to the one held moves nothing, even when
a loop that indexes the tensor advanced (convolution inputs). At the end the
output tiles still below the home are stored up, innermost first.

With spatial splits (docs/spatial.md) every level has one cache per
instance, each parent instance one link shared by its children, each L0
instance its own op; the nest is the lockstep nest of
:func:`mapsearch.sim.spatial.lockstep_nest`. Inputs are multicast per
group (``Cache.multicast``), outputs reduced per group on the way up
(``Cache.reduce_into``), partial sums reloaded into a group's lowest
instance; see "Replay decisions" in docs/spatial.md.
"""

from __future__ import annotations

from typing import Callable

from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.counters import ReplayResult
from mapsearch.sim.event_nest import Box, Event, Region, build_chain, loop_nest, region_of, region_text, tiles_inside
from mapsearch.sim.event_replay import EventReplay

__all__ = ["Box", "Event", "Region", "build_chain", "loop_nest", "region_of", "region_text", "tiles_inside",
           "replay_events", "replay_events_data"]


def replay_events(schedule: Schedule, *, on_event: Callable[[Event], None] | None = None) -> ReplayResult:
    """Count the schedule's figures by replaying its events (no data moved).

    Raises ``CapacityError`` (level, tensor, words) when a level overflows.
    """
    return EventReplay(schedule, with_data=False, seed=0, on_event=on_event).run()


def replay_events_data(
    schedule: Schedule, *, seed: int = 0, on_event: Callable[[Event], None] | None = None
) -> ReplayResult:
    """Like :func:`replay_events`, carrying random input values through the tiles.

    The output that ends at its home is compared with the einsum computed in
    one go; ``data_ok`` and ``max_abs_error`` report the comparison.
    """
    return EventReplay(schedule, with_data=True, seed=seed, on_event=on_event).run()
