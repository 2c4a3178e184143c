"""``mapsearch solve CHAIN.yaml ARCH``: every fusion level and the unfused baseline, replayed, compared.

``mapsearch solve`` hands over here when the workload file is a chain
(``einsums: [...]``) or a TeAAL specification (``einsum: {declaration,
expressions}``); see :func:`is_chain_file`.

- A native chain: :func:`mapsearch.solve.chain.solve_chain` solves fused at
  every level below the top, and unfused (each einsum alone, intermediates
  at the top). The best is the shortest time, then the fewest words.
- A TeAAL file: its mapping (``partitioning`` tile sizes, ``loop-order``)
  becomes one set of constraints per einsum
  (:meth:`mapsearch.spec.teaal.TeaalSpec.constraints`). ``solve_chain``
  takes no per-einsum constraints yet, so each einsum is solved unfused with
  its own constraints, fused levels are not solved, and the report says so.

Then the best fused schedule and every unfused stage are replayed
(``--replay-mode``, default ``count``; ``data`` also checks the values
against numpy). If any replay disagrees with its prediction, each differing
field goes to stderr under ``REPLAY MISMATCH``, the exit code is 1 and
nothing is written. ``-o FILE`` writes the best option: a fused schedule file
(:func:`mapsearch.schedule.fused_json.save_fused`) or, when unfused wins, a
``mapsearch-unfused-chain`` JSON with one schedule per einsum.

Exit codes as ``mapsearch solve``: 0 ok; 1 replay mismatch or data check
failed; 2 bad input or nothing feasible; 3 no schedule within the time limit.
"""

from __future__ import annotations

from fractions import Fraction

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from mapsearch.errors import InfeasibleError, MapsearchError, SolverTimeout, SpecError
from mapsearch.report.chain_report import ChainReplay, StageCheck, chain_report_dict, render_chain_text
from mapsearch.schedule.figures import differences
from mapsearch.sim.errors import SimulatorError
from mapsearch.solve.chain import ChainResult, UnfusedOutcome, solve_chain
from mapsearch.solve.cli_solve import EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK, EXIT_TIMEOUT, UsageError, _plain, \
    _replay_mode, options_from_args
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import WorkloadGraph

log = logging.getLogger(__name__)

UNFUSED_FORMAT = "mapsearch-unfused-chain"


def is_chain_file(path: str | Path) -> bool:
    """True when ``path`` reads as a chain or a TeAAL file (what :func:`load_workload_any` makes a graph of)."""
    from mapsearch.spec.load import read_yaml

    p = Path(path)
    if not p.is_file():
        return False
    try:
        data = read_yaml(p)
    except MapsearchError:
        return False
    return isinstance(data, Mapping) and ("einsums" in data or isinstance(data.get("einsum"), Mapping))


def load_chain(path: str | Path) -> tuple[WorkloadGraph, dict[str, str], Any]:
    """``(graph, homes, teaal_spec or None)``."""
    from mapsearch.spec.graph_load import graph_and_homes_from_dict
    from mapsearch.spec.load import read_yaml

    data = read_yaml(path)
    if isinstance(data, Mapping) and isinstance(data.get("einsum"), Mapping):
        from mapsearch.spec.teaal import teaal_from_dict

        spec = teaal_from_dict(data, str(path))
        return spec.graph, {}, spec
    graph, homes = graph_and_homes_from_dict(data, str(path))
    return graph, homes, None


def _check_homes(homes: Mapping[str, str], arch: Architecture, source: str) -> None:
    for t, level in homes.items():
        if level not in arch.level_names:
            raise SpecError(source, f"homes.{t}", "", detail=f"unknown level {level!r}; {arch.name} has "
                            f"{', '.join(arch.level_names)}")


def solve_teaal(graph: WorkloadGraph, arch: Architecture, spec: Any, options) -> ChainResult:
    """Each einsum alone (unfused) with its TeAAL mapping constraints."""
    from mapsearch.model.problem import Problem
    from mapsearch.solve.run import solve

    start = time.perf_counter()
    constraints = spec.constraints(arch)
    stages = []
    for i, c in enumerate(constraints):
        stages.append(solve(Problem(graph.stage(i), arch, ()), c, options))
    return ChainResult(graph, arch, (), UnfusedOutcome(tuple(stages)), "", time.perf_counter() - start)


def teaal_notes(spec: Any, arch: Architecture) -> list[str]:
    out = ["TeAAL mapping constraints apply per einsum (partitioning -> tile sizes, loop-order -> loop orders); "
           "solve_chain takes no per-einsum constraints yet, so each einsum is solved UNFUSED with its own "
           "constraints and no fused level is solved"]
    for c in spec.constraints(arch):
        tiles = ", ".join(f"{t.dim}={t.lo} at {t.level}" for t in c.tiles) or "none"
        orders = "; ".join(f"{lv}: {' '.join(ds)}" for lv, ds in c.orders) or "none"
        out.append(f"{c.name}: tiles {tiles}; orders {orders}")
    hints = {o: spec.spatial_hints(o) for o in spec.space}
    if any(hints.values()):
        out.append("spacetime.space loops are spatial hints, not applied (no mesh in this solve): "
                   + "; ".join(f"{o}: {', '.join(ds)}" for o, ds in hints.items() if ds))
    out += list(spec.notes)
    return out


def replay_checks(result: ChainResult, mode: str) -> ChainReplay:
    """Replay the best fused schedule and each unfused stage in ``mode``; compare with the predictions."""
    from mapsearch.sim.replay import replay

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


def _check_unfused(result: ChainResult, label: str, outcome, mode: str, checks: list, notes: list) -> None:
    """Replay each einsum of an unfused option; compare stage by stage and the total time."""
    from mapsearch.sim.fused import replay_unfused

    from mapsearch.sim.replay import replay

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
        notes.append(f"{label} total: time {_plain(total_time)} (sum of the stages), words {words:,}")


def plan_to_dict(result: ChainResult, plan) -> dict[str, Any]:
    """A partly fused chain as a ``mapsearch-chain-plan`` document: one schedule per group."""
    from mapsearch.schedule.fused_json import fused_to_dict
    from mapsearch.schedule.json_io import schedule_to_dict
    from mapsearch.spec.graph_load import graph_to_dict

    groups = []
    for indices, part in zip(plan.groups, plan.parts):
        sched = part.schedule
        doc = fused_to_dict(sched) if hasattr(sched, "stages") else schedule_to_dict(sched)
        groups.append({"einsums": list(indices), "schedule": doc})
    return {"format": "mapsearch-chain-plan", "version": 1, "graph": graph_to_dict(result.graph),
            "between_level": plan.level, "time": _plain(plan.time), "words": plan.words, "groups": groups}


def unfused_to_dict(result: ChainResult, outcome=None) -> dict[str, Any]:
    """An unfused option (default: the baseline) as a ``mapsearch-unfused-chain`` document."""
    from mapsearch.schedule.json_io import schedule_to_dict
    from mapsearch.spec.graph_load import graph_to_dict

    u = outcome if outcome is not None else result.unfused
    return {
        "format": UNFUSED_FORMAT,
        "version": 1,
        "graph": graph_to_dict(result.graph),
        "time": _plain(u.time),
        "words": u.words,
        "stages": [schedule_to_dict(r.schedule) for r in u.stages],
    }


def run(args: argparse.Namespace, loaded: tuple | None = None) -> int:
    """``mapsearch solve`` on a chain or TeAAL file; returns the exit code.

    ``loaded``: ``(graph, homes, architecture, notes)`` already read (a peer's
    files, mapsearch/solve/cli_foreign.py) instead of the files in ``args``.
    """
    from mapsearch.presets import resolve_architecture

    objective = getattr(args, "objective", None) or "time"
    if objective != "time":
        raise UsageError("--objective", "time for a chain (every option is solved for time, then words)", objective)
    if getattr(args, "constraints", None):
        raise UsageError("-c/--constraints", "no constraints file for a chain (this version); a TeAAL file carries "
                         "its own mapping", args.constraints)
    mode = _replay_mode(args)
    notes: list[str] = []
    if loaded is not None:
        graph, homes, arch, notes = loaded[0], loaded[1], loaded[2], list(loaded[3])
        spec = None
    else:
        graph, homes, spec = load_chain(args.workload)
        arch, _ = resolve_architecture(args.architecture)
    _check_homes(homes, arch, str(args.workload))
    options = options_from_args(args, arch)
    try:
        if spec is not None:
            notes += teaal_notes(spec, arch)
            result = solve_teaal(graph, arch, spec, options)
        else:
            result = solve_chain(graph, arch, homes, options)
    except SolverTimeout as e:
        print(f"mapsearch: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_TIMEOUT
    if not result.candidates():
        if any(o.status == "TIMEOUT" for o in result.fused) or "time limit" in result.unfused_reason:
            print("mapsearch: no schedule for this chain within the time limit: " + "; ".join(
                [f"fused at {o.level}: {o.status} {o.reason}" for o in result.fused]
                + [f"unfused: {result.unfused_reason}"]), file=sys.stderr)
            return EXIT_TIMEOUT
        raise InfeasibleError("no schedule for this chain: " + "; ".join(
            [f"fused at {o.level}: {' '.join(o.reason.split())}" for o in result.fused]
            + [f"unfused: {' '.join(result.unfused_reason.split())}"]))

    replayed = replay_checks(result, mode)
    if args.json:
        report = chain_report_dict(result, replayed, notes)
        print(json.dumps(report, indent=2))
    else:
        print(render_chain_text(result, replayed, notes), end="")

    if not replayed.ok:
        for c in replayed.checks:
            if c.error:
                print(f"mapsearch: REPLAY MISMATCH: {c.name} fails in the simulator ({mode} mode): {c.error}", file=sys.stderr)
            for fld, a, b in c.differences:
                print(f"mapsearch: REPLAY MISMATCH in {c.name}: {fld}: predicted {_plain(a)}, replayed {_plain(b)}",
                      file=sys.stderr)
            if c.data_ok is False:
                print(f"mapsearch: data check failed: {c.name}: the replayed output differs from numpy; "
                      "nothing is written", file=sys.stderr)
        print("mapsearch: REPLAY MISMATCH: the replay disagrees with the solver; nothing is written", file=sys.stderr)
        return EXIT_MISMATCH

    loose = [f"fused at {o.level}" for o in result.fused if o.status == "FEASIBLE"]
    if result.unfused is not None and result.unfused.status == "FEASIBLE":
        loose.append("unfused")
    if loose:
        print(f"mapsearch: warning: FEASIBLE, not proven optimal (time limit {options.time_limit:g} s): "
              f"{', '.join(loose)}", file=sys.stderr)
    if args.output:
        best = result.best
        plan = next((p for p in result.plans if p.name == best), None)
        if plan is not None:
            from mapsearch.atomic import write_text_atomic
            from mapsearch.schedule.json_io import _pretty

            write_text_atomic(args.output, _pretty(plan_to_dict(result, plan)) + "\n")
            log.info("wrote %s", args.output)
            return EXIT_OK
        unfused = {"unfused": result.unfused}
        unfused.update({f"materialized at {level}": o for level, o, _ in result.materialized if o is not None})
        if best in unfused:
            from mapsearch.atomic import write_text_atomic
            from mapsearch.schedule.json_io import _pretty

            write_text_atomic(args.output, _pretty(unfused_to_dict(result, unfused[best])) + "\n")
        else:
            from mapsearch.schedule.fused_json import save_fused

            save_fused(next(o for o in result.fused if f"fused at {o.level}" == best).schedule, args.output)
        log.info("wrote %s", args.output)
    return EXIT_OK


__all__ = ["run", "is_chain_file", "load_chain", "solve_teaal", "replay_checks", "unfused_to_dict", "UNFUSED_FORMAT",
           "EXIT_BAD_INPUT"]
