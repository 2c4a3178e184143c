"""What the user asks of a solve: the objective, limits and determinism."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from mapsearch.dram.layout import LayoutSpec
from mapsearch.schedule.schedule import Schedule

OBJECTIVES = ("time", "words", "energy")
DRAM_ROWS = ("off", "tiebreak", "before-words")


@dataclass(frozen=True)
class SolveOptions:
    """Solver settings.

    ``objective``:
      - ``"time"`` (default, the contract's): shortest time, then fewest words;
      - ``"words"``: fewest words, with ``utilization >= min_utilization`` if given;
      - ``"energy"``: ``sum(link_energy[link] * words on it) + op_energy * calls``,
        with ``utilization >= min_utilization`` if given.
    ``dram_rows`` adds the DRAM row openings (model/dram_rows.py) as a phase:
      - ``"off"`` (default): not modelled;
      - ``"tiebreak"``: after the objective's phases (fewest rows among the best);
      - ``"before-words"``: with ``objective="time"``, right after the time
        (time, then rows, then words).
    ``dram_layouts`` fixes a tensor's DRAM layout (the others are chosen);
    ``max_dram_rows`` bounds the row openings (a constraint; implies the model).
    ``workers`` and ``seed`` make a run deterministic: the same input, workers
    and seed give the same schedule (CP-SAT with one worker, or with several
    and ``interleave_search``, is deterministic) — as long as the wall-clock
    ``time_limit`` does not cut a phase short. ``work_limit`` bounds each
    phase by CP-SAT's deterministic time instead, so a run that stops early
    stops at the same point on a busy machine or a cluster.
    ``placement`` searches each buffer's position in the nest (the contract's
    buffer placement); off keeps every buffer at its level's default position
    and the result names that restriction.
    ``block_binding`` fixes roles of a compute block given in GEMM roles to
    dimensions, ``(("m", "q"), ("k", "c"))``; the roles not fixed are
    searched, and the result names the restriction (mapsearch/solve/block_roles.py).
    ``start`` is a known schedule (a solved neighbour, an earlier run) that
    hints the first phase when the model has it and it beats the coarse
    search (mapsearch/solve/warm_start.py); it never changes the optimum or
    what OPTIMAL means, and a start outside the model's family is ignored.
    """

    objective: str = "time"
    min_utilization: Fraction | None = None
    link_energy: tuple[tuple[str, Fraction], ...] = ()  # per word, by link name; missing links cost 1
    op_energy: Fraction = Fraction(0)
    time_limit: float = 60.0
    workers: int = 1
    seed: int = 0
    work_limit: float | None = None  # CP-SAT deterministic time per phase: same result under any load
    dram_rows: str = "off"
    dram_layouts: tuple[tuple[str, LayoutSpec], ...] = ()
    max_dram_rows: int | None = None
    placement: bool = True
    block_binding: tuple[tuple[str, str], ...] = ()  # (role, dim) pairs fixed by the user; () searches every binding
    start: Schedule | None = field(default=None, repr=False)  # a warm start: a hint, never a constraint

    @property
    def models_dram_rows(self) -> bool:
        return self.dram_rows != "off" or self.max_dram_rows is not None
