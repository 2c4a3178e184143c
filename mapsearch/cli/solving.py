"""What the solve command's three paths share (dense, chain, sparse): arguments to options, the replay check.

Used by :mod:`mapsearch.cli.solve`, :mod:`mapsearch.cli.solve_chain` and
:mod:`mapsearch.cli.solve_sparse`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from fractions import Fraction
from typing import Any, Callable, TypeVar

from mapsearch.cli.exits import EXIT_MISMATCH, CommandFailed
from mapsearch.errors import InfeasibleError, UsageError
from mapsearch.model.options import DRAM_ROWS, OBJECTIVES, SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.report.text import exact_text as plain
from mapsearch.sim.errors import SimulatorError
from mapsearch.sim.replay import replay
from mapsearch.spec.architecture import Architecture, as_fraction
from mapsearch.spec.constraints import Constraints, check_constraints, load_constraints
from mapsearch.spec.tree import is_tree_file, load_tree
from mapsearch.spec.tree_nodes import Tree
from mapsearch.spec.tree_paths import flatten

__all__ = ["REPLAY_MODES", "options_from_args", "parse_link_energy", "objective_of", "replay_mode_of",
           "constraints_of", "run_solver", "mismatch_lines", "data_check_line", "replay_solved", "with_core", "plain", "multi_path_tree"]

T = TypeVar("T")

REPLAY_MODES = ("count", "events", "data")


def _fraction(option: str, text: object, expected: str) -> Fraction:
    try:
        return as_fraction(text)
    except (TypeError, ValueError, ZeroDivisionError):
        raise UsageError(option, expected, text) from None


def parse_link_energy(items: list[str] | None, arch: Architecture) -> tuple[tuple[str, Fraction], ...]:
    """``['L1->L0=1/2', ...]`` -> ``(('L1->L0', Fraction(1, 2)), ...)``; names must be links of ``arch``."""
    out: dict[str, Fraction] = {}
    for item in items or ():
        name, eq, cost = str(item).rpartition("=")
        if not eq or not name:
            raise UsageError("--link-energy", "NAME=COST, e.g. 'L1->L0=2'", item)
        if name not in arch.link_names:
            raise UsageError("--link-energy", f"a link of {arch.name} {list(arch.link_names)}", name)
        value = _fraction("--link-energy", cost, "a cost >= 0 (int, decimal or 'a/b')")
        if value < 0:
            raise UsageError("--link-energy", "a cost >= 0 (int, decimal or 'a/b')", cost)
        out[name] = value
    return tuple(out.items())


def options_from_args(args: argparse.Namespace, arch: Architecture) -> SolveOptions:
    """The :class:`SolveOptions` the arguments ask for; :class:`UsageError` names a bad one."""
    objective = objective_of(args)
    kwargs: dict[str, Any] = {"objective": objective}
    if getattr(args, "time_limit", None) is not None:
        if not args.time_limit > 0:
            raise UsageError("--time-limit", "seconds > 0", args.time_limit)
        kwargs["time_limit"] = float(args.time_limit)
    if getattr(args, "work_limit", None) is not None:
        if not args.work_limit > 0:
            raise UsageError("--work-limit", "deterministic seconds > 0", args.work_limit)
        kwargs["work_limit"] = float(args.work_limit)
    if getattr(args, "min_utilization", None) is not None:
        u = _fraction("--min-utilization", args.min_utilization, "a number in (0, 1]")
        if not 0 < u <= 1:
            raise UsageError("--min-utilization", "a number in (0, 1]", args.min_utilization)
        kwargs["min_utilization"] = u
    if getattr(args, "workers", None) is not None:
        if args.workers < 1:
            raise UsageError("--workers", "an int >= 1", args.workers)
        kwargs["workers"] = args.workers
    if getattr(args, "seed", None) is not None:
        kwargs["seed"] = args.seed
    kwargs["link_energy"] = parse_link_energy(getattr(args, "link_energy", None), arch)
    if getattr(args, "op_energy", None) is not None:
        x = _fraction("--op-energy", args.op_energy, "a number >= 0 (int, decimal or 'a/b')")
        if x < 0:
            raise UsageError("--op-energy", "a number >= 0 (int, decimal or 'a/b')", args.op_energy)
        kwargs["op_energy"] = x
    rows = getattr(args, "dram_rows", None)
    if rows is not None:
        if rows not in DRAM_ROWS:
            raise UsageError("--dram-rows", "one of " + ", ".join(DRAM_ROWS), rows)
        kwargs["dram_rows"] = rows
    if getattr(args, "max_dram_rows", None) is not None:
        if args.max_dram_rows < 0:
            raise UsageError("--max-dram-rows", "an int >= 0", args.max_dram_rows)
        kwargs["max_dram_rows"] = args.max_dram_rows
    if getattr(args, "no_placement", False):
        kwargs["placement"] = False
    if objective != "energy" and (kwargs["link_energy"] or "op_energy" in kwargs):
        print("mapsearch: warning: --link-energy and --op-energy only apply to --objective energy; ignored", file=sys.stderr)
    return SolveOptions(**kwargs)


def objective_of(args: argparse.Namespace) -> str:
    objective = getattr(args, "objective", None) or "time"
    if objective not in OBJECTIVES:
        raise UsageError("--objective", "one of " + ", ".join(OBJECTIVES), objective)
    return objective


def replay_mode_of(args: argparse.Namespace) -> str:
    mode = getattr(args, "replay_mode", None) or "count"
    if mode not in REPLAY_MODES:
        raise UsageError("--replay-mode", "one of " + ", ".join(REPLAY_MODES), mode)
    return mode


def constraints_of(args: argparse.Namespace, problem: Problem) -> Constraints:
    path = getattr(args, "constraints", None)
    if not path:
        return Constraints()
    c = load_constraints(path)
    check_constraints(c, problem.workload, problem.architecture, str(path))
    return c


def run_solver(attempt: Callable[[], T]) -> T:
    """``attempt()``; an infeasible problem is re-raised with the requirements that conflict (:func:`with_core`).

    A :class:`~mapsearch.errors.SolverTimeout` goes on to ``main`` (one line, exit 3).
    """
    try:
        return attempt()
    except InfeasibleError as e:
        raise with_core(e) from e


def mismatch_lines(what: str, mismatches, said: str = "predicted") -> list[str]:
    """One line saying ``what`` and that nothing is written, then one line per ``(field, model, replayed)``."""
    return [f"REPLAY MISMATCH: {what} in {len(mismatches)} field(s); the schedule is not written"] + [
        f"REPLAY MISMATCH in {field}: {said} {plain(model)}, replayed {plain(replayed_value)}"
        for field, model, replayed_value in mismatches]


def data_check_line(replayed, whose: str) -> list[str]:
    """One line when a data-mode replay's output differs from the NumPy reference; none when it agrees."""
    if replayed.data_ok is not False:
        return []
    err = "" if replayed.max_abs_error is None else f" (max abs error {replayed.max_abs_error:.3g})"
    return [f"data check failed: the {whose} output differs from the reference{err}; the schedule is not written"]


def replay_solved(schedule, mode: str):
    """The simulator's replay of ``schedule``; a schedule the simulator rejects is a replay mismatch (exit 1)."""
    try:
        return replay(schedule, mode=mode)
    except SimulatorError as e:
        raise CommandFailed(EXIT_MISMATCH, [f"REPLAY MISMATCH: the solved schedule fails in the simulator ({mode} "
                                            f"mode): {' '.join(str(e).split())}"]) from e


def with_core(e: InfeasibleError) -> InfeasibleError:
    """The error, its message naming every requirement of the core."""
    message = " ".join(str(e).split())
    missing = [name for name in e.core if name not in message]
    if missing or not e.core:
        message += f" (conflicting requirements: {', '.join(e.core) if e.core else 'none isolated'})"
    return InfeasibleError(message, e.core)


def multi_path_tree(path: str) -> Tree | None:
    """The tree when ``path`` is a tree file with several compute paths, else None."""
    if not Path(path).is_file() or not is_tree_file(path):
        return None
    tree = load_tree(path)
    return tree if len(flatten(tree)) > 1 else None
