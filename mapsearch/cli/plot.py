"""``mapsearch plot RESULTS [--kind parameter|roofline|lower-bound] [--param PATH] [--link NAME] [-o FILE.png]``.

Draws a sweep's results (its ``results.jsonl``, or the sweep's output
directory): words and utilization against the swept parameter, the cases on
their architecture's roofline, or the words against a lower bound
(:mod:`mapsearch.report.plots`). matplotlib is an optional extra; without it
the command says so in one line (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mapsearch.cli.paths import output_path, refuse_input_as_output
from mapsearch.report.plots import PLOT_KINDS, load_rows, plot_rows

__all__ = ["add_parser", "run"]


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "plot",
        parents=[common],
        help="plot a sweep's results: against the swept parameter, on a roofline, or against a lower bound",
        description="Plot the rows of a sweep (DIR/results.jsonl, or the sweep's output DIR) to a PNG "
        "(needs matplotlib: pip install 'mapsearch[plot]').",
    )
    p.add_argument("results", metavar="RESULTS", help="a sweep's results.jsonl, or its output directory")
    p.add_argument("--kind", metavar="KIND", help="one of " + "|".join(PLOT_KINDS) + " (default: parameter when "
                   "the sweep varies one, else roofline)")
    p.add_argument("--param", metavar="PATH", help="the swept parameter for --kind parameter, e.g. "
                   "architectures.L1.capacity")
    p.add_argument("--link", metavar="NAME", help="the link the lower bound is for (--kind lower-bound)")
    p.add_argument("-o", "--output", type=output_path, metavar="FILE.png", help="where to write (default: KIND.png beside RESULTS)")
    return p


def run(args: argparse.Namespace) -> None:
    results = Path(args.results)
    if results.is_dir():
        results = results / "results.jsonl"
    refuse_input_as_output(args.output, [("RESULTS", str(results))])  # -o results.jsonl would replace the rows
    rows = load_rows(results)
    kind = args.kind
    out = Path(args.output) if args.output else results.parent / f"{kind or 'plot'}.png"
    path = plot_rows(rows, out, kind, args.param, args.link)
    print(f"wrote {path}", file=sys.stderr)
