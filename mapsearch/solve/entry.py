"""The solver in one call: any workload and architecture source, options by name, and the replay check.

:func:`solve`, :func:`solve_chain` and :func:`solve_sparse` are what
:mod:`mapsearch.api` offers scripts, what ``mapsearch solve`` and the sweep's
cases run. Each loads its inputs (:mod:`mapsearch.spec.inputs`: objects,
dicts, files or preset names), solves, and replays the result in the
simulator (``replay="count"`` by default): the result carries the replayed
figures and the fields where they differ from the prediction, and with
``strict=True`` (the default) a disagreement raises
:class:`~mapsearch.errors.ReplayMismatch`, since a schedule whose replay
disagrees is a bug, not a result.

:func:`solve_options` (:mod:`mapsearch.solve.named_options`) builds a
:class:`~mapsearch.model.options.SolveOptions` from values by name and checks
each one; an error names the parameter (or, through ``names``, the
command-line flag that gave it).
"""

from __future__ import annotations

import logging
import math
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Iterator, Mapping

import mapsearch.budget as budget
from mapsearch.errors import (InfeasibleError, Interrupted, MapsearchError, ReplayMismatch, ScheduleError, SolverTimeout,
                              SpecError, UsageError)
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import Figures, differences
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.replay import MODES, replay
from mapsearch.sim import walk_spatial
from mapsearch.sim.errors import WalkTooLong
from mapsearch.sim.fused_count import fused_count_tiles
from mapsearch.sim.spatial import has_splits
from mapsearch.sim.stop import ReplayInterrupted
from mapsearch.sim.walk_spatial import WALK_CELLS_PER_SECOND
from mapsearch.solve.chain import ChainResult, solve_chain as solve_chain_options, solve_teaal
from mapsearch.solve.chain_replay import FUSED_TILES_PER_SECOND, duration_text, replay_checks
from mapsearch.solve.progress import finished, report
from mapsearch.solve.explain import requirement_sources, with_core
from mapsearch.solve.interrupt import CheckInterrupted, checking
from mapsearch.solve.named_options import MAX_SECONDS, MAX_SEED, MAX_WORKERS, Number, solve_options
from mapsearch.solve.run import SolveResult, solve as solve_problem
from mapsearch.solve.tree import path_rules, solve_tree
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.constraints import Constraints, check_constraints
from mapsearch.spec.inputs import (
    ArchitectureSource,
    ConstraintsSource,
    LoadedWorkload,
    WorkloadSource,
    architecture_of,
    constraints_of,
    workload_of,
)
from mapsearch.spec.load import check_homes, check_problem, preset_path
from mapsearch.spec.tree_nodes import Tree
from mapsearch.spec.tree import is_tree_file, load_tree
from mapsearch.spec.tree_paths import flatten, path_architecture
from mapsearch.spec.workload import Workload, WorkloadGraph

__all__ = ["Number", "solve_options", "solve_inputs", "solve", "solve_chain", "replay_result", "predicted_figures",
           "MAX_WORKERS", "MAX_SEED", "MAX_SECONDS"]

log = logging.getLogger(__name__)

# The check replay after a solve walks at least this many (step, instance) cells (about 22 minutes at the walk's
# rate on a 2-core machine) before it refuses a schedule with spatial splits (check_walk_cells). The cells are
# those walked after folding repeated loop bodies (sim/spatial_fold.py): the 604 M-step BERT schedule below
# takes 786,944.
CHECK_WALK_MIN_CELLS = 1 << 28


def _check_mode(replay_mode: str | None) -> None:
    if replay_mode is not None and replay_mode not in MODES:
        raise UsageError("replay", "one of " + ", ".join(sorted(MODES)) + " or None", replay_mode)


def replay_result(result: SolveResult, mode: str, strict: bool = True, time_limit: float | None = None) -> SolveResult:
    """``result`` with the replay of its schedule in ``mode`` and the fields where it differs from the prediction.

    With ``strict``, a disagreement (or a failed data check) raises
    :class:`~mapsearch.errors.ReplayMismatch` naming the first field.
    ``time_limit``: the solve's; the count walk of a schedule with spatial
    splits then takes about as long at most (:func:`check_walk_cells`), and
    raises the simulator's ``WalkTooLong`` rather than run for hours.
    A Ctrl-C (the active budget stopped) while the replay walks stops it and
    raises :class:`~mapsearch.solve.interrupt.CheckInterrupted` carrying
    ``result`` unchecked, ``strict`` or not: the check did not run.
    """
    # A SolveOptions built by hand may carry an infinite limit: the walk's own limit then applies.
    bounded = mode == "count" and time_limit is not None and math.isfinite(time_limit)
    options = {"max_cells": check_walk_cells(time_limit)} if bounded else {}
    how_long = ""
    if mode == "count" and has_splits(result.schedule):
        cells = options.get("max_cells", walk_spatial.MAX_WALK_CELLS)
        seconds = cells / walk_spatial.WALK_CELLS_PER_SECOND  # the walk's own rate
        how_long = f" (a walk with spatial splits: at most {duration_text(seconds)}, its limit of {cells:,} cells)"
    try:
        with _checking(f"the {mode} replay checks the schedule{how_long}"):
            replayed = replay(result.schedule, mode=mode, **options)
    except ReplayInterrupted as e:
        raise CheckInterrupted(f"the check replay ({mode} mode) did not run: interrupted by Ctrl-C before it "
                               "ended; the schedule is neither checked nor refuted", result) from e
    mismatches = tuple(differences(predicted_figures(result.schedule), replayed.figures))
    result = replace(result, replayed=replayed, mismatches=mismatches)
    if strict and mismatches:
        field, predicted, got = mismatches[0]
        raise ReplayMismatch(field, predicted, got, mismatches=mismatches)
    if strict and replayed.data_ok is False:
        raise ReplayMismatch("data", "the numpy reference", f"an output off by {replayed.max_abs_error:.3g}")
    return result


def predicted_figures(schedule: Schedule) -> Figures:
    """The schedule's predicted figures; a solved schedule always has them."""
    if schedule.predicted is None:
        raise ScheduleError("the solver returned a schedule without predicted figures; nothing to check the replay against")
    return schedule.predicted


def _one_einsum(source: WorkloadSource) -> tuple[Workload, LoadedWorkload]:
    loaded = workload_of(source)
    if not isinstance(loaded.workload, Workload):
        raise UsageError("workload", "one einsum (a chain is solved by solve_chain)", loaded.workload.name)
    return loaded.workload, loaded


def solve_inputs(workload: WorkloadSource, architecture: ArchitectureSource, constraints: ConstraintsSource = None,
                 homes: Mapping[str, str] | None = None) -> tuple[Workload, Architecture, dict[str, str], Constraints]:
    """One einsum, one architecture path, the homes (the file's, then ``homes``) and constraints, checked together."""
    w, loaded = _one_einsum(workload)
    arch = architecture_of(architecture)
    if isinstance(arch, Tree):
        raise UsageError("architecture", "one compute path (solve takes a tree with several)", arch.name)
    all_homes = {**loaded.homes, **dict(homes or {})}
    check_homes(all_homes, w, arch, loaded.source)
    check_problem(w.extents, w.tensor_names, arch, loaded.source, _source_name(architecture, arch.name), (w.einsum,))
    c = constraints_of(constraints)
    if constraints is not None:
        check_constraints(c, w, arch, _source_name(constraints, "constraints"), homes=all_homes)
    return w, arch, all_homes, c


def _one_path_tree(source: ArchitectureSource) -> Tree | None:
    """The tree of a tree file with one compute path: solved with its ``tensors`` rules, names checked."""
    if isinstance(source, (str, Path)) and Path(source).is_file() and is_tree_file(source):
        tree = load_tree(source)
        return tree if len(flatten(tree)) == 1 else None
    return None


def _solve_one_path(tree: Tree, workload: WorkloadSource, architecture: ArchitectureSource,
                    constraints: ConstraintsSource, homes: Mapping[str, str] | None,
                    options: SolveOptions) -> SolveResult:
    """A one-path tree as a flat architecture (named after the tree), its rules as keep constraints."""
    w, loaded = _one_einsum(workload)
    path = flatten(tree)[0]
    arch = replace(path_architecture(path, w), name=tree.name)  # unknown names: a TreeError
    all_homes = {**loaded.homes, **dict(homes or {})}
    check_homes(all_homes, w, arch, loaded.source)
    check_problem(w.extents, w.tensor_names, arch, loaded.source, str(architecture), (w.einsum,))
    merged = path_rules(path, arch, w, all_homes, constraints_of(constraints))
    return solve_problem(Problem(w, arch, tuple(all_homes.items())), merged, options)


def solve(workload: WorkloadSource, architecture: ArchitectureSource, constraints: ConstraintsSource = None, *,
          homes: Mapping[str, str] | None = None, options: SolveOptions | None = None, replay_mode: str | None = "count",
          strict: bool = True) -> SolveResult:
    """The best schedule of one einsum on an architecture, replayed (see the module docstring).

    An architecture that is a tree with several computes is solved on each
    path and the best is returned, with every path's outcome in
    ``result.paths``. ``homes`` adds to (and overrides) the workload file's.
    Raises :class:`~mapsearch.errors.InfeasibleError` naming the requirements
    that conflict, :class:`~mapsearch.errors.SolverTimeout`, or a one-line
    :class:`~mapsearch.errors.SpecError` for bad input.
    """
    _check_mode(replay_mode)
    options = options or SolveOptions()
    arch = architecture_of(architecture)
    one_path = _one_path_tree(architecture)
    try:
        if one_path is not None:
            result = _solve_one_path(one_path, workload, architecture, constraints, homes, options)
        elif isinstance(arch, Tree):
            w, loaded = _one_einsum(workload)
            extra = constraints_of(constraints) if constraints is not None else None
            _, result, outcomes = solve_tree(arch, w, {**loaded.homes, **dict(homes or {})}, options, extra)
            result = replace(result, paths=outcomes)
        else:
            w, arch, all_homes, c = solve_inputs(workload, architecture, constraints, homes)
            result = solve_problem(Problem(w, arch, tuple(all_homes.items())), c, options)
    except InfeasibleError as e:
        raise _with_sources(e, workload, architecture, constraints) from e
    return result if replay_mode is None else replay_result(result, replay_mode, strict, options.time_limit)


def _with_sources(e: InfeasibleError, workload: WorkloadSource, architecture: ArchitectureSource,
                  constraints: ConstraintsSource) -> InfeasibleError:
    """:func:`with_core`, each requirement of the core named in the file it comes from (the architecture's
    capacities, the constraints' tile limits, orders, stationarity) where those were given as files."""
    try:
        w, _ = _one_einsum(workload)
        arch = architecture_of(architecture)
        if isinstance(arch, Tree):  # a tree of several paths: each path's outcome says why it failed
            return with_core(e)
        arch_file, tree = _file_name(architecture), False
        if isinstance(architecture, (str, Path)):
            path = Path(architecture) if Path(architecture).is_file() else preset_path(str(architecture))
            tree = is_tree_file(path)
            arch_file = str(architecture) if path == Path(architecture) else f"preset {architecture}"
        c = constraints_of(constraints)
        sources = requirement_sources(e, w, arch, c, _file_name(constraints), arch_file, tree)
    except MapsearchError:  # the inputs read before the solve; never hide its error behind another
        return with_core(e)
    return with_core(e, sources)


def _file_name(source: object) -> str | None:
    """The name a file (or a preset) is given by; None for an object built in memory."""
    return str(source) if isinstance(source, (str, Path)) else None


def check_walk_cells(time_limit: float) -> int:
    """The most (step, instance) cells the check replay after a solve walks: about the solve's own time limit
    at the walk's rate, and never less than :data:`CHECK_WALK_MIN_CELLS` (about 22 minutes).

    A schedule with spatial splits is walked step by step (sim/walk_spatial.py),
    folded over runs of loop bodies that repeat (sim/spatial_fold.py); a solve
    cut short by its limit may end with one whose unfolded walk takes an hour
    (BERT's FFN on ``simba-like`` at 30 s: 604 M steps, 0.4 s folded), and a
    walk that folds too little to finish within about the solve's limit is a
    check that outlasts the solve, which no user waits for.
    """
    return max(CHECK_WALK_MIN_CELLS, int(time_limit * WALK_CELLS_PER_SECOND))


def check_fused_tiles(time_limit: float) -> int:
    """The most tiles the check replay after a chain solve walks for a fused schedule: as
    :func:`check_walk_cells`, about the solve's own limit at the fused walk's rate and never less than the same
    minutes (about 22). The fused count walk visits the tiles of the stages it does not fold one by one
    (sim/fused_count.py, ``fused_count_tiles``); before the fold AlexNet's 8 einsums fused on AccelForge's
    ``simple`` were 604 M tiles, 105 s after a 5 s solve."""
    at_least = CHECK_WALK_MIN_CELLS * FUSED_TILES_PER_SECOND // WALK_CELLS_PER_SECOND
    return max(at_least, int(time_limit * FUSED_TILES_PER_SECOND))


@contextmanager
def _checking(what: str) -> Iterator[None]:
    """Say that the check replay runs (the log, and the progress line: the solve's own ended), then end it."""
    log.info("%s", what)
    report(f"checking: {what}")
    try:
        with checking("the check replay"):  # a Ctrl-C now stops the walk (mapsearch/solve/interrupt.py)
            yield
    finally:
        finished()


def _source_name(source: object, default: str) -> str:
    return str(source) if isinstance(source, (str, Path)) else default


def solve_chain(workload: WorkloadSource, architecture: ArchitectureSource, *, homes: Mapping[str, str] | None = None,
                options: SolveOptions | None = None, replay_mode: str | None = "count",
                strict: bool = True) -> ChainResult:
    """Every fusion option of a chain of einsums (or a TeAAL file's mapping), the best replayed.

    ``result.best`` names the best option; ``result.replay`` holds the replay
    checks (:class:`~mapsearch.solve.chain_replay.ChainReplay`) when
    ``replay_mode`` is given, and with ``strict`` a disagreement raises
    :class:`~mapsearch.errors.ReplayMismatch`. No option with a schedule:
    :class:`~mapsearch.errors.SolverTimeout` when a limit stopped one, else
    :class:`~mapsearch.errors.InfeasibleError`, naming each option's reason.
    """
    _check_mode(replay_mode)
    loaded = workload_of(workload)
    graph = loaded.workload
    if not isinstance(graph, WorkloadGraph):
        raise UsageError("workload", "a chain of einsums (one einsum is solved by solve)", graph.name)
    arch = architecture_of(architecture)
    if isinstance(arch, Tree):
        raise UsageError("architecture", "one compute path for a chain", arch.name)
    all_homes = {**loaded.homes, **dict(homes or {})}
    for t, level in all_homes.items():
        if level not in arch.level_names:
            raise SpecError(loaded.source, f"homes.{t}", "", detail=f"unknown level {level!r}; {arch.name} "
                            f"has {', '.join(arch.level_names)}")
    tensors = dict.fromkeys(t.name for e in graph.einsums for t in e.tensors)
    if arch.compute.block_roles:  # fused stages model every einsum with one op; binding per einsum is not built
        raise SpecError(_source_name(architecture, arch.name), "compute.block_roles", "", detail="a chain of einsums "
                        "needs the op's block by dimension (compute.block); GEMM roles are bound for one einsum at a time")
    check_problem(graph.extents, tensors, arch, loaded.source, _source_name(architecture, arch.name), graph.einsums)
    options = options or SolveOptions()
    if loaded.teaal is not None:
        result = solve_teaal(graph, arch, loaded.teaal, options)
    else:
        result = solve_chain_options(graph, arch, all_homes, options)
    result = replace(result, teaal=loaded.teaal)
    if not result.candidates():
        if budget.stopped():
            raise Interrupted("interrupted before any option of the chain had a schedule")
        if any(o.status == "TIMEOUT" for o in result.fused) or "time limit" in result.unfused_reason:
            raise SolverTimeout("no schedule for this chain within the time limit: " + "; ".join(
                [f"fused at {o.level}: {o.status} {o.reason}" for o in result.fused]
                + [f"unfused: {result.unfused_reason}"]))
        raise InfeasibleError("no schedule for this chain: " + "; ".join(
            [f"fused at {o.level}: {' '.join(o.reason.split())}" for o in result.fused]
            + [f"unfused: {' '.join(result.unfused_reason.split())}"]))
    if replay_mode is None:
        return result
    limit = options.time_limit
    bounded = replay_mode == "count" and limit is not None and math.isfinite(limit)
    # Where another option is best, the fused schedule's check decides nothing written: about the limit at most.
    limits = {"max_cells": check_walk_cells(limit), "max_fused_tiles": check_fused_tiles(limit),
              "max_other_fused_tiles": int(limit * FUSED_TILES_PER_SECOND)} if bounded else {}
    best = result.best_fused()
    how_long = ""
    if best is not None and replay_mode == "count":
        tiles = fused_count_tiles(best.schedule)
        bound = limits.get("max_fused_tiles" if f"fused at {best.level}" == result.best else "max_other_fused_tiles")
        walked = "too many to walk" if bound is not None and tiles > bound else \
            duration_text(tiles / FUSED_TILES_PER_SECOND)
        how_long = f" (the best fused schedule: {tiles:,} tiles, {walked})"
    with _checking(f"the {replay_mode} replay checks the chain's schedules{how_long}"):
        checks = replay_checks(result, replay_mode, **limits)
    result = replace(result, replay=checks)
    failures = checks.failures(result.best)
    if strict and failures:
        bad = failures[0]
        if bad.differences:
            field, predicted, got = bad.differences[0]
            raise ReplayMismatch(f"{bad.name}: {field}", predicted, got, mismatches=bad.differences)
        if bad.interrupted:  # Ctrl-C during the check: as one einsum's, the result unchecked
            raise CheckInterrupted(f"{bad.name}: {bad.error}", result)
        if bad.not_run:  # as one einsum's check: neither checked nor refuted
            raise WalkTooLong(f"{bad.name}: {bad.error}")
        raise ReplayMismatch(bad.name, "a schedule the simulator runs", bad.error or "a failed data check")
    return result
