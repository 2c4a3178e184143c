"""Write a sweep's stored results out: JSON Lines, CSV, schedule files and a summary table.

Rows follow the sweep's case order; cases not yet run are left out (the
summary counts them as pending). The exports describe the sweep being
exported: ``schedules/`` keeps only its cases' files (those of another sweep
run into the same directory are removed; their results stay in the database). Every file is written to a temporary name
and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from mapsearch.errors import MapsearchError
from mapsearch.sweep.case import FAILED_STATUSES, INTERRUPTED, Case
from mapsearch.sweep.lock import LOCK_NAME
from mapsearch.sweep.store import DB_FILES, ResultStore

__all__ = ["result_rows", "export", "summary_text", "ROW_KEYS", "EXPORTS", "WRITTEN"]

# The exports :func:`export` writes in the output directory, by the key of the paths it returns.
EXPORTS = {"jsonl": "results.jsonl", "csv": "results.csv", "summary": "summary.txt", "schedules": "schedules"}
# Everything a sweep writes in its output directory (a name ending in / is a folder of files): the database and
# SQLite's files beside it, the lock, the exports. ``mapsearch sweep`` refuses an --out that would replace an input.
WRITTEN: tuple[str, ...] = DB_FILES + (LOCK_NAME,) + tuple(
    name + "/" if key == "schedules" else name for key, name in EXPORTS.items())

ROW_KEYS = (
    "case_id", "workload", "architecture", "objective", "constraints", "params", "status", "error",
    "solve_seconds", "time", "utilization", "words_total", "compute_time", "op_calls", "mac_efficiency",
    "macs", "bound", "gap", "extents", "capacities", "links",
)
log = logging.getLogger(__name__)

_REPORT_KEYS = ("time", "utilization", "words_total", "compute_time", "op_calls", "mac_efficiency", "macs", "bound", "gap")


def result_rows(cases: Sequence[Case], store: ResultStore) -> list[dict[str, Any]]:
    """One JSON-ready row per finished case (see :mod:`mapsearch.sweep` for the keys)."""
    stored = store.rows(c.case_id for c in cases)
    rows = []
    for case in cases:
        row = stored.get(case.case_id)
        if row is None or row["status"] == INTERRUPTED:  # not a result: pending
            continue
        report = row["report"] or {}
        content = case.content
        out: dict[str, Any] = {
            "case_id": case.case_id,
            "workload": case.workload,
            "architecture": case.architecture,
            "objective": case.objective,
            "constraints": case.constraints or None,
            "params": dict(case.params),
            "status": row["status"],
            "error": row["error"],
            "solve_seconds": row["solve_seconds"],
        }
        for key in _REPORT_KEYS:
            out[key] = report.get(key)
        out["extents"] = dict(content["workload"]["extents"])
        out["capacities"] = {lv["name"]: lv["capacity"] for lv in content["architecture"]["levels"]}
        out["links"] = [
            {k: link[k] for k in ("name", "words_down", "words_up", "words", "time")} for link in report.get("links", [])
        ]
        rows.append(out)
    return rows


def _atomic_write(path: Path, text: str) -> None:
    from mapsearch.atomic import write_text_atomic

    write_text_atomic(path, text)


def flat_rows(rows: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """``(columns, rows)`` flattened: the scalar keys, ``param:PATH``, ``extent:DIM``, ``capacity:LEVEL``,
    ``link:NAME:FIELD`` (the columns of ``results.csv`` and of ``SweepResult.to_dataframe()``)."""
    columns: list[str] = []

    def add(name: str) -> None:
        if name not in columns:
            columns.append(name)

    flats = []
    for row in rows:
        flat: dict[str, Any] = {}
        for key in ROW_KEYS:
            value = row.get(key)
            if key == "params":
                for path, v in value.items():
                    flat[f"param:{path}"] = v
            elif key == "extents":
                for d, v in value.items():
                    flat[f"extent:{d}"] = v
            elif key == "capacities":
                for level, v in value.items():
                    flat[f"capacity:{level}"] = v
            elif key == "links":
                for link in value:
                    for field in ("words_down", "words_up", "words", "time"):
                        flat[f"link:{link['name']}:{field}"] = link[field]
            else:
                flat[key] = value
        flats.append(flat)
    for key in ROW_KEYS:
        if key not in ("params", "extents", "capacities", "links"):
            add(key)
    for flat in flats:
        for name in flat:
            add(name)
    return columns, flats


def _csv_text(rows: list[dict[str, Any]]) -> str:
    """The rows as CSV, flattened by :func:`flat_rows`."""
    columns, flats = flat_rows(rows)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for flat in flats:
        writer.writerow({k: ("" if v is None else v) for k, v in flat.items()})
    return buf.getvalue()


def _fmt(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "pct":
        return f"{value * 100:.1f}%"
    if kind == "s":
        return f"{value:.2f}"
    if isinstance(value, float):
        return f"{value:,.6g}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _table(header: list[str], body: Iterable[list[str]], right: set[int]) -> list[str]:
    rows = [header] + list(body)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for n, r in enumerate(rows):
        cells = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(r)]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def summary_text(name: str, cases: Sequence[Case], rows: list[dict[str, Any]]) -> str:
    """A table, one line per finished case (workload x architecture x ... x parameters), then totals."""
    show_objective = len({c.objective for c in cases}) > 1
    show_constraints = any(c.constraints for c in cases)
    header = ["workload", "architecture"] + (["objective"] if show_objective else []) + \
        (["constraints"] if show_constraints else []) + ["params", "status", "time", "utilization", "words", "solve s"]
    body = []
    for r in rows:
        params = " ".join(f"{k.split('.', 1)[1]}={v}" for k, v in r["params"].items()) or "-"
        line = [r["workload"], r["architecture"]] + ([r["objective"]] if show_objective else []) + \
            ([r["constraints"] or "-"] if show_constraints else [])
        line += [params, r["status"], _fmt(r["time"], ""), _fmt(r["utilization"], "pct"), _fmt(r["words_total"], ""),
                 _fmt(r["solve_seconds"], "s")]
        body.append(line)
    n = len(header)
    lines = [f"sweep {name}: {len(cases)} case(s)", ""]
    lines += _table(header, body, {n - 4, n - 3, n - 2, n - 1})
    by_status: dict[str, int] = {}
    for r in rows:
        by_status[r["status"]] = by_status.get(r["status"], 0) + 1
    pending = len(cases) - len(rows)
    solve_total = sum(r["solve_seconds"] or 0.0 for r in rows)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(by_status.items())) or "none"
    lines += ["", f"totals: {len(rows)} finished ({counts}), {pending} pending; solve time {solve_total:.2f} s"]
    failed = [r for r in rows if r["status"] in FAILED_STATUSES]
    if failed:
        lines += ["", "failed:"]
        lines += [f"  {r['case_id']} {r['workload']} on {r['architecture']}: {r['error']}" for r in failed]
    return "\n".join(lines) + "\n"


def export(name: str, cases: Sequence[Case], store: ResultStore, out_dir: str | Path) -> dict[str, Path]:
    """Write ``results.jsonl``, ``results.csv``, ``schedules/<case_id>.json`` and ``summary.txt``."""
    out = Path(out_dir)
    paths = {key: out / name for key, name in EXPORTS.items()}
    try:
        paths["schedules"].mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file there (check_out_directory refuses it before a sweep runs)
        raise MapsearchError(f"{paths['schedules']}: expected a directory (of schedule files), got a file; move it "
                             "away, or give another output directory") from None
    except OSError as e:
        raise MapsearchError(f"{paths['schedules']}: cannot create: {e.strerror or e}") from None
    rows = result_rows(cases, store)
    _atomic_write(paths["jsonl"], "".join(json.dumps(r, sort_keys=False) + "\n" for r in rows))
    _atomic_write(paths["csv"], _csv_text(rows))
    stored = store.rows(c.case_id for c in cases)
    for case_id, row in stored.items():
        target = paths["schedules"] / f"{case_id}.json"
        if row["schedule"]:
            if not target.exists() or target.read_text(encoding="utf-8") != row["schedule"]:
                _atomic_write(target, row["schedule"])
        elif target.exists():
            target.unlink()  # rerun without a schedule (e.g. it now fails): no stale file
    _remove_stale_schedules(paths["schedules"], {case_id for case_id, row in stored.items() if row["schedule"]})
    _atomic_write(paths["summary"], summary_text(name, cases, rows))
    return paths


_CASE_FILE = re.compile(r"[0-9a-f]{16}\.json")


def _remove_stale_schedules(directory: Path, keep: set[str]) -> None:
    """Remove the schedule files of cases not in this sweep (an earlier sweep into the same directory: its
    results stay in the database, but the exports describe this sweep only). Other files are left alone."""
    stale = [p for p in directory.iterdir() if _CASE_FILE.fullmatch(p.name) and p.stem not in keep and p.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    if stale:
        log.info("removed %d schedule file(s) of cases not in this sweep from %s", len(stale), directory)
