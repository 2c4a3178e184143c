"""A first schedule where a filter window hides in a skewed axis: the smaller family with it held.

``I[p+r+u,p]``'s window ``r+u`` is split with its coincidences counted
(model/skew.box_windows); the family before that held its smaller
dimension whole, and its model is much smaller: on ``O[p,k] += I[p+r+u,p] *
W[r,u,k]`` (p = 28, r = u = 3, k = 16) over examples/arch-three-level.yaml
the held family proves its optimum in 1.4 s, the whole family in 18.8 s,
and at a 10 s limit the whole family's search alone ended at 2,396 words
where the held family's optimum, which is also the whole family's, has
2,148. So off a mesh and outside a fused group, with no start of the
user's, the held family is searched first in :data:`SHARE` of the time,
and its schedule (a schedule of the whole family too: a dimension held
whole is one tiling) starts the full search. Only a start: the full search's
optimum, bounds and status are its own (solve/run.py keeps the better of
the two, as for the narrow family's first schedule, solve/narrow.py),
except where the held family's optimum meets the contract's floors: then
it is OPTIMAL over the whole family, and solve/run.py returns it.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable, TypeVar

from mapsearch.errors import InfeasibleError, SolverTimeout
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.model.skew import hides_windows

log = logging.getLogger(__name__)

R = TypeVar("R")

# The share of the time limit the held family gets.
SHARE = 0.25


def applies(problem: Problem, options: SolveOptions) -> bool:
    """A window hides in a skewed axis, off a mesh, outside a fused group, and the user gave no start."""
    return (options.start is None and problem.hidden_windows and problem.fusion_level is None
            and all(lv.instances == 1 for lv in problem.architecture.levels) and hides_windows(problem))


def first_schedule(problem: Problem, options: SolveOptions, search: Callable[[Problem, SolveOptions], R]) -> R | None:
    """The held family's result (``search(problem, options)``) in :data:`SHARE` of the time, or None where it
    has no schedule in its share. Its restrictions name the held dimensions (narrow.fallback reads them)."""
    held = dataclasses.replace(problem, hidden_windows=False)
    share = dataclasses.replace(options, time_limit=max(0.05, SHARE * options.time_limit),
                                work_limit=None if options.work_limit is None else SHARE * options.work_limit)
    try:
        result = search(held, share)
    except (InfeasibleError, SolverTimeout) as error:
        log.info("the family with the hidden windows held: no first schedule (%s)", str(error).splitlines()[0][:120])
        return None
    log.info("the family with the hidden windows held: %s", ", ".join(f"{p.name} {p.value}" for p in result.phases))
    return result
