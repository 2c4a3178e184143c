"""A first schedule on a meshed path, from a narrower family's model.

Each widening of the searched family (filter-window dimensions split over
mesh axes, buffer positions above the mesh) made the model larger, and
CP-SAT's first schedules on it worse: under a work limit of 5 the ResNet-50
3x3 layer on ``tpu-v4i-like`` ended its time phase at 6,422,528 clocks
where the narrower model proves 28,224 in about a second, and BERT's FFN on
the same preset at 1,188,864 where the narrower model proves the floor,
18,432. Restricting the wide model's tables to the narrow rows does not
help (CP-SAT does not shrink it back: 28.9 M clocks measured); building the
narrow model does.

So on a meshed path whose family is wider than the narrow one, ``solve``
first solves the same problem with window dimensions unsplit over mesh axes
and every buffer at its default position (a subset of the searched family:
every narrow schedule is a schedule of the wide model), and uses its
schedule as a warm start (solve/warm_start.py): a hint, never a constraint.
The wide model validates the start itself and computes its figures; a start
it refuses is ignored. So the optimum, the bound and what OPTIMAL means are
those of the wide search; only which schedule a search cut short by its
limit ends with can change.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Callable

import mapsearch.budget as budget
from mapsearch.errors import InfeasibleError, NoScheduleInFamily, SolverTimeout
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.model.spatial import meshed_levels
from mapsearch.model.windows import split_windows
from mapsearch.schedule.schedule import Schedule

log = logging.getLogger(__name__)

# The narrow coarse searches may use this share of the time left; the full search keeps the rest.
TIME_SHARE = 0.5


def applies(problem: Problem, options: SolveOptions) -> bool:
    """On a meshed path with no start of the user's, where the narrow family is narrower than the searched one.

    Not without a mesh: there the placement-free model's coarse schedule is
    no better a start than the wide model's own (the ResNet-50 3x3 layer on
    ``cpu-core``, work limit 5: words 295 M and 210 M on its two role
    bindings with it, 210 M without), and costs its search time.
    """
    if options.start is not None or options.models_dram_rows or not meshed_levels(problem):
        return False
    return options.placement or bool(split_windows(problem, frozenset(), None)[0])


def first_schedule(problem: Problem, options: SolveOptions, started: float,
                   solve_narrow: Callable[[SolveOptions], object]) -> Schedule | None:
    """The narrow family's schedule (``solve_narrow(options)`` builds the narrow model), or None.

    None when the narrow family has no schedule, its search found none in
    its share of the time, or the solve was stopped.
    """
    left = options.time_limit - (time.perf_counter() - started)
    narrow = dataclasses.replace(options, placement=False, time_limit=max(0.05, left * TIME_SHARE))
    try:
        result = solve_narrow(narrow)
    except (InfeasibleError, NoScheduleInFamily, SolverTimeout) as error:
        log.info("narrow family (windows unsplit over mesh axes, default positions): no first schedule (%s)",
                 str(error).splitlines()[0][:120])
        return None
    if budget.stopped():
        return None
    log.info("narrow family (windows unsplit over mesh axes, default positions): %s, a start for the full search",
             ", ".join(f"{p.name} {p.value}" for p in result.phases))
    return result.schedule
