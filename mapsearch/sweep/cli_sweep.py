"""``mapsearch sweep``: expand, run what is not finished, store, export, print the summary.

The only part of the sweep package that prints: the skip count, a progress
bar with ETA on stderr (tqdm when installed, else a plain line every few
seconds), the summary table, and where the exports went.

Exit codes: 0 the sweep ran (failed cases are recorded and listed, not
fatal); 1 some case's replay disagreed with its prediction (a bug to
report); 2 bad input; 130 interrupted (what finished is stored; rerun to go on).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from mapsearch.errors import MapsearchError

# The rest of the package is imported by run(): building the parser stays cheap.

EXIT_OK, EXIT_MISMATCH, EXIT_INTERRUPTED = 0, 1, 130


def _progress_printer(total: int, quiet: bool) -> tuple[Callable[[Any], None] | None, Callable[[], None]]:
    if quiet or total == 0:
        return None, lambda: None
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        bar = tqdm(total=total, unit="case", file=sys.stderr, dynamic_ncols=True, smoothing=0.1)

        def update(p: Any) -> None:
            bar.update(1)
            bar.set_postfix_str(f"failed {p.failed}" if p.failed else "", refresh=False)

        return update, bar.close
    last = [0.0]

    def plain(p: Any) -> None:
        now = time.monotonic()
        if now - last[0] < 3 and p.done < p.todo:
            return
        last[0] = now
        eta = "" if p.eta is None else f", ETA {p.eta:.0f} s"
        print(f"mapsearch: sweep: {p.done}/{p.todo} cases ({p.failed} failed), {p.elapsed:.0f} s{eta}", file=sys.stderr)

    return plain, lambda: None


def check_scheduler(address: str | None) -> None:
    """A Dask scheduler address must read as ``PROTOCOL://HOST:PORT`` (checked before anything is written)."""
    if address is not None and not _ADDRESS.match(address):
        raise MapsearchError(f"--scheduler: expected an address such as tcp://HOST:PORT, got {address!r}")


_ADDRESS = re.compile(r"^(tcp|tls|ucx|ws|wss)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):[0-9]{1,5}$")


def check_out_directory(out: Path, option: str) -> None:
    """``out`` must be, or be creatable as, a directory: not a file, not below one."""
    if out.exists() and not out.is_dir():
        raise MapsearchError(f"{option}: expected a directory, got a file: {out}")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise MapsearchError(f"{option}: {out} is below {parent}, which is a file, not a directory")
            break


@contextmanager
def results_directory(out: Path, option: str) -> Iterator[Any]:
    """The :class:`ResultStore` of ``out``, held by this process alone (:mod:`mapsearch.sweep.lock`).

    If this run created the directory or its database and ends in an error
    before any case is stored, they are removed again: a failed command
    leaves nothing behind.
    """
    from mapsearch.sweep.lock import LOCK_NAME, DirectoryLock
    from mapsearch.sweep.store import DB_NAME, ResultStore

    check_out_directory(out, option)
    made = [p for p in (out, out / DB_NAME, out / LOCK_NAME) if not p.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MapsearchError(f"{option}: cannot create {out}: {e.strerror or e}") from None
    lock = DirectoryLock(out)
    lock.acquire()  # a busy directory is left as it is: it is the other process's
    store = None
    try:
        store = ResultStore(out / DB_NAME)
        yield store
    except BaseException:
        if store is None or not store.statuses():  # nothing stored: remove what this run made
            if store is not None:
                store.close()
                store = None
            if out in made:
                shutil.rmtree(out, ignore_errors=True)
            else:
                for path in made + ([out / f"{DB_NAME}-wal", out / f"{DB_NAME}-shm"] if out / DB_NAME in made else []):
                    path.unlink(missing_ok=True)
        raise
    finally:
        if store is not None:
            store.close()
        lock.release()


def run(args: argparse.Namespace) -> int:
    """Run ``mapsearch sweep``; returns the exit code (bad input raises :class:`MapsearchError`)."""
    from mapsearch.sweep.case import INTERRUPTED
    from mapsearch.sweep.export import export, result_rows, summary_text
    from mapsearch.sweep.runner import default_workers, run_sweep
    from mapsearch.sweep.spec import load_sweep
    from mapsearch.sweep.store import DB_NAME

    if args.workers is not None and args.workers < 1:
        raise MapsearchError(f"--workers: expected an int >= 1, got {args.workers}")
    if args.time_limit is not None and not args.time_limit > 0:
        raise MapsearchError(f"--time-limit: expected seconds > 0, got {args.time_limit}")
    work = getattr(args, "work_limit", None)
    if work is not None and not work > 0:
        raise MapsearchError(f"--work-limit: expected deterministic seconds > 0, got {work}")
    check_scheduler(getattr(args, "scheduler", None))
    sweep = load_sweep(args.sweep, time_limit=args.time_limit, work_limit=work)
    out = Path(args.out) if args.out else Path(f"{Path(args.sweep).stem}-results")
    with results_directory(out, "--out") as store:
        if not args.export_only:
            todo, skipped = store.to_run(sweep.cases, args.retry_failed)
            where = f"{args.scheduler}" if args.scheduler else f"{args.workers or default_workers()} local worker(s)"
            print(f"sweep {sweep.name}: {len(sweep.cases)} case(s); skipped {len(skipped)} finished "
                  f"(in {out / DB_NAME}); running {len(todo)} on {where}", file=sys.stderr)
            update, close = _progress_printer(len(todo), args.quiet)
            try:
                outcome = run_sweep(sweep.cases, store, sweep=str(args.sweep), workers=args.workers,
                                    scheduler=args.scheduler, retry_failed=args.retry_failed, progress=update)
            finally:
                close()
            if outcome.interrupted:
                done = sum(s != INTERRUPTED for s in store.statuses(c.case_id for c in sweep.cases).values())
                print(f"mapsearch: interrupted: {done} of {len(sweep.cases)} case(s) stored in {out / DB_NAME}; "
                      "rerun the same command to finish", file=sys.stderr)
        paths = export(sweep.name, sweep.cases, store, out)
        rows = result_rows(sweep.cases, store)
    print(summary_text(sweep.name, sweep.cases, rows), end="")
    print(f"wrote {paths['jsonl']}, {paths['csv']}, {paths['summary']} and {paths['schedules']}/", file=sys.stderr)
    if not args.export_only and outcome.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_MISMATCH if any(r["status"] == "MISMATCH" for r in rows) else EXIT_OK


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "sweep",
        parents=[common],
        help="solve every case of a sweep file (workloads x architectures x parameters), resumably",
        description="Expand SWEEP.yaml into cases, solve and replay the ones not finished yet (in parallel), "
        "store each result in DIR/results.sqlite as it ends, and export results.jsonl, results.csv, "
        "schedules/<case_id>.json and summary.txt. Rerunning skips finished cases.",
        epilog="exit codes: 0 ok (failed cases are recorded and listed); 1 a replay disagreed with its prediction; "
        "2 bad input; 130 interrupted (finished cases are kept; rerun to continue)",
    )
    p.add_argument("sweep", metavar="SWEEP.yaml", help="sweep file (see examples/sweeps/)")
    p.add_argument("--out", metavar="DIR", help="results directory (default: ./<sweep name>-results)")
    p.add_argument("--workers", metavar="N", type=int, help="local worker processes (default: the usable cores)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on this Dask distributed scheduler instead")
    p.add_argument("--retry-failed", action="store_true", help="rerun cases stored as failed")
    p.add_argument("--time-limit", metavar="S", type=float, help="solver time limit per case (default: the file's, else 60)")
    p.add_argument("--work-limit", metavar="D", type=float,
                   help="limit each solve phase by CP-SAT's deterministic time: the same results locally and on Dask")
    p.add_argument("--export-only", action="store_true", help="run nothing; write the exports from the stored results")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return p
