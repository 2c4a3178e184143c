"""Stopping a replay walk from outside it: a hook the walks poll between chunks.

The check replay after a solve can walk for minutes. Whoever runs it (the
solve layer, on the user's Ctrl-C) may install a *stop hook* for a block of
code with :func:`stop_when`: a callable that says whether to stop now. The
walks call :func:`poll` at their chunk boundaries (:func:`mapsearch.sim.pieces.tile_chunks`,
so the tile-by-tile walk, the placed-buffer walk, the data walk and the fused
walk; each chunk and each buffer of :class:`mapsearch.sim.walk_spatial.SpatialWalk`,
so the walk with spatial splits and its folds), which raises
:class:`ReplayInterrupted` once the hook says so. The walk then ends at
once: nothing was counted, and the schedule is neither checked nor refuted.

The hook is a context variable (as :mod:`mapsearch.budget`'s budget), so a
walk in another thread (another context) does not see it. Without a hook,
:func:`poll` costs one lookup. The simulator itself never decides to stop:
it knows nothing of solvers, budgets or signals.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

from mapsearch.errors import Interrupted

__all__ = ["ReplayInterrupted", "stop_when", "poll"]

StopHook = Callable[[], bool]

_HOOK: ContextVar[StopHook | None] = ContextVar("mapsearch_replay_stop", default=None)


class ReplayInterrupted(Interrupted):
    """A replay walk stopped from outside before it ended (the user's Ctrl-C): nothing was counted.

    Not a verdict on the schedule: it is neither checked nor refuted. An
    :class:`~mapsearch.errors.Interrupted`, so where nobody handles it the
    CLI says "interrupted; nothing written" and exits 130.
    """


@contextmanager
def stop_when(stop: StopHook | None) -> Iterator[None]:
    """Walks in this block (this thread's context) stop with :class:`ReplayInterrupted` once ``stop()`` is true.

    ``None`` installs no hook (and lifts one installed outside the block).
    """
    token = _HOOK.set(stop)
    try:
        yield
    finally:
        _HOOK.reset(token)


def poll() -> None:
    """Raise :class:`ReplayInterrupted` if the active stop hook says to stop; cheap enough for every chunk."""
    stop = _HOOK.get()
    if stop is not None and stop():
        raise ReplayInterrupted("the replay was stopped before it ended; nothing was counted")
