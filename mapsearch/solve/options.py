"""What the user asks of a solve: the objective, limits and determinism."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

OBJECTIVES = ("time", "words", "energy")


@dataclass(frozen=True)
class SolveOptions:
    """Solver settings.

    ``objective``:
      - ``"time"`` (default, the contract's): shortest time, then fewest words;
      - ``"words"``: fewest words, with ``utilization >= min_utilization`` if given;
      - ``"energy"``: ``sum(link_energy[link] * words on it) + op_energy * calls``,
        with ``utilization >= min_utilization`` if given.
    ``workers`` and ``seed`` make a run deterministic: the same input, workers
    and seed give the same schedule (CP-SAT with one worker, or with several
    and ``interleave_search``, is deterministic).
    """

    objective: str = "time"
    min_utilization: Fraction | None = None
    link_energy: tuple[tuple[str, Fraction], ...] = ()  # per word, by link name; missing links cost 1
    op_energy: Fraction = Fraction(0)
    time_limit: float = 60.0
    workers: int = 1
    seed: int = 0
