"""The solve's progress line on a terminal: phase, best time and words, bound, gap; at most once a second.

Only the CLI draws it (library code hands :class:`~mapsearch.solve.progress.SolveProgress`
to a listener and stays silent). It is drawn only when standard error is a
terminal and ``--quiet`` is not given, on one line rewritten in place (``\\r``),
and erased before anything else is printed, so the one-line error and report
rules still hold.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager, nullcontext
from fractions import Fraction
from typing import IO, Iterator

from mapsearch.api import FINISHED, SolveProgress, listening

__all__ = ["ProgressLine", "progress_shown"]


def _number(x: Fraction) -> str:
    return f"{x.numerator:,}" if x.denominator == 1 else f"{float(x):,.6g}"


class ProgressLine:
    """Draws :class:`SolveProgress` on ``stream``, at most once per ``interval`` seconds."""

    def __init__(self, stream: IO[str], interval: float = 1.0):
        self.stream = stream
        self.interval = interval
        self._last = -float("inf")
        self._width = 0
        self._lock = threading.Lock()

    @staticmethod
    def text(p: SolveProgress) -> str:
        values = dict(p.values)
        parts = [f"mapsearch: {p.elapsed:.0f} s, {p.phase}"]
        if values:
            parts.append("best " + ", ".join(f"{name} {_number(v)}" for name, v in values.items()))
        elif p.phase != "building the model" and not p.phase.startswith("checking"):  # the check replay: solved
            parts.append("no schedule yet")
        if p.value is not None:
            parts.append("no bound yet" if p.bound is None or p.bound == 0 else f"bound {_number(p.bound)}")
            if p.gap is not None and p.bound:
                parts.append(f"gap {p.gap:.1%}")
        return "; ".join(parts)

    def __call__(self, p: SolveProgress) -> None:
        if p.phase == FINISHED:  # the report comes next: leave the terminal clean for it
            self.clear()
            self._last = -float("inf")
            return
        now = time.monotonic()
        with self._lock:
            if now - self._last < self.interval:
                return
            self._last = now
            line = self.text(p)
            pad = max(0, self._width - len(line))
            self.stream.write("\r" + line + " " * pad)
            self.stream.flush()
            self._width = len(line)

    def clear(self) -> None:
        with self._lock:
            if self._width:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()
                self._width = 0


@contextmanager
def progress_shown(quiet: bool, stream: IO[str] | None = None) -> Iterator[ProgressLine | None]:
    """Show the solves' progress in this block when ``stream`` (default stderr) is a terminal and not ``quiet``."""
    stream = stream or sys.stderr
    if quiet or not getattr(stream, "isatty", lambda: False)():
        with nullcontext():
            yield None
        return
    line = ProgressLine(stream)
    try:
        with listening(line):
            yield line
    finally:
        line.clear()
