"""One budget for all the work of a solve: the time limit and the user's Ctrl-C, checked in every phase.

CP-SAT stops itself at its time limit, but model building, the enumeration
of tile chains and the other options of a chain solve run in Python before
and between searches. They call :func:`checkpoint` at their steps, which
raises :class:`~mapsearch.errors.SolverTimeout` once the budget's deadline
has passed and :class:`~mapsearch.errors.Interrupted` once the work was
stopped. A CP-SAT solver registered with :meth:`Budget.running` is stopped
(``stop_search``) the moment :meth:`Budget.stop` is called, from any thread.

Budgets nest: ``Budget(60, parent=...)`` ends at its own deadline or its
parent's, whichever comes first, and stopping any of them stops the root and
every solver registered anywhere under it. An *extension* (``extends=True``,
a short step after a search ran out of time) keeps its own deadline only,
except a *hard* one above it (``hard=True``): a chain solve's limit, which
bounds every fallback of every einsum in it. The active budget is a context
variable (:func:`within`, :func:`current`), so library functions find it
without a new argument; threads that should see it run in a copied context
(``contextvars.copy_context().run``). Nothing here installs a signal
handler: :mod:`mapsearch.solve.interrupt` connects SIGINT to :meth:`stop`.
"""

from __future__ import annotations

import math
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Protocol

from mapsearch.errors import Interrupted, SolverTimeout

__all__ = ["Budget", "within", "current", "checkpoint", "seconds_left", "aborted", "stopped"]


class Stoppable(Protocol):
    def stop_search(self) -> None: ...


class Budget:
    """A deadline (``seconds`` from now, None: none) and a stop flag shared with its parents."""

    def __init__(self, seconds: float | None = None, *, parent: "Budget | None" = None, limit: str = "the time limit",
                 extends: bool = False, hard: bool = False):
        self.seconds = seconds
        self.parent = parent
        # An extension: its own deadline only (its parents' may have passed, except a hard one), still stopped with
        # them. Used for a last, short step after a search ran out of time (solve/greedy.py, the greedy fallback).
        self.extends = extends
        # A hard deadline binds every budget under it, extensions too: one extension past a single einsum's limit
        # is a short step, one per einsum of a chain's many solves is not (solve/chain.py).
        self.hard = hard
        self.limit = limit  # how messages name what ran out, e.g. "the time limit of 20 s"
        self.deadline = math.inf if seconds is None else time.monotonic() + max(0.0, float(seconds))
        self._stopped = False
        self._aborted = False
        self._lock = threading.Lock()
        self._solvers: set[Stoppable] = set()

    def _root(self) -> "Budget":
        b = self
        while b.parent is not None:
            b = b.parent
        return b

    def _binding(self) -> Iterator["Budget"]:
        """The budgets whose deadlines bind this one: itself and its parents up to the first extension,
        and the hard ones above that."""
        b: Budget | None = self
        extended = False
        while b is not None:
            if not extended or b.hard:
                yield b
            extended = extended or b.extends
            b = b.parent

    def left(self) -> float:
        """Seconds until the nearest deadline (``inf`` without one; never negative)."""
        end = min(b.deadline for b in self._binding())
        return max(0.0, end - time.monotonic())

    def _tightest(self) -> "Budget":
        """The budget whose deadline comes first (for the message); the nearest one on a tie."""
        return min(self._binding(), key=lambda b: b.deadline)

    @property
    def stopped(self) -> bool:
        return self._root()._stopped

    @property
    def aborted(self) -> bool:
        """The user gave up on the work altogether (a second Ctrl-C): nothing more may be written."""
        return self._root()._aborted

    def abort(self) -> None:
        """Stop, and forbid any further output file (:func:`mapsearch.atomic.atomic_open` checks)."""
        self._root()._aborted = True
        self.stop()

    def stop(self) -> None:
        """Stop the work: every registered solver now, every later :func:`checkpoint` at once. Thread-safe."""
        root = self._root()
        root._stopped = True
        with root._lock:
            solvers = list(root._solvers)
        for s in solvers:
            s.stop_search()

    @contextmanager
    def running(self, solver: Stoppable) -> Iterator[None]:
        """Register ``solver`` while it searches, so that :meth:`stop` stops it."""
        root = self._root()
        with root._lock:
            root._solvers.add(solver)
        try:
            yield
        finally:
            with root._lock:
                root._solvers.discard(solver)

    def check(self, doing: str) -> None:
        """Raise Interrupted when stopped, SolverTimeout when the deadline passed; ``doing`` says where."""
        if self.stopped:
            raise Interrupted(f"interrupted while {doing}")
        if self.left() <= 0:
            tight = self._tightest()
            limit = tight.limit if tight.seconds is None else f"{tight.limit} of {tight.seconds:g} s"
            raise SolverTimeout(f"{limit} ran out while {doing}; no schedule was found")


_CURRENT: ContextVar[Budget | None] = ContextVar("mapsearch_budget", default=None)


def current() -> Budget | None:
    """The active budget, or None."""
    return _CURRENT.get()


@contextmanager
def within(budget: Budget) -> Iterator[Budget]:
    """Make ``budget`` the active one for the ``with`` block (in this thread's context)."""
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


def checkpoint(doing: str) -> None:
    """Check the active budget, if any (see :meth:`Budget.check`); cheap enough for inner loops."""
    b = _CURRENT.get()
    if b is not None:
        b.check(doing)


def stopped() -> bool:
    """The active budget, if any, was stopped (Ctrl-C): work cut short is not a result."""
    b = _CURRENT.get()
    return b is not None and b.stopped


def aborted() -> bool:
    """The active budget, if any, was aborted."""
    b = _CURRENT.get()
    return b is not None and b.aborted


def seconds_left(default: float) -> float:
    """``default`` bounded by the active budget's time left."""
    b = _CURRENT.get()
    return default if b is None else min(default, b.left())
