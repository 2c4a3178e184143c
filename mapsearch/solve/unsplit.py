"""Schedules that split nothing over a mesh, searched with every buffer position.

On a path with a spatial fanout the model searches buffer positions only
where no spatial split can change a buffer's pieces (model/placement.py),
and names the rest a family restriction. One part of what it leaves out is
searched exactly here: the schedules that split no dimension over any mesh
axis. Such a schedule runs on instance 0 of every level; every other
instance has an empty part at every step and idles, so it moves and
computes nothing, and instance 0's link copies carry what the same schedule
moves on the path whose levels have one instance each. So its words, link
times, op calls, busiest calls and occupancy are those of that schedule on
the path without its meshes, where every buffer position is searched; only
``compute_instances`` (the architecture's instances, a property of the path)
differs. :func:`unsplit_problem` is that path; :func:`lift` puts its schedule
back on the meshed one.

The better of the two results (lexicographic on the phases: time, then
words) is kept. When the meshed search is proven, a floor valid for every
schedule of the path without meshes (model/bounds.contract_floors) above
the meshed optimum's time (or words, under ``--objective words``) proves
that no unsplit schedule can win, and the second search is skipped: on
arrays the one-instance compute time alone is thousands of times the
meshed time.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from fractions import Fraction
from typing import Callable

from mapsearch.model.placement import FANOUT, MESHED_PLACEMENT
from mapsearch.model.problem import Problem
from mapsearch.schedule.schedule import Schedule
from mapsearch.spec.architecture import Architecture

log = logging.getLogger(__name__)

# The objectives whose phases are the same figures on both paths (an energy model may charge per instance).
OBJECTIVES = ("time", "words")


def unmeshed(architecture: Architecture) -> Architecture:
    """``architecture`` with every level reduced to one instance (no mesh axes)."""
    levels = tuple(dataclasses.replace(lv, instances=1, mesh=()) for lv in architecture.levels)
    return dataclasses.replace(architecture, levels=levels)


def unsplit_problem(problem: Problem) -> Problem:
    """``problem`` on its path without meshes (:func:`unmeshed`)."""
    return dataclasses.replace(problem, architecture=unmeshed(problem.architecture))


def lift(schedule: Schedule, architecture: Architecture) -> Schedule:
    """An unsplit schedule put back on the meshed ``architecture``: the same loops, no spatial factors.

    The prediction is the same but for ``compute_instances``, which counts the
    architecture's instances (model/decode.py), and ``busiest_calls``, which
    are instance 0's, all of the calls.
    """
    figures = schedule.predicted
    if figures is not None:
        figures = dataclasses.replace(figures, compute_instances=math.prod(lv.instances for lv in architecture.levels),
                                      busiest_calls=figures.op_calls)
    return dataclasses.replace(schedule, architecture=architecture, predicted=figures)


def values(result) -> tuple[Fraction, ...]:
    """The phases' values, in order: what the lexicographic objective compares."""
    return tuple(p.value for p in result.phases)


def cannot_win(meshed, floors: tuple[int, int], scale: int, objective: str) -> bool:
    """Whether a floor of the unsplit family (``(time x scale, words)``) is above the meshed schedule's value.

    Then every unsplit schedule is worse than the meshed one on the first
    objective, whatever the meshed search proved.
    """
    time_floor, words_floor = floors
    if objective == "time":
        return Fraction(time_floor, scale) > meshed.phases[0].value
    return words_floor > meshed.phases[0].value


def better_of(meshed, unsplit) -> tuple[object, bool]:
    """``(the better result, whether it is the unsplit one)``; a tie keeps the meshed schedule."""
    if unsplit is not None and values(unsplit) < values(meshed):
        return unsplit, True
    return meshed, False


def phases_of_union(best, other) -> tuple:
    """The kept result's phases with bounds that hold over both families (``other``: the result not
    kept, None when it was not searched or has no schedule).

    Phase 1 (time, or the one objective): the union's floor is the smaller
    of the two floors. Phase 2 (words at the kept time ``v``): every phase 2
    keeps the time at most its own phase 1's value, which is at least ``v``
    for the result not kept, so its words floor covers its schedules at time
    ``v``; it counts only where its time floor is at most ``v`` (else none of
    its schedules reaches ``v``), and is 0 where it has no words phase. A
    phase is OPTIMAL over the union when its bound reaches its value.
    """
    if other is None:
        return best.phases
    out = []
    for n, p in enumerate(best.phases):
        if n == 0:
            bound = min(p.bound, other.phases[0].bound)
        elif other.phases[0].bound > best.phases[0].value:
            bound = p.bound  # no schedule of the other family reaches the kept time
        else:
            theirs = [q.bound for q in other.phases[1:] if q.name == p.name]
            bound = min(p.bound, theirs[0] if theirs else Fraction(0))
        status = "OPTIMAL" if p.status == "OPTIMAL" and bound >= p.value else "FEASIBLE"
        out.append(dataclasses.replace(p, bound=min(bound, p.value), status=status))
    return tuple(out)


def search_unsplit(problem: Problem, solve_one: Callable[[Problem], object]) -> tuple[object | None, bool]:
    """``(the unsplit family's result with its schedule lifted to the meshed path, whether the family was
    searched)``: ``(None, True)`` when it has no schedule (its own restrictions named in the log), ``(None,
    False)`` when the search ran out of time before finding one."""
    from mapsearch.errors import InfeasibleError, Interrupted, NoScheduleInFamily, SolverTimeout

    try:
        result = solve_one(unsplit_problem(problem))
    except NoScheduleInFamily as exc:
        log.info("schedules without spatial splits: none in the searched family (%s)", exc)
        return None, False
    except InfeasibleError as exc:
        log.info("schedules without spatial splits: none (%s)", exc)
        return None, True
    except (SolverTimeout, Interrupted) as exc:
        log.info("schedules without spatial splits: not searched to the end (%s)", exc)
        return None, False
    return dataclasses.replace(result, schedule=lift(result.schedule, problem.architecture)), True


def applies(problem: Problem, options) -> bool:
    """Whether the unsplit family is searched beside the meshed one: a mesh on the path, buffer positions
    searched, an objective whose figures are the same on both paths, no DRAM row phase, and split bounds
    (``MeshAxis.split_bounds``) that a schedule without splits meets (every bound 1)."""
    return (any(lv.instances > 1 for lv in problem.architecture.levels) and options.placement
            and options.objective in OBJECTIVES and options.dram_rows == "off" and unsplit_meets_bounds(problem))


def unsplit_meets_bounds(problem: Problem) -> bool:
    """Whether a schedule that splits nothing meets every axis's split bounds (each dimension's bound is 1)."""
    return all(rule.holds({}) for lv in problem.architecture.levels for axis in lv.mesh for rule in axis.split_bounds)


def _fanout_placement(restriction: str) -> bool:
    """Whether ``restriction`` is model/placement.meshed_placement_restriction's."""
    return restriction.startswith(MESHED_PLACEMENT) and restriction.endswith(FANOUT)


def placement_restricted(restrictions: tuple[str, ...]) -> bool:
    """Whether the meshed search left buffer positions out because of the fanout."""
    return any(_fanout_placement(r) for r in restrictions)


def union_restrictions(meshed: tuple[str, ...], unsplit: tuple[str, ...]) -> tuple[str, ...]:
    """What the two searches together left out: the placement restriction now holds only for schedules
    with a spatial split; the others are named as each search named them."""
    out: dict[str, None] = {}
    for r in meshed:
        if _fanout_placement(r):
            r = r[:-len(FANOUT)] + "(in schedules with a spatial split; those without one: every position)"
        out[r] = None
    out.update(dict.fromkeys(unsplit))
    return tuple(out)


def combine(best, other, restrictions: tuple[str, ...], seconds: float):
    """``best`` with the union's phases (:func:`phases_of_union`), status, restrictions and the seconds of
    both searches."""
    from mapsearch.model.family import proven_status

    phases = phases_of_union(best, other)
    proven = all(p.status == "OPTIMAL" for p in phases)
    return dataclasses.replace(best, phases=phases, status=proven_status(proven, restrictions),
                               family_restrictions=restrictions, solve_seconds=seconds)
