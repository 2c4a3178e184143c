"""Solve one einsum on one architecture: build, search in phases, decode, explain.

The contract's objective is lexicographic. Phase 1 minimises the time; phase
2 keeps the time at its optimum and minimises the words (hinted with phase
1's schedule). Other objectives are one phase. ``status`` is ``OPTIMAL`` only
when every phase proved optimality; otherwise ``FEASIBLE`` with the bound and
gap of the phase that stopped short.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ortools.sat.python import cp_model

import mapsearch.budget as budget
from mapsearch.errors import InfeasibleError, Interrupted, NoScheduleInFamily, SolverTimeout
from mapsearch.model.build import build, clock_scale
from mapsearch.model.decode import decode
from mapsearch.model.encoding import Encoding
from mapsearch.model.family import family_restrictions, meets_contract_floors, phase_floors, proven_status
from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import Figures
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.counters import ReplayResult
from mapsearch.solve.binding import Binding, binding_report
from mapsearch.solve.space import SearchSpace, search_space
from mapsearch.spec.constraints import Constraints, with_spatial_limits
from mapsearch.model.overflow import contract_overflow
from mapsearch.model.spatial import unmeetable_split_bounds
from mapsearch.solve.explain import explain_infeasible
from mapsearch.model.options import SolveOptions
from mapsearch.solve.coarse import coarse_solution
from mapsearch.solve.phases import Phase, new_solver, run_phases
from mapsearch.solve import built_first, hidden_first, narrow, unsplit
from mapsearch.solve.progress import finished, report
from mapsearch.solve.greedy_start import as_unproven, better_than_search, fallback_applies, greedy_fallback, greedy_or_coarse
from mapsearch.solve.warm_start import start_of, with_start

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SolveResult:
    schedule: Schedule
    status: str  # OPTIMAL (over the contract's whole family), OPTIMAL_IN_FAMILY (over a restricted one) or FEASIBLE
    objective: str
    phases: tuple[Phase, ...]
    solve_seconds: float
    binding: tuple[Binding, ...]
    space: SearchSpace
    family_restrictions: tuple[str, ...] = ()  # what the search left out of the contract's family, for this problem
    # Filled in by mapsearch.solve.entry: the replay of the schedule, where it differs from the prediction,
    # and, for a tree architecture, every compute path's outcome (mapsearch.solve.tree.PathOutcome).
    replayed: ReplayResult | None = None
    mismatches: tuple[tuple[str, object, object], ...] = ()
    paths: tuple[Any, ...] = ()
    interrupted: bool = False  # Ctrl-C stopped the search: the best schedule so far, phases not run kept as found
    # An op given in GEMM roles (mapsearch/solve/block_roles.py): the chosen (role, dim) pairs, and every
    # binding's outcome (block_roles.BindingOutcome). Empty for an op given by dimension.
    block_binding: tuple[tuple[str, str], ...] = ()
    block_bindings: tuple[Any, ...] = ()

    @property
    def figures(self) -> Figures:
        """The predicted figures of the schedule (time, words per link and tensor, calls, occupancy)."""
        return self.schedule.predicted

    @property
    def time(self) -> Fraction:
        """Clocks: max(compute time, slowest link time)."""
        return self.figures.time

    @property
    def words(self) -> int:
        """Words moved over all links."""
        return self.figures.words_total

    @property
    def utilization(self) -> Fraction:
        return self.figures.utilization

    @property
    def proven(self) -> bool:
        """Every phase proved optimal (over the searched family)."""
        return self.status in ("OPTIMAL", "OPTIMAL_IN_FAMILY")

    @property
    def objective_value(self) -> Fraction:
        return self.phases[-1].value

    @property
    def objective_bound(self) -> Fraction:
        return self.phases[-1].bound

    @property
    def gap(self) -> float:
        return max(p.gap for p in self.phases)


def _objectives(enc: Encoding, options: SolveOptions) -> list[tuple[str, object, int]]:
    """(name, linear expression, scale to undo) per phase; the DRAM row openings where asked."""
    phases = _main_objectives(enc, options)
    if enc.rows is not None and options.dram_rows != "off":
        rows = ("dram rows", enc.rows.total.expr, 1)
        if options.dram_rows == "before-words" and options.objective == "time":
            phases.insert(1, rows)
        else:
            phases.append(rows)
    return phases


def _main_objectives(enc: Encoding, options: SolveOptions) -> list[tuple[str, object, int]]:
    if options.objective == "time":
        return [("time", enc.time.expr, enc.scale), ("words", enc.words_total.expr, 1)]
    if options.objective == "words":
        return [("words", enc.words_total.expr, 1)]
    if options.objective == "energy":
        model = enc.problem.architecture.energy
        if model is not None and not options.link_energy and not options.op_energy:
            from mapsearch.solve.energy_objective import energy_terms  # the architecture's own energies

            expr, k = energy_terms(enc, model)
            return [("energy", expr, k)]
        costs = dict(options.link_energy)
        terms = [Fraction(costs.get(enc.problem.architecture.link_name(a), 1)) for a in enc.link_time]
        k = math.lcm(*[c.denominator for c in terms + [Fraction(options.op_energy)]])
        names = enc.problem.workload.tensor_names
        expr = sum(int(c * k) * sum(enc.link_tensor_down[(t, a)].expr + enc.link_tensor_up[(t, a)].expr for t in names)
                   for c, a in zip(terms, enc.link_time))
        expr = expr + int(Fraction(options.op_energy) * k) * enc.calls.expr
        return [("energy", expr, k)]
    raise ValueError(f"unknown objective {options.objective!r}")


def solve(problem: Problem, constraints: Constraints = Constraints(), options: SolveOptions = SolveOptions()) -> SolveResult:
    """Find the best schedule; raises :class:`InfeasibleError` (with a core) or :class:`SolverTimeout`.

    Each phase first solves the same model restricted to a coarse subset of
    tile chains (solve/coarse.py), which finds a good schedule in a
    fraction of the time, and hints the full model with it. When the coarse
    schedule already reaches a proven lower bound (the time can never be
    below the fewest op calls' compute time), the full phase is skipped.
    """
    options = _within_parent(options)
    if constraints.spatial:  # bounds on splits: the architecture's mesh axes carry them from here on
        problem = dataclasses.replace(problem, architecture=with_spatial_limits(problem.architecture, constraints,
                                                                                problem.workload))
        constraints = dataclasses.replace(constraints, spatial=())
    if problem.architecture.compute.block_roles or options.block_binding:
        # An op given in GEMM roles: every binding, each solved here (imported here: that module uses this one).
        from mapsearch.solve.block_roles import solve_bindings

        return solve_bindings(problem, constraints, options, solve)
    start = time.perf_counter()
    with budget.within(budget.Budget(options.time_limit, parent=budget.current())):
        try:
            if not unsplit.applies(problem, options):
                return _solve(problem, constraints, options, start)
            return _solve_meshed(problem, constraints, options, start)
        finally:
            finished()


def _within_parent(options: SolveOptions) -> SolveOptions:
    """``options`` with the time limit the active budget leaves, where that is shorter.

    The searches share the limit out (a coarse search's share, the first
    schedules' shares: solve/narrow.py); computed from a nominal limit longer
    than what a caller's budget leaves (an einsum of a chain, a binding),
    the first share took all of it.
    """
    parent = budget.current()
    left = math.inf if parent is None else parent.left()
    return options if left >= options.time_limit else dataclasses.replace(options, time_limit=left)


def _solve_meshed(problem: Problem, constraints: Constraints, options: SolveOptions, start: float) -> SolveResult:
    """The meshed search and, where it left buffer positions out, the schedules that split nothing over
    a mesh with every position (solve/unsplit.py): the better of the two, with the union's bounds."""
    def solve_unsplit(p: Problem) -> SolveResult:
        return _solve(p, constraints, options, start)

    def union(best: SolveResult, other: SolveResult | None, meshed_restrictions, unsplit_restrictions) -> SolveResult:
        restrictions = unsplit.union_restrictions(meshed_restrictions, unsplit_restrictions)
        return unsplit.combine(best, other, restrictions, time.perf_counter() - start)

    try:
        meshed = _solve(problem, constraints, options, start)
    except NoScheduleInFamily as error:
        if not unsplit.placement_restricted(error.restrictions) or budget.stopped():
            raise
        found, _ = unsplit.search_unsplit(problem, solve_unsplit)
        if found is None:
            raise
        log.info("no meshed schedule in the searched family; one that splits nothing over the mesh")
        return union(found, None, error.restrictions, found.family_restrictions)
    if not unsplit.placement_restricted(meshed.family_restrictions) or budget.stopped():
        return meshed
    from mapsearch.model.bounds import contract_floors
    from mapsearch.model.build import clock_scale

    scale = clock_scale(problem.architecture)
    if unsplit.cannot_win(meshed, contract_floors(unsplit.unsplit_problem(problem), scale), scale, options.objective):
        log.info("schedules that split nothing over the mesh: a floor above the meshed schedule, not searched")
        return union(meshed, None, meshed.family_restrictions, ())
    found, searched = unsplit.search_unsplit(problem, solve_unsplit)
    if not searched:
        return meshed
    if found is None:  # no schedule without a split fits: the meshed result is the union's
        return union(meshed, None, meshed.family_restrictions, ())
    best, is_unsplit = unsplit.better_of(meshed, found)
    log.info("schedules that split nothing over the mesh: %s, %s", unsplit.values(found),
             "kept (better than the meshed search's)" if is_unsplit else "not better")
    return union(best, meshed if is_unsplit else found, meshed.family_restrictions, found.family_restrictions)


def _solve(problem: Problem, constraints: Constraints, options: SolveOptions, start: float,
           family: str = "full") -> SolveResult:
    """One search of ``family``: "full", or a first schedule's ("narrow", "coarse": solve/narrow.py). The full
    one starts from a first schedule where one applies: the narrow or coarse family's on an array, the family
    with its hidden windows held where a window hides in a skewed axis (solve/hidden_first.py)."""
    if family != "full":
        return _search(problem, constraints, options, start, family)
    if narrow.applies(problem, options):
        first = narrow.first_schedule(problem, options, start, lambda o, f: _search(problem, constraints, o,
                                                                                    time.perf_counter(), f))
    elif hidden_first.applies(problem, options):
        first = hidden_first.first_schedule(problem, options, lambda p, o: _search(p, constraints, o,
                                                                                   time.perf_counter()))
    elif built_first.applies(problem, constraints, options):
        first = built_first.first_schedule(problem, options, solve)
    else:
        return _search(problem, constraints, options, start)
    if first is None:
        return _search(problem, constraints, options, start)
    if first.status == "OPTIMAL" and not first.family_restrictions:
        # Proven at floors every schedule of the contract meets (model/family.meets_contract_floors): the optimum
        # over the whole family, so the full search could only tie it.
        log.info("the first schedule meets the contract's floors: the full search is not run")
        return dataclasses.replace(first, solve_seconds=time.perf_counter() - start)
    if budget.stopped():  # stopped during a first search: its schedule is all there is
        return narrow.fallback(first, problem, time.perf_counter() - start, True)
    try:
        result = _search(problem, constraints, dataclasses.replace(options, start=first.schedule), start)
    except (SolverTimeout, Interrupted) as error:
        return narrow.fallback(first, problem, time.perf_counter() - start, isinstance(error, Interrupted))
    return narrow.better_of(result, first, problem)


def _search(problem: Problem, constraints: Constraints, options: SolveOptions, start: float,
            family: str = "full") -> SolveResult:
    """Build and search ``family``: "full" (the searched family), or for a first schedule (solve/narrow.py)
    "narrow" (window dimensions unsplit over mesh axes; coarse searches only) or "coarse" (the model of the
    coarse chains alone, searched in full), or "fixed" (the greedy schedule's own family, solve/greedy.py).

    The full family off a mesh: where the search finds no schedule in time, or ends FEASIBLE, the greedy
    schedule (or the warm start, where one was given) is solved on its own (``greedy_fallback``, a short
    step past the limit), and where it is the better one it is the result, FEASIBLE, with the search's
    bounds or the contract's floors."""
    applies = family == "full" and fallback_applies(problem, options)
    # A warm start is the fallback in the greedy schedule's place: a schedule the search was given is never
    # lost to a worse one it ends at (the search may not hold it: a reduced tile family at depth).
    what = "the greedy schedule" if options.start is None else "the warm start"

    def fallback():
        return greedy_fallback(problem, constraints, options,
                               lambda c, o: _search(problem, c, o, time.perf_counter(), "fixed"), options.start)
    try:
        result = _search_family(problem, constraints, options, start, family)
    except SolverTimeout as error:
        found = fallback() if applies else None
        if found is None:
            raise
        floors = phase_floors(problem, clock_scale(problem.architecture))
        return as_unproven(found, floors, time.perf_counter() - start, " ".join(str(error).split()), what)
    if not applies or result.status != "FEASIBLE" or budget.stopped():
        return result
    found = fallback()
    return result if found is None else better_than_search(result, found, what)


def _search_family(problem: Problem, constraints: Constraints, options: SolveOptions, start: float,
                   family: str) -> SolveResult:
    report("building the model")
    narrow_family = family == "narrow"
    enc = build(problem, constraints, options, windows_over_mesh=not narrow_family, coarse_only=family == "coarse")
    # The narrow family's phases are its coarse searches alone: each takes its share of the narrow limit, the
    # last one all that is left (narrow.PHASE_SHARE).
    last_phase = _objectives(enc, options)[-1][0]

    def coarse_share(name: str) -> float:
        return (1.0 if name == last_phase else narrow.PHASE_SHARE) if narrow_family else 0.25
    restrictions = family_restrictions(enc)
    for guard in enc.guards.values():
        enc.model.add(guard == 1)
    known = start_of(enc, options.start, constraints)  # a warm start: None without one or outside the family

    first_phase = _objectives(enc, options)[0][0]

    def first_hint(left: float, phase_floor: int | None, name: str):
        # Checking a start's decisions is one presolve of the model with them fixed: on a 128x128 array that
        # took more than a quarter of 13 s left, and the start was dropped.
        check = lambda: new_solver(options, min(left, max(0.05, left / 2)))  # noqa: E731
        # The coarse search may be followed by a probe below its value (solve/coarse.py, probe_target).
        coarse = lambda incumbent, left=left: coarse_solution(enc, options, left, coarse_share(name), name,  # noqa: E731
                                                              phase_floor, incumbent)
        if family == "fixed":  # the greedy schedule's own family: one schedule, nothing to hint
            return None
        if known is not None or name != first_phase or family != "full":
            return with_start(enc, known, coarse, check, phase_floor)
        # No schedule to start from: a greedy one (solve/greedy.py), so that a search cut short still ends
        # with a schedule. Off a mesh it is checked before the coarse search, which could take all the time
        # (the check is a presolve of the model: 2 s on ResNet-50's 3x3 layer on cpu-core); on a mesh, where
        # the seeded searches find a first schedule and the check of an array's model is slow, only after a
        # coarse search that found none.
        first = not enc.spatial_levels
        # Before the coarse search, the check may take a quarter of the time left: the coarse search's share.
        check_greedy = (lambda: new_solver(options, min(left, max(0.05, left / 4)))) if first else check
        return greedy_or_coarse(enc, constraints, check_greedy, coarse, left, first=first)

    phases, schedule = run_phases(
        enc.model, _objectives(enc, options), options, start,
        decode=lambda solver: decode(enc, solver),
        hint_vars=_decision_vars(enc),
        coarse=first_hint,
        floor=lambda name: _floor(enc, name),
        on_infeasible=(lambda: InfeasibleError(f"no schedule in the {family} family")) if family != "full" else
        (lambda: in_family(explain_infeasible(problem, constraints, options), restrictions, problem)),
        coarse_only=narrow_family,
    )
    proven = all(p.status == "OPTIMAL" for p in phases)
    if proven and restrictions and meets_contract_floors(enc, [(p.name, p.value) for p in phases]):
        log.info("the optimum in the restricted family (%s) meets the contract's floors: optimal over the whole "
                    "family", "; ".join(restrictions))
        restrictions = ()
    status = proven_status(proven, restrictions)
    return SolveResult(schedule, status, options.objective, tuple(phases), time.perf_counter() - start,
                       binding_report(schedule), search_space(enc), restrictions, interrupted=budget.stopped())


def in_family(error: InfeasibleError, restrictions: tuple[str, ...], problem: Problem) -> InfeasibleError:
    """An infeasibility found by the search, said of the searched family when that family is restricted,
    unless a level overflows under every schedule of the contract (then it is infeasible outright)."""
    if not restrictions:
        return error
    overflow = contract_overflow(problem) or unmeetable_split_bounds(problem)
    if overflow is not None:
        return overflow
    message = (f"no schedule in the searched family: {' '.join(str(error).split())}; the family was restricted "
               f"({'; '.join(restrictions)}), so a legal schedule outside it may exist")
    return NoScheduleInFamily(message, error.core, restrictions, error.limits)


def _floor(enc: Encoding, name: str) -> int | None:
    """A proven lower bound on the phase's objective, where one is known (model/bounds.py for the links)."""
    from mapsearch.model.bounds import compute_time_floor, time_floor, words_floor

    if name == "words":
        return words_floor(enc) or None
    if name != "time":
        return None
    import numpy as np

    busiest = ("rep",) * len(enc.spatial_levels)  # the representative instance's calls (model/spatial_chains.py)
    fewest_calls = math.prod(int(np.min(c.calls if c.flavoured is None else c.flavoured[busiest]["calls"]))
                             for c in enc.chains.values())
    # The calls spread over every instance (compute_time_floor) can exceed the busiest instance's
    # fewest calls per dimension: those minima split every dimension over the whole array at once.
    return max(fewest_calls * int(enc.problem.architecture.compute.clocks_per_call * enc.scale), time_floor(enc),
               compute_time_floor(enc.problem, enc.scale))


def _decision_vars(enc: Encoding) -> list:
    out = [v for v in enc.choice.values() if not isinstance(v, int)]
    out += [v for v in enc.kept.values() if not isinstance(v, bool)]
    out += [v for v in enc.before.values() if isinstance(v, cp_model.IntVar)]
    out += [lit for lits in enc.at.values() for lit in lits.values()]
    return out
