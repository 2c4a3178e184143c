"""``mapsearch solve``: load, solve, replay, compare, report, and write the schedule.

A chain or TeAAL workload file goes to :mod:`mapsearch.cli.solve_chain`
(every fusion level and the unfused baseline), a sparse solve to
:mod:`mapsearch.cli.solve_sparse`.

Every solved schedule is replayed in the simulator (``--replay-mode``, default
``count``) before anything is reported as a result. If the replay disagrees
with the solver's prediction in any field, each differing field goes to
stderr under ``REPLAY MISMATCH``, the exit code is 1, and no schedule file is
written: a schedule file always carries figures the simulator reproduced.

With ``--density T=SPEC`` or a compressed ``--format T=FMT`` (single einsums
only) the search uses the sparse density model instead
(:func:`mapsearch.sparse.solve.solve_sparse`: expected time, then expected
words, of the tensors' nonzeros and metadata). The schedule's dense figures
are replayed as above, and its sparse words are replayed on inputs sampled
from their densities (``--sparse-seed``; ``--no-sparse-replay`` skips it):
with only fixed-structured densities (``NofM``, ``Banded``, ``Dense``) the
replayed payload and metadata words of every link and tensor, and the
effectual ops, must equal the model's, else ``REPLAY MISMATCH`` and exit 1;
under ``Uniform`` the report gives each link's relative error.

Exit codes (raised to :func:`mapsearch.cli.main.main`): 0 ok; 1 replay
mismatch or data check failed, or the replay did not run (``REPLAY NOT
RUN``: too long to walk, or a Ctrl-C during the check: the report gives the
solver's figures, unchecked, and nothing is written); 2 bad input or an
infeasible problem (one line that names the conflicting requirements); 3 no
schedule found within the time limit (one line with the best bound).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from mapsearch.cli.paths import output_path, refuse_input_as_output
from mapsearch import api
from mapsearch.cli import solve_chain, solve_sparse
from mapsearch.atomic import check_writable
from mapsearch.cli.exits import EXIT_INTERRUPTED, EXIT_MISMATCH, CommandFailed
from mapsearch.cli.solve_progress import progress_shown
from mapsearch.cli.solving import (
    REPLAY_MODES,
    data_check_line,
    limit_text,
    mismatch_lines,
    objective_of,
    options_from_args,
    plain,
    replay_mode_of,
    simulator_failure,
    stopped_by,
)
from mapsearch.errors import MapsearchError, UsageError
from mapsearch.report.dram_rows import dram_rows_check
from mapsearch.report.solve_report import outcome_lines, render_solve_text, solve_report_dict

__all__ = ["add_parser", "run"]

log = logging.getLogger(__name__)

# Listed in the help; options_from_args checks the values (one-line error, exit 2).
SOLVE_OBJECTIVES = ("time", "words", "energy")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    solve = sub.add_parser(
        "solve",
        parents=[common],
        help="find an optimal schedule of a workload on an architecture",
        description="Find an optimal schedule (default objective: the shortest time, then the fewest words), "
        "replay it in the simulator and check that the replay agrees with the prediction.",
        epilog="exit codes: 0 ok; 1 replay mismatch (REPLAY MISMATCH: the replayed figures differ from the "
        "prediction) or the data check failed; 2 bad input or infeasible (the message names the conflicting "
        "requirements); 3 no schedule found within the time limit (the message gives the best bound); 130 "
        "interrupted (Ctrl-C: the best schedule so far is reported and, with -o, written; a second Ctrl-C aborts). "
        "A Ctrl-C during the check replay stops it: REPLAY NOT RUN, the schedule reported unchecked, nothing "
        "written, exit 1",
    )
    solve.add_argument("workload", metavar="WORKLOAD", help="workload YAML file (mapsearch's, or AccelForge, Timeloop "
                       "v0.4, ZigZag: docs/peer-formats.md)")
    solve.add_argument("architecture", metavar="ARCH", help="architecture YAML file (mapsearch's or a peer's) or preset name (" + ", ".join(api.preset_names()) + ")")
    solve.add_argument("-c", "--constraints", metavar="CONSTRAINTS",
                       help="YAML file of extra constraints (mapsearch's, or Timeloop v0.4 constraints for a Timeloop "
                       "architecture)")
    solve.add_argument("--var", metavar="NAME=VALUE", action="append", default=[],
                       help="a variable of a peer's Jinja-templated file (repeatable), e.g. --var M=64")
    solve.add_argument("--extent", metavar="NAME=N", action="append", default=[],
                       help="a rank's extent for a TeAAL workload without a shape: line (repeatable; overrides shape:)")
    solve.add_argument(
        "--objective",
        metavar="OBJECTIVE",
        help="one of " + "|".join(SOLVE_OBJECTIVES) + ": time (default): the shortest time, then the fewest words; "
        "words: the fewest words; energy: the architecture's energy model (reads and writes per level, per MAC, "
        "leakage x time; a peer's action energies) or, when --link-energy/--op-energy are given or the "
        "architecture has none, sum of per-link word costs (--link-energy) plus --op-energy per op call",
    )
    solve.add_argument("--time-limit", metavar="S", type=float, help="solver time limit in seconds (default 60)")
    solve.add_argument("--work-limit", metavar="D", type=float,
                       help="limit each phase by CP-SAT's deterministic time instead: the same result under any load")
    solve.add_argument("--no-placement", action="store_true",
                       help="keep every buffer at its level's default position (the result names the restriction)")
    solve.add_argument("--block-binding", metavar="ROLE=DIM,...",
                       help="for an op given in GEMM roles (compute.block_roles): bind these roles to these dimensions, "
                       "e.g. m=q,k=c (the other roles are searched; the result is optimal only within this binding). "
                       "Default: every binding is searched and the best one reported")
    solve.add_argument("--start", metavar="SCHEDULE.json",
                       help="warm start: a schedule file (as written by -o, e.g. a neighbour's: the same workload on a "
                       "slightly different architecture) that hints the search; it never changes the optimum, and a "
                       "schedule that is not one of this problem's is ignored (--debug says why)")
    solve.add_argument("-o", "--output", type=output_path, metavar="SCHEDULE.json", help="write the schedule here (only once the replay agreed)")
    solve.add_argument("--json", action="store_true", help="print a JSON report instead of text")
    solve.add_argument("-q", "--quiet", action="store_true",
                       help="no progress line (it shows on a terminal: phase, best time and words, bound, gap)")
    solve.add_argument(
        "--min-utilization",
        metavar="U",
        help="require utilization >= U (a number in (0, 1]: 0.8, 4/5); for --objective words or energy",
    )
    solve.add_argument("--workers", metavar="N", type=int, help="CP-SAT workers (default 1; any N is deterministic for a fixed --seed)")
    solve.add_argument("--seed", metavar="N", type=int, help="CP-SAT random seed (default 0)")
    solve.add_argument(
        "--replay-mode",
        metavar="MODE",
        default="count",
        help="one of " + "|".join(REPLAY_MODES) + ": how the solved schedule is replayed before it is "
        "reported (default count; data also computes with real values and checks the result against numpy)",
    )
    solve.add_argument(
        "--link-energy",
        metavar="NAME=COST",
        action="append",
        default=[],
        help="energy per word on a link, e.g. 'L1->L0=1/2' (repeatable; links not given cost 1); for --objective energy",
    )
    solve.add_argument("--op-energy", metavar="X", help="energy per op call (default 0); for --objective energy")
    solve.add_argument(
        "--dram-rows",
        metavar="MODE",
        help="model the DRAM rows each transfer opens (the architecture needs a dram: entry; docs/dram.md): "
        "tiebreak: fewest rows among the best schedules; before-words: time, then rows, then words; off (default)",
    )
    solve.add_argument("--max-dram-rows", metavar="N", type=int, help="require at most N DRAM row openings")
    solve.add_argument("--dram-layouts", metavar="FILE.yaml",
                       help="fix tensors' DRAM layouts (a 'layouts:' mapping as for trace); the others are chosen")
    sparse = solve.add_argument_group(
        "sparse (single einsums; docs/sparse-solver.md)",
        "With --density or a compressed --format the search minimises the expected time, then words, of the "
        "tensors' nonzeros and metadata (--objective time|words), then replays the schedule on inputs sampled "
        "from their densities.")
    sparse.add_argument(
        "--density", metavar="T=SPEC", action="append", default=[],
        help="density of input T (repeatable; others dense): dense | uniform:D,... (one per rank, the notebook's "
        "fromRandom; figures are expectations) | nofm:N/M[@OFFSET],... (one per rank) | banded:LOWER,UPPER (exact)")
    sparse.add_argument("--format", dest="sparse_format", metavar="T=FMT|PEER", action="append", default=[],
                        help="format of tensor T (repeatable; others dense): CSR, CSF, COO, CISS, dense or one letter "
                        "U/C per rank, e.g. UC; or, without '=', the peer format of WORKLOAD and ARCH when their "
                        "content does not say it: " + ", ".join(api.PEER_FORMATS) + " (docs/peer-formats.md)")
    sparse.add_argument("--sparse-seed", metavar="N", type=int,
                        help="seed of the sampled inputs of the sparse replay (input i uses N+i; default 0)")
    sparse.add_argument("--no-sparse-replay", action="store_true",
                        help="skip the sparse replay on sampled data (the dense replay still runs)")
    return solve


def paths_lines(result: api.SolveResult, architecture: str) -> list[str]:
    """The compute paths of a tree architecture: each one's outcome, the chosen one marked."""
    return [f"compute paths of {architecture}:"] + outcome_lines(
        ((o.compute_name, o.result, f"skipped ({o.skipped})") for o in result.paths), result.schedule, plain)


# --------------------------------------------------------------------------
# The command.
# --------------------------------------------------------------------------


def run(args: argparse.Namespace) -> None:
    """Run ``mapsearch solve``; a failure raises (:mod:`mapsearch.cli.exits`).

    It runs under :class:`~mapsearch.solve.interrupt.Interruptible`: the first
    Ctrl-C stops the search and the best schedule so far is replayed,
    reported and (with ``-o``) written as usual, then the exit code is 130;
    a second Ctrl-C aborts at once and nothing is written. A first Ctrl-C
    during the check replay stops the replay: the schedule is reported with
    its solver figures, ``REPLAY NOT RUN``, nothing is written, and the exit
    code is 1 (as for any check that did not run). On a terminal a progress
    line shows unless ``--quiet``.
    """
    if getattr(args, "output", None):
        refuse_input_as_output(args.output, _input_files(args))  # -o WORKLOAD would replace the workload
        check_writable(args.output)  # before the solve, not after it

    def stopping() -> None:
        print(f"\nmapsearch: interrupted: stopping {it.doing}; Ctrl-C again to abort", file=sys.stderr)

    with progress_shown(getattr(args, "quiet", False)), api.Interruptible(on_first=stopping) as it:
        it.call(lambda: _run(args))
    if it.interrupted:
        written = f"; written to {args.output}" if getattr(args, "output", None) else ""
        raise CommandFailed(EXIT_INTERRUPTED, [f"interrupted: the report is of the best schedule found before Ctrl-C"
                                               f"{written}"])


def _input_files(args: argparse.Namespace) -> list[tuple[str, object]]:
    """Every file the solve reads, named as the command line names it: -o must replace none of them."""
    return [("WORKLOAD", args.workload), ("ARCH", args.architecture),
            ("--constraints", getattr(args, "constraints", None)), ("--start", getattr(args, "start", None)),
            ("--dram-layouts", getattr(args, "dram_layouts", None))]


def _peer_format(args: argparse.Namespace) -> str | None:
    """The ``--format`` value that names a peer's format; the ``T=FMT`` items stay in ``args`` for the sparse solve."""
    items = list(getattr(args, "sparse_format", None) or [])
    names = [f for f in items if "=" not in f]
    for f in names:
        if f not in api.PEER_FORMATS:
            raise UsageError("--format", f"a peer's format ({', '.join(api.PEER_FORMATS)}) or T=FMT for a sparse "
                             f"tensor", f)
    if len(set(names)) > 1:
        raise UsageError("--format", "one peer's format at a time", ", ".join(names))
    args.sparse_format = [f for f in items if "=" in f]
    return names[0] if names else None


def _peer_problem(args: argparse.Namespace) -> api.LoadedProblem | None:
    """The problem read with the peers' readers when WORKLOAD or ARCH is a peer's file (or ``--format`` names one)."""
    fmt = _peer_format(args)
    variables = dict(api.parse_var(v) for v in getattr(args, "var", None) or [])
    files = (args.workload, args.architecture)
    if not any(api.peer_format_of(f, variables, fmt) for f in files):
        if fmt is not None:
            raise UsageError("--format", f"WORKLOAD or ARCH in {fmt}'s format", " and ".join(map(str, files)))
        if variables:
            print("mapsearch: warning: --var only applies to a peer's Jinja-templated file; ignored", file=sys.stderr)
        return None
    flags = solve_sparse.sparse_flags(args)
    if flags:
        raise MapsearchError(f"{'/'.join(flags)}: the sparse solve takes mapsearch's own workload files")
    if getattr(args, "extent", None):
        raise UsageError("--extent", "a TeAAL workload (a peer's workload gives its extents in the file)", args.workload)
    problem = api.load_problem(args.workload, args.architecture, getattr(args, "constraints", None) or None,
                               format=fmt, variables=variables)
    for note in problem.notes:  # what the model expresses differently from the peer's, before any result
        print(f"mapsearch: note: {note}", file=sys.stderr)
    return problem


def _no_start(args: argparse.Namespace, what: str) -> None:
    """``--start`` hints the dense solve of one einsum; elsewhere it is dropped with a warning."""
    if getattr(args, "start", None):
        print(f"mapsearch: warning: --start only applies to the dense solve of one einsum, not to {what}; ignored",
              file=sys.stderr)
        args.start = None


def _run(args: argparse.Namespace) -> None:
    problem = _peer_problem(args)
    if problem is not None and problem.is_chain:
        _no_start(args, "a chain")
        return solve_chain.run(args, problem)
    flags = solve_sparse.sparse_flags(args)
    if problem is None and api.is_chain_file(args.workload):  # a chain or a TeAAL file
        if flags:
            raise MapsearchError(f"{'/'.join(flags)}: the sparse solve takes a single-einsum workload; "
                                 f"{args.workload} is a chain or TeAAL file")
        _no_start(args, "a chain")
        return solve_chain.run(args)
    if getattr(args, "extent", None):
        raise UsageError("--extent", "a TeAAL workload (other workloads give their extents in the file)", args.workload)
    objective_of(args)  # a bad objective fails before any file is read
    mode = replay_mode_of(args)
    if flags:
        if solve_sparse.run(args, mode, flags):
            return
    else:
        solve_sparse.warn_sparse_only(args)

    if problem is not None:  # the peer's files as read, with the constraints they carry
        arch = problem.architecture
        needs_workload = getattr(args, "dram_layouts", None) or getattr(args, "block_binding", None)
        workload = problem.workload.workload if needs_workload else None
        sources = (problem.workload, problem.architecture, problem.constraints)
    else:
        arch = api.load_architecture(args.architecture)
        needs_workload = getattr(args, "dram_layouts", None) or getattr(args, "block_binding", None)
        workload = api.load_workload(args.workload) if needs_workload else None
        # The paths, not the loaded objects: errors name the file, and a tree of one path keeps its tensors rules.
        sources = (args.workload, args.architecture, getattr(args, "constraints", None) or None)
    options = options_from_args(args, arch, workload)
    try:
        result = api.solve(*sources, options=options, replay_mode=mode, strict=False)
    except api.Interrupted as e:  # Ctrl-C during the check replay: solve.interrupt.CheckInterrupted, with the result
        if getattr(e, "result", None) is None:
            raise
        _report_unchecked(args, e, options, mode)
    except api.SimulatorError as e:
        raise simulator_failure(e, mode) from e
    _report(args, result, options, mode)


def _report_unchecked(args: argparse.Namespace, stopped: api.Interrupted, options: api.SolveOptions,
                      mode: str) -> None:
    """A Ctrl-C stopped the check replay (``stopped``: a :class:`~mapsearch.solve.interrupt.CheckInterrupted`):
    report the schedule with its solver figures, unchecked, write nothing, and fail as a check that did not
    run does (exit 1)."""
    result = stopped.result  # type: ignore[attr-defined]
    why = " ".join(str(stopped).split())
    paths_note = paths_lines(result, args.architecture) if result.paths else []
    if args.json:
        report = solve_report_dict(result, None, mode=mode, not_run=why)
        if paths_note:
            report["compute_paths"] = paths_note
        print(json.dumps(report, indent=2))
    else:
        if paths_note:
            print("\n".join(paths_note))
        print(render_solve_text(result, None, mode=mode, not_run=why), end="")
    if result.status == "FEASIBLE":  # the Ctrl-C came after the search: the limit stopped it, unless one before
        _feasible_warning(result, "interrupted by Ctrl-C" if result.interrupted else limit_text(options))
    raise CommandFailed(EXIT_MISMATCH, [f"REPLAY NOT RUN: {why}; the schedule is not written"]) from stopped


def _feasible_warning(result: api.SolveResult, why: str) -> None:
    bound = "no bound yet" if result.objective_bound == 0 else f"bound {plain(result.objective_bound)}"
    print(f"mapsearch: warning: FEASIBLE, not proven optimal ({why}): "
          f"{result.phases[-1].name} {plain(result.objective_value)}, {bound}, gap {result.gap:.2%}", file=sys.stderr)


def _report(args: argparse.Namespace, result: api.SolveResult, options: api.SolveOptions, mode: str) -> None:
    """Print the report, fail on a replay mismatch, warn on a search cut short, write the schedule."""
    schedule, replayed = result.schedule, result.replayed
    paths_note = paths_lines(result, args.architecture) if result.paths else []

    mismatches = list(result.mismatches)
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

    failures = mismatch_lines(f"the {mode} replay disagrees with the solver's prediction", mismatches) \
        if mismatches else []
    failures += data_check_line(replayed, "replayed")
    if failures:
        raise CommandFailed(EXIT_MISMATCH, failures)

    if result.status == "FEASIBLE":
        _feasible_warning(result, stopped_by(result, options))
    if args.output:
        api.save_schedule(schedule, args.output)
        log.info("wrote %s", args.output)
