"""``mapsearch replay SCHEDULE.json [--check] [--json] [--mode count|data|events]``.

Replays a schedule file (one einsum, a fused chain, a chain run einsum by
einsum: ``mapsearch-unfused-chain``, or a partly fused chain's plan run group by
group: ``mapsearch-chain-plan``) in the simulator and prints its figures;
``--check`` compares them with the predicted figures the file carries (for an
unfused chain: each stage's, fields ``stages[e].…``; for a plan: each group's,
fields ``groups[g].…``; and the totals ``time`` and ``words``). A mismatch or a
failed data check exits 1 (one line per field).
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from typing import Any

from mapsearch import api
from mapsearch.api import compare, load_schedule, replay
from mapsearch.cli.exits import EXIT_MISMATCH, CommandFailed
from mapsearch.errors import MapsearchError
from mapsearch.report.dram_rows import dram_rows_check
from mapsearch.report.json_report import report_dict
from mapsearch.report.text import render_text

__all__ = ["REPLAY_MODES", "add_parser", "run"]

REPLAY_MODES = ("count", "data", "events")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "replay",
        parents=[common],
        help="replay a schedule in the explicit-cache simulator and report its figures",
        description="Replay a schedule file and report what the simulator counts.",
    )
    p.add_argument("schedule", metavar="SCHEDULE.json", help="schedule file (as written by solve -o)")
    p.add_argument("--check", action="store_true", help="compare with the schedule's predicted figures; exit 1 on a mismatch")
    p.add_argument("--json", action="store_true", help="print a JSON report instead of text")
    p.add_argument(
        "--mode",
        metavar="MODE",
        default="count",
        help="one of " + "|".join(REPLAY_MODES) + " (or another mode the simulator lists): count (default): words "
        "and calls only; data: also compute with real data and check the result; events: walk every "
        "load/store/run event in the explicit-cache simulator",
    )
    return p


def _plain(value: object) -> object:
    """A JSON-ready copy of a figure value (Fractions as 'a/b' text, tuples as lists)."""
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def run(args: argparse.Namespace) -> None:
    mode = "count" if args.mode is None else args.mode
    if mode not in api.REPLAY_MODES:  # before the file is read: the flags first
        raise MapsearchError(f"--mode: expected one of {', '.join(api.REPLAY_MODES)}, got {mode!r}")
    schedule = load_schedule(args.schedule)
    if isinstance(schedule, (api.UnfusedChain, api.ChainPlan)):
        _run_unfused(args, schedule, mode)
        return
    if args.check and schedule.predicted is None:
        raise MapsearchError(f"{args.schedule}: --check needs the schedule's predicted figures; it has none")
    try:
        result = replay(schedule, mode=mode)
    except api.SimulatorError as e:  # the schedule breaks a rule only the replay sees (e.g. a level overflows)
        raise MapsearchError(f"{args.schedule}: {e}") from e
    figures = result.figures
    data_ok = getattr(result, "data_ok", None)
    max_abs_error = getattr(result, "max_abs_error", None)

    mismatches = compare(schedule.predicted, figures) if args.check else []
    rows = None
    if getattr(schedule, "dram", None) is not None:
        rows = dram_rows_check(schedule)
        if rows is not None and args.check:
            mismatches += rows.mismatches
    if args.json:
        out = report_dict(figures, schedule.architecture, data_ok=data_ok, max_abs_error=max_abs_error)
        out = {"schedule": str(args.schedule), "mode": mode, **out}
        if rows is not None:
            out["dram_rows"] = rows.to_dict()
        if args.check:
            out["check"] = _check_dict(mismatches)
        print(json.dumps(out, indent=2))
    else:
        name = schedule.graph.name if hasattr(schedule, "graph") else schedule.workload.name
        title = f"{name} on {schedule.architecture.name}: replay of {args.schedule} ({mode} mode)"
        print(render_text(figures, schedule.architecture, title=title, data_ok=data_ok, max_abs_error=max_abs_error), end="")
        if rows is not None:
            print(rows.text(), end="")
        if args.check and not mismatches:
            print("check: the replay matches the predicted figures")
    sys.stdout.flush()
    _fail_on(mismatches, data_ok, max_abs_error)


def _check_dict(mismatches: list) -> dict[str, Any]:
    """``--check --json``'s entry: ok, and each mismatch's field, predicted and replayed value."""
    return {"ok": not mismatches,
            "mismatches": [{"field": f, "predicted": _plain(p), "replayed": _plain(r)} for f, p, r in mismatches]}


def _fail_on(mismatches: list, data_ok: bool | None, max_abs_error: float | None) -> None:
    """Exit 1 (one line per field) on a mismatch or a failed data check."""
    failures = [f"replay mismatch in {field}: predicted {_plain(predicted)}, replayed {_plain(replayed)}"
                for field, predicted, replayed in mismatches]
    if data_ok is False:
        err = "" if max_abs_error is None else f" (max abs error {max_abs_error:.3g})"
        failures.append(f"data check failed: the replayed output differs from the reference{err}")
    if failures:
        raise CommandFailed(EXIT_MISMATCH, failures)


def _parts(chain: api.UnfusedChain | api.ChainPlan) -> list[tuple[str, str, list[str]]]:
    """Per stage (unfused) or group (plan): its field prefix, its words in a title, and its einsums' texts."""
    if isinstance(chain, api.ChainPlan):
        out = []
        for g, (indices, st) in enumerate(zip(chain.groups, chain.stages)):
            texts = [chain.graph.einsums[i].text() for i in indices]
            label = "+".join(map(str, indices))
            title = f"group {g}, einsums {label} fused at {st.architecture.levels[st.fusion_level].name}" \
                if len(indices) > 1 else f"group {g}, {texts[0]}"
            out.append((f"groups[{g}]", title, texts))
        return out
    return [(f"stages[{e}]", f"stage {e}, {st.workload.einsum.text()}", [st.workload.einsum.text()])
            for e, st in enumerate(chain.stages)]


def _run_unfused(args: argparse.Namespace, chain: api.UnfusedChain | api.ChainPlan, mode: str) -> None:
    """An unfused chain's file, or a partly fused chain's plan: each stage (group) replayed alone, then the totals
    (``time`` the sum of the stages')."""
    plan = isinstance(chain, api.ChainPlan)
    unit = "group" if plan else "stage"
    if args.check and not chain.predicted_complete:
        raise MapsearchError(f"{args.schedule}: --check needs the predicted figures of every {unit} and the totals "
                             "time and words; this file lacks some")
    try:
        result = replay(chain, mode=mode)
    except api.SimulatorError as e:
        raise MapsearchError(f"{args.schedule}: {e}") from e
    words = result.figures.words_total
    parts = _parts(chain)
    mismatches: list[tuple[str, object, object]] = []
    if args.check:
        for (field, _, _), stage, r in zip(parts, chain.stages, result.stages):
            mismatches += [(f"{field}.{f}", p, q) for f, p, q in compare(stage.predicted, r.figures)]
        mismatches += [(f, p, q) for f, p, q in (("time", chain.time, result.time), ("words", chain.words, words))
                       if p != q]
    arch = chain.architecture
    if args.json:
        entries = []
        for (_, _, texts), r in zip(parts, result.stages):
            head: dict[str, Any] = {"einsums": texts} if plan else {"einsum": texts[0]}
            entries.append({**head, **report_dict(r.figures, arch, data_ok=r.data_ok, max_abs_error=r.max_abs_error)})
        out: dict[str, Any] = {"schedule": str(args.schedule), "mode": mode, "time": _plain(result.time),
                               "words": words, ("groups" if plan else "stages"): entries}
        if args.check:
            out["check"] = _check_dict(mismatches)
        print(json.dumps(out, indent=2))
    else:
        for (_, what, _), r in zip(parts, result.stages):
            title = f"{chain.graph.name} {what}, on {arch.name}: replay of {args.schedule} ({mode} mode)"
            print(render_text(r.figures, arch, title=title, data_ok=r.data_ok, max_abs_error=r.max_abs_error))
        between = f", between at {chain.between_level}" if plan else ""
        print(f"total ({len(chain.stages)} {unit}s one after another{between}): time {_plain(result.time)}, "
              f"words {words:,}")
        if args.check and not mismatches:
            print("check: the replay matches the predicted figures")
    sys.stdout.flush()
    _fail_on(mismatches, result.data_ok, result.max_abs_error)
