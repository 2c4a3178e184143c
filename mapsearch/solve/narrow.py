"""A first schedule on a meshed path, from a narrower family's model.

Each widening of the searched family (filter-window dimensions split over
mesh axes, buffer positions above the mesh) made the model larger, and
CP-SAT's first schedules on it worse: under a work limit of 5 the ResNet-50
3x3 layer on ``tpu-v4i-like`` ended its time phase at 6,422,528 clocks
where the narrower model proves 28,224 in about a second. Restricting the
wide model's tables to the narrow rows does not help (CP-SAT does not
shrink it back: 28.9 M clocks measured); building the narrow model does.

So on a meshed path where window dimensions could be split over mesh axes
(:func:`applies`; not where only buffer positions widen the family, which
measured worse under a wall-clock limit), ``solve`` first solves the same
problem with window dimensions unsplit over mesh axes
and every buffer at its default position (a subset of the searched family:
every narrow schedule is a schedule of the wide model), and uses its
schedule as a warm start (solve/warm_start.py): a hint, never a constraint.
The wide model validates the start itself and computes its figures; a start
it refuses is ignored. So the optimum, the bound and what OPTIMAL means are
those of the wide search; only which schedule a search cut short by its
limit ends with can change.

When the wide search then finds no schedule of its own (its model did not
build, or no search ended with one, within the time left) or is stopped,
the narrow schedule is the result, FEASIBLE, with the contract's floors as
its bounds (:func:`fallback`): the narrow model's own floors hold for the
narrow family only. When the wide search ends with a worse schedule than
the narrow one (its limit came before it could check the start: on the
``tpu-v4i-like`` 1x1 layers under a 30 s limit, checking the start's
decisions in the wide model outlasted its share, the start was dropped,
and the time phase ended at 25,690,112 clocks where the start had 1,940),
the narrow schedule is the result too (:func:`better_of`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from fractions import Fraction
from typing import Callable, TypeVar

from mapsearch.errors import InfeasibleError, NoScheduleInFamily, SolverTimeout
from mapsearch.model.bounds import contract_floors
from mapsearch.model.build import clock_scale
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.model.spatial import meshed_levels
from mapsearch.model.windows import split_windows
from mapsearch.schedule.schedule import Schedule

log = logging.getLogger(__name__)

R = TypeVar("R")  # solve/run.SolveResult (this module is imported by run)

# What a result from the narrow family alone searched (the full search found no schedule).
NARROW_ONLY = ("the narrow family only (window dimensions unsplit over mesh axes, buffers at default positions, "
               "coarse tile chains): the full search found no schedule")

# The narrow coarse searches may use this share of the time left; the full search keeps the rest.
TIME_SHARE = 0.5


def applies(problem: Problem, options: SolveOptions) -> bool:
    """On a meshed path with no start of the user's, where window dimensions could be split over mesh axes.

    Not where only buffer positions widen the family: under a wall-clock
    limit the narrow search's share of the time cost more than its start
    gained (``tpu-v4i-like``, one worker, 30 s: the 1x1 stride-2 layer
    ended at 4,325 clocks against 2,508 proven without it, the 1x1 128->512
    layer at 4.17 M words against 2.10 M; BERT's FFN at 60 s: the narrow
    search found nothing in its 30 s and the full one ended at 604 M clocks,
    against 1.19 M without it). Not without a mesh: there the placement-free
    model's coarse schedule is no better a start than the wide model's own
    (the ResNet-50 3x3 layer on ``cpu-core``, work limit 5: words 295 M and
    210 M on its two role bindings with it, 210 M without).
    """
    if options.start is not None or options.models_dram_rows or not meshed_levels(problem):
        return False
    return bool(split_windows(problem, frozenset(), None)[0])


def first_schedule(problem: Problem, options: SolveOptions, started: float,
                   solve_narrow: Callable[[SolveOptions], R]) -> R | None:
    """The narrow family's result (``solve_narrow(options)`` builds the narrow model), or None.

    None when the narrow family has no schedule or its search found none in
    its share of the time. A solve stopped during the narrow search that
    found a schedule still gets it (the caller then returns it, :func:`fallback`).
    """
    left = options.time_limit - (time.perf_counter() - started)
    narrow = dataclasses.replace(options, placement=False, time_limit=max(0.05, left * TIME_SHARE))
    try:
        result = solve_narrow(narrow)
    except (InfeasibleError, NoScheduleInFamily, SolverTimeout) as error:
        log.info("narrow family (windows unsplit over mesh axes, default positions): no first schedule (%s)",
                 str(error).splitlines()[0][:120])
        return None
    log.info("narrow family (windows unsplit over mesh axes, default positions): %s, a start for the full search",
             ", ".join(f"{p.name} {p.value}" for p in result.phases))
    return result


def fallback(result: R, problem: Problem, seconds: float, interrupted: bool) -> R:
    """The narrow ``result`` as the solve's, FEASIBLE, each phase's bound the contract's floor (time, words).

    The narrow search's own bounds come from its chains, which leave window
    splits over mesh axes out: they bound the narrow family only.
    ``contract_floors`` holds for every schedule of the contract.
    """
    floors = _contract_floors(problem)
    phases = tuple(dataclasses.replace(p, status="FEASIBLE", bound=min(p.value, floors.get(p.name, Fraction(0))),
                                       start_bound=None) for p in result.phases)
    log.info("the full search found no schedule of its own%s: the narrow family's schedule is the result",
             " before it was stopped" if interrupted else " in the time left")
    return dataclasses.replace(result, status="FEASIBLE", phases=phases, solve_seconds=seconds,
                               family_restrictions=(NARROW_ONLY,), interrupted=interrupted)


def better_of(wide: R, first: R, problem: Problem) -> R:
    """The wide search's result, or the narrow ``first`` when its schedule is better (phase values compared in
    priority order), then FEASIBLE with bounds that hold for the family the wide search covered.

    The wide first phase's bound holds for every schedule of its family (the
    narrow family is inside it); a later phase's bound holds only at the
    earlier phases' values that the wide search reached, so those take the
    contract's floors. The first phase stays OPTIMAL where the wide search
    proved it at the narrow schedule's value (the narrow one won a later
    phase). The restrictions are the wide search's: what the bounds cover.
    """
    values = [p.value for p in wide.phases]
    narrow_values = [p.value for p in first.phases][:len(values)]
    if not values or narrow_values >= values[:len(narrow_values)]:
        return wide
    floors = _contract_floors(problem)
    phases = []
    for i, p in enumerate(first.phases):
        floor = floors.get(p.name, Fraction(0))
        bound = min(p.value, max(floor, wide.phases[0].bound) if i == 0 else floor)
        proven = i == 0 and wide.phases[0].status == "OPTIMAL" and bound == p.value
        phases.append(dataclasses.replace(p, status="OPTIMAL" if proven else "FEASIBLE", bound=bound, start_bound=None))
    log.info("the full search ended worse (%s) than the narrow family's schedule (%s): the narrow schedule is the "
             "result", ", ".join(f"{p.name} {p.value}" for p in wide.phases),
             ", ".join(f"{p.name} {p.value}" for p in first.phases))
    return dataclasses.replace(first, status="FEASIBLE", phases=tuple(phases), solve_seconds=wide.solve_seconds,
                               space=wide.space, family_restrictions=wide.family_restrictions,
                               interrupted=wide.interrupted)


def _contract_floors(problem: Problem) -> dict[str, Fraction]:
    """Per phase name, a floor of every schedule of the contract (``model/bounds.contract_floors``)."""
    scale = clock_scale(problem.architecture)
    time_floor, words_floor = contract_floors(problem, scale)
    return {"time": Fraction(time_floor, scale), "words": Fraction(words_floor)}
