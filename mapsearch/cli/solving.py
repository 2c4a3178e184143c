"""What the solve command's three paths share (dense, chain, sparse): flags to options, failure lines.

Used by :mod:`mapsearch.cli.solve`, :mod:`mapsearch.cli.solve_chain` and
:mod:`mapsearch.cli.solve_sparse`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mapsearch import api
from mapsearch.cli.exits import EXIT_MISMATCH, CommandFailed
from mapsearch.errors import UsageError
from mapsearch.report.text import exact_text as plain

__all__ = ["REPLAY_MODES", "FLAGS", "options_from_args", "parse_link_energy", "objective_of", "replay_mode_of",
           "mismatch_lines", "data_check_line", "simulator_failure", "plain", "stopped_by", "limit_text"]

REPLAY_MODES = ("count", "events", "data")
OBJECTIVES = ("time", "words", "energy")

# The solve options' parameters, as the command line names them in errors.
FLAGS = {"objective": "--objective", "time_limit": "--time-limit", "work_limit": "--work-limit",
         "min_utilization": "--min-utilization", "workers": "--workers", "seed": "--seed",
         "link_energy": "--link-energy", "op_energy": "--op-energy", "dram_rows": "--dram-rows",
         "max_dram_rows": "--max-dram-rows", "dram_layouts": "--dram-layouts", "placement": "--no-placement",
         "block_binding": "--block-binding", "start": "--start"}


def parse_link_energy(items: list[str] | None) -> dict[str, str]:
    """``['L1->L0=1/2', ...]`` -> ``{'L1->L0': '1/2'}`` (the values are checked by :func:`mapsearch.api.solve_options`)."""
    out: dict[str, str] = {}
    for item in items or ():
        name, eq, cost = str(item).rpartition("=")
        if not eq or not name:
            raise UsageError("--link-energy", "NAME=COST, e.g. 'L1->L0=2'", item)
        out[name] = cost
    return out


def _given(args: argparse.Namespace, name: str) -> Any:
    """The flag's value, None when not given; an empty value (``--start ''``) is refused, not read as absent."""
    value = getattr(args, name, None)
    if value is not None and not str(value).strip():
        flag = FLAGS.get(name, "--" + name.replace("_", "-"))
        raise UsageError(flag, "a value (it is empty)", value)
    return value


def options_from_args(args: argparse.Namespace, arch: Any, workload: Any = None) -> api.SolveOptions:
    """The :class:`~mapsearch.api.SolveOptions` the flags ask for; a bad one is one line naming the flag."""
    objective = objective_of(args)
    link_energy = parse_link_energy(getattr(args, "link_energy", None))
    op_energy = getattr(args, "op_energy", None)
    options = api.solve_options(
        objective=objective, time_limit=getattr(args, "time_limit", None), work_limit=getattr(args, "work_limit", None),
        min_utilization=getattr(args, "min_utilization", None), workers=getattr(args, "workers", None),
        seed=getattr(args, "seed", None), link_energy=link_energy, op_energy=op_energy,
        dram_rows=getattr(args, "dram_rows", None), max_dram_rows=getattr(args, "max_dram_rows", None),
        dram_layouts=_given(args, "dram_layouts"),
        placement=False if getattr(args, "no_placement", False) else None,
        block_binding=_given(args, "block_binding"),
        start=_given(args, "start"),
        architecture=arch, workload=workload, names=FLAGS)
    if objective != "energy" and (link_energy or op_energy is not None):
        print("mapsearch: warning: --link-energy and --op-energy only apply to --objective energy; ignored", file=sys.stderr)
    return options


def stopped_by(result: Any, options: api.SolveOptions) -> str:
    """What cut a search short, for the FEASIBLE warning: Ctrl-C, the work limit or the time limit."""
    if getattr(result, "interrupted", False) or api.stopped():
        return "interrupted by Ctrl-C"
    return limit_text(options)


def limit_text(options: api.SolveOptions) -> str:
    """The limit that cut a search short when Ctrl-C did not: the work limit or the time limit."""
    if options.work_limit is not None:
        return f"work limit {options.work_limit:g} deterministic s or time limit {options.time_limit:g} s"
    return f"time limit {options.time_limit:g} s"


def objective_of(args: argparse.Namespace) -> str:
    objective = getattr(args, "objective", None)
    objective = "time" if objective is None else objective  # --objective '' is a bad value, not the default
    if objective not in OBJECTIVES:
        raise UsageError("--objective", "one of " + ", ".join(OBJECTIVES), objective)
    return objective


def replay_mode_of(args: argparse.Namespace) -> str:
    mode = getattr(args, "replay_mode", None)
    mode = "count" if mode is None else mode
    if mode not in REPLAY_MODES:
        raise UsageError("--replay-mode", "one of " + ", ".join(REPLAY_MODES), mode)
    return mode


def mismatch_lines(what: str, mismatches, said: str = "predicted") -> list[str]:
    """One line saying ``what`` and that nothing is written, then one line per ``(field, model, replayed)``."""
    return [f"REPLAY MISMATCH: {what} in {len(mismatches)} field(s); the schedule is not written"] + [
        f"REPLAY MISMATCH in {field}: {said} {plain(model)}, replayed {plain(replayed_value)}"
        for field, model, replayed_value in mismatches]


def data_check_line(replayed, whose: str) -> list[str]:
    """One line when a data-mode replay's output differs from the NumPy reference; none when it agrees."""
    if replayed is None or replayed.data_ok is not False:
        return []
    err = "" if replayed.max_abs_error is None else f" (max abs error {replayed.max_abs_error:.3g})"
    return [f"data check failed: the {whose} output differs from the reference{err}; the schedule is not written"]


def simulator_failure(e: api.SimulatorError, mode: str) -> CommandFailed:
    """A solved schedule the simulator rejects: a replay mismatch (exit 1); one too long to walk: not checked (exit 1)."""
    if isinstance(e, api.WalkTooLong):
        return CommandFailed(EXIT_MISMATCH, [f"REPLAY NOT RUN: {' '.join(str(e).split())}; the schedule is not "
                                             "written (replay it with mapsearch replay once the walk can take it)"])
    return CommandFailed(EXIT_MISMATCH, [f"REPLAY MISMATCH: the solved schedule fails in the simulator ({mode} "
                                         f"mode): {' '.join(str(e).split())}"])
