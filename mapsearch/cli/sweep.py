"""``mapsearch sweep``: expand, run what is not finished, store, export, print the summary.

The only part of a sweep that prints: the skip count, a progress
bar with ETA on stderr (tqdm when installed, else a plain line every few
seconds), the summary table, and where the exports went.

Exit codes: 0 the sweep ran (failed cases are recorded and listed, not
fatal); 1 some case's replay disagreed with its prediction (a bug to
report); 2 bad input; 130 interrupted (what finished is stored; rerun to go on).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mapsearch import api
from mapsearch.cli.exits import EXIT_INTERRUPTED, EXIT_MISMATCH, CommandFailed
from mapsearch.cli.paths import output_directory, refuse_inputs_in_directory
from mapsearch.cli.progress import progress_printer
from mapsearch.errors import MapsearchError, UsageError

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> None:
    """Run ``mapsearch sweep``; a failure raises (:mod:`mapsearch.cli.exits`)."""
    if args.workers is not None and args.workers < 1:
        raise MapsearchError(f"--workers: expected an int >= 1, got {args.workers}")
    if args.workers is not None and args.workers > api.MAX_WORKERS:  # as solve's --workers
        raise UsageError("--workers", f"an int between 1 and {api.MAX_WORKERS:,}", args.workers)
    if args.time_limit is not None:  # as solve's --time-limit
        api.check_seconds("--time-limit", args.time_limit)
    work = getattr(args, "work_limit", None)
    if work is not None:
        api.check_seconds("--work-limit", work, "deterministic seconds > 0")
    out = Path(args.out) if args.out else Path(f"{Path(args.sweep).stem}-results")
    refuse_inputs_in_directory(out, api.SWEEP_WRITTEN, [("SWEEP.yaml", args.sweep)])  # --out must replace no input
    api.check_out_directory(out, "--out")  # before the sweep file is read: the flags first
    api.check_scheduler(args.scheduler, "--scheduler")
    bar: dict[str, Any] = {"update": None, "close": lambda: None}

    def started(s: api.SweepStart) -> None:
        print(f"sweep {s.name}: {s.total} case(s); skipped {s.skipped} finished (in {s.store}); running {s.todo} "
              f"on {s.where}", file=sys.stderr)
        bar["update"], bar["close"] = progress_printer(s.todo, args.quiet)

    def progress(p: api.Progress) -> None:
        if bar["update"] is not None:
            bar["update"](p)

    try:
        result = api.sweep(args.sweep, out, workers=args.workers, scheduler=args.scheduler, time_limit=args.time_limit,
                           work_limit=work, retry_failed=args.retry_failed, export_only=args.export_only,
                           on_start=started, progress=progress)
    finally:
        bar["close"]()
    if result.interrupted:
        print(f"mapsearch: interrupted: {len(result.rows)} of {len(result.cases)} case(s) stored in "
              f"{result.store}; rerun the same command to finish", file=sys.stderr)
    print(result.summary(), end="")
    paths = result.paths
    print(f"wrote {paths['jsonl']}, {paths['csv']}, {paths['summary']} and {paths['schedules']}/", file=sys.stderr)
    if result.interrupted:
        raise CommandFailed(EXIT_INTERRUPTED)
    if result.mismatched:
        raise CommandFailed(EXIT_MISMATCH)


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "sweep",
        parents=[common],
        help="solve every case of a sweep file (workloads x architectures x parameters), resumably",
        description="Expand SWEEP.yaml into cases, solve and replay the ones not finished yet (in parallel), "
        "store each result in DIR/results.sqlite as it ends, and export results.jsonl, results.csv, "
        "schedules/<case_id>.json and summary.txt. Rerunning skips finished cases.",
        epilog="exit codes: 0 ok (failed cases are recorded and listed); 1 a replay disagreed with its prediction; "
        "2 bad input or DIR held by another sweep; 130 interrupted (finished cases are kept, the running ones recorded "
        "as interrupted; rerun to continue)",
    )
    p.add_argument("sweep", metavar="SWEEP.yaml", help="sweep file (see examples/sweeps/)")
    p.add_argument("--out", metavar="DIR", type=output_directory, help="results directory (default: ./<sweep name>-results)")
    p.add_argument("--workers", metavar="N", type=int, help="local worker processes (default: the usable cores)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on this Dask distributed scheduler instead")
    p.add_argument("--retry-failed", action="store_true", help="rerun cases stored as failed")
    p.add_argument("--time-limit", metavar="S", type=float, help="solver time limit per case (default: the file's, else 60)")
    p.add_argument("--work-limit", metavar="D", type=float,
                   help="limit each solve phase by CP-SAT's deterministic time: the same results locally and on Dask")
    p.add_argument("--export-only", action="store_true", help="run nothing; write the exports from the stored results")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return p
