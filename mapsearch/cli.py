"""The ``mapsearch`` command.

    mapsearch solve WORKLOAD.yaml ARCH.yaml [-c CONSTRAINTS] [--objective time|words|energy]
                    [--time-limit S] [-o SCHEDULE.json] [--json] [--min-utilization U]
                    [--workers N] [--seed N] [--replay-mode count|events|data]
                    [--link-energy NAME=COST ...] [--op-energy X]
                    [--dram-rows off|tiebreak|before-words] [--max-dram-rows N] [--dram-layouts FILE.yaml]
                    [--density T=SPEC ...] [--format T=FMT ...] [--sparse-seed N] [--no-sparse-replay]
    mapsearch replay SCHEDULE.json [--check] [--json] [--mode count|data|events]
    mapsearch export SCHEDULE.json [--format loopnest|timeloop|json] [-o FILE]
    mapsearch trace SCHEDULE.json [--format ramulator2|ramulator1|dramsim3] [-o FILE] [--layouts FILE.yaml]
                    [--dram PRESET] [--element-order ORDER] [--request-bytes N] [--json]
    mapsearch sweep SWEEP.yaml [--out DIR] [--workers N] [--scheduler tcp://HOST:PORT]
                    [--retry-failed] [--time-limit S] [--export-only] [-q]
    mapsearch characterize MODEL PROFILE [PROFILE ...] [--out DIR] [--workers N]
                    [--scheduler tcp://HOST:PORT] [--time-limit S] [--top N] [--no-plot]

Exit codes: 0 success; 1 the replay disagrees with the prediction (``--check``,
and always after ``solve``) or the data check failed; 2 bad input, an
infeasible problem or any other deliberate error
(:class:`~mapsearch.errors.MapsearchError`), printed as one line
``mapsearch: <message>`` without a traceback unless ``--debug`` is given;
3 ``solve`` found no schedule within its time limit.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from fractions import Fraction
from typing import Any, Sequence

from mapsearch import __version__
from mapsearch.errors import MapsearchError

log = logging.getLogger("mapsearch")

REPLAY_MODES = ("count", "data", "events")
# Listed in the solve help; mapsearch.solve.cli_solve checks the values (one-line error, exit 2).
SOLVE_OBJECTIVES = ("time", "words", "energy")
SOLVE_REPLAY_MODES = ("count", "events", "data")


def _preset_names() -> tuple[str, ...]:
    """The architecture presets, for the help text (none if the package lacks them)."""
    try:
        from mapsearch.presets import preset_names
    except ImportError:  # pragma: no cover - a build without presets
        return ()
    return preset_names()


# --------------------------------------------------------------------------
# replay
# --------------------------------------------------------------------------


def _replay_module() -> Any:
    try:
        replay_module = importlib.import_module("mapsearch.sim.replay")
    except ModuleNotFoundError as e:
        if e.name in ("mapsearch.sim", "mapsearch.sim.replay"):
            raise MapsearchError("the replay is not available in this build (mapsearch.sim.replay is missing)") from e
        raise
    return replay_module


def _run_replay(schedule: Any, mode: str | None) -> tuple[Any, str]:
    """Replay in ``mode``; with no mode, 'count' where the simulator has it, else 'events'."""
    module = _replay_module()
    if mode is not None:
        return module.replay(schedule, mode=mode), mode
    try:
        return module.replay(schedule, mode="count"), "count"
    except (NotImplementedError, ValueError, ModuleNotFoundError) as e:
        # Only "count is not there (yet)" falls back; any other error is real.
        missing_module = isinstance(e, ModuleNotFoundError) and (e.name or "").startswith("mapsearch.sim")
        unknown_mode = isinstance(e, ValueError) and "mode" in str(e).lower()
        if not (missing_module or unknown_mode or isinstance(e, NotImplementedError)):
            raise
        log.debug("count mode unavailable (%s); replaying in events mode", e)
        return module.replay(schedule, mode="events"), "events"


def _plain(value: object) -> object:
    """A JSON-ready copy of a figure value (Fractions as 'a/b' text, tuples as lists)."""
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _load_any_schedule(path: str):
    """A one-einsum schedule, or a fused chain's (by the file's ``format``)."""
    from mapsearch.schedule import fused_json
    from mapsearch.schedule.json_io import read_json, schedule_from_dict

    data = read_json(path)
    if isinstance(data, dict) and data.get("format") == fused_json.FORMAT:
        return fused_json.fused_from_dict(data, str(path))
    return schedule_from_dict(data, str(path))


def _cmd_replay(args: argparse.Namespace) -> int:
    from mapsearch.report.json_report import report_dict
    from mapsearch.report.text import render_text
    from mapsearch.schedule.figures import differences

    schedule = _load_any_schedule(args.schedule)
    if args.check and schedule.predicted is None:
        raise MapsearchError(f"{args.schedule}: --check needs the schedule's predicted figures; it has none")
    result, mode = _run_replay(schedule, args.mode)
    figures = result.figures
    data_ok = getattr(result, "data_ok", None)
    max_abs_error = getattr(result, "max_abs_error", None)

    mismatches = differences(schedule.predicted, figures) if args.check else []
    rows = None
    if getattr(schedule, "dram", None) is not None:
        from mapsearch.report.dram_rows import dram_rows_check

        rows = dram_rows_check(schedule)
        if rows is not None and args.check:
            mismatches += rows.mismatches
    if args.json:
        out = report_dict(figures, schedule.architecture, data_ok=data_ok, max_abs_error=max_abs_error)
        out = {"schedule": str(args.schedule), "mode": mode, **out}
        if rows is not None:
            out["dram_rows"] = rows.to_dict()
        if args.check:
            out["check"] = {
                "ok": not mismatches,
                "mismatches": [{"field": f, "predicted": _plain(p), "replayed": _plain(r)} for f, p, r in mismatches],
            }
        print(json.dumps(out, indent=2))
    else:
        name = schedule.graph.name if hasattr(schedule, "graph") else schedule.workload.name
        title = f"{name} on {schedule.architecture.name}: replay of {args.schedule} ({mode} mode)"
        print(render_text(figures, schedule.architecture, title=title, data_ok=data_ok, max_abs_error=max_abs_error), end="")
        if rows is not None:
            print(rows.text(), end="")
        if args.check and not mismatches:
            print("check: the replay matches the predicted figures")

    status = 0
    for field, predicted, replayed in mismatches:
        print(f"mapsearch: replay mismatch in {field}: predicted {_plain(predicted)}, replayed {_plain(replayed)}", file=sys.stderr)
        status = 1
    if data_ok is False:
        err = "" if max_abs_error is None else f" (max abs error {max_abs_error:.3g})"
        print(f"mapsearch: data check failed: the replayed output differs from the reference{err}", file=sys.stderr)
        status = 1
    return status


# --------------------------------------------------------------------------
# solve (implemented in mapsearch.solve.cli_solve)
# --------------------------------------------------------------------------


def _cmd_solve(args: argparse.Namespace) -> int:
    """Hand over to ``mapsearch.solve.cli_solve.run(args)``; its return value is the exit code."""
    try:
        cli_solve = importlib.import_module("mapsearch.solve.cli_solve")
    except ModuleNotFoundError as e:
        if e.name in ("mapsearch.solve", "mapsearch.solve.cli_solve"):
            raise MapsearchError("the solve subcommand is not available in this build (mapsearch.solve.cli_solve is missing)") from e
        raise
    code = cli_solve.run(args)
    return 0 if code is None else int(code)


# --------------------------------------------------------------------------
# export
# --------------------------------------------------------------------------

EXPORT_FORMATS = ("loopnest", "timeloop", "json")


def _write_atomic(path: str, text: str) -> None:
    from mapsearch.atomic import write_text_atomic

    write_text_atomic(path, text)


def _cmd_export(args: argparse.Namespace) -> int:
    from mapsearch.schedule.json_io import dumps_schedule, load_schedule

    if args.format not in EXPORT_FORMATS:
        raise MapsearchError(f"--format: expected one of {', '.join(EXPORT_FORMATS)}, got {args.format!r}")
    schedule = load_schedule(args.schedule)
    if args.format == "loopnest":
        from mapsearch.report.loopnest import loop_nest_code

        text = loop_nest_code(schedule)
    elif args.format == "timeloop":
        from mapsearch.report.timeloop import timeloop_mapping, timeloop_yaml

        text = timeloop_yaml(schedule)
        for warning in timeloop_mapping(schedule)["warnings"]:
            print(f"mapsearch: warning: {warning}", file=sys.stderr)
    else:
        text = dumps_schedule(schedule)
    if args.output:
        _write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_trace(args: argparse.Namespace) -> int:
    """Hand over to ``mapsearch.dram.cli_trace.run(args)`` (docs/dram.md)."""
    from mapsearch.dram.cli_trace import run

    return run(args)


def _cmd_sweep(args: argparse.Namespace) -> int:
    """Hand over to ``mapsearch.sweep.cli_sweep.run(args)``; its return value is the exit code."""
    from mapsearch.sweep.cli_sweep import run

    return run(args)


def _cmd_characterize(args: argparse.Namespace) -> int:
    """Hand over to ``mapsearch.characterize.cli.run(args)``; its return value is the exit code."""
    from mapsearch.characterize.cli import run

    return run(args)


# --------------------------------------------------------------------------
# The parser and main.
# --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mapsearch",
        description="Optimal schedules (tilings, loop orders, residency) of einsums on memory hierarchies, and their replay.",
    )
    parser.add_argument("--version", action="version", version=f"mapsearch {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logging")
    # Subcommands accept --debug too; SUPPRESS keeps one given before the subcommand.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks and debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    solve = sub.add_parser(
        "solve",
        parents=[common],
        help="find an optimal schedule of a workload on an architecture",
        description="Find an optimal schedule (default objective: the shortest time, then the fewest words), "
        "replay it in the simulator and check that the replay agrees with the prediction.",
        epilog="exit codes: 0 ok; 1 replay mismatch (REPLAY MISMATCH: the replayed figures differ from the "
        "prediction) or the data check failed; 2 bad input or infeasible (the message names the conflicting "
        "requirements); 3 no schedule found within the time limit (the message gives the best bound)",
    )
    solve.add_argument("workload", metavar="WORKLOAD", help="workload YAML file (mapsearch's, or AccelForge, Timeloop "
                       "v0.4, ZigZag: docs/peer-formats.md)")
    solve.add_argument("architecture", metavar="ARCH", help="architecture YAML file or preset name (" + ", ".join(_preset_names()) + ")")
    solve.add_argument("-c", "--constraints", metavar="CONSTRAINTS", help="YAML file of extra constraints")
    solve.add_argument(
        "--objective",
        metavar="OBJECTIVE",
        help="one of " + "|".join(SOLVE_OBJECTIVES) + ": time (default): the shortest time, then the fewest words; "
        "words: the fewest words; energy: sum of per-link word costs (--link-energy) plus --op-energy per op call",
    )
    solve.add_argument("--time-limit", metavar="S", type=float, help="solver time limit in seconds (default 60)")
    solve.add_argument("--work-limit", metavar="D", type=float,
                       help="limit each phase by CP-SAT's deterministic time instead: the same result under any load")
    solve.add_argument("--no-placement", action="store_true",
                       help="keep every buffer at its level's default position (the result names the restriction)")
    solve.add_argument("-o", "--output", metavar="SCHEDULE.json", help="write the schedule here (only once the replay agreed)")
    solve.add_argument("--json", action="store_true", help="print a JSON report instead of text")
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
        help="one of " + "|".join(SOLVE_REPLAY_MODES) + ": how the solved schedule is replayed before it is "
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
                        "content does not say it: accelforge, timeloop or zigzag (docs/peer-formats.md)")
    solve.add_argument("--var", metavar="NAME=VALUE", action="append", default=[],
                       help="a variable of a peer's Jinja-templated file (repeatable), e.g. --var M=64")
    sparse.add_argument("--sparse-seed", metavar="N", type=int,
                        help="seed of the sampled inputs of the sparse replay (input i uses N+i; default 0)")
    sparse.add_argument("--no-sparse-replay", action="store_true",
                        help="skip the sparse replay on sampled data (the dense replay still runs)")
    solve.set_defaults(func=_cmd_solve)

    replay = sub.add_parser(
        "replay",
        parents=[common],
        help="replay a schedule in the explicit-cache simulator and report its figures",
        description="Replay a schedule file and report what the simulator counts.",
    )
    replay.add_argument("schedule", metavar="SCHEDULE.json", help="schedule file (as written by solve -o)")
    replay.add_argument("--check", action="store_true", help="compare with the schedule's predicted figures; exit 1 on a mismatch")
    replay.add_argument("--json", action="store_true", help="print a JSON report instead of text")
    replay.add_argument(
        "--mode",
        metavar="MODE",
        help="one of " + "|".join(REPLAY_MODES) + " (or another mode the simulator lists): count: words and calls "
        "only; data: also compute with real data and check the result; events: walk every load/store/run event "
        "in the explicit-cache simulator (default: count where available, else events)",
    )
    replay.set_defaults(func=_cmd_replay)

    export = sub.add_parser(
        "export",
        parents=[common],
        help="write a schedule as loop-nest pseudo-code, a Timeloop mapping or schedule JSON",
        description="Export a schedule file: loopnest (Python-like pseudo-code with real bounds, loads and "
        "stores), timeloop (a Timeloop v0.4 mapping YAML; remainder tiles are padded, with a warning) or json "
        "(the schedule file itself, checked and rewritten).",
    )
    export.add_argument("schedule", metavar="SCHEDULE.json", help="schedule file (as written by solve -o)")
    export.add_argument(
        "--format", metavar="FORMAT", default="loopnest", help="one of " + "|".join(EXPORT_FORMATS) + " (default loopnest)"
    )
    export.add_argument("-o", "--output", metavar="FILE", help="write here (atomically) instead of to stdout")
    export.set_defaults(func=_cmd_export)

    from mapsearch.dram.cli_trace import add_parser as add_trace_parser

    add_trace_parser(sub, common).set_defaults(func=_cmd_trace)

    from mapsearch.sweep.cli_sweep import add_parser as add_sweep_parser

    add_sweep_parser(sub, common).set_defaults(func=_cmd_sweep)

    from mapsearch.characterize.cli import add_parser as add_characterize_parser

    add_characterize_parser(sub, common).set_defaults(func=_cmd_characterize)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = build_parser().parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="mapsearch: %(levelname)s: %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return args.func(args)
    except MapsearchError as e:
        if debug:
            raise
        message = " ".join(str(e).split()) or type(e).__name__
        print(f"mapsearch: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mapsearch: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
