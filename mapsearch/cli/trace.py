"""``mapsearch trace SCHEDULE.json --format ramulator2|ramulator1|dramsim3 -o FILE`` (docs/dram.md).

Walks the schedule, writes the address stream across the DRAM link (streamed)
and prints the row-buffer figures: hits, misses, conflicts, activations and
DRAM time (``--json`` for a JSON report).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mapsearch.cli.paths import output_path, refuse_input_as_output
from mapsearch import api
from mapsearch.errors import UsageError

__all__ = ["FORMATS", "add_parser", "run"]

FORMATS = ("ramulator2", "ramulator1", "dramsim3")
FLAGS = {"format": "--format", "method": "--method", "dram": "--dram", "element_bytes": "--element-bytes",
         "request_bytes": "--request-bytes", "cycles_per_request": "--cycles-per-request"}


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "trace",
        parents=[common],
        help="write the DRAM address trace of a schedule and count its row activations",
        description="Replay a schedule's transfers across the DRAM link as byte addresses (layouts and the element "
        "order inside each tile from --layouts), count row hits/misses/conflicts/activations and DRAM time, and "
        "optionally write the trace for Ramulator 2 (LD/ST), Ramulator 1 (addr R/W) or DRAMsim3 (addr READ cycle).",
    )
    p.add_argument("schedule", metavar="SCHEDULE.json", help="schedule file (its architecture may carry a dram: entry)")
    p.add_argument("--format", metavar="FORMAT", default="ramulator2", help="one of " + "|".join(FORMATS) + " (default ramulator2)")
    p.add_argument("-o", "--output", type=output_path, metavar="FILE", help="write the trace here (streamed; without it only the counts are printed)")
    p.add_argument("--layouts", metavar="FILE.yaml", help="layouts, element order and optionally dram: (see docs/dram.md)")
    p.add_argument("--dram", metavar="PRESET", help="a DRAM preset (ddr4-3200, hbm2) replacing the architecture's dram entry")
    p.add_argument("--element-bytes", metavar="N", type=int, help="bytes per element (overrides the DRAM spec)")
    p.add_argument("--element-order", metavar="ORDER", help="'layout', 'nest' or dims outer->inner, e.g. n,c,q,s,p,r (all tensors)")
    p.add_argument("--request-bytes", metavar="N", type=int, help="merge consecutive accesses to one N-byte aligned request")
    p.add_argument("--cycles-per-request", metavar="N", type=int, default=1, help="dramsim3 issue clock step (default 1)")
    p.add_argument("--method", metavar="M", default="auto", help="auto|walk|events: how the transfers are found")
    p.add_argument("--json", action="store_true", help="print a JSON report")
    return p


def _check_options(args: argparse.Namespace) -> None:
    """Option values the trace cannot use, refused before the schedule is read (one line naming the flag); the
    numeric limits are api.trace's own."""
    if args.element_order is not None and not args.element_order.strip():
        raise UsageError("--element-order", "'layout', 'nest' or dims outer->inner, e.g. m,k,n", args.element_order)


def run(args: argparse.Namespace) -> None:
    _check_options(args)
    refuse_input_as_output(args.output, [("SCHEDULE.json", args.schedule), ("--layouts", args.layouts)])
    order = None
    if args.element_order is not None:
        order = args.element_order if args.element_order in ("layout", "nest") else tuple(args.element_order.split(","))
    result = api.trace(args.schedule, args.output, format=args.format, options=args.layouts, dram=args.dram,
                       element_bytes=args.element_bytes, element_order=order, request_bytes=args.request_bytes,
                       cycles_per_request=args.cycles_per_request, method=args.method, names=FLAGS)
    if args.json:
        out = {"schedule": args.schedule, "dram": result.dram.name, "format": args.format, "output": args.output,
               "addresses": result.addresses, "requests": result.requests, "seconds": round(result.seconds, 3),
               "rows": result.rows.to_dict()}
        print(json.dumps(out, indent=2))
    else:
        print(f"DRAM {result.dram.name}: {result.addresses} addresses, {result.requests} requests"
              + (f" -> {args.output} ({args.format})" if args.output else ""))
        print(result.rows.text())
    sys.stdout.flush()
