"""Progress of a running solve, for whoever listens (the CLI draws it; library code stays silent).

:func:`listening` makes a callback the listener of the solves run in its
``with`` block (a context variable, as for :mod:`mapsearch.budget`).
:func:`search` runs one CP-SAT search: it registers the solver with the
active budget (so Ctrl-C stops it), and, only when someone listens, hands
each better schedule and each better bound to the listener as a
:class:`SolveProgress`. Without a listener it adds no callback, so the
search is exactly as fast as before.
"""

from __future__ import annotations

import time
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Iterator, Sequence

from ortools.sat.python import cp_model

import mapsearch.budget as _budget

__all__ = ["SolveProgress", "listening", "report", "finished", "search", "FINISHED"]

FINISHED = "finished"  # the phase of the last report of a solve


@dataclass(frozen=True)
class SolveProgress:
    """Where a solve stands: its phase and, once known, the best schedule's figures and the phase's bound."""

    phase: str  # what is being done or minimised: "building the model", "time", "words", ...
    elapsed: float  # seconds since the listener started listening
    values: tuple[tuple[str, Fraction], ...] = ()  # the best schedule's objectives so far, e.g. (("time", ...), ("words", ...))
    bound: Fraction | None = None  # proven lower bound on the phase's objective (None: no bound yet)

    @property
    def value(self) -> Fraction | None:
        """The best schedule's value of the phase's objective, if the phase is a search."""
        return dict(self.values).get(self.phase)

    @property
    def gap(self) -> float | None:
        v, b = self.value, self.bound
        if v is None or b is None:
            return None
        return 0.0 if v == 0 else float(abs(v - b) / abs(v))


Listener = Callable[[SolveProgress], None]
_LISTENER: ContextVar[tuple[Listener, float] | None] = ContextVar("mapsearch_progress", default=None)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send the progress of solves run in this block (this thread's context) to ``listener``."""
    token = _LISTENER.set((listener, time.monotonic()))
    try:
        yield
    finally:
        _LISTENER.reset(token)


def report(phase: str, values: Sequence[tuple[str, Fraction]] = (), bound: Fraction | None = None) -> None:
    """Tell the listener, if any, where the solve stands."""
    active = _LISTENER.get()
    if active is not None:
        listener, since = active
        listener(SolveProgress(phase, time.monotonic() - since, tuple(values), bound))


def finished() -> None:
    """Tell the listener, if any, that the solve ended (a progress line may then be erased)."""
    report(FINISHED)


class _Watcher(cp_model.CpSolverSolutionCallback):
    """Reports each better schedule of one phase (called on CP-SAT's thread)."""

    def __init__(self, phase: str, objectives: Sequence[tuple[str, object, int]], scale: int):
        super().__init__()
        self.phase = phase
        self.objectives = objectives
        self.scale = scale
        self.values: tuple[tuple[str, Fraction], ...] = ()
        self.bound: Fraction | None = None

    def on_solution_callback(self) -> None:
        self.values = tuple((name, Fraction(int(self.value(expr)), s)) for name, expr, s in self.objectives)
        report(self.phase, self.values, self.bound)

    def on_bound(self, bound: float) -> None:
        self.bound = Fraction(max(0, int(-(-bound // 1))), self.scale)
        report(self.phase, self.values, self.bound)


def search(solver: cp_model.CpSolver, model: cp_model.CpModel, phase: str = "search",
           objectives: Sequence[tuple[str, object, int]] = ()) -> int:
    """``solver.solve(model)``, stoppable through the active budget and reported to the listener, if any.

    ``objectives``: ``(name, expression, scale)`` of every objective, whose
    values the listener is told for each better schedule (``phase`` names
    the one minimised now).
    """
    b = _budget.current()
    scale = dict((n, s) for n, _, s in objectives).get(phase, 1)
    watcher = _Watcher(phase, objectives, scale) if _LISTENER.get() is not None else None
    if watcher is not None:
        solver.best_bound_callback = watcher.on_bound
        report(phase)
    if b is not None and (b.stopped or b.left() <= 0):
        # Stopped or out of time before it started. CP-SAT would still load the model, which alone takes
        # seconds on a large one (a 128x128 array's: 0.4-0.7 s past a 10 s limit, once per search left):
        # an empty model gives the solver a response (no schedule, no bound) at once.
        solver.solve(cp_model.CpModel())
        return cp_model.UNKNOWN
    with b.running(solver) if b is not None else nullcontext():
        return solver.solve(model, watcher)
