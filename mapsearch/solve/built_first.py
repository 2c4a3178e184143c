"""A first schedule for deep scalar hierarchies, built level by level from the innermost.

On four and five levels the full model's tile families are reduced
(model/chains.py, above ``DEEP_ENUMERATION_LIMIT`` raw chains) and its
search ends FEASIBLE far from the floors; a schedule that tiles each level
for the level below it is often much better than what the search reaches.
Built innermost first:

1. the top and the innermost level ``J`` alone: the fewest words;
2. the top, level ``J - 1`` and level ``J``, level ``J``'s tiles and order
   fixed (user constraints): the fewest words;
3. and so on up to the whole hierarchy, levels ``2..J`` fixed, solved for
   the solve's own objectives.

Each step is a solve of its own (buffer positions, keeps and bypass
searched, its tiles free at the levels not fixed), in an equal part of
:data:`SHARE` of the time limit, each CP-SAT call within
:data:`STEP_WORK` deterministic seconds. The last step is a schedule of
the problem itself, predicted by its own model. It is only a start
(``SolveOptions.start``): the full search is hinted with it where its
family holds it, and a search that ends worse returns it
(solve/greedy_start.py, "warm start"). Nothing is claimed from it: its
phases are FEASIBLE with the contract's floors as bounds.

Measured (docs/solver.md, "A first schedule built level by level"): on
the 4- and 5-level matmuls of ``benchmarks/solve_speed.py --targets``, 3-41 %
fewer words where the search alone ends far from the floors (4L 1024^3:
601.9 M searched, 509.6 M built in 3.3 s), the search's own where it is
better (4L 64^3: 126,976 searched, 131,072 built).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Callable, TypeVar

from fractions import Fraction

from mapsearch.errors import InfeasibleError, SolverTimeout
from mapsearch.model.build import clock_scale
from mapsearch.model.chains import reduced_family
from mapsearch.model.family import phase_floors
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.spec.constraints import Constraints, TileLimit

log = logging.getLogger(__name__)

R = TypeVar("R")

SHARE = 0.2  # of the time limit, for all the steps together
STEP_WORK = 1.0  # deterministic seconds per CP-SAT call of a step (or the solve's work limit, if smaller)
MIN_DEPTH = 3  # levels below the top: on two or three the search proves or nearly proves on its own


def applies(problem: Problem, constraints: Constraints, options: SolveOptions) -> bool:
    """At least :data:`MIN_DEPTH` levels below the top, one instance of each, a scalar op (a block op's
    bindings each solve in a share of the time: measured on ``cpu-core``'s BERT FFN, the steps took that
    time from the search and built nothing better), every tensor homed at the top, one einsum, the time or words objective, no start and no constraints of the user's (a step's
    architecture lacks some of their levels), and a dimension whose tile family is reduced (where every
    chain is listed, the search holds every schedule the steps could build, and is not slowed by them)."""
    arch = problem.architecture
    return (options.start is None and problem.depth >= MIN_DEPTH and problem.fusion_level is None
            and all(lv.instances == 1 for lv in arch.levels) and not arch.compute.block
            and not arch.compute.block_roles and all(problem.home(t) == 0 for t in
                                                                     problem.workload.tensor_names)
            and options.objective in ("time", "words") and not options.models_dram_rows
            and not (constraints.tiles or constraints.orders or constraints.keep or constraints.stationary
                     or constraints.spatial)
            and any(reduced_family(e, problem.depth) for e in problem.workload.extent.values()))


def first_schedule(problem: Problem, options: SolveOptions,
                   solve: Callable[[Problem, Constraints, SolveOptions], R]) -> R | None:
    """The schedule built level by level (module docstring), as a result whose phases are FEASIBLE with the
    contract's floors as bounds; None where a step finds no schedule in its time."""
    arch, start = problem.architecture, time.perf_counter()
    depth = problem.depth
    share = SHARE * options.time_limit
    work = STEP_WORK if options.work_limit is None else min(STEP_WORK, options.work_limit)
    fixed: list[TileLimit] = []
    orders: list[tuple[str, tuple[str, ...]]] = []
    result = None
    for k in range(depth, 0, -1):
        left = share - (time.perf_counter() - start)  # shared equally by the k steps left
        step = dataclasses.replace(options, time_limit=max(0.05, left / k), work_limit=work,
                                   objective=options.objective if k == 1 else "words", start=None)
        sub = dataclasses.replace(problem, architecture=dataclasses.replace(arch, levels=(arch.levels[0],) +
                                                                                 arch.levels[k:]))
        try:
            result = solve(sub, Constraints("built level by level", tuple(fixed), tuple(orders)), step)
        except (InfeasibleError, SolverTimeout) as error:
            log.info("no schedule built level by level: the step at %s found none (%s)", arch.levels[k].name,
                     str(error).splitlines()[0][:120])
            return None
        mapping = result.schedule.levels[1]  # level k in the step's architecture
        fixed += [TileLimit(arch.levels[k].name, d, e, e) for d, e in mapping.tile]
        orders.append((arch.levels[k].name, mapping.order))
    seconds = time.perf_counter() - start
    log.info("a schedule built level by level in %.2f s: %s", seconds,
             ", ".join(f"{p.name} {p.value}" for p in result.phases))
    # Its last step proved an optimum of its fixed tiles only: every phase FEASIBLE, bounded by the floors
    # that hold for every schedule of the contract; no family, no search space of its own.
    floors = phase_floors(problem, clock_scale(arch))
    phases = tuple(dataclasses.replace(p, status="FEASIBLE", bound=min(p.value, floors.get(p.name, Fraction(0))),
                                       start_value=None, start_bound=None) for p in result.phases)
    return dataclasses.replace(result, status="FEASIBLE", phases=phases, solve_seconds=seconds,
                               family_restrictions=())
