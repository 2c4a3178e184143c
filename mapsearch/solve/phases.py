"""The phases of a lexicographic search: minimise each objective in turn, each hinted, each kept.

``run_phases`` is shared by the single-einsum solve (:mod:`mapsearch.solve.run`),
fused chains and the sparse solve. A phase starts from a coarse search's
schedule where one is given, is proven at once when that schedule meets a
known floor, never ends worse than that schedule, and reports its bound
clamped to ``[floor, value]`` so a gap is at most 100 %.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from fractions import Fraction

from ortools.sat.python import cp_model

import mapsearch.budget as budget
from mapsearch.errors import InfeasibleError, Interrupted, SolverTimeout
from mapsearch.model.options import SolveOptions
from mapsearch.solve.progress import search

log = logging.getLogger(__name__)

__all__ = ["Phase", "run_phases", "new_solver", "hint_from"]


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


def new_solver(options: SolveOptions, time_left: float) -> cp_model.CpSolver:
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


def run_phases(model: cp_model.CpModel, objectives, options: SolveOptions, start: float, *, decode, hint_vars,
               coarse=lambda left, known, name: None, floor=lambda name: None, on_infeasible=None, coarse_only: bool = False):
    """Minimise each objective in turn, keeping the previous ones at their values.

    Returns the phases and the last decoded schedule. ``coarse(time_left,
    floor, name)`` may give a ``(value, solver)`` to hint from; ``floor(name)`` a proven
    lower bound that, when the hint meets it, proves the phase at once.
    ``coarse_only``: a phase with a coarse schedule ends with it (FEASIBLE
    unless it meets the floor), without the full search (solve/narrow.py).
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
        known = floor(name)
        hint = coarse(options.time_limit - (t0 - start), known, name)
        start_value = None if hint is None else Fraction(hint[0], scale)
        start_bound = Fraction(known or 0, scale)
        if start_value is not None:
            log.info("phase %s starts: value %s, bound %s, gap %.1f%%", name, start_value, start_bound,
                     100 * _gap(start_value, min(start_bound, start_value)))
        if hint is not None and known is not None and hint[0] == known:
            value = bound = hint[0]
            status, solver = "OPTIMAL", hint[1]
        elif hint is not None and (budget.stopped() or coarse_only or budget.seconds_left(math.inf) <= 0):
            # Ctrl-C or the time limit after the coarse search: its schedule. (A search started with no time left
            # still loads the model: 3.4 s on conv1's 53 MB model on tpu-v4i-like, past the limit.)
            value, bound = hint[0], _clamp(0, known, hint[0])
            status, solver = "FEASIBLE", hint[1]
        else:
            if hint is not None:
                hint_from(model, hint_vars, hint[1])
            solver = new_solver(options, options.time_limit - (time.perf_counter() - start))
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
            hint_from(model, hint_vars, solver)
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


def hint_from(model: cp_model.CpModel, variables: list, solver: cp_model.CpSolver) -> None:
    model.clear_hints()
    for v in variables:
        model.add_hint(v, solver.value(v))
