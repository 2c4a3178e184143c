"""Solving on an op whose block is given by GEMM role: every binding searched, the best kept, the binding named.

A block in roles (``compute.block_roles``, :mod:`mapsearch.spec.block_roles`)
stands for one op per binding of its roles to the workload's dimensions; the
schedules the contract allows on such hardware are the union of those of
each bound op. :func:`solve_bindings` solves the bound problems one by one
(each a plain per-dimension block, so model and simulator are unchanged) and
returns the best, with:

- ``result.block_binding``: the chosen ``(role, dim)`` pairs; the schedule's
  architecture holds the bound block, so a replay needs nothing else;
- ``result.block_bindings``: every binding's :class:`BindingOutcome`.

It is exact, not a heuristic choice:

- The status is OPTIMAL only when the best binding's solve is proven and
  every other binding is proven no better: solved and proven, or excluded
  by a floor. The floor of a binding is the fewest op calls any schedule
  can make, ``prod_d ceil(E_d / b_d)`` (calls sum ``ceil(piece / b_d)`` over a
  partition of each dimension, and ``ceil`` is subadditive), so its time is
  at least ``ceil(calls / instances) * clocks_per_call`` and its energy at
  least ``op_energy * calls``. A binding whose floor exceeds the best value
  found is not solved. Bindings are solved in increasing floor order.
- When the best so far lies above its calls floor (the links bind) and
  more than one binding is still open, one more solve bounds them all: the
  *relaxation*, an op with, on each dimension, the largest block any open
  binding puts there (:func:`relaxed_compute`). Calls only fall as a block
  grows, so every schedule is at least as fast (and as cheap) with that op
  as with any open binding, with the same words: the relaxation's proven
  optimum is a lexicographic floor of each open binding's, and an open
  binding whose floor the best already meets is not solved (a tie keeps
  the binding found first). On a link-bound convolution this replaces the
  solves of every tied binding by one.
- The op's block changes nothing but the op calls (tile chains, footprints,
  capacities and words do not depend on it), so when the objective does
  not count calls (``words``, or ``energy`` with ``op_energy`` 0) and no
  ``min_utilization`` is asked, every binding has the same optimum: one is
  solved (the one with the fewest calls) and the others are named
  equivalent.
- Bindings fixed by the user (``SolveOptions.block_binding``) restrict the
  family: the result names the restriction (status OPTIMAL_IN_FAMILY).
- A binding left unresolved (out of time, interrupted) makes the result
  FEASIBLE; its bounds are then the lowest a left-out binding could reach
  (its floor for the first phase, the binding-independent floor of words,
  or 0, for the others).

The whole search runs under one time limit (``options.time_limit``); each
binding's solve gets what is left of it. Encoding the choice inside one
CP-SAT model was not done: the block enters each dimension's tile chains
(their call counts), so the model would carry every dimension's chains once
per candidate block.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Callable

import mapsearch.budget as budget
from mapsearch.errors import InfeasibleError, Interrupted, NoScheduleInFamily, SolverTimeout, SpecError, UsageError
from mapsearch.model.family import proven_status
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.spec.architecture import Compute
from mapsearch.spec.block_roles import RoleBinding, bind_architecture, bind_compute, fixed_bindings, roles_problem
from mapsearch.spec.constraints import Constraints
from mapsearch.spec.workload import Workload

if TYPE_CHECKING:  # run.solve calls this module for an op in roles, and this module calls it back per binding
    from mapsearch.solve.run import SolveResult

log = logging.getLogger(__name__)

__all__ = ["BindingOutcome", "fewest_calls", "solve_bindings"]

Solver = Callable[[Problem, Constraints, SolveOptions], "SolveResult"]


@dataclass(frozen=True)
class BindingOutcome:
    """One binding of the op's roles: its floor on the first phase, and its result or why it has none."""

    binding: RoleBinding
    floor: Fraction  # the first phase's floor for this binding (0 where none is known)
    result: SolveResult | None = None
    skipped: str | None = None  # why no result: excluded by its floor, equivalent, infeasible, out of time
    error: InfeasibleError | None = None  # the solver's reason where this binding is infeasible


def fewest_calls(workload: Workload, compute: Compute) -> int:
    """``prod_d ceil(E_d / b_d)``: no schedule makes fewer op calls (over all instances together)."""
    return math.prod(-(-e // compute.block_extent(d)) for d, e in workload.extents)


def _floor(problem: Problem, binding: RoleBinding, options: SolveOptions) -> Fraction:
    """A proven floor of the first phase's objective with this binding (module docstring)."""
    calls = fewest_calls(problem.workload, bind_compute(problem.architecture.compute, binding))
    if options.objective == "time":
        instances = math.prod(lv.instances for lv in problem.architecture.levels)
        return -(-calls // instances) * Fraction(problem.architecture.compute.clocks_per_call)
    if options.objective == "energy" and not _own_energy_model(problem):
        return calls * Fraction(options.op_energy)
    return Fraction(0)


def _own_energy_model(problem: Problem) -> bool:
    """An architecture that carries its own energy model (peer formats): its energy may count calls any way."""
    return getattr(problem.architecture, "energy", None) is not None


def _rank(result: SolveResult) -> tuple[Fraction, ...]:
    """The phases' values in order: lexicographically smaller is better (each phase minimises)."""
    return tuple(p.value for p in result.phases)


def _counts_calls(problem: Problem, options: SolveOptions) -> bool:
    """Whether the objective or a constraint may depend on the op calls (else every binding has the same optimum)."""
    if options.min_utilization is not None or options.objective == "time":
        return True
    return options.objective == "energy" and (options.op_energy != 0 or _own_energy_model(problem))


def solve_bindings(problem: Problem, constraints: Constraints, options: SolveOptions, solve_one: Solver) -> SolveResult:
    """The best schedule over every binding of the op's roles (the module docstring says how and why it is exact).

    ``solve_one`` solves a problem whose block is bound (``run.solve``).
    Raises :class:`~mapsearch.errors.UsageError` for a fixed binding the op
    or the workload cannot take, :class:`InfeasibleError` when no binding
    has a schedule, :class:`SolverTimeout` when none was found in time.
    """
    start = time.perf_counter()
    arch, einsum = problem.architecture, problem.workload.einsum
    problem_text = roles_problem(einsum, arch.compute)
    if problem_text is not None:
        field = "compute.block_roles" + (f".{problem_text[0]}" if problem_text[0] else "")
        raise SpecError(arch.name, field, "", detail=f"with {problem.workload.name}: {problem_text[1]}")
    everything, _ = fixed_bindings(einsum, arch.compute, ())
    chosen, why = fixed_bindings(einsum, arch.compute, options.block_binding)
    if why is not None:
        raise UsageError("block_binding", *why)
    fixed = (f"compute block bound as fixed ({', '.join(f'{r}={d}' for r, d in options.block_binding)}): "
             f"{len(chosen)} of the op's {len(everything)} bindings searched") if len(chosen) < len(everything) else None
    floors = {b: _floor(problem, b, options) for b in chosen}
    order = sorted(chosen, key=lambda b: (floors[b], chosen.index(b)))
    with budget.within(budget.Budget(options.time_limit, parent=budget.current())):
        # Each bound problem is solved as it is: its block is literal, the fixed roles are spent.
        outcomes, relaxation = _search(problem, constraints, replace(options, block_binding=()), solve_one, order, floors)
    return _combined(outcomes, relaxation, fixed, time.perf_counter() - start)


def relaxed_compute(compute: Compute, workload: Workload, bindings: list[RoleBinding]) -> Compute:
    """An op no binding beats: on each dimension the largest block any of ``bindings`` puts there.

    A block beyond a dimension's extent acts as the extent (``ceil(x / b) = 1``
    for every piece ``x <= E``), so each dimension takes ``max min(b, E)``.
    Calls only fall as a block grows, so every schedule makes at most as
    many calls with this op as with any of the bindings, and has the same
    words: its optimum is a lexicographic floor of theirs. Not hardware; a bound.
    """
    extent = workload.extent
    block: dict[str, int] = {}
    for b in bindings:
        for d, x in bind_compute(compute, b).block:
            block[d] = max(block.get(d, 1), min(x, extent[d]))
    return replace(compute, block=tuple(block.items()), block_roles=())


def _proven_prefix(result: SolveResult) -> tuple[Fraction, ...]:
    """A lexicographic floor of the phases: the proven values, then the first unproven phase's bound."""
    out: list[Fraction] = []
    for p in result.phases:
        if p.status != "OPTIMAL":
            return tuple(out + [p.bound])
        out.append(p.value)
    return tuple(out)


# Outcomes without a result that leave their binding open: it might still beat the best.
_OPEN = ("no schedule", "not searched")


def automorphisms(workload: Workload, limit: int = 5040) -> tuple[dict[str, str], ...]:
    """Renamings of dimensions (not the identity) that map the workload onto itself.

    A renaming ``pi`` that keeps every extent and maps every tensor's axes
    (each a sum of ``coefficient * dimension``) onto the same tensor's axes,
    in any order, maps each schedule to one with the same figures: the
    contract counts a tile's words, regions and occupancy as products over
    axes, whatever their order. So the binding ``pi(B)`` has the optimum of
    ``B``. (Axis order does matter to DRAM row layouts, and constraints name
    dimensions: the caller leaves those problems out.) Only renamings within
    groups of equal extent are tried, at most ``limit`` of them.
    """
    groups: dict[int, list[str]] = {}
    for d, e in workload.extents:
        groups.setdefault(e, []).append(d)
    if math.prod(math.factorial(len(g)) for g in groups.values()) > limit:
        return ()

    def axes(tensor, pi) -> list[tuple[tuple[str, int], ...]]:
        return sorted(tuple(sorted((pi.get(d, d), c) for d, c in ix.terms)) for ix in tensor.indices)

    found = []
    for perms in itertools.product(*(itertools.permutations(g) for g in groups.values())):
        pi = {d: e for g, perm in zip(groups.values(), perms) for d, e in zip(g, perm) if d != e}
        if pi and all(axes(t, pi) == axes(t, {}) for t in workload.tensors):
            found.append(pi)
    return tuple(found)


def _mirror(b: RoleBinding, tried: list[RoleBinding], mirrors: tuple[dict[str, str], ...]) -> str | None:
    """Why ``b`` needs no solve: a renaming of the workload onto itself maps a binding already tried onto it."""
    for other in tried:
        for pi in mirrors:
            if tuple((r, pi.get(d, d)) for r, d in other.pairs) == b.pairs:
                swaps = ", ".join(f"{d}->{e}" for d, e in pi.items())
                return (f"symmetric to {other.text()}: the workload maps onto itself renaming {swaps}, so this "
                        "binding has the same optimum")
    return None


def _cannot_beat(best: tuple[Fraction, ...], floor: tuple[Fraction, ...]) -> bool:
    """Whether every rank that is lexicographically at least ``floor`` on its first ``len(floor)`` phases is
    no better than ``best`` (a tie keeps ``best``, found first)."""
    k = len(floor)
    return best[:k] < floor or (best[:k] == floor and k >= len(best))


def _search(problem: Problem, constraints: Constraints, options: SolveOptions, solve_one: Solver,
            order: list[RoleBinding], floors: dict[RoleBinding, Fraction],
            ) -> tuple[list[BindingOutcome], SolveResult | None]:
    """Each binding in ``order`` solved or excluded; the relaxation's result where one was solved."""
    outcomes: list[BindingOutcome] = []
    best: SolveResult | None = None
    relaxation: SolveResult | None = None
    relaxed: set[RoleBinding] = set()  # the bindings the relaxation is a floor of
    solved_one: RoleBinding | None = None  # the first binding solved (or proven infeasible)
    mirrors = automorphisms(problem.workload) if not constraints.tiles and not constraints.orders \
        and not options.models_dram_rows else ()
    for i, b in enumerate(order):
        if budget.stopped():
            outcomes.append(BindingOutcome(b, floors[b], skipped="not searched: the search was stopped"))
            continue
        if solved_one is not None and not _counts_calls(problem, options):
            outcomes.append(BindingOutcome(b, floors[b], skipped=f"equivalent to {solved_one.text()}: the "
                                           f"{options.objective} objective does not depend on the op's calls, the only "
                                           "thing a binding changes"))
            continue
        if best is not None:
            why = _excluded(_rank(best), best.phases[0].name, floors[b], relaxation if b in relaxed else None)
            if why is not None:
                outcomes.append(BindingOutcome(b, floors[b], skipped=why))
                continue
        mirror = _mirror(b, [o.binding for o in outcomes if o.result is not None or o.skipped.startswith("no schedule")],
                         mirrors)
        if mirror is not None:
            outcomes.append(BindingOutcome(b, floors[b], skipped=mirror))
            continue
        bound = replace(problem, architecture=bind_architecture(problem.architecture, b))
        try:
            result = solve_one(bound, constraints, options)
        except InfeasibleError as e:
            outcomes.append(BindingOutcome(b, floors[b], skipped=f"infeasible: {e}", error=e))
            if options.min_utilization is None:  # the block changes only the calls: no binding has a legal schedule
                outcomes += [BindingOutcome(other, floors[other], skipped="infeasible too: the op's block does not "
                                            "change which schedules are legal") for other in order[i + 1:]]
                break
            solved_one = solved_one or b
            continue
        except (SolverTimeout, Interrupted) as e:
            outcomes.append(BindingOutcome(b, floors[b], skipped=f"no schedule: {e}"))
            continue
        solved_one = solved_one or b
        log.info("block binding %s: %s, %s", b.text(), result.status, ", ".join(f"{p.name} {p.value}" for p in result.phases))
        outcomes.append(BindingOutcome(b, floors[b], result=result))
        if best is None or _rank(result) < _rank(best):
            best = result
        rest = [o for o in order[i + 1:] if _excluded(_rank(best), best.phases[0].name, floors[o], None) is None]
        monotone = options.objective == "time" or options.objective == "energy" and not _own_energy_model(problem)
        if relaxation is None and len(rest) > 1 and best.phases[0].value > floors[b] and monotone \
                and options.min_utilization is None and not budget.stopped():
            # Above its calls floor (the links bind): one solve of an op no binding beats may prove the rest no better.
            relaxation, relaxed = _relaxation(problem, constraints, options, solve_one, rest), set(rest)
    return outcomes, relaxation


def _relaxation(problem: Problem, constraints: Constraints, options: SolveOptions, solve_one: Solver,
                bindings: list[RoleBinding]) -> SolveResult | None:
    arch = problem.architecture
    relaxed = replace(arch, compute=relaxed_compute(arch.compute, problem.workload, bindings))
    try:
        result = solve_one(replace(problem, architecture=relaxed), constraints, options)
    except (InfeasibleError, SolverTimeout, Interrupted):
        return None
    log.info("block relaxation %s over %d bindings: %s, %s", dict(relaxed.compute.block), len(bindings), result.status,
             ", ".join(f"{p.name} {p.value}" for p in result.phases))
    return result


def _excluded(best: tuple[Fraction, ...], phase: str, floor: Fraction, relaxation: SolveResult | None) -> str | None:
    """Why a binding of this ``floor`` cannot beat ``best``, or None when it might."""
    if _cannot_beat(best, (floor,)):
        return f"excluded: its {phase} is at least {floor} (the fewest op calls), more than the best {best[0]}"
    if relaxation is not None:
        prefix = _proven_prefix(relaxation)
        if prefix and _cannot_beat(best, prefix):
            shown = ", ".join(f"{p.name} {v}" for p, v in zip(relaxation.phases, prefix))
            return (f"excluded: no binding beats the op with every candidate's largest block "
                    f"{dict(relaxation.schedule.architecture.compute.block)}, whose best is {shown}")
    return None


def _combined(outcomes: list[BindingOutcome], relaxation: SolveResult | None, fixed: str | None,
              seconds: float) -> SolveResult:
    """The best binding's result, its status and bounds over every binding, the binding and outcomes attached."""
    solved = [o for o in outcomes if o.result is not None]
    searched = [o.result for o in solved] + ([relaxation] if relaxation is not None else [])
    restrictions = tuple(dict.fromkeys([r for res in searched for r in res.family_restrictions]
                                       + ([fixed] if fixed else [])))
    if not solved:
        reasons = "; ".join(f"{o.binding.text()}: {o.skipped}" for o in outcomes)
        if any(o.skipped.startswith("no schedule") for o in outcomes):
            if budget.stopped():
                raise Interrupted(f"interrupted before any binding of the op's block had a schedule ({reasons})")
            raise SolverTimeout(f"no schedule for any binding of the op's block within the time limit ({reasons})")
        first = next(o.error for o in outcomes if o.error is not None)
        if fixed is None:
            raise first  # already said of a restricted family where the search restricted it
        raise NoScheduleInFamily(f"no schedule in the searched family: no binding of the op's block has a schedule "
                                 f"({reasons}); the family was restricted ({'; '.join(restrictions)}), so a legal "
                                 "schedule outside it may exist", first.core, restrictions)
    best = min(solved, key=lambda o: _rank(o.result))  # min keeps the first of equals: the lowest floor
    result = best.result
    first = result.phases[0]
    # Bindings that might still beat the best: unsolved and not excluded, or solved but not proven better.
    open_floors = [max(o.floor, o.result.phases[0].bound) if o.result is not None else o.floor for o in outcomes
                   if o is not best and (o.result is None and o.skipped.startswith(_OPEN)
                                         or o.result is not None and not o.result.proven)]
    open_floors = [f for f in open_floors if f <= first.value]
    phases = result.phases
    if open_floors:  # the first phase keeps the lowest floor of an open binding, the others only binding-free floors
        bounds = [min(first.bound, min(open_floors))] + [min(p.bound, p.start_bound or Fraction(0)) for p in phases[1:]]
        phases = tuple(replace(p, bound=low, status="OPTIMAL" if p.status == "OPTIMAL" and low == p.value else "FEASIBLE")
                       for p, low in zip(phases, bounds))
    status = proven_status(result.proven and not open_floors, restrictions)
    log.info("block binding chosen: %s (%s over %d bindings)", best.binding.text(), status, len(outcomes))
    return replace(result, status=status, phases=phases, family_restrictions=restrictions, solve_seconds=seconds,
                   block_binding=best.binding.pairs, block_bindings=tuple(outcomes),
                   interrupted=result.interrupted or budget.stopped())
