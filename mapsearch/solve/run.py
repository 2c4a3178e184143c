"""Solve one einsum on one architecture: build, search in phases, decode, explain.

The contract's objective is lexicographic. Phase 1 minimises the time; phase
2 keeps the time at its optimum and minimises the words (hinted with phase
1's schedule). Other objectives are one phase. ``status`` is ``OPTIMAL`` only
when every phase proved optimality; otherwise ``FEASIBLE`` with the bound and
gap of the phase that stopped short.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ortools.sat.python import cp_model

import mapsearch.budget as budget
from mapsearch.errors import InfeasibleError, Interrupted, NoScheduleInFamily, SolverTimeout
from mapsearch.model.build import build
from mapsearch.model.decode import decode
from mapsearch.model.encoding import Encoding
from mapsearch.model.family import family_restrictions, meets_contract_floors, proven_status
from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import Figures
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.counters import ReplayResult
from mapsearch.solve.binding import Binding, binding_report
from mapsearch.solve.space import SearchSpace, search_space
from mapsearch.spec.constraints import Constraints
from mapsearch.solve.explain import explain_infeasible
from mapsearch.model.options import SolveOptions
from mapsearch.solve.progress import finished, report, search

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Phase:
    name: str  # what was minimised
    status: str
    value: Fraction
    bound: Fraction
    seconds: float
    start_value: Fraction | None = None  # the hint's value when the full search starts (None: no hint)
    start_bound: Fraction | None = None  # the proven floor when the full search starts (model/bounds.py)

    @property
    def gap(self) -> float:
        return _gap(self.value, self.bound)

    @property
    def start_gap(self) -> float | None:
        """The gap when the full search started (None without a hint to measure it on)."""
        return None if self.start_value is None or self.start_bound is None else _gap(self.start_value, self.start_bound)


def _gap(value: Fraction, bound: Fraction) -> float:
    return 0.0 if value == 0 else float(abs(value - bound) / abs(value))


def _clamp(bound: int, floor: int | None, value: int) -> int:
    """A reported bound within ``[max(0, floor), value]``, so that a gap is at most 100 %."""
    return min(max(bound, floor or 0, 0), value)


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


def _solver(options: SolveOptions, time_left: float) -> cp_model.CpSolver:
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = max(0.01, budget.seconds_left(time_left))
    # Ctrl-C goes to the budget (mapsearch/solve/interrupt.py): CP-SAT's own handler would end only this
    # phase as if out of time, and in a sweep's worker it would turn a dropped case into a result.
    s.parameters.catch_sigint_signal = False
    if options.work_limit is not None:
        s.parameters.max_deterministic_time = options.work_limit
    s.parameters.num_workers = options.workers
    s.parameters.random_seed = options.seed
    # Probing and LP relaxations cost more than they prune on these small,
    # product-heavy models (measured: 5x faster on 2-level matmuls).
    s.parameters.cp_model_probing_level = 0
    s.parameters.linearization_level = 0
    # One presolve pass: later passes expand the chain tables again for little gain
    # (measured: 2-level 4096^3 0.13 -> 0.07 s, 3-level 1024^3 10.2 -> 7.0 s).
    s.parameters.max_presolve_iterations = 1
    if options.workers > 1:
        s.parameters.interleave_search = True  # deterministic with several workers
    return s


_STATUS = {cp_model.OPTIMAL: "OPTIMAL", cp_model.FEASIBLE: "FEASIBLE", cp_model.INFEASIBLE: "INFEASIBLE",
           cp_model.MODEL_INVALID: "MODEL_INVALID", cp_model.UNKNOWN: "UNKNOWN"}


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
    tile chains (:func:`coarse_chains`), which finds a good schedule in a
    fraction of the time, and hints the full model with it. When the coarse
    schedule already reaches a proven lower bound (the time can never be
    below the fewest op calls' compute time), the full phase is skipped.
    """
    if problem.architecture.compute.block_roles or options.block_binding:
        # An op given in GEMM roles: every binding, each solved here (imported here: that module uses this one).
        from mapsearch.solve.block_roles import solve_bindings

        return solve_bindings(problem, constraints, options, solve)
    start = time.perf_counter()
    with budget.within(budget.Budget(options.time_limit, parent=budget.current())):
        try:
            return _solve(problem, constraints, options, start)
        finally:
            finished()


def _solve(problem: Problem, constraints: Constraints, options: SolveOptions, start: float) -> SolveResult:
    report("building the model")
    enc = build(problem, constraints, options)
    restrictions = family_restrictions(enc)
    for guard in enc.guards.values():
        enc.model.add(guard == 1)
    phases, schedule = run_phases(
        enc.model, _objectives(enc, options), options, start,
        decode=lambda solver: decode(enc, solver),
        hint_vars=_decision_vars(enc),
        coarse=lambda left: _coarse_solution(enc, options, left),
        floor=lambda name: _floor(enc, name),
        on_infeasible=lambda: in_family(explain_infeasible(problem, constraints, options), restrictions),
    )
    proven = all(p.status == "OPTIMAL" for p in phases)
    if proven and restrictions and meets_contract_floors(enc, [(p.name, p.value) for p in phases]):
        log.info("the optimum in the restricted family (%s) meets the contract's floors: optimal over the whole "
                    "family", "; ".join(restrictions))
        restrictions = ()
    status = proven_status(proven, restrictions)
    return SolveResult(schedule, status, options.objective, tuple(phases), time.perf_counter() - start,
                       binding_report(schedule), search_space(enc), restrictions, interrupted=budget.stopped())


def in_family(error: InfeasibleError, restrictions: tuple[str, ...]) -> InfeasibleError:
    """An infeasibility found by the search, said of the searched family when that family is restricted."""
    if not restrictions:
        return error
    message = (f"no schedule in the searched family: {' '.join(str(error).split())}; the family was restricted "
               f"({'; '.join(restrictions)}), so a legal schedule outside it may exist")
    return NoScheduleInFamily(message, error.core, restrictions)


def run_phases(model: cp_model.CpModel, objectives, options: SolveOptions, start: float, *, decode, hint_vars,
               coarse=lambda left: None, floor=lambda name: None, on_infeasible=None):
    """Minimise each objective in turn, keeping the previous ones at their values.

    Returns the phases and the last decoded schedule. ``coarse(time_left)``
    may give a ``(value, solver)`` to hint from; ``floor(name)`` a proven
    lower bound that, when the hint meets it, proves the phase at once.
    """
    phases: list[Phase] = []
    schedule = None
    previous = None
    for n, (name, expr, scale) in enumerate(objectives):
        if budget.stopped() and previous is not None:
            phases += _not_run(objectives[n:], previous, floor)  # Ctrl-C: keep the schedule as found
            break
        model.minimize(expr)
        t0 = time.perf_counter()
        hint = coarse(options.time_limit - (t0 - start))
        known = floor(name)
        start_value = None if hint is None else Fraction(hint[0], scale)
        start_bound = Fraction(known or 0, scale)
        if start_value is not None:
            log.info("phase %s starts: value %s, bound %s, gap %.1f%%", name, start_value, start_bound,
                     100 * _gap(start_value, min(start_bound, start_value)))
        if hint is not None and known is not None and hint[0] == known:
            value = bound = hint[0]
            status, solver = "OPTIMAL", hint[1]
        elif hint is not None and budget.stopped():
            value, bound = hint[0], _clamp(0, known, hint[0])  # Ctrl-C after the coarse search: its schedule
            status, solver = "FEASIBLE", hint[1]
        else:
            if hint is not None:
                _hint(model, hint_vars, hint[1])
            solver = _solver(options, options.time_limit - (time.perf_counter() - start))
            status = _STATUS[search(solver, model, name, objectives)]
            if hint is not None and _worse_than_hint(status, solver, hint[0]):
                status, solver = _keep_hint(solver, hint, known)
            if status == "INFEASIBLE":
                raise on_infeasible() if on_infeasible else InfeasibleError("infeasible")
            if status not in ("OPTIMAL", "FEASIBLE"):
                if phases:
                    # Out of time: keep the previous phase's schedule, not minimised on this objective.
                    kept = int(previous.value(expr))
                    bound = _clamp(int(math.ceil(solver.best_objective_bound - 1e-9)), known, kept)
                    phases.append(Phase(name, "FEASIBLE", Fraction(kept, scale), Fraction(bound, scale),
                                        time.perf_counter() - t0, start_value, start_bound))
                    log.info("phase %s ends: %s, value %s, bound %s, gap %.1f%%", name, "FEASIBLE", phases[-1].value,
                             phases[-1].bound, 100 * phases[-1].gap)
                    phases += _not_run(objectives[n + 1:], previous, floor)
                    break
                if budget.stopped():
                    raise Interrupted(f"interrupted before any schedule was found ({name} phase)")
                raise SolverTimeout(_no_schedule(options, solver, name, scale))
            value = int(round(solver.objective_value))
            bound = _clamp(_bound_of(solver, status, value), known, value)
        phases.append(Phase(name, status, Fraction(value, scale), Fraction(bound, scale), time.perf_counter() - t0,
                            start_value, start_bound))
        log.info("phase %s ends: %s in %.3fs, value %s, bound %s, gap %.1f%%", name, status, phases[-1].seconds,
                 phases[-1].value, phases[-1].bound, 100 * phases[-1].gap)
        schedule = decode(solver)
        previous = solver
        if status != "OPTIMAL" and budget.stopped():
            phases += _not_run(objectives[n + 1:], solver, floor)
            break
        if n + 1 < len(objectives):
            model.add(expr <= value)  # keep this phase's optimum (or best found)
            _hint(model, hint_vars, solver)
    return phases, schedule


class _HintKept:
    """The coarse search's schedule kept as a phase's result: its solver for values, the full search's bound."""

    def __init__(self, coarse: cp_model.CpSolver, value: int, bound: float):
        self.coarse, self.objective_value, self.best_objective_bound = coarse, value, bound

    def value(self, expr):
        return self.coarse.value(expr)

    def boolean_value(self, lit):
        return self.coarse.boolean_value(lit)


def _worse_than_hint(status: str, solver: cp_model.CpSolver, hinted: int) -> bool:
    """The full search ended short of a proof with no schedule, or a worse one than the coarse search's.

    CP-SAT may drop a hint it cannot complete in time (measured on
    ``tpu-v4i-like``: a time phase hinted at 4,325 clocks ended at 201,336).
    The coarse schedule is a schedule of the full model (the coarse model
    only adds restrictions), so the phase keeps it.
    """
    if status in ("OPTIMAL", "INFEASIBLE"):
        return False
    return status != "FEASIBLE" or int(round(solver.objective_value)) > hinted


def _keep_hint(solver: cp_model.CpSolver, hint, known: int | None):
    """``("FEASIBLE", solver-like)`` holding the coarse schedule and the full search's bound (still valid)."""
    raw = solver.best_objective_bound
    bound = raw if math.isfinite(raw) else float(known or 0)
    return "FEASIBLE", _HintKept(hint[1], hint[0], bound)


def _bound_of(solver, status: str, value: int) -> int:
    """The phase's proven bound: its value when OPTIMAL, else the solver's best bound (rounded up)."""
    if status == "OPTIMAL":
        return value
    return int(math.ceil(solver.best_objective_bound - 1e-9))


def _not_run(objectives, solver: cp_model.CpSolver, floor) -> list[Phase]:
    """Phases cut by Ctrl-C before they searched: the kept schedule's values, not proven (bound: the floor)."""
    out = []
    for name, expr, scale in objectives:
        value = int(solver.value(expr))
        out.append(Phase(name, "FEASIBLE", Fraction(value, scale), Fraction(_clamp(0, floor(name), value), scale), 0.0))
    return out


def _no_schedule(options: SolveOptions, solver: cp_model.CpSolver, name: str, scale: int) -> str:
    """Why a phase ended without a schedule: the limit that stopped it, and its bound if it has one."""
    if options.work_limit is not None and solver.deterministic_time >= 0.99 * options.work_limit:
        limit = f"the work limit of {options.work_limit:g} deterministic s"
    else:
        limit = f"{options.time_limit:g} s"
    raw = solver.best_objective_bound
    known = math.isfinite(raw) and raw > 0
    bound = f"best bound on {name}: {Fraction(int(math.ceil(raw - 1e-9)), scale)}" if known else f"no bound on {name} yet"
    return f"no schedule found within {limit}; {bound}"


def coarse_chains(extent: int, tiles) -> list[int]:
    """Rows of chains whose extents are all powers of two, ``ceil(E / 2**k)`` or ``E``."""
    import numpy as np

    values = {extent}
    k = 1
    while k <= extent:
        values.update((k, -(-extent // k)))
        k *= 2
    return np.flatnonzero(np.all(np.isin(tiles, sorted(values)), axis=1)).tolist()


def _coarse_solution(enc: Encoding, options: SolveOptions, time_left: float):
    """``(objective value, solver)`` of the model restricted to coarse chains, or None."""
    restricted = {}
    for d, var in enc.choice.items():
        if isinstance(var, int):
            continue
        rows = coarse_chains(enc.chains[d].extent, enc.chains[d].tiles)
        if not rows:
            return None
        if len(rows) < len(enc.chains[d].tiles):
            restricted[d] = rows
    if not restricted:
        return None  # the coarse model is the full model: solve it once
    model = enc.model.clone()
    for d, rows in restricted.items():
        var = enc.choice[d]
        model.add_allowed_assignments([model.get_int_var_from_proto_index(var.index)], [[r] for r in rows])
    solver = _solver(options, min(time_left, max(0.05, time_left / 4)))
    if search(solver, model, "coarse search") not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return int(round(solver.objective_value)), solver


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


def _hint(model: cp_model.CpModel, variables: list, solver: cp_model.CpSolver) -> None:
    model.clear_hints()
    for v in variables:
        model.add_hint(v, solver.value(v))


def _decision_vars(enc: Encoding) -> list:
    out = [v for v in enc.choice.values() if not isinstance(v, int)]
    out += [v for v in enc.kept.values() if not isinstance(v, bool)]
    out += [v for v in enc.before.values() if isinstance(v, cp_model.IntVar)]
    out += [lit for lits in enc.at.values() for lit in lits.values()]
    return out
