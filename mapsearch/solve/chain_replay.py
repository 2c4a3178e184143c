"""Replaying a solved chain: the best fused schedule and every unfused stage, against their predictions.

:func:`replay_checks` replays what :func:`mapsearch.solve.chain.solve_chain`
returned and collects one :class:`StageCheck` per schedule;
:mod:`mapsearch.report.chain_report` renders them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from mapsearch.schedule.figures import Figures, differences
from mapsearch.sim.errors import SimulatorError
from mapsearch.sim.replay import replay, replay_unfused
from mapsearch.solve.chain import ChainResult, UnfusedOutcome
from mapsearch.spec.reading import fraction_to_json

__all__ = ["StageCheck", "ChainReplay", "replay_checks"]


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


def replay_checks(result: ChainResult, mode: str) -> ChainReplay:
    """Replay the best fused schedule and each unfused stage in ``mode``; compare with the predictions."""
    checks = []
    notes = []
    best = result.best_fused()
    if best is not None:
        fs = best.schedule
        name = f"fused at {best.level}"
        try:
            r = replay(fs, mode=mode)
        except SimulatorError as e:
            checks.append(StageCheck(name, fs.predicted, None, error=" ".join(str(e).split())))
        else:
            checks.append(StageCheck(name, fs.predicted, r.figures, tuple(differences(fs.predicted, r.figures)),
                                     data_ok=r.data_ok, max_abs_error=r.max_abs_error))
    options = [("unfused", result.unfused)] + [(f"materialized at {level}", o)
                                                for level, o, _ in result.materialized if o is not None]
    for label, outcome in options:
        if outcome is not None:
            _check_unfused(result, label, outcome, mode, checks, notes)
    best_name = result.best if result.candidates() else ""
    for plan in result.plans:
        if plan.name == best_name:  # the best plan: replay each of its groups
            for i, part in enumerate(plan.parts):
                sched = part.schedule
                try:
                    r = replay(sched, mode=mode)
                except SimulatorError as e:
                    checks.append(StageCheck(f"{plan.name} [{i}]", sched.predicted, None, error=" ".join(str(e).split())))
                    continue
                checks.append(StageCheck(f"{plan.name} [{i}]", sched.predicted, r.figures,
                                         tuple(differences(sched.predicted, r.figures)), data_ok=r.data_ok,
                                         max_abs_error=r.max_abs_error))
    return ChainReplay(mode, tuple(checks), tuple(notes))


def _check_unfused(result: ChainResult, label: str, outcome: UnfusedOutcome, mode: str, checks: list, notes: list) -> None:
    """Replay each einsum of an unfused option; compare stage by stage and the total time."""
    stages = [s.schedule for s in outcome.stages]
    try:
        if label == "unfused":
            run = replay_unfused(result.graph, stages, mode)
            results, total_time, words = run.stages, run.time, run.figures.words_total
        else:  # materialized below the top: each stage's schedule replays on its own
            results = [replay(st, mode=mode) for st in stages]
            total_time = sum((r.figures.time for r in results), Fraction(0))
            words = sum(r.figures.words_total for r in results)
    except SimulatorError as e:
        checks.append(StageCheck(label, stages[0].predicted, None, error=" ".join(str(e).split())))
        return
    for i, (st, r) in enumerate(zip(stages, results)):
        checks.append(StageCheck(f"{label} [{i}] {st.workload.einsum.text()}", st.predicted, r.figures,
                                 tuple(differences(st.predicted, r.figures)), data_ok=r.data_ok,
                                 max_abs_error=r.max_abs_error))
    if total_time != outcome.time:
        checks.append(StageCheck(f"{label} (total time)", stages[0].predicted, results[0].figures,
                                 (("time", outcome.time, total_time),)))
    else:
        notes.append(f"{label} total: time {fraction_to_json(total_time)} (sum of the stages), words {words:,}")
