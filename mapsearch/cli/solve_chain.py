"""``mapsearch solve CHAIN.yaml ARCH``: every fusion level and the unfused baseline, replayed, compared.

``mapsearch solve`` hands over here when the workload file is a chain
(``einsums: [...]``) or a TeAAL specification (``einsum: {declaration,
expressions}``); see :func:`mapsearch.spec.workload_files.is_chain_file`.

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
failed, or the best option's replay did not run (too long to walk, or a
Ctrl-C during the check: the report says which check did not run and
why, and nothing is written); 2 bad input or nothing feasible; 3 no schedule
within the time limit.
The solving, replaying and writing are :mod:`mapsearch.solve.chain`,
:mod:`mapsearch.solve.chain_replay` and :mod:`mapsearch.solve.chain_files`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from mapsearch import api
from mapsearch.cli.exits import EXIT_MISMATCH, CommandFailed
from mapsearch.cli.solving import options_from_args, plain, replay_mode_of, simulator_failure, stopped_by
from mapsearch.errors import UsageError
from mapsearch.report.chain_report import chain_report_dict, render_chain_text, teaal_notes

__all__ = ["run"]

log = logging.getLogger(__name__)


def extents_of(args: argparse.Namespace) -> dict[str, int]:
    """``--extent NAME=N`` (repeatable) as a dict; a malformed one is a one-line UsageError."""
    out: dict[str, int] = {}
    for text in getattr(args, "extent", None) or []:
        name, sep, value = str(text).partition("=")
        if not sep or not name.strip() or not value.strip().isdigit() or int(value) < 1:
            raise UsageError("--extent", "NAME=N with N an int >= 1", text)
        out[name.strip()] = int(value)
    return out


def run(args: argparse.Namespace, problem: api.LoadedProblem | None = None) -> None:
    """``mapsearch solve`` on a chain or TeAAL file; a failure raises (:mod:`mapsearch.cli.exits`).

    ``problem``: a peer's chain already read (:func:`mapsearch.api.load_problem`) instead of the files in ``args``.
    """
    objective = getattr(args, "objective", None) or "time"
    if objective != "time":
        raise UsageError("--objective", "time for a chain (every option is solved for time, then words)", objective)
    if getattr(args, "constraints", None):
        raise UsageError("-c/--constraints", "no constraints file for a chain (this version); a TeAAL file carries "
                         "its own mapping", args.constraints)
    mode = replay_mode_of(args)
    if problem is not None:
        arch, workload, source = problem.architecture, problem.workload, problem.architecture
    else:
        arch, workload, source = api.load_architecture(args.architecture), args.workload, args.architecture
    options = options_from_args(args, arch)
    try:
        result = api.solve_chain(workload, source, options=options, replay_mode=mode, strict=False,
                                 extents=extents_of(args))
    except api.SimulatorError as e:
        raise simulator_failure(e, mode) from e
    notes = teaal_notes(result.teaal, arch) if result.teaal is not None else []
    replayed = result.replay
    if args.json:
        report = chain_report_dict(result, replayed, notes)
        if result.plans_left_out:
            report["plans_left_out"] = result.plans_left_out
        print(json.dumps(report, indent=2))
    else:
        print(render_chain_text(result, replayed, notes), end="")
    if result.plans_left_out:  # before a failure's lines: the report above is short of them either way
        print(f"mapsearch: warning: {result.plans_left_out}", file=sys.stderr)

    failures = replayed.failures(result.best)
    for c in replayed.checks:  # another option's walk not run: its schedule is unchecked, the best one is not
        if c.not_run and c.option != result.best:
            print(f"mapsearch: warning: REPLAY NOT RUN: {c.name}: {c.error}", file=sys.stderr)
    if failures:
        lines = []
        for c in failures:
            if c.not_run:
                lines.append(f"REPLAY NOT RUN: {c.name}: {c.error}")
            elif c.error:
                lines.append(f"REPLAY MISMATCH: {c.name} fails in the simulator ({mode} mode): {c.error}")
            lines += [f"REPLAY MISMATCH in {c.name}: {fld}: predicted {plain(a)}, replayed {plain(b)}"
                      for fld, a, b in c.differences]
            if c.data_ok is False:
                lines.append(f"data check failed: {c.name}: the replayed output differs from numpy; nothing is written")
        if all(c.not_run for c in failures) and any(c.interrupted for c in failures):
            lines.append("REPLAY NOT RUN: Ctrl-C stopped the check replay: the best schedule is neither checked nor "
                         "refuted; nothing is written")
        elif all(c.not_run for c in failures):
            lines.append("REPLAY NOT RUN: the best schedule is neither checked nor refuted; nothing is written "
                         "(replay it with mapsearch replay once the walk can take it)")
        else:
            lines.append("REPLAY MISMATCH: the replay disagrees with the solver; nothing is written")
        raise CommandFailed(EXIT_MISMATCH, lines)

    loose = [f"fused at {o.level}" for o in result.fused if o.status == "FEASIBLE"]
    if result.unfused is not None and result.unfused.status == "FEASIBLE":
        loose.append("unfused")
    loose += [f"materialized at {level}" for level, o, _ in result.materialized
              if o is not None and o.status == "FEASIBLE"]
    unproven = sum(p.status == "FEASIBLE" for p in result.plans)
    if unproven:
        loose.append(f"{unproven} partly fused plan(s)")
    if loose:
        print(f"mapsearch: warning: FEASIBLE, not proven optimal ({stopped_by(None, options)}): "
              f"{', '.join(loose)}", file=sys.stderr)
    if args.output:
        api.save_schedule(result, args.output)
        log.info("wrote %s", args.output)
