"""``mapsearch export SCHEDULE.json [--format loopnest|timeloop|json] [-o FILE]``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mapsearch import api
from mapsearch.atomic import write_text_atomic
from mapsearch.errors import MapsearchError
from mapsearch.report import loopnest, timeloop

__all__ = ["EXPORT_FORMATS", "add_parser", "run"]

EXPORT_FORMATS = ("loopnest", "timeloop", "json")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "export",
        parents=[common],
        help="write a schedule as loop-nest pseudo-code, a Timeloop mapping or schedule JSON",
        description="Export a schedule file: loopnest (Python-like pseudo-code with real bounds, loads and "
        "stores), timeloop (a Timeloop v0.4 mapping YAML; remainder tiles are padded, with a warning) or json "
        "(the schedule file itself, checked and rewritten).",
    )
    p.add_argument("schedule", metavar="SCHEDULE.json", help="schedule file (as written by solve -o)")
    p.add_argument(
        "--format", metavar="FORMAT", default="loopnest", help="one of " + "|".join(EXPORT_FORMATS) + " (default loopnest)"
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write here (atomically) instead of to stdout")
    return p


def run(args: argparse.Namespace) -> None:
    if args.format not in EXPORT_FORMATS:
        raise MapsearchError(f"--format: expected one of {', '.join(EXPORT_FORMATS)}, got {args.format!r}")
    schedule = api.load_schedule(args.schedule)
    if isinstance(schedule, api.FusedSchedule):
        raise MapsearchError(f"{args.schedule}: export takes the schedule of one einsum; this is a fused chain's")
    if args.format == "loopnest":
        text = loopnest.loop_nest_code(schedule)
    elif args.format == "timeloop":
        text = timeloop.timeloop_yaml(schedule)
        for warning in timeloop.timeloop_mapping(schedule)["warnings"]:
            print(f"mapsearch: warning: {warning}", file=sys.stderr)
    else:
        text = api.dumps_schedule(schedule)
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
