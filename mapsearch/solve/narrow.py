"""A first schedule on a meshed path, from narrower families' models.

Each widening of the searched family (filter-window dimensions split over
mesh axes, buffer positions above the mesh) made the model larger, and
CP-SAT's first schedules on it worse: under a work limit of 5 the ResNet-50
3x3 layer on ``tpu-v4i-like`` ended its time phase at 6,422,528 clocks
where the narrower model proves 28,224 in about a second. Restricting the
wide model's tables to the narrow rows does not help (CP-SAT does not
shrink it back: 28.9 M clocks measured); building the narrow model does.

So on a meshed path where window dimensions could be split over mesh axes
(:func:`applies`; not where only buffer positions widen the family, which
measured worse under a wall-clock limit), ``solve`` first solves two
narrower families, each a subset of the searched family with every buffer
at its default position, and uses the better schedule as a warm start
(solve/warm_start.py): a hint, never a constraint.

1. *Narrow*: window dimensions unsplit over mesh axes (coarse searches
   only). Quick and robust, but it cannot use an array whose axes only the
   window's output dimensions fill: 28,224 clocks on that 3x3 layer (floor
   1,764), 7,056 on the 3x3 stride-2 layer of ``conv3``.
2. *Coarse*: windows split over mesh axes as in the full family, but the
   model built from the coarse chains alone (model/coarse_chains.py: 7,287
   chains of k become 209). Under the same work limit it finds 2,620
   clocks on the 3x3 layer and proves 2,270 on ``conv3``'s (the time
   floor). It is worse on ResNet-50's conv1, 16.9 M clocks against the
   narrow family's 614,656, and started from the narrow schedule it stays
   near it (21,168 on the 3x3 layer): so both are searched, each on its own,
   and the better schedule starts the full search. Only where the narrow
   schedule idles the array (:func:`_idles_the_array`): elsewhere its time
   served the full search better. Where the narrow family cannot fill the
   array whatever it finds (:class:`TimeFloors`, a floor of its
   time), the coarse family is searched first, with the larger share: on
   conv1 under a 10 or 15 s limit the narrow search's half of the time
   left the coarse one too little to find anything. A coarse schedule
   faster than the narrow family's time floor (:class:`TimeFloors`)
   ends the first searches: no narrow schedule could be the better start.
   On an array of at least :data:`COARSE_ALONE_INSTANCES` instances the
   coarse family goes first too (:func:`_coarse_goes_first`): its model
   builds fastest. Where the narrow family's floor is at least :data:`NARROW_FAR_ABOVE`
   times the contract's, the coarse search takes :data:`COARSE_FIRST_SHARE`
   of the time left (:func:`_coarse_share`).

On a large array without windows (:func:`families`) the narrow family is the
full one, and only the coarse family is searched first: there the full
model's presolve can outlast the whole limit (BERT's FFN on
``tpu-v4i-like``), while the coarse model proves the time floor in seconds.

The wide model validates the start itself and computes its figures; a start
it refuses is ignored. So the optimum, the bound and what OPTIMAL means are
those of the wide search; only which schedule a search cut short by its
limit ends with can change.

When the wide search then finds no schedule of its own (its model did not
build, or no search ended with one, within the time left) or is stopped,
the first schedule is the result, FEASIBLE, with the contract's floors as
its bounds (:func:`fallback`): the narrower models' own floors hold for
their families only. When the wide search ends with a worse schedule than
the first one (its limit came before it could check the start: on the
``tpu-v4i-like`` 1x1 layers under a 30 s limit, checking the start's
decisions in the wide model outlasted its share, the start was dropped,
and the time phase ended at 25,690,112 clocks where the start had 1,940),
the first schedule is the result too (:func:`better_of`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from fractions import Fraction
from typing import Callable, TypeVar

import mapsearch.budget as budget
from mapsearch.errors import InfeasibleError, NoScheduleInFamily, SolverTimeout
from mapsearch.model.bounds import compute_time_floor
from mapsearch.model.build import clock_scale
from mapsearch.model.family import phase_floors, proven_status
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.model.spatial import meshed_levels
from mapsearch.model.windows import split_windows

log = logging.getLogger(__name__)

R = TypeVar("R")  # solve/run.SolveResult (this module is imported by run)

# What a result from a first search alone searched (the full search found no schedule).
NARROW_ONLY = ("the narrow family only (window dimensions unsplit over mesh axes, buffers at default positions, "
               "coarse tile chains): the full search found no schedule")
COARSE_ONLY = ("the coarse family only (coarse tile chains, buffers at default positions): the full search found "
               "no schedule")

# The narrow search may use this share of the time left, then the coarse one this share of what is left;
# the full search keeps the rest.
TIME_SHARE = 1 / 2
COARSE_SHARE = 1 / 2
# In the narrow family's own search (coarse searches alone), each phase but the last takes this share of the
# time left; the last takes the rest. Halves gave the time phase of ResNet-50's conv5 3x3 layer on the
# tpu-v4i-like profile 1.07 s after a 5.5 s build under load (no schedule at 10 s), and left the last quarter
# of the limit unused.
PHASE_SHARE = 3 / 4
# Searched before the narrow family whose time floor is at least NARROW_FAR_ABOVE times the contract's, the
# coarse family's share instead (_coarse_share).
COARSE_FIRST_SHARE = 9 / 10
NARROW_FAR_ABOVE = 10
# Where the coarse family is the only first family (no windows), its share of the time, and the fewest
# instances of the whole array for which it is searched.
COARSE_ALONE_SHARE = 1 / 2
COARSE_ALONE_INSTANCES = 1024
# The coarse family is searched only where the narrow schedule's time is at least this multiple of the
# contract's time floor (the narrow family leaves the array idle).
COARSE_ABOVE_FLOOR = 2


def applies(problem: Problem, options: SolveOptions) -> bool:
    """Some first family is searched before the full one (:func:`families`)."""
    return bool(families(problem, options))


def families(problem: Problem, options: SolveOptions) -> tuple[str, ...]:
    """The families searched for a first schedule: on a meshed path with no start of the user's, the narrow
    and the coarse one where window dimensions could be split over mesh axes, else the coarse one alone on
    an array of at least :data:`COARSE_ALONE_INSTANCES` instances.

    Without windows the narrow family's chains are the full model's, so it is
    left out: its share of the time cost more than its start gained
    (``tpu-v4i-like``, one worker, 30 s: the 1x1 stride-2 layer ended at
    4,325 clocks against 2,508 proven without it; BERT's FFN found nothing in
    its share). The coarse family's model is another matter: built from the
    coarse chains alone, it loads in a second where the full model's presolve
    outlasts the limit (BERT's FFN on ``tpu-v4i-like``: 5.7 M literals after
    15 s of presolve, and no schedule in 60 s; the coarse model proves the
    time floor, 18,432 clocks, in 6 s). On a smaller array the full model
    loads, and the coarse search's half of the time is taken from the full
    one (``eyeriss-like``, 168 PEs, 30 s: ResNet-50's 1x1 stride-2 256->512
    layer at 11.3 M words against 3.45 M without it). Measured in docs/solver.md, "On a large
    array without windows". Not without a mesh: there the placement-free
    model's coarse schedule is no better a start than the wide model's own
    (the ResNet-50 3x3 layer on ``cpu-core``, work limit 5: words 295 M and
    210 M on its two role bindings with it, 210 M without).
    """
    if options.start is not None or options.models_dram_rows or not meshed_levels(problem):
        return ()
    if split_windows(problem, frozenset(), None)[0]:
        return ("narrow", "coarse")
    instances = math.prod(level.instances for level in problem.architecture.levels)
    return ("coarse",) if instances >= COARSE_ALONE_INSTANCES else ()


def first_schedule(problem: Problem, options: SolveOptions, started: float,
                   solve_family: Callable[[SolveOptions, str], R]) -> R | None:
    """The better of the narrow and the coarse families' results (``solve_family(options, "narrow")`` builds
    and searches the narrow model), or None when neither found a schedule in its share of the time.

    The result's ``family_restrictions`` name the family it came from
    (:data:`NARROW_ONLY`, :data:`COARSE_ONLY`), for :func:`fallback`. A
    solve stopped during either search that found a schedule still gets it
    (the caller then returns it); a tie keeps the narrow one.
    """
    if "narrow" not in families(problem, options):
        return _first(problem, options, started, solve_family, "coarse", COARSE_ALONE_SHARE)
    floors = time_floors(problem)
    why = _coarse_goes_first(problem, floors)
    if why is not None:
        log.info("%s: the coarse family is searched first", why)
        coarse = _first(problem, options, started, solve_family, "coarse", _coarse_share(floors))
        if coarse is not None and _faster_than(coarse, floors.narrow):
            log.info("the coarse family's time is below the narrow family's floor (%s): the narrow family is not "
                     "searched; the coarse family's schedule starts the full search", floors.narrow)
            return coarse
        narrow = None if budget.stopped() else _first(problem, options, started, solve_family, "narrow", COARSE_SHARE)
    else:
        narrow = _first(problem, options, started, solve_family, "narrow", TIME_SHARE)
        if budget.stopped():
            return narrow
        if narrow is not None and not _idles_the_array(narrow, floors.contract):
            log.info("the narrow family's schedule starts the full search (its time is within %dx the floor: the "
                     "coarse family is not searched)", COARSE_ABOVE_FLOOR)
            return narrow
        # Not started from the narrow schedule: hinted with it, the coarse search of the 3x3 layer stayed near it
        # (21,168 clocks against 2,620 without it, work limit 5).
        coarse = _first(problem, options, started, solve_family, "coarse", COARSE_SHARE)
    best = narrow if coarse is None or (narrow is not None and _values(narrow) <= _values(coarse)) else coarse
    if best is not None:
        log.info("the %s family's schedule starts the full search", "narrow" if best is narrow else "coarse")
    return best


def _first(problem: Problem, options: SolveOptions, started: float, solve_family: Callable[[SolveOptions, str], R],
           family: str, share: float) -> R | None:
    """``family``'s result in ``share`` of the time left (every buffer at its default position), or None."""
    left = options.time_limit - (time.perf_counter() - started)
    if left <= 0:
        return None
    first = dataclasses.replace(options, placement=False, time_limit=max(0.05, left * share))
    what = _FAMILIES[family]
    try:
        result = solve_family(first, family)
    except (InfeasibleError, NoScheduleInFamily, SolverTimeout) as error:
        log.info("%s: no first schedule (%s)", what, str(error).splitlines()[0][:120])
        return None
    log.info("%s: %s", what, ", ".join(f"{p.name} {p.value}" for p in result.phases))
    return dataclasses.replace(result, family_restrictions=(NARROW_ONLY if family == "narrow" else COARSE_ONLY,))


def _idles_the_array(narrow, contract_floor: Fraction) -> bool:
    """The narrow schedule's time is at least :data:`COARSE_ABOVE_FLOOR` times the contract's time floor.

    Near the floor the coarse family has little time to gain, and its share
    is better left to the full search. Where it runs it costs the full
    search time. Measured over ResNet-50 at 30 s per layer: on
    ``eyeriss-like`` (conv1's narrow time 3,073,280 clocks, 3.8x its floor,
    which the full search used to bring to 813,743) the network's time rose
    0.1 % and its words 2.4 % (conv1 4.4 M -> 10.7 M words); on
    ``tpu-v4i-like`` (narrow times 28,224 against a floor of 1,764 on the
    3x3 layer, 614,656 against 3,316 on conv1) the network ran 4.95x faster.
    """
    time = next((p.value for p in narrow.phases if p.name == "time"), None)
    return time is None or time >= COARSE_ABOVE_FLOOR * contract_floor


@dataclasses.dataclass(frozen=True)
class TimeFloors:
    """Floors of the time, in clocks: ``narrow`` of every schedule of the narrow family, ``contract`` of every
    schedule of the contract (``model/family.phase_floors``).

    The narrow family splits no window dimension over a mesh axis, so at
    most ``prod_{d not in a window} E_d`` instances have a part at any step
    (a dimension has at most ``E_d`` non-empty parts); the op calls of any
    schedule are at least ``prod_d ceil(E_d / b_d)`` (model/bounds.compute_time_floor),
    and the busiest of those instances takes at least their average.
    ResNet-50's conv1 on ``tpu-v4i-like``: n x k x c = 192 of 65,536 PEs,
    a narrow floor of 614,656 clocks against the contract's 3,316.
    """

    narrow: Fraction
    contract: Fraction

    @property
    def narrow_idles_the_array(self) -> bool:
        """The narrow floor is at least :data:`COARSE_ABOVE_FLOOR` times the contract's, so
        :func:`_idles_the_array` holds for whatever schedule the narrow family has."""
        return self.narrow >= COARSE_ABOVE_FLOOR * self.contract


def time_floors(problem: Problem) -> TimeFloors:
    """The narrow family's and the contract's time floors (:class:`TimeFloors`) of ``problem``."""
    windows, _, _ = split_windows(problem, frozenset(), None)
    in_window = {d for win in windows for d in win.dims}
    busy = min(math.prod(level.instances for level in problem.architecture.levels),
               math.prod(e for d, e in problem.workload.extents if d not in in_window))
    scale = clock_scale(problem.architecture)
    return TimeFloors(Fraction(compute_time_floor(problem, scale, busy), scale), _contract_floors(problem)["time"])


def _coarse_goes_first(problem: Problem, floors: TimeFloors) -> str | None:
    """Why the coarse family is searched before the narrow one, or None: where the narrow family cannot fill
    the array (its schedule would idle it whatever it is), and on an array of at least
    :data:`COARSE_ALONE_INSTANCES` instances.

    On such an array every model takes seconds to build, the coarse one the
    fewest (ResNet-50's conv5 3x3 layer over the ``tpu-v4i-like`` profile:
    narrow 3.7 s, coarse 2.3 s), and under a short limit the narrow search
    second had too little time left (its presolve alone ran 3 s past a
    1.07 s share): at 10 s the stride-2 layers of conv4 and conv5 ended at
    8,945,664 clocks and with no schedule, against 3,112 and 12,574 with
    the coarse family first; at 30 s the window layers end as before
    (60,276 clocks count-weighted), the narrow family still searched second
    where the coarse schedule is above its floor (conv4's 3x3 layer:
    2,412 clocks from the narrow family, 22,176 from the coarse one).
    """
    if floors.narrow_idles_the_array:
        return f"the narrow family cannot fill the array (its time floor is at least {COARSE_ABOVE_FLOOR}x the floor)"
    instances = math.prod(level.instances for level in problem.architecture.levels)
    if instances >= COARSE_ALONE_INSTANCES:
        return f"an array of {instances} instances, where the coarse family's model builds fastest"
    return None


def _coarse_share(floors: TimeFloors) -> float:
    """The coarse family's share of the time left where it is searched before the narrow one.

    :data:`COARSE_FIRST_SHARE` where the narrow family's time floor is at
    least :data:`NARROW_FAR_ABOVE` times the contract's: a narrow schedule
    could only be a poor start, and the coarse search needs most of a short
    limit (conv2's 3x3 layer over the ``tpu-v4i-like`` profile, narrow floor
    16x the contract's, at 10 s: 11,788 clocks in half of it, 2,620 in nine
    tenths; conv1, 185x: nothing in half, 3,314 in nine tenths). Elsewhere
    :data:`COARSE_SHARE`, which leaves the narrow family its chance:
    ``simba-like``'s ResNet-50 3x3 layer (narrow floor 4x the contract's) at
    20 s has 51,408 clocks from the coarse family and 28,224, the narrow
    floor, from the narrow one, found in the half it gets.
    """
    return COARSE_FIRST_SHARE if floors.narrow >= NARROW_FAR_ABOVE * floors.contract else COARSE_SHARE


def _faster_than(result, floor: Fraction) -> bool:
    """``result``'s first phase is the time and its value is below ``floor``: no schedule whose time is at
    least ``floor`` can beat it (``first_schedule`` keeps the better start, phases compared in priority order).
    On the ResNet-50 3x3 layer on ``tpu-v4i-like`` the narrow search took 2.2 of 10 s to find 28,224
    clocks, its floor, after the coarse family had found 11,788."""
    return bool(result.phases) and result.phases[0].name == "time" and result.phases[0].value < floor


_FAMILIES = {"narrow": "narrow family (windows unsplit over mesh axes, default positions)",
             "coarse": "coarse family (coarse tile chains, default positions)"}


def _values(result) -> list[Fraction]:
    return [p.value for p in result.phases]


def fallback(result: R, problem: Problem, seconds: float, interrupted: bool) -> R:
    """The first schedule's ``result`` (:func:`first_schedule`) as the solve's, each phase's bound the
    contract's floor (time, words); its restrictions name the family it came from.

    A first search's own bounds come from its chains, which leave out window
    splits over mesh axes (narrow) or all but the coarse chains (coarse):
    they bound that family only. ``contract_floors`` holds for every
    schedule of the contract, so the phases that meet it are proven
    (:func:`_proven_at_floors`): ResNet-50's conv1 on ``tpu-v4i-like``, whose
    wide model does not load in the time left, gets its time this way.
    """
    floors = _contract_floors(problem)
    phases = _proven_at_floors([dataclasses.replace(p, status="FEASIBLE", start_bound=None,
                                                    bound=min(p.value, floors.get(p.name, Fraction(0))))
                                for p in result.phases], floors)
    log.info("the full search found no schedule of its own%s: the first schedule is the result",
             " before it was stopped" if interrupted else " in the time left")
    if all(p.status == "OPTIMAL" for p in phases):
        return dataclasses.replace(result, status="OPTIMAL", phases=phases, solve_seconds=seconds,
                                   family_restrictions=(), interrupted=interrupted)
    return dataclasses.replace(result, status="FEASIBLE", phases=phases, solve_seconds=seconds,
                               interrupted=interrupted)


def _proven_at_floors(phases: list, floors: dict[str, Fraction]) -> tuple:
    """``phases`` with each phase OPTIMAL whose value meets its contract floor while every earlier one is
    OPTIMAL (a phase already OPTIMAL stays so).

    The floors hold for every schedule of the contract (model/bounds.contract_floors):
    a time at the time floor is the least of the whole family, and words at
    the words floor at that time the least there too.
    """
    out = []
    for p in phases:
        earlier = all(q.status == "OPTIMAL" for q in out)
        met = p.name in floors and p.value == floors[p.name]
        out.append(dataclasses.replace(p, status="OPTIMAL") if earlier and met else p)
    return tuple(out)


def better_of(wide: R, first: R, problem: Problem) -> R:
    """The wide search's result, or the ``first`` schedule's (:func:`first_schedule`) when it is better (phase
    values compared in priority order), then FEASIBLE with bounds that hold for the family the wide search
    covered.

    The wide first phase's bound holds for every schedule of its family (the
    first schedule's family is inside it); a later phase's bound holds only at the
    earlier phases' values that the wide search reached, so those take the
    contract's floors. The first phase stays OPTIMAL where the wide search
    proved it at the first schedule's value (the first one won a later
    phase). The restrictions are the wide search's: what the bounds cover.
    Every phase proven makes the result OPTIMAL_IN_FAMILY under them (the
    first phase's proof is the wide family's), OPTIMAL only where they are
    none or every phase meets the contract's floors.
    """
    values = _values(wide)
    first_values = _values(first)[:len(values)]
    if not values or first_values >= values[:len(first_values)]:
        return wide
    floors = _contract_floors(problem)
    phases = []
    for i, p in enumerate(first.phases):
        floor = floors.get(p.name, Fraction(0))
        bound = min(p.value, max(floor, wide.phases[0].bound) if i == 0 else floor)
        proven = i == 0 and wide.phases[0].status == "OPTIMAL" and bound == p.value
        phases.append(dataclasses.replace(p, status="OPTIMAL" if proven else "FEASIBLE", bound=bound, start_bound=None))
    phases = _proven_at_floors(phases, floors)
    log.info("the full search ended worse (%s) than the first schedule (%s): the first schedule is the "
             "result", ", ".join(f"{p.name} {p.value}" for p in wide.phases),
             ", ".join(f"{p.name} {p.value}" for p in first.phases))
    # The first phase proven by the wide search holds over the wide family only: a restricted one keeps its
    # restrictions (OPTIMAL_IN_FAMILY). Only phases that all meet the contract's floors hold over every schedule.
    at_floors = all(p.name in floors and p.value == floors[p.name] for p in phases)
    restrictions = () if at_floors else wide.family_restrictions
    return dataclasses.replace(first, status=proven_status(all(p.status == "OPTIMAL" for p in phases), restrictions),
                               phases=phases, solve_seconds=wide.solve_seconds, space=wide.space,
                               family_restrictions=restrictions, interrupted=wide.interrupted)


def _contract_floors(problem: Problem) -> dict[str, Fraction]:
    """Per phase name, a floor of every schedule of the contract (``model/family.phase_floors``)."""
    return phase_floors(problem, clock_scale(problem.architecture))
