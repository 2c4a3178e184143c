"""``mapsearch export SCHEDULE.json [--format loopnest|timeloop|accelforge|json] [-o FILE|DIR]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mapsearch.cli.paths import output_path, refuse_input_as_output
from mapsearch import api
from mapsearch.atomic import check_writable, write_text_atomic
from mapsearch.errors import MapsearchError
from mapsearch.report import loopnest
from mapsearch.report.export_accelforge import accelforge_files, accelforge_yaml
from mapsearch.report.export_timeloop import timeloop_files, timeloop_yaml

__all__ = ["EXPORT_FORMATS", "add_parser", "run"]

EXPORT_FORMATS = ("loopnest", "timeloop", "accelforge", "json")
_PEERS = {"timeloop": (timeloop_files, timeloop_yaml), "accelforge": (accelforge_files, accelforge_yaml)}


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "export",
        parents=[common],
        help="write a schedule as loop-nest pseudo-code, Timeloop or AccelForge input files, or schedule JSON",
        description="Export a schedule file: loopnest (Python-like pseudo-code with real bounds, loads and "
        "stores), timeloop (Timeloop v0.4 problem, architecture and mapping: residual factors for remainder "
        "tiles, spatial factors for splits; a schedule Timeloop cannot state exactly is refused), accelforge "
        "(AccelForge architecture, workload and LoopTree mapping, buffers at their positions) or json (the "
        "schedule file itself, checked and rewritten). For timeloop and accelforge, -o DIR writes the three "
        "files into DIR, -o FILE.yaml (or stdout) one file with the three sections.",
    )
    p.add_argument("schedule", metavar="SCHEDULE.json", help="schedule file (as written by solve -o)")
    p.add_argument(
        "--format", metavar="FORMAT", default="loopnest", help="one of " + "|".join(EXPORT_FORMATS) + " (default loopnest)"
    )
    p.add_argument("-o", "--output", type=output_path, metavar="FILE|DIR",
                   help="write here (atomically) instead of to stdout; a DIR (no .yaml suffix) for timeloop and "
                   "accelforge gets problem/arch/mapping (timeloop) or arch/workload/mapping (accelforge) .yaml")
    return p


def _peer_texts(fmt: str, schedule, output: str | None) -> dict[str, str]:
    """The peer files to write: one combined YAML (stdout or ``-o X.yaml``), or the three files of ``-o DIR``."""
    files, combined = _PEERS[fmt]
    if output is None or output.endswith((".yaml", ".yml")):
        return {output or "-": combined(schedule)}
    return {str(Path(output) / name): text for name, text in files(schedule).items()}


def _check_replays(source: str, schedule) -> None:
    """Refuse, as ``mapsearch replay`` does, a schedule the simulator rejects (a level overflows, a tensor is
    not resident): the count replay runs before anything is written. A schedule too long to walk is exported
    unchecked, with a warning (replay refuses to judge it either way)."""
    try:
        api.replay(schedule, mode="count")
    except api.WalkTooLong as e:
        print(f"mapsearch: warning: {source}: not checked in the simulator ({' '.join(str(e).split())})",
              file=sys.stderr)
    except api.SimulatorError as e:
        raise MapsearchError(f"{source}: {e}") from e


# The chain files ``solve -o`` writes, which ``replay`` reads and export does not: what each is, its format, its parts.
_CHAIN_FILES = {api.FusedSchedule: ("a fused chain's schedule", "mapsearch-fused-schedule", "stages"),
                api.UnfusedChain: ("an unfused chain", "mapsearch-unfused-chain", "stages"),
                api.ChainPlan: ("a partly fused chain's plan", "mapsearch-chain-plan", "groups")}


def run(args: argparse.Namespace) -> None:
    if args.format not in EXPORT_FORMATS:
        raise MapsearchError(f"--format: expected one of {', '.join(EXPORT_FORMATS)}, got {args.format!r}")
    writes_a_directory = args.format in _PEERS and args.output and not args.output.endswith((".yaml", ".yml"))
    refuse_input_as_output(args.output, [("SCHEDULE.json", args.schedule)])
    if args.output and not writes_a_directory:
        check_writable(args.output)  # before the schedule is read, not after the export (a DIR is made below)
    schedule = api.load_schedule(args.schedule)
    chain = _CHAIN_FILES.get(type(schedule))
    if chain is not None:
        what, kind, parts = chain
        raise MapsearchError(f"{args.schedule}: export takes one einsum's schedule (format mapsearch-schedule); this "
                             f"is {what} ({kind}): replay it, or export one of its {parts} saved as a file of its own")
    _check_replays(args.schedule, schedule)
    if args.format in _PEERS:
        texts = _peer_texts(args.format, schedule, args.output)  # every text first: nothing is written on an error
        for path in texts:  # -o DIR: none of its three files may be the schedule
            if path != "-":
                refuse_input_as_output(path, [("SCHEDULE.json", args.schedule)])
        if "-" in texts:
            sys.stdout.write(texts["-"])
            return
        if writes_a_directory:
            try:
                Path(args.output).mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise MapsearchError(f"{args.output}: cannot create the directory ({e.strerror})") from None
        for path, text in texts.items():
            write_text_atomic(path, text)
        return
    text = loopnest.loop_nest_code(schedule) if args.format == "loopnest" else api.dumps_schedule(schedule)
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
