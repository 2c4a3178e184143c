"""Run a sweep's cases in a local process pool or on a Dask cluster, storing each result as it ends.

Both executors run the same :func:`~mapsearch.sweep.case.run_case` and hand
its dict back to this (parent) process, which stores it in one transaction
(:class:`~mapsearch.sweep.store.ResultStore`). CP-SAT runs with one worker
and seed 0, so a case gives the same schedule wherever it runs.

Ctrl-C (SIGINT) while the sweep runs: no new case starts, the results
already stored stay, the cases still running are dropped (their processes
ended) and, in a local pool, recorded ``INTERRUPTED`` (not a result: every
rerun solves them again; Dask does not say which of its tasks had started,
so there they are only dropped), and :func:`run_sweep` returns with ``interrupted`` set. The handler
only sets a flag, so a result is never half written; workers ignore SIGINT
(and CP-SAT's own SIGINT handling is off, mapsearch/solve/run.py), so a
search is never cut short into a result. Inside an active
:class:`~mapsearch.budget.Budget` (``mapsearch characterize`` runs under
:class:`~mapsearch.solve.interrupt.Interruptible`) the budget's stop is the
flag instead. A killed parent (``kill -9``) leaves the database as of its
last stored case; local worker processes notice that their parent is gone
and exit.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import mapsearch.budget as budget
from mapsearch.errors import MapsearchError
from mapsearch.sweep.case import FAILED_STATUSES, Case, run_case
from mapsearch.sweep.neighbours import neighbours
from mapsearch.sweep.store import ResultStore

__all__ = ["Progress", "SweepOutcome", "run_sweep", "default_workers", "check_scheduler"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Progress:
    """Handed to the progress callback after each stored result."""

    done: int  # stored in this run
    todo: int  # to run in this run
    failed: int
    elapsed: float  # seconds since the run started
    case: Case
    status: str

    @property
    def eta(self) -> float | None:
        return None if self.done == 0 else self.elapsed / self.done * (self.todo - self.done)


@dataclass(frozen=True)
class SweepOutcome:
    total: int  # cases in the sweep
    skipped: int  # finished before this run
    stored: int  # results stored by this run
    failed: int  # of those, failed
    interrupted: bool
    seconds: float


_ADDRESS = re.compile(r"^(tcp|tls|ucx|ws|wss)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):[0-9]{1,5}\Z")


def check_scheduler(address: str | None, option: str = "scheduler") -> None:
    """A Dask scheduler address must read as ``PROTOCOL://HOST:PORT`` (checked before anything is written)."""
    if address is not None and not _ADDRESS.match(address):
        raise MapsearchError(f"{option}: expected an address such as tcp://HOST:PORT, got {address!r}")


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class _Interrupt:
    """While active (main thread only), SIGINT sets a flag instead of raising at an arbitrary point.

    Under an active budget, the budget's stop is the flag and no handler is installed.
    """

    def __init__(self) -> None:
        self._flag = False
        self._old: Any = None
        self._budget = budget.current()

    @property
    def flag(self) -> bool:
        return self._flag or (self._budget is not None and self._budget.stopped)

    def __enter__(self) -> "_Interrupt":
        if self._budget is None and threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum: int, frame: object) -> None:
        self._flag = True

    def __exit__(self, *exc: object) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


def _worker_init(parent: int) -> None:
    """In each local worker: leave Ctrl-C to the parent, and exit when the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="mapsearch-parent-watch", daemon=True).start()


class _Plan:
    """The cases to run in the order they may start: one whose neighbour (a warm start,
    mapsearch/sweep/neighbours.py) is still to run waits for its stored result, then starts from its schedule."""

    def __init__(self, todo: list[Case], cases: Sequence[Case], store: ResultStore):
        self._store = store
        self._neighbour = neighbours(cases)
        running = {c.case_id for c in todo}
        self._waiting: dict[str, list[Case]] = {}
        self.first: list[tuple[Case, str | None]] = []
        for case in todo:
            before = self._neighbour.get(case.case_id)
            if before in running:
                self._waiting.setdefault(before, []).append(case)
            else:
                self.first.append((case, self._start(case)))

    def _start(self, case: Case) -> str | None:
        before = self._neighbour.get(case.case_id)
        return None if before is None else self._store.schedule(before)

    def after(self, case: Case) -> list[tuple[Case, str | None]]:
        """The cases that wait for ``case``, with their starts: call once its result is stored."""
        return [(c, self._start(c)) for c in self._waiting.pop(case.case_id, [])]


def run_sweep(
    cases: Sequence[Case],
    store: ResultStore,
    *,
    sweep: str = "",
    workers: int | None = None,
    scheduler: str | None = None,
    retry_failed: bool = False,
    progress: Callable[[Progress], None] | None = None,
) -> SweepOutcome:
    """Run the cases not yet finished in ``store`` and store each result as it ends.

    ``workers``: local processes (default: the usable cores). ``scheduler``:
    the address of a Dask distributed scheduler (``tcp://HOST:PORT``) to run
    on instead. ``retry_failed``: also rerun cases stored with a failed status.
    """
    start = time.perf_counter()
    todo, skipped = store.to_run(cases, retry_failed)
    if skipped:
        log.info("skipping %d finished case(s) of %d", len(skipped), len(cases))
    run_id = store.start_run(sweep, len(cases), len(skipped))
    counts = {"stored": 0, "failed": 0}

    plan = _Plan(todo, cases, store)

    def stored(case: Case, result: dict[str, Any]) -> list[tuple[Case, str | None]]:
        """Store the result; the cases it releases (warm starts from it) to run next."""
        store.put(case, result)
        counts["stored"] += 1
        counts["failed"] += result["status"] in FAILED_STATUSES
        log.debug("case %s (%s on %s): %s", case.case_id, case.workload, case.architecture, result["status"])
        if progress is not None:
            progress(Progress(counts["stored"], len(todo), counts["failed"], time.perf_counter() - start, case,
                              result["status"]))
        return plan.after(case)

    def dropped(case: Case) -> None:
        store.mark_interrupted(case, "interrupted (Ctrl-C) while it ran; not a result: a rerun solves it again")

    interrupted = False
    try:
        if todo:
            with _Interrupt() as stop:
                if scheduler:
                    _run_dask(plan.first, scheduler, stored, stop)
                else:
                    _run_local(plan.first, workers or default_workers(), stored, stop, dropped)
                interrupted = stop.flag
    finally:
        store.end_run(run_id, counts["stored"], interrupted)
    return SweepOutcome(len(cases), len(skipped), counts["stored"], counts["failed"], interrupted,
                        time.perf_counter() - start)


def _run_local(first: list[tuple[Case, str | None]], workers: int, stored: Callable, stop: _Interrupt,
               dropped: Callable) -> None:
    # spawn: the solver's threads do not survive fork, and workers start clean
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=min(workers, len(first)), mp_context=context,
                               initializer=_worker_init, initargs=(os.getpid(),))
    pending = {pool.submit(run_case, case, start): case for case, start in first}
    clean = False
    try:
        while pending and not stop.flag:
            done, _ = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            for future in done:
                case = pending.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool as e:
                    raise MapsearchError(f"a worker process died ({e}); {len(pending) + 1} case(s) not run; "
                                         "rerun the sweep to run them") from e
                for after, start in stored(case, result):
                    pending[pool.submit(run_case, after, start)] = after
        clean = not pending
        if stop.flag:
            # Futures count as running from when they enter the pool's call queue, one ahead of the workers;
            # the workers take them in submission order, so the oldest `workers` of them are the ones running.
            running = 0
            for future, case in pending.items():
                if future.done() and not future.cancelled() and future.exception() is None:
                    stored(case, future.result())  # it finished on its own: a real result
                elif future.running() and running < workers:
                    running += 1
                    dropped(case)
    finally:
        if clean:
            pool.shutdown(wait=True)
        else:
            # The running cases are dropped: end their processes now rather than wait for their solves.
            processes = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.terminate()


def _run_dask(first: list[tuple[Case, str | None]], scheduler: str, stored: Callable, stop: _Interrupt) -> None:
    try:
        from distributed import Client, as_completed
    except ImportError as e:
        raise MapsearchError("--scheduler needs Dask distributed: pip install 'mapsearch[cluster]'") from e
    try:
        client = Client(scheduler, timeout="30s")
    except (OSError, TimeoutError) as e:
        raise MapsearchError(f"cannot reach the Dask scheduler at {scheduler}: {' '.join(str(e).split())}") from e
    try:
        futures = {}

        def submit(case: Case, start: str | None):
            future = client.submit(run_case, case, start, pure=False,
                                   key=f"mapsearch-case-{case.case_id}-{os.getpid()}-{time.time_ns()}")
            futures[future] = case
            return future

        for case, start in first:
            submit(case, start)
        remaining = set(futures)
        queue = as_completed(list(futures))
        while remaining and not stop.flag:
            batch = queue.next_batch(block=False) if queue.has_ready() else []
            if not batch:
                time.sleep(0.1)
                continue
            for future in batch:
                remaining.discard(future)
                case = futures[future]
                try:
                    result = future.result()
                except Exception as e:  # the worker was lost (KilledWorker) or the task could not run
                    result = {"case_id": case.case_id, "status": "ERROR", "solve_seconds": None, "report": None,
                              "schedule": None, "error": f"{type(e).__name__}: {' '.join(str(e).split())}"}
                for after, start in stored(case, result):
                    released = submit(after, start)
                    queue.add(released)
                    remaining.add(released)
                future.release()
        if remaining:
            client.cancel(list(remaining))
    finally:
        client.close()
