"""One case of a sweep, and the function that runs it anywhere.

A :class:`Case` is frozen, picklable and self-contained: its ``spec`` is the
canonical JSON of the fully resolved workload, architecture, objective,
constraints and solver settings, and ``case_id`` is a hash of that text
(:func:`mapsearch.sweep.spec.case_content_id`). The time limit is not part
of the identity: a proven optimum does not depend on it.

:func:`run_case` solves, replays (count mode) and compares with the same
call as ``mapsearch solve`` and :func:`mapsearch.api.solve`
(:func:`mapsearch.solve.entry.solve`), and returns a plain dict; it never raises for a case that fails
(infeasible, out of time, replay mismatch, a bug): the failure is recorded
in the dict and the sweep goes on. It runs in a worker process (local pool
or Dask worker) and writes nothing: the parent stores what it returns.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from mapsearch.errors import InfeasibleError, MapsearchError, SolverTimeout
from mapsearch.model.options import SolveOptions
from mapsearch.report.solve_report import solve_report_dict
from mapsearch.schedule.json_io import dumps_schedule, schedule_from_dict
from mapsearch.schedule.schedule import Schedule
from mapsearch.solve.entry import solve
from mapsearch.spec.inputs import architecture_of, constraints_of, workload_of

__all__ = ["Case", "run_case", "OK_STATUSES", "FAILED_STATUSES", "INTERRUPTED"]

log = logging.getLogger(__name__)

OK_STATUSES = ("OPTIMAL", "OPTIMAL_IN_FAMILY", "FEASIBLE")
FAILED_STATUSES = ("INFEASIBLE", "TIMEOUT", "MISMATCH", "ERROR")
# A case that was running when the sweep was interrupted: recorded, but not a result; every rerun solves it.
INTERRUPTED = "INTERRUPTED"


@dataclass(frozen=True)
class Case:
    case_id: str
    workload: str  # names, for reports
    architecture: str
    objective: str
    constraints: str  # the constraints' name, "" for none
    params: tuple[tuple[str, Any], ...]  # (path, value) applied to the specs
    spec: str  # canonical JSON: workload, architecture, objective, constraints, solver
    time_limit: float

    @property
    def content(self) -> dict[str, Any]:
        return json.loads(self.spec)


def _one_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())}"


def _start(text: str | None) -> Schedule | None:
    """The neighbour's schedule (its stored file text) as a start; one that does not read is no start."""
    if text is None:
        return None
    try:
        return schedule_from_dict(json.loads(text), "the neighbour's schedule")
    except (ValueError, MapsearchError) as e:
        log.debug("no warm start: %s", _one_line(e))
        return None


def run_case(case: Case, neighbour: str | None = None) -> dict[str, Any]:
    """Solve, replay and compare one case; a JSON-ready dict (see :mod:`mapsearch.sweep`).

    ``neighbour``: the schedule file text of the case's neighbour, a warm start
    (mapsearch/sweep/neighbours.py); it hints the search and never changes
    a proven optimum.

    Keys: ``case_id``, ``status`` (OPTIMAL, FEASIBLE or one of
    :data:`FAILED_STATUSES`), ``error`` (``'Type: one line'`` or None),
    ``solve_seconds``, ``wall_seconds``, ``report`` (the
    :func:`~mapsearch.report.solve_report.solve_report_dict` without its
    schedule, or None), ``schedule`` (the schedule file's text, or None; not
    given for a mismatch, as ``mapsearch solve`` writes none) and ``worker``.
    """
    start = time.perf_counter()
    out: dict[str, Any] = {"case_id": case.case_id, "status": "ERROR", "error": None, "solve_seconds": None,
                           "report": None, "schedule": None, "worker": f"{socket.gethostname()}:{os.getpid()}"}
    try:
        content = case.content
        workload_doc = dict(content["workload"])
        homes = dict(workload_doc.pop("homes", None) or {})
        options = SolveOptions(objective=case.objective, time_limit=case.time_limit,
                               workers=content["solver"]["workers"], seed=content["solver"]["seed"],
                               work_limit=content["solver"].get("work_limit"), start=_start(neighbour))
        mode = content.get("replay_mode", "count")
        result = solve(workload_of(workload_doc, source_name=case.workload),
                       architecture_of(content["architecture"], source_name=case.architecture),
                       constraints_of(content.get("constraints"), source_name=case.constraints),
                       homes=homes, options=options, replay_mode=mode, strict=False)
        out["solve_seconds"] = float(result.solve_seconds)
        report = solve_report_dict(result, result.replayed, mode=mode)
        report.pop("schedule", None)
        out["report"] = report
        if report["mismatches"]:
            out["status"] = "MISMATCH"
            out["error"] = "ReplayMismatch: " + "; ".join(
                f"{m['field']}: predicted {m['predicted']}, replayed {m['replayed']}" for m in report["mismatches"])
        else:
            out["status"] = result.status
            out["schedule"] = dumps_schedule(result.schedule)
    except InfeasibleError as e:
        core = f" (conflicting: {', '.join(e.core)})" if e.core and not all(c in str(e) for c in e.core) else ""
        out["status"], out["error"] = "INFEASIBLE", _one_line(e) + core
    except SolverTimeout as e:
        out["status"], out["error"] = "TIMEOUT", _one_line(e)
    except MapsearchError as e:
        out["status"], out["error"] = "ERROR", _one_line(e)
    except Exception as e:  # a bug in one case must not stop the sweep; it is recorded with its type
        out["status"], out["error"] = "ERROR", _one_line(e)
    out["wall_seconds"] = time.perf_counter() - start
    return out
