"""The files a solved chain is written as: its best option, in the format that option needs.

- fused at one level: a fused schedule file (:mod:`mapsearch.schedule.fused_json`);
- unfused or materialized at a level: a ``mapsearch-unfused-chain`` document, one schedule per einsum
  (read back by :mod:`mapsearch.schedule.unfused_json`);
- partly fused (chains of three or more einsums): a ``mapsearch-chain-plan`` document, one schedule per group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mapsearch.atomic import write_text_atomic
from mapsearch.schedule.fused_json import fused_to_dict, save_fused
from mapsearch.schedule.json_io import _pretty, schedule_to_dict
from mapsearch.schedule.unfused_json import FORMAT as UNFUSED_FORMAT  # read back by unfused_from_dict
from mapsearch.schedule.unfused_json import PLAN_FORMAT  # read back by plan_from_dict
from mapsearch.solve.chain import ChainResult, GroupPlan, UnfusedOutcome
from mapsearch.spec.graph_load import graph_to_dict
from mapsearch.spec.reading import fraction_to_json

__all__ = ["PLAN_FORMAT", "UNFUSED_FORMAT", "plan_to_dict", "unfused_to_dict", "save_best"]


def plan_to_dict(result: ChainResult, plan: GroupPlan) -> dict[str, Any]:
    """A partly fused chain as a ``mapsearch-chain-plan`` document: one schedule per group."""
    groups = []
    for indices, part in zip(plan.groups, plan.parts):
        sched = part.schedule
        doc = fused_to_dict(sched) if hasattr(sched, "stages") else schedule_to_dict(sched)
        groups.append({"einsums": list(indices), "schedule": doc})
    return {"format": PLAN_FORMAT, "version": 1, "graph": graph_to_dict(result.graph),
            "between_level": plan.level, "time": str(fraction_to_json(plan.time)), "words": plan.words, "groups": groups}


def unfused_to_dict(result: ChainResult, outcome: UnfusedOutcome | None = None) -> dict[str, Any]:
    """An unfused option (default: the baseline) as a ``mapsearch-unfused-chain`` document."""
    u = outcome if outcome is not None else result.unfused
    return {
        "format": UNFUSED_FORMAT,
        "version": 1,
        "graph": graph_to_dict(result.graph),
        "time": str(fraction_to_json(u.time)),
        "words": u.words,
        "stages": [schedule_to_dict(r.schedule) for r in u.stages],
    }


def save_best(result: ChainResult, path: str | Path) -> None:
    """Write the best option of ``result`` to ``path`` (atomically), in the format it needs."""
    best = result.best
    plan = next((p for p in result.plans if p.name == best), None)
    if plan is not None:
        write_text_atomic(path, _pretty(plan_to_dict(result, plan)) + "\n")
        return
    unfused = {"unfused": result.unfused}
    unfused.update({f"materialized at {level}": o for level, o, _ in result.materialized if o is not None})
    if best in unfused:
        write_text_atomic(path, _pretty(unfused_to_dict(result, unfused[best])) + "\n")
    else:
        save_fused(next(o for o in result.fused if f"fused at {o.level}" == best).schedule, path)
