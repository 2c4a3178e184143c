"""Where the greedy schedule (solve/greedy.py) enters a solve: as a hint, and as a fallback result.

- *Hint* (:func:`greedy_or_coarse`): the first phase's hint without a warm
  start, where the coarse search finds none or a worse one (docs/solver.md,
  "A greedy first schedule").
- *Fallback* (:func:`greedy_fallback`): where the search still finds no
  schedule in time, or ends FEASIBLE at a worse one, the greedy schedule
  solved on its own, its decisions fixed as user constraints, is the
  result, FEASIBLE, with the search's bounds or the contract's floors. A
  warm start takes the greedy schedule's place: a search that ends worse
  than the schedule it was given returns that schedule, even where the
  model's family does not hold it (a reduced tile family at depth).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from fractions import Fraction
from typing import TYPE_CHECKING, Callable

from ortools.sat.python import cp_model

import mapsearch.budget as budget
from mapsearch.errors import InfeasibleError, SolverTimeout
from mapsearch.model.encoding import Encoding
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.schedule.schedule import Schedule
from mapsearch.solve.coarse import coarse_is_full
from mapsearch.solve.greedy import greedy_schedule
from mapsearch.solve.space import SearchSpace
from mapsearch.solve.warm_start import Hint, start_of, start_solution
from mapsearch.spec.constraints import Constraints, TileLimit, resolve_level

if TYPE_CHECKING:
    from mapsearch.solve.run import SolveResult

log = logging.getLogger(__name__)


def greedy_or_coarse(enc: Encoding, constraints: Constraints, make_solver: Callable[[], cp_model.CpSolver],
                     coarse: Callable[..., Hint | None], left: float, first: bool) -> Hint | None:
    """The first phase's hint without a warm start: the coarse search's (``coarse(incumbent, left)``), or the
    greedy schedule's where the coarse search finds none or a worse one (the coarse one on a tie, so a
    solve that finds one finds what it found before).

    ``first``: check the greedy schedule before the coarse search (which then has the time left after
    the check); otherwise only after a coarse search that found nothing. The greedy schedule's value is
    not told to the coarse search, which searches as it would without it, and a greedy schedule at the
    phase's floor still leaves the choice among tied schedules to the coarse search.
    """
    if coarse_is_full(enc):  # no coarse search to miss: the full search runs as it always has
        return coarse(None, left)
    start = time.perf_counter()
    greedy = greedy_hint(enc, constraints, make_solver) if first else None
    found = coarse(None, left - (time.perf_counter() - start))
    if found is None and not first:
        return greedy_hint(enc, constraints, make_solver)
    if greedy is not None and (found is None or greedy[0] < found[0]):
        log.info("the greedy schedule (value %d) starts the search: the coarse search found %s", greedy[0],
                 "none" if found is None else found[0])
        return greedy
    return found


def greedy_hint(enc: Encoding, constraints: Constraints, make_solver: Callable[[], cp_model.CpSolver]) -> Hint | None:
    """The greedy schedule as a hint of the model's current phase: ``(value, solver)``, or None where there is
    none or the model refuses it (checked as a warm start is: solve/warm_start.py)."""
    schedule = greedy_schedule(enc.problem)
    if schedule is None:
        log.debug("no greedy schedule: L0 cannot hold one element of every tensor")
        return None
    hinted = start_solution(enc, start_of(enc, schedule, constraints), make_solver())
    log.debug("the greedy schedule is %s", "refused by the model" if hinted is None else f"at value {hinted[0]}")
    return hinted


# A greedy schedule's own solve (its tiles, orders and keeps fixed), run after a search that ran out of time,
# may take this share of the time limit, at least FALLBACK_MIN and at most FALLBACK_MAX seconds past it.
FALLBACK_SHARE = 0.05
FALLBACK_MIN, FALLBACK_MAX = 0.5, 2.0


def fixing_constraints(problem: Problem, schedule: Schedule, constraints: Constraints) -> Constraints:
    """``constraints`` plus ``schedule``'s tiles (as limits ``lo = hi``), orders and keeps at every level below
    the top: the family of that one schedule, where it meets the user's constraints."""
    w, arch = problem.workload, problem.architecture
    tiles, orders, keep = list(constraints.tiles), list(constraints.orders), list(constraints.keep)
    for i, lm in enumerate(schedule.levels[1:], start=1):
        name = arch.levels[i].name
        tiles += [TileLimit(name, d, e, e) for d, e in lm.tile]
        if not any(resolve_level(level, arch, "constraints", "orders") == i for level, _ in constraints.orders):
            orders.append((name, lm.order))
        keep += [(name, t, t in lm.keep) for t in w.tensor_names if problem.home(t) < i]
    return dataclasses.replace(constraints, tiles=tuple(tiles), orders=tuple(orders), keep=tuple(keep))


def greedy_fallback(problem: Problem, constraints: Constraints, options: SolveOptions,
                    search: Callable[[Constraints, SolveOptions], "SolveResult"],
                    schedule: Schedule | None = None) -> "SolveResult | None":
    """The greedy schedule solved on its own (``search(constraints, options)``, its decisions fixed by
    :func:`fixing_constraints`, default positions), so that a solve whose search finds nothing, or runs out
    of time before its model exists (the chains of a 7x7 filter window on five levels), still returns a
    schedule with the model's own prediction. Run after the search, past its time limit by at most
    FALLBACK_MAX seconds (its model has one chain per dimension: 0.1 s on ResNet-50's 3x3 layer on five
    levels). None where there is no greedy schedule, the user's constraints exclude it, or its solve
    fails.

    ``schedule``: another schedule to solve so (a warm start); where it places a buffer away from its
    default position, the positions are searched too (its tiles, orders and keeps fixed), so its own
    placement is among them.
    """
    if schedule is None:
        schedule = greedy_schedule(problem)
    if schedule is None:
        return None
    limit = FALLBACK_MAX if options.time_limit is None else \
        min(FALLBACK_MAX, max(FALLBACK_MIN, FALLBACK_SHARE * options.time_limit))
    placed = options.placement and any(lm.positions for lm in schedule.levels)
    fixed = dataclasses.replace(options, placement=placed, time_limit=limit,
                                work_limit=None if options.work_limit is None else min(options.work_limit, 1.0))
    try:
        # Its own deadline: the search's has usually passed (a Ctrl-C still stops it).
        with budget.within(budget.Budget(limit, parent=budget.current(), extends=True)):
            return search(fixing_constraints(problem, schedule, constraints), fixed)
    except (InfeasibleError, SolverTimeout) as error:
        log.debug("no greedy fallback: %s", error)
        return None


def as_unproven(fallback: "SolveResult", floors: dict[str, Fraction], seconds: float, why: str,
                what: str = "the greedy schedule") -> "SolveResult":
    """The greedy schedule's result as the solve's: FEASIBLE, each phase's bound the contract's floor
    (``floors``, per phase name; 0 where none is known), nothing claimed about any family."""
    phases = tuple(dataclasses.replace(p, status="FEASIBLE", bound=min(p.value, floors.get(p.name, Fraction(0))),
                                       start_value=None, start_bound=floors.get(p.name, Fraction(0)))
                   for p in fallback.phases)
    log.info("the search found no schedule (%s): %s is returned, unproven", why, what)
    # No search space to report: the search's model found nothing (or was never built); the fixed family's
    # one schedule is not what was searched.
    return dataclasses.replace(fallback, status="FEASIBLE", phases=phases, solve_seconds=seconds,
                               family_restrictions=(), space=SearchSpace((), 0, False, ()))


def fallback_applies(problem: Problem, options: SolveOptions) -> bool:
    """Off a mesh (arrays have their seeded searches: solve/spatial_seed.py), outside a fused group (its
    stages share buffers), for the time and words objectives (whose contract floors bound an unproven
    result), without DRAM rows."""
    return (not any(lv.instances > 1 for lv in problem.architecture.levels) and problem.fusion_level is None
            and options.objective in ("time", "words") and not options.models_dram_rows)


def better_than_search(result: "SolveResult", fallback: "SolveResult", what: str = "the greedy schedule") -> "SolveResult":
    """``result``, or the greedy schedule (``what``: the fallback's name in the log) where the search was cut
    short at a worse one (lexicographically over the phases), then with bounds no higher than its values (the
    search's bounds hold for every schedule of its family) and floors at the start of each phase; a leading
    phase the search proved and the greedy schedule ties stays OPTIMAL."""
    if result.status != "FEASIBLE" or [p.name for p in result.phases] != [p.name for p in fallback.phases]:
        return result
    if tuple(p.value for p in fallback.phases) >= tuple(p.value for p in result.phases):
        return result
    phases, tied = [], True
    for g, p in zip(fallback.phases, result.phases):
        # A phase the search proved, which the greedy schedule ties after equal phases before it, stays proven.
        tied = tied and g.value == p.value
        status = "OPTIMAL" if tied and p.status == "OPTIMAL" else "FEASIBLE"
        phases.append(dataclasses.replace(p, status=status, value=g.value, bound=min(g.value, p.bound),
                                          seconds=p.seconds))
    log.info("the search was cut short at %s: %s (%s) is returned",
             [str(p.value) for p in result.phases], what, [str(p.value) for p in fallback.phases])
    return dataclasses.replace(fallback, status="FEASIBLE", phases=tuple(phases), solve_seconds=result.solve_seconds,
                               family_restrictions=result.family_restrictions, space=result.space)
