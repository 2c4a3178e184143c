"""``mapsearch trace SCHEDULE.json --format ramulator2|ramulator1|dramsim3 -o FILE`` (docs/dram.md).

Walks the schedule, writes the address stream across the DRAM link (streamed)
and prints the row-buffer figures: hits, misses, conflicts, activations and
DRAM time (``--json`` for a JSON report).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from mapsearch.errors import MapsearchError

FORMATS = ("ramulator2", "ramulator1", "dramsim3")


def add_parser(sub, common) -> argparse.ArgumentParser:
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
    p.add_argument("-o", "--output", metavar="FILE", help="write the trace here (streamed; without it only the counts are printed)")
    p.add_argument("--layouts", metavar="FILE.yaml", help="layouts, element order and optionally dram: (see docs/dram.md)")
    p.add_argument("--dram", metavar="PRESET", help="a DRAM preset (ddr4-3200, hbm2) replacing the architecture's dram entry")
    p.add_argument("--element-bytes", metavar="N", type=int, help="bytes per element (overrides the DRAM spec)")
    p.add_argument("--element-order", metavar="ORDER", help="'layout', 'nest' or dims outer->inner, e.g. n,c,q,s,p,r (all tensors)")
    p.add_argument("--request-bytes", metavar="N", type=int, help="merge consecutive accesses to one N-byte aligned request")
    p.add_argument("--cycles-per-request", metavar="N", type=int, default=1, help="dramsim3 issue clock step (default 1)")
    p.add_argument("--method", metavar="M", default="auto", help="auto|walk|events: how the transfers are found")
    p.add_argument("--json", action="store_true", help="print a JSON report")
    return p


def run(args: argparse.Namespace) -> int:
    from mapsearch.dram.geometry import PRESETS
    from mapsearch.dram.options import load_trace_options
    from mapsearch.dram.rowbuffer import RowBuffer
    from mapsearch.dram.trace import coalesce, write_trace
    from mapsearch.schedule.json_io import load_schedule
    from mapsearch.sim.dram_trace import address_chunks

    if args.format not in FORMATS:
        raise MapsearchError(f"--format: expected one of {', '.join(FORMATS)}, got {args.format!r}")
    if args.method not in ("auto", "walk", "events"):
        raise MapsearchError(f"--method: expected auto, walk or events, got {args.method!r}")
    if args.request_bytes is not None and args.request_bytes < 1:
        raise MapsearchError(f"--request-bytes: expected >= 1, got {args.request_bytes}")
    if args.cycles_per_request < 1:
        raise MapsearchError(f"--cycles-per-request: expected >= 1, got {args.cycles_per_request}")
    if args.output:
        from mapsearch.atomic import check_writable

        check_writable(args.output)
    schedule = load_schedule(args.schedule)
    override = None
    if args.dram is not None:
        if args.dram.lower() not in PRESETS:
            raise MapsearchError(f"--dram: expected one of {', '.join(sorted(PRESETS))}, got {args.dram!r}")
        override = PRESETS[args.dram.lower()]
    opts = load_trace_options(schedule, args.layouts, override)
    dram = opts.dram
    if args.element_bytes is not None:
        if args.element_bytes < 1 or args.element_bytes & (args.element_bytes - 1):
            raise MapsearchError(f"--element-bytes: expected a power of two >= 1, got {args.element_bytes}")
        dram = dram.with_(element_bytes=args.element_bytes)
        from mapsearch.dram.layout import Layouts

        opts.layouts = Layouts(schedule.workload, dram, {t: p.spec for t, p in opts.layouts.placements.items()})
    order = opts.element_order
    if args.element_order:
        order = args.element_order if args.element_order in ("layout", "nest") else tuple(args.element_order.split(","))
    rb = RowBuffer(dram, schedule.workload.tensor_names)
    counted = {"addresses": 0}
    t0 = time.perf_counter()

    def stream():
        try:
            for ch in address_chunks(schedule, opts.layouts, order, dram=dram, dram_level=opts.dram_level, method=args.method):
                counted["addresses"] += len(ch.addresses)
                if args.request_bytes is None:
                    rb.feed(ch.addresses, ch.is_write, ch.tensor)
                yield ch.addresses, ch.is_write
        except ValueError as e:
            raise MapsearchError(str(e)) from None

    source = stream()
    if args.request_bytes is not None:
        source = _counted(coalesce(source, args.request_bytes), rb)
    requests = 0
    if args.output:
        try:
            requests = write_trace(source, args.output, args.format, cycles_per_request=args.cycles_per_request)
        except OSError as e:
            raise MapsearchError(f"{args.output}: cannot write: {e.strerror or e}") from None
    else:
        for a, _ in source:
            requests += len(a)
    seconds = time.perf_counter() - t0
    stats = rb.stats()
    if args.json:
        out = {"schedule": args.schedule, "dram": dram.name, "format": args.format, "output": args.output,
               "addresses": counted["addresses"], "requests": requests, "seconds": round(seconds, 3), "rows": stats.to_dict()}
        print(json.dumps(out, indent=2))
    else:
        print(f"DRAM {dram.name}: {counted['addresses']} addresses, {requests} requests"
              + (f" -> {args.output} ({args.format})" if args.output else ""))
        print(stats.text())
    sys.stdout.flush()
    return 0


def _counted(chunks, rb):
    for a, w in chunks:
        rb.feed(a, w)
        yield a, w
