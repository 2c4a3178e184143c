"""``mapsearch solve``: load, solve, replay, compare, report, and write the schedule.

A chain or TeAAL workload file goes to :mod:`mapsearch.solve.cli_chain`
(every fusion level and the unfused baseline).

Every solved schedule is replayed in the simulator (``--replay-mode``, default
``count``) before anything is reported as a result. If the replay disagrees
with the solver's prediction in any field, each differing field goes to
stderr under ``REPLAY MISMATCH``, the exit code is 1, and no schedule file is
written: a schedule file always carries figures the simulator reproduced.

Exit codes: 0 ok; 1 replay mismatch or data check failed; 2 bad input or an
infeasible problem (one line that names the conflicting requirements); 3 no
schedule found within the time limit (one line with the best bound).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from fractions import Fraction
from typing import Any

from mapsearch.errors import InfeasibleError, MapsearchError, SolverTimeout
from mapsearch.model.problem import Problem
from mapsearch.report.solve_report import render_solve_text, solve_report_dict
from mapsearch.schedule.figures import differences
from mapsearch.schedule.json_io import save_schedule
from mapsearch.sim.errors import SimulatorError
from mapsearch.solve.constraints import Constraints, check_constraints, load_constraints
from mapsearch.solve.options import DRAM_ROWS, OBJECTIVES, SolveOptions
from mapsearch.report.dram_rows import dram_rows_check
from mapsearch.solve.run import solve
from mapsearch.spec.architecture import Architecture, as_fraction
from mapsearch.spec.load import load_problem

log = logging.getLogger(__name__)

REPLAY_MODES = ("count", "events", "data")
EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_TIMEOUT = 0, 1, 2, 3


class UsageError(MapsearchError):
    """A command-line value out of range; one line naming the option."""

    def __init__(self, option: str, expected: str, got: object):
        super().__init__(f"{option}: expected {expected}, got {got!r}")


# --------------------------------------------------------------------------
# Arguments -> options.
# --------------------------------------------------------------------------


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
    objective = _objective(args)
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
    if objective != "energy" and (kwargs["link_energy"] or "op_energy" in kwargs):
        print("mapsearch: warning: --link-energy and --op-energy only apply to --objective energy; ignored", file=sys.stderr)
    return SolveOptions(**kwargs)


def _objective(args: argparse.Namespace) -> str:
    objective = getattr(args, "objective", None) or "time"
    if objective not in OBJECTIVES:
        raise UsageError("--objective", "one of " + ", ".join(OBJECTIVES), objective)
    return objective


def _replay_mode(args: argparse.Namespace) -> str:
    mode = getattr(args, "replay_mode", None) or "count"
    if mode not in REPLAY_MODES:
        raise UsageError("--replay-mode", "one of " + ", ".join(REPLAY_MODES), mode)
    return mode


def _constraints(args: argparse.Namespace, problem: Problem) -> Constraints:
    path = getattr(args, "constraints", None)
    if not path:
        return Constraints()
    c = load_constraints(path)
    check_constraints(c, problem.workload, problem.architecture, str(path))
    return c


def _multi_path_tree(path: str):
    """The tree when ``path`` is a tree file with several compute paths, else None."""
    from pathlib import Path

    from mapsearch.spec.tree import flatten, is_tree_file, load_tree

    if not Path(path).is_file() or not is_tree_file(path):
        return None
    tree = load_tree(path)
    return tree if len(flatten(tree)) > 1 else None


def _solve_tree(args: argparse.Namespace, tree) -> tuple:
    """Solve on every compute path of ``tree``; the best one is the result, the others are listed."""
    from mapsearch.spec.load import load_homes, load_workload
    from mapsearch.spec.tree import flatten, path_architecture, solve_tree

    workload = load_workload(args.workload)
    homes = load_homes(args.workload)
    first = path_architecture(flatten(tree)[0], workload)
    constraints = load_constraints(args.constraints) if getattr(args, "constraints", None) else None
    options = options_from_args(args, first)
    best, result, outcomes = solve_tree(tree, workload, homes, options, constraints)
    lines = [f"compute paths of {args.architecture}:"]
    for o in outcomes:
        if o.result is None:
            lines.append(f"  {o.compute_name}: skipped ({o.skipped})")
        else:
            f = o.result.schedule.predicted
            mark = "  <- chosen" if o.compute_name == best else ""
            lines.append(f"  {o.compute_name}: {o.result.status}, time {_plain(f.time)}, words {f.words_total}{mark}")
    return result, options, lines


def _with_core(e: InfeasibleError) -> InfeasibleError:
    """The error, its message naming every requirement of the core."""
    message = " ".join(str(e).split())
    missing = [name for name in e.core if name not in message]
    if missing or not e.core:
        message += f" (conflicting requirements: {', '.join(e.core) if e.core else 'none isolated'})"
    return InfeasibleError(message, e.core)


def _plain(value: object) -> str:
    if isinstance(value, Fraction):
        return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_plain(v) for v in value) + ")"
    return str(value)


def _with_dram_layouts(args: argparse.Namespace, options: SolveOptions, workload, architecture) -> SolveOptions:
    """``--dram-layouts FILE``: the ``layouts:`` mapping of a trace options file, fixed for the solve."""
    from dataclasses import replace

    path = getattr(args, "dram_layouts", None)
    if not path:
        return options
    from mapsearch.dram.options import layout_specs
    from mapsearch.spec.load import read_yaml

    data = read_yaml(path)
    specs = layout_specs(workload, data.get("layouts") if isinstance(data, dict) else data, str(path))
    if options.dram_rows == "off" and options.max_dram_rows is None:
        options = replace(options, dram_rows="tiebreak")  # layouts only matter to the row model
    return replace(options, dram_layouts=tuple(specs.items()))


# --------------------------------------------------------------------------
# The command.
# --------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Run ``mapsearch solve``; returns the exit code (errors of bad input raise :class:`MapsearchError`)."""
    from mapsearch.solve.cli_chain import is_chain_file

    if is_chain_file(args.workload):  # a chain or a TeAAL file (load_workload_any makes a graph of it)
        from mapsearch.solve import cli_chain

        return cli_chain.run(args)
    _objective(args)  # a bad objective fails before any file is read
    mode = _replay_mode(args)
    paths_note = ""
    try:
        tree = _multi_path_tree(args.architecture)
        if tree is not None:
            result, options, paths_note = _solve_tree(args, tree)
        else:
            workload, architecture, homes = load_problem(args.workload, args.architecture)
            problem = Problem(workload, architecture, tuple(homes.items()))
            constraints = _constraints(args, problem)
            options = options_from_args(args, architecture)
            options = _with_dram_layouts(args, options, workload, architecture)
            result = solve(problem, constraints, options)
    except InfeasibleError as e:
        raise _with_core(e) from e
    except SolverTimeout as e:
        if getattr(args, "debug", False):
            raise
        print(f"mapsearch: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_TIMEOUT

    schedule = result.schedule
    if schedule.predicted is None:
        raise MapsearchError("the solver returned a schedule without predicted figures; nothing to check the replay against")

    from mapsearch.sim.replay import replay

    try:
        replayed = replay(schedule, mode=mode)
    except SimulatorError as e:
        print(f"mapsearch: REPLAY MISMATCH: the solved schedule fails in the simulator ({mode} mode): "
              f"{' '.join(str(e).split())}", file=sys.stderr)
        if getattr(args, "debug", False):
            raise
        return EXIT_MISMATCH

    mismatches = differences(schedule.predicted, replayed.figures)
    rows = dram_rows_check(schedule)
    if rows is not None:
        mismatches += rows.mismatches
    if args.json:
        report = solve_report_dict(result, replayed, mode=mode)
        if paths_note:
            report["compute_paths"] = paths_note
        if rows is not None:
            report["dram_rows"] = rows.to_dict()
        print(json.dumps(report, indent=2))
    else:
        if paths_note:
            print("\n".join(paths_note))
        print(render_solve_text(result, replayed, mode=mode), end="")
        if rows is not None:
            print(rows.text())

    code = EXIT_OK
    if mismatches:
        print(f"mapsearch: REPLAY MISMATCH: the {mode} replay disagrees with the solver's prediction in "
              f"{len(mismatches)} field(s); the schedule is not written", file=sys.stderr)
        for field, predicted, replayed_value in mismatches:
            print(f"mapsearch: REPLAY MISMATCH in {field}: predicted {_plain(predicted)}, replayed {_plain(replayed_value)}",
                  file=sys.stderr)
        code = EXIT_MISMATCH
    if replayed.data_ok is False:
        err = "" if replayed.max_abs_error is None else f" (max abs error {replayed.max_abs_error:.3g})"
        print(f"mapsearch: data check failed: the replayed output differs from the reference{err}; "
              "the schedule is not written", file=sys.stderr)
        code = EXIT_MISMATCH
    if code != EXIT_OK:
        return code

    if result.status != "OPTIMAL":
        print(f"mapsearch: warning: FEASIBLE, not proven optimal (time limit {options.time_limit:g} s): "
              f"{result.phases[-1].name} {_plain(result.objective_value)}, bound {_plain(result.objective_bound)}, "
              f"gap {result.gap:.2%}", file=sys.stderr)
    if args.output:
        save_schedule(schedule, args.output)
        log.info("wrote %s", args.output)
    return EXIT_OK
