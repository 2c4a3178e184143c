"""Ctrl-C during a solve: the first SIGINT stops the search and keeps the best schedule, the second aborts.

CP-SAT's ``solve`` is one C++ call: a Python signal handler runs only once
it returns, and CP-SAT's own SIGINT handling (off in
:func:`mapsearch.solve.phases.new_solver`) would end only the current phase, as if
its time limit had passed. So :class:`Interruptible` runs the work in a
worker thread and keeps the main thread waiting, where its SIGINT handler
runs at once:

- first Ctrl-C: :meth:`Budget.stop <mapsearch.budget.Budget.stop>` stops
  every registered CP-SAT search now; the phases then end with the best
  schedule found so far (FEASIBLE, with its bound), skip the phases not yet
  run, and the result says ``interrupted``. Work that has no schedule yet
  (loading, model building) raises :class:`~mapsearch.errors.Interrupted`.
- second Ctrl-C: ``KeyboardInterrupt`` in the main thread: abort.

The check replay after a solve (:func:`checking`) is no search: a first
Ctrl-C while it walks stops the walk between two chunks
(:mod:`mapsearch.sim.stop`), and the solve raises :class:`CheckInterrupted`
with the schedule, unchecked (neither checked nor refuted). A check that
starts after a Ctrl-C stopped the search still runs (the best schedule so
far is checked before it is reported); a second Ctrl-C aborts it.

Library code never installs a handler: only a ``with Interruptible()``
block does, and only in the main thread (elsewhere it just runs the work).
"""

from __future__ import annotations

import contextvars
import signal
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

from mapsearch.budget import Budget, current, within
from mapsearch.sim.stop import ReplayInterrupted, StopHook, stop_when

__all__ = ["Interruptible", "CheckInterrupted", "checking", "check_stop_hook"]

T = TypeVar("T")

# How often the waiting main thread stops again a search that registered after the first Ctrl-C.
_POLL_SECONDS = 0.1


class Interruptible:
    """``with Interruptible() as it: result = it.call(work)``; ``it.interrupted`` after a Ctrl-C.

    ``on_first`` is called (in the main thread) on the first Ctrl-C, e.g. to
    say that the search is stopping.
    """

    def __init__(self, on_first: Callable[[], None] | None = None):
        self.budget = Budget(None)
        self.on_first = on_first
        self.signals = 0
        self.doing = "the search"  # what a first Ctrl-C stops now: "the check replay" while it walks (checking)
        self._old: Any = None
        self._installed = False

    @property
    def interrupted(self) -> bool:
        return self.budget.stopped

    def __enter__(self) -> "Interruptible":
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._old)
            self._installed = False

    def _handle(self, signum: int, frame: object) -> None:
        self.signals += 1
        if self.signals > 1:
            self.budget.abort()  # the worker may not write anything any more
            raise KeyboardInterrupt
        self.budget.stop()
        if self.on_first is not None:
            self.on_first()

    def call(self, work: Callable[[], T]) -> T:
        """``work()`` under this block's budget; in a worker thread while the handler is installed."""
        context = contextvars.copy_context()

        def run() -> T:
            _ACTIVE.set(self)  # in the work's own context: checking() finds this block
            with within(self.budget):
                return work()

        if not self._installed:
            return context.run(run)
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = context.run(run)
            except BaseException as e:  # handed to the main thread as is
                box["error"] = e

        worker = threading.Thread(target=target, name="mapsearch-solve", daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(_POLL_SECONDS)
            if self.budget.stopped:
                self.budget.stop()  # a search that registered after the first stop
        if "error" in box:
            raise box["error"]
        return box["value"]


_ACTIVE: contextvars.ContextVar[Interruptible | None] = contextvars.ContextVar("mapsearch_interruptible",
                                                                             default=None)


class CheckInterrupted(ReplayInterrupted):
    """A Ctrl-C stopped the check replay after a solve: ``result`` is the solve's, its schedule unchecked.

    ``why`` says so in one line. Neither checked nor refuted: the schedule
    may be reported with its solver figures, never as checked, nor written
    as a checked schedule.
    """

    def __init__(self, why: str, result: Any = None):
        super().__init__(why)
        self.why = why
        self.result = result


def check_stop_hook() -> StopHook | None:
    """When the check replay starting now is to stop: on a Ctrl-C that comes while it walks.

    The active budget (:func:`mapsearch.budget.current`) not stopped yet: once
    it is. Already stopped (a Ctrl-C stopped the search, and the check of its
    best schedule is what the user waits for): only once aborted. No budget:
    never (None).
    """
    b = current()
    if b is None:
        return None
    if b.stopped:
        return lambda: b.aborted
    return lambda: b.stopped


@contextmanager
def checking(what: str = "the check replay") -> Iterator[None]:
    """Run a check replay in this block: a Ctrl-C during it stops the walk (:func:`check_stop_hook`), and the
    enclosing :class:`Interruptible` says ``what`` it stops (``doing``)."""
    it = _ACTIVE.get()
    if it is None:
        with stop_when(check_stop_hook()):
            yield
        return
    before, it.doing = it.doing, what
    try:
        with stop_when(check_stop_hook()):
            yield
    finally:
        it.doing = before
