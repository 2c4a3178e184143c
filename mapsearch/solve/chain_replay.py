"""Replaying a solved chain: the best fused schedule and every unfused stage, against their predictions.

:func:`replay_checks` replays what :func:`mapsearch.solve.chain.solve_chain`
returned and collects one :class:`StageCheck` per schedule;
:mod:`mapsearch.report.chain_report` renders them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

from mapsearch.schedule.canonical import canonical_form, rename_figures
from mapsearch.schedule.figures import Figures, differences
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.counters import ReplayResult
from mapsearch.sim.errors import SimulatorError, WalkTooLong
from mapsearch.sim.fused import UnfusedResult
from mapsearch.sim.fused_count import fused_count_tiles
from mapsearch.sim.replay import replay, replay_unfused
from mapsearch.sim.stop import ReplayInterrupted
from mapsearch.solve.chain import ChainResult, UnfusedOutcome
from mapsearch.spec.reading import fraction_to_json
from mapsearch.spec.workload import WorkloadGraph

__all__ = ["StageCheck", "ChainReplay", "replay_checks", "duration_text", "FUSED_TILES_PER_SECOND", "INTERRUPTED"]

# The count walk of a fused schedule visits one by one the tiles of the stages it does not fold
# (sim/fused_count.py: stages of at most EXPLICIT_TILES innermost tiles; fused_count_tiles counts them), about
# 5 M tiles a second on this project's 2-core machines (measured when every stage was walked: AlexNet's 8 einsums
# fused at AccelForge simple's GlobalBuffer, 166 M of its 604 M tiles in 30 s, 3 M a second loaded twice over).
FUSED_TILES_PER_SECOND = 5_000_000

# Why a check stopped by Ctrl-C did not run (StageCheck.error).
INTERRUPTED = "interrupted by Ctrl-C before it ended; neither checked nor refuted"


@dataclass(frozen=True)
class StageCheck:
    """One replayed schedule against its prediction: ``differences`` as ``(field, predicted, replayed)``."""

    name: str
    predicted: Figures
    replayed: Figures | None
    differences: tuple[tuple[str, object, object], ...] = ()
    error: str = ""  # the simulator refused it (one line)
    data_ok: bool | None = None
    max_abs_error: float | None = None
    not_run: bool = False  # the walk would take too long: ``error`` says why; neither checked nor refuted
    interrupted: bool = False  # not run because a Ctrl-C stopped the walk (``not_run`` too): ``error`` says so
    option: str = ""  # the option whose schedule it is, as ChainResult.best names them ("fused at L1", "unfused")

    @property
    def ok(self) -> bool:
        return not self.error and not self.differences and self.data_ok is not False


@dataclass(frozen=True)
class ChainReplay:
    mode: str
    checks: tuple[StageCheck, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def failures(self, best: str) -> tuple[StageCheck, ...]:
        """The checks that fail the solve whose best option is ``best``: every disagreement or refusal, and a
        walk not run of ``best``'s own schedules. Another option's walk not run is reported, not fatal: the best
        schedule was checked."""
        return tuple(c for c in self.checks if not c.ok and not (c.not_run and c.option != best))


def replay_checks(result: ChainResult, mode: str, max_cells: int | None = None, max_fused_tiles: int | None = None,
                  max_other_fused_tiles: int | None = None) -> ChainReplay:
    """Replay the best fused schedule and each unfused stage in ``mode``; compare with the predictions.

    In count mode, ``max_cells`` bounds each single-einsum walk with spatial
    splits (``replay(..., max_cells=)``) and ``max_fused_tiles`` the walk of
    a fused schedule of the best option (``sim.fused_count.fused_count_tiles``, known
    before it starts); ``max_other_fused_tiles`` that of the best fused
    schedule where another option is best (its check does not decide what
    is written). A walk past its bound is not run, and its check says so
    (``not_run``). A Ctrl-C while a walk runs (the stop hook of
    :mod:`mapsearch.sim.stop`) stops it: that check and every one after it
    are not run (``not_run`` and ``interrupted``).
    """
    checks = []
    notes = []
    bounded = mode == "count"
    walk = _Walks(mode, {"max_cells": max_cells} if bounded and max_cells is not None else {})
    fused_limit = max_fused_tiles if bounded else None
    best_name = result.best if result.candidates() else ""
    best = result.best_fused()
    if best is not None:
        name = f"fused at {best.level}"
        limit = None if not bounded else max_fused_tiles if name == best_name else max_other_fused_tiles
        checks.append(_check(name, name, best.schedule, walk, limit))
    outcomes = [("unfused", result.unfused)] + [(f"materialized at {level}", o)
                                                for level, o, _ in result.materialized if o is not None]
    for label, outcome in outcomes:
        if outcome is not None:
            _check_unfused(result, label, outcome, walk, checks, notes)
    for plan in result.plans:
        if plan.name == best_name:  # the best plan: replay each of its groups
            for i, part in enumerate(plan.parts):
                checks.append(_check(f"{plan.name} [{i}]", plan.name, part.schedule, walk, fused_limit))
    return ChainReplay(mode, tuple(checks), tuple(notes))


class _Walks:
    """``replay`` in one mode, each distinct schedule once: a materialized option's stages are often the unfused
    ones (a chain without intermediates: MobileNet-V3's 65 einsums on AccelForge's ``simple``, 192 walks and 27 s
    for 65 schedules).

    In count mode a single-einsum schedule is walked once per schedule *up to renaming*
    (:func:`mapsearch.schedule.canonical.canonical_form`): a chain of einsums that are renamed copies of each
    other (``T_i[m,n_i] += T_(i-1)[m,n_(i-1)] * W_i[n_(i-1),n_i]``) walks one stage and names its figures back
    for each of the others. Data modes carry each tensor's own values: every schedule is walked there.
    """

    def __init__(self, mode: str, options: dict):
        self.mode = mode
        self.options = options  # max_cells: it bounds the walk of one einsum
        self.done: dict = {}
        self.shared: dict = {}  # count mode: canonical schedule -> its replay in canonical names
        self.interrupted = False  # a walk was stopped (Ctrl-C): no other walk starts

    def _go_on(self) -> None:
        if self.interrupted:
            raise ReplayInterrupted("an earlier walk of this check was stopped")

    def __call__(self, schedule: Schedule | FusedSchedule) -> ReplayResult:
        self._go_on()
        if schedule not in self.done:
            self.done[schedule] = self._replay(schedule)
        return self.done[schedule]

    def _replay(self, schedule: Schedule | FusedSchedule) -> ReplayResult:
        if isinstance(schedule, FusedSchedule):
            return replay(schedule, mode=self.mode)
        form = canonical_form(schedule) if self.mode == "count" else None
        if form is None:
            return replay(schedule, mode=self.mode, **self.options)
        shared = self.shared.get(form.key)
        if shared is None:
            # A walk that raises is not shared: each schedule raises its own error, with its own names.
            r = replay(schedule, mode=self.mode, **self.options)
            figures = rename_figures(r.figures, dict(form.tensors))
            if figures is None:
                return r
            shared = self.shared[form.key] = replace(r, figures=figures)
        figures = rename_figures(shared.figures, form.own_tensor)
        return replay(schedule, mode=self.mode, **self.options) if figures is None else replace(shared, figures=figures)

    def unfused(self, graph: WorkloadGraph, stages: list[Schedule]) -> UnfusedResult:
        """``replay_unfused(graph, stages, mode)`` with its stages walked through this cache (its checks and sums
        are its own)."""
        self._go_on()
        return replay_unfused(graph, stages, self.mode, walk=self)


def _check(name: str, option: str, schedule: Schedule | FusedSchedule, walk: _Walks,
           max_fused_tiles: int | None) -> StageCheck:
    """One schedule of ``option`` replayed against its prediction; a fused one past ``max_fused_tiles`` is not
    walked."""
    if isinstance(schedule, FusedSchedule):
        tiles = 0 if max_fused_tiles is None else fused_count_tiles(schedule)
        if max_fused_tiles is not None and tiles > max_fused_tiles:
            return StageCheck(name, schedule.predicted, None, error=_too_many_tiles(tiles, max_fused_tiles),
                              not_run=True, option=option)
    try:
        r = walk(schedule)
    except ReplayInterrupted:
        walk.interrupted = True
        return StageCheck(name, schedule.predicted, None, error=INTERRUPTED, not_run=True, interrupted=True,
                          option=option)
    except SimulatorError as e:
        return StageCheck(name, schedule.predicted, None, error=" ".join(str(e).split()),
                          not_run=isinstance(e, WalkTooLong), option=option)
    return StageCheck(name, schedule.predicted, r.figures, tuple(differences(schedule.predicted, r.figures)),
                      data_ok=r.data_ok, max_abs_error=r.max_abs_error, option=option)


def _too_many_tiles(tiles: int, limit: int) -> str:
    return (f"the count replay would walk {tiles:,} tiles ({duration_text(tiles / FUSED_TILES_PER_SECOND)} at the "
            f"{FUSED_TILES_PER_SECOND:,} a second of a 2-core machine), more than its limit of {limit:,}: a fused "
            "schedule's small stages are walked tile by tile (sim/fused_count.py), so this one is neither checked nor "
            "refuted")


def duration_text(seconds: float) -> str:
    """``seconds`` as a message says how long a walk takes: "under a second", "about 40 s", "about 22 minutes"."""
    if seconds < 1:
        return "under a second"
    return f"about {seconds:.0f} s" if seconds < 120 else f"about {seconds / 60:,.0f} minutes"


def _check_unfused(result: ChainResult, label: str, outcome: UnfusedOutcome, walk: _Walks, checks: list,
                   notes: list) -> None:
    """Replay each einsum of an unfused option; compare stage by stage and the total time."""
    stages = [s.schedule for s in outcome.stages]
    try:
        if label == "unfused":
            run = walk.unfused(result.graph, stages)
            results, total_time, words = run.stages, run.time, run.figures.words_total
        else:  # materialized below the top: each stage's schedule replays on its own
            results = [walk(st) for st in stages]
            total_time = sum((r.figures.time for r in results), Fraction(0))
            words = sum(r.figures.words_total for r in results)
    except ReplayInterrupted:
        walk.interrupted = True
        checks.append(StageCheck(label, stages[0].predicted, None, error=INTERRUPTED, not_run=True, interrupted=True,
                                 option=label))
        return
    except SimulatorError as e:
        checks.append(StageCheck(label, stages[0].predicted, None, error=" ".join(str(e).split()),
                                 not_run=isinstance(e, WalkTooLong), option=label))
        return
    for i, (st, r) in enumerate(zip(stages, results)):
        checks.append(StageCheck(f"{label} [{i}] {st.workload.einsum.text()}", st.predicted, r.figures,
                                 tuple(differences(st.predicted, r.figures)), data_ok=r.data_ok,
                                 max_abs_error=r.max_abs_error, option=label))
    if total_time != outcome.time:
        checks.append(StageCheck(f"{label} (total time)", stages[0].predicted, results[0].figures,
                                 (("time", outcome.time, total_time),), option=label))
    else:
        notes.append(f"{label} total: time {fraction_to_json(total_time)} (sum of the stages), words {words:,}")
