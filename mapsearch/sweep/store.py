"""The sweep's results in SQLite: one row per case, one transaction per result.

``DIR/results.sqlite`` in WAL mode with ``synchronous=FULL``: a result is on
disk when :meth:`ResultStore.put` returns, so killing the process (``kill
-9``, Ctrl-C) loses at most the cases still running. Only the parent
process writes (workers return their results), so there is one writer.

Table ``cases``: ``case_id`` (primary key), ``workload``, ``architecture``,
``objective``, ``constraints``, ``params`` (JSON object), ``status``,
``error``, ``solve_seconds``, ``wall_seconds``, ``report`` (JSON, the
solve report without its schedule), ``schedule`` (the schedule file's
text), ``spec`` (the case's resolved content), ``solves`` (how many results
were stored for this case: 1 unless it was rerun with ``--retry-failed``;
0 for a case recorded ``INTERRUPTED``: it was running when the sweep was
interrupted, holds no result and is solved again by every rerun),
``worker`` and ``finished_at`` (UTC, ISO 8601). Table ``runs`` logs each
run of a sweep: start, end, cases, skipped, stored, interrupted.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from mapsearch.errors import GOT_LIMIT, SpecError, short_repr
from mapsearch.sweep.case import FAILED_STATUSES, INTERRUPTED, OK_STATUSES, Case

__all__ = ["ResultStore", "DB_NAME", "DB_FILES"]

DB_NAME = "results.sqlite"
# The database and the files SQLite keeps beside it while it is open (WAL mode: -wal and -shm, removed at the last
# close; -journal while the database is being created).
DB_FILES = (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", f"{DB_NAME}-journal")

_SQLITE_HEADER = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cases (
    case_id TEXT PRIMARY KEY,
    workload TEXT NOT NULL,
    architecture TEXT NOT NULL,
    objective TEXT NOT NULL,
    constraints TEXT NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    solve_seconds REAL,
    wall_seconds REAL,
    report TEXT,
    schedule TEXT,
    spec TEXT NOT NULL,
    solves INTEGER NOT NULL DEFAULT 1,
    worker TEXT,
    finished_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY AUTOINCREMENT,
    sweep TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    cases INTEGER NOT NULL,
    skipped INTEGER NOT NULL,
    stored INTEGER NOT NULL DEFAULT 0,
    interrupted INTEGER NOT NULL DEFAULT 0
);
"""


_COLUMNS = frozenset(("case_id", "workload", "architecture", "objective", "constraints", "params", "status", "error",
                      "solve_seconds", "wall_seconds", "report", "schedule", "spec", "solves", "worker", "finished_at"))


def _not_ours(path: Path, why: str) -> SpecError:
    return SpecError(str(path), "", "", detail=f"not a sweep database ({why}); give another output directory, or "
                     "move the file away to start afresh")


def _check_not_foreign(path: Path) -> None:
    """A file there that is not SQLite at all is refused before SQLite opens it (and could write to it)."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_HEADER))
    except FileNotFoundError:
        return
    except IsADirectoryError:
        raise _not_ours(path, "a directory") from None
    except OSError as e:
        raise _not_ours(path, f"cannot read: {e.strerror or e}") from None
    if head and head != _SQLITE_HEADER:
        raise _not_ours(path, "file is not a database")


_STATUSES = OK_STATUSES + FAILED_STATUSES + (INTERRUPTED,)
_REPORT_NUMBERS = ("time", "utilization", "words_total", "compute_time", "op_calls", "mac_efficiency", "macs", "gap")
_LINK_NUMBERS = ("words_down", "words_up", "words", "time")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _json(text: Any) -> Any:
    if not isinstance(text, str):
        raise ValueError
    try:
        return json.loads(text)
    except RecursionError:  # nested too deep to be ours
        raise ValueError from None


def _report_problem(report: Any) -> tuple[str, str, Any] | None:
    """(field, expected, got) of the first figure of a stored report the exports could not use, else None."""
    if not isinstance(report, dict):
        return "", "a JSON object (the solve report) or null", report
    for key in _REPORT_NUMBERS:
        if report.get(key) is not None and not _is_number(report[key]):
            return f".{key}", "a number or null", report[key]
    if report.get("bound") is not None and not isinstance(report["bound"], str):
        return ".bound", "text or null", report["bound"]
    links = report.get("links", [])
    if not isinstance(links, list):
        return ".links", "a list of links", links
    for n, link in enumerate(links):
        if not isinstance(link, dict) or not isinstance(link.get("name"), str):
            return f".links[{n}]", "a link {name, words_down, words_up, words, time}", link
        for key in _LINK_NUMBERS:
            if not _is_number(link.get(key)):
                return f".links[{n}].{key}", "a number", link.get(key)
    return None


def _checked_row(path: Path, row: dict[str, Any]) -> dict[str, Any]:
    """The stored row with its JSON columns parsed; a value the exports could not use (a damaged row: edited by
    hand, written by another program) is one SpecError naming the database, the case and the column."""
    case_id = row.get("case_id")

    def damaged(column: str, expected: str, got: Any) -> SpecError:
        case = case_id if isinstance(case_id, str) else short_repr(case_id, GOT_LIMIT)
        return SpecError(str(path), f"case {case}: column {column}", "", detail=f"expected {expected}, got "
                         f"{short_repr(got, GOT_LIMIT)} (a damaged row); move the file away to start afresh, or "
                         "give another output directory")

    if not isinstance(case_id, str) or not case_id:
        raise damaged("case_id", "the case's id (text)", case_id)
    if row.get("status") not in _STATUSES:
        raise damaged("status", "one of " + ", ".join(_STATUSES), row.get("status"))
    try:
        params = _json(row.get("params"))
    except ValueError:
        params = row.get("params")
        raise damaged("params", "a JSON object {path: value}", params) from None
    if not isinstance(params, dict):
        raise damaged("params", "a JSON object {path: value}", params)
    row["params"] = params
    if row.get("report") is not None:
        try:
            report = _json(row["report"])
        except ValueError:
            raise damaged("report", "a JSON object (the solve report) or null", row["report"]) from None
        problem = _report_problem(report)
        if problem is not None:
            field, expected, got = problem
            raise damaged("report" + field, expected, got)
        row["report"] = report
    for column in ("solve_seconds", "wall_seconds"):
        value = row.get(column)
        if value is not None and not (_is_number(value) and math.isfinite(value) and value >= 0):
            raise damaged(column, "seconds (a number >= 0) or null", value)
    for column in ("error", "schedule"):
        if row.get(column) is not None and not isinstance(row[column], str):
            raise damaged(column, "text or null", row[column])
    if "solves" in row and (not isinstance(row["solves"], int) or row["solves"] < 0):
        raise damaged("solves", "an int >= 0", row["solves"])
    return row


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ResultStore:
    """The results database of one sweep directory."""

    def __init__(self, path: str | Path):
        """Open (or create) the database; a file that is not a sweep database is one SpecError, left as it was."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _check_not_foreign(self.path)
        try:
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        except sqlite3.Error as e:
            raise _not_ours(self.path, str(e)) from None
        try:
            tables = {name for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            missing = _COLUMNS - {row[1] for row in self._db.execute("PRAGMA table_info(cases)")}
            if tables - {"sqlite_sequence"} and ("cases" not in tables or missing):
                why = "no table cases" if "cases" not in tables else f"table cases lacks {', '.join(sorted(missing))}"
                raise _not_ours(self.path, why)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            self._db.execute("SELECT count(*), max(length(params)) FROM cases").fetchone()  # reads every page of it
        except sqlite3.DatabaseError as e:  # also sqlite3.OperationalError: a malformed schema, a corrupt page
            self._db.close()
            if "locked" in str(e):  # another process writes it (not a mapsearch run: those take the directory lock)
                raise SpecError(str(self.path), "", "", detail=f"cannot open: {e}") from None
            raise _not_ours(self.path, str(e)) from None
        except SpecError:
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def statuses(self, case_ids: Iterable[str] | None = None) -> dict[str, str]:
        """case_id -> stored status (of the given cases, or all)."""
        rows = self._db.execute("SELECT case_id, status FROM cases").fetchall()
        if case_ids is None:
            return dict(rows)
        wanted = set(case_ids)
        return {k: s for k, s in rows if k in wanted}

    def to_run(self, cases: Iterable[Case], retry_failed: bool = False) -> tuple[list[Case], list[Case]]:
        """(cases to run, cases skipped as finished); failed ones are rerun with ``retry_failed``, interrupted ones always."""
        done = self.statuses()
        run, skip = [], []
        for c in cases:
            status = done.get(c.case_id)
            if status is None or status == INTERRUPTED or (retry_failed and status in FAILED_STATUSES):
                run.append(c)
            else:
                skip.append(c)
        return run, skip

    def schedule(self, case_id: str) -> str | None:
        """The stored schedule file text of a finished case (None: not stored, failed, or no schedule)."""
        row = self._db.execute("SELECT status, schedule FROM cases WHERE case_id = ?", (case_id,)).fetchone()
        return row[1] if row is not None and row[0] in OK_STATUSES else None

    def put(self, case: Case, result: dict[str, Any]) -> None:
        """Store one case's result in one transaction (a rerun replaces it and counts ``solves``)."""
        report = result.get("report")
        values = (
            case.case_id, case.workload, case.architecture, case.objective, case.constraints,
            json.dumps(dict(case.params)), result["status"], result.get("error"), result.get("solve_seconds"),
            result.get("wall_seconds"), None if report is None else json.dumps(report), result.get("schedule"),
            case.spec, result.get("worker"), _now(),
        )
        with self._transaction():
            self._db.execute(
                """INSERT INTO cases (case_id, workload, architecture, objective, constraints, params, status, error,
                                      solve_seconds, wall_seconds, report, schedule, spec, worker, finished_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT(case_id) DO UPDATE SET
                       workload=excluded.workload, architecture=excluded.architecture, objective=excluded.objective,
                       constraints=excluded.constraints, params=excluded.params, status=excluded.status,
                       error=excluded.error, solve_seconds=excluded.solve_seconds,
                       wall_seconds=excluded.wall_seconds, report=excluded.report, schedule=excluded.schedule,
                       spec=excluded.spec, worker=excluded.worker, finished_at=excluded.finished_at,
                       solves=CASE WHEN cases.status = ? THEN 1 ELSE cases.solves + 1 END""",
                values + (INTERRUPTED,),
            )

    def mark_interrupted(self, case: Case, note: str) -> None:
        """Record that ``case`` was running when the sweep was interrupted, unless it already has a result.

        Not a result: :meth:`to_run` runs it again, the exports list it as
        pending, and the result that replaces it counts as its first solve.
        """
        values = (case.case_id, case.workload, case.architecture, case.objective, case.constraints,
                  json.dumps(dict(case.params)), INTERRUPTED, note, case.spec, _now())
        with self._transaction():
            self._db.execute(
                """INSERT INTO cases (case_id, workload, architecture, objective, constraints, params, status, error,
                                      spec, solves, finished_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)
                   ON CONFLICT(case_id) DO NOTHING""",
                values,
            )

    def rows(self, case_ids: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """case_id -> the stored row as a dict (JSON columns parsed); a damaged row is one SpecError naming
        the case and the column."""
        cur = self._db.execute("SELECT * FROM cases")
        names = [d[0] for d in cur.description]
        wanted = None if case_ids is None else set(case_ids)
        out = {}
        for values in cur.fetchall():
            row = dict(zip(names, values))
            if wanted is not None and row["case_id"] not in wanted:
                continue
            out[row["case_id"]] = _checked_row(self.path, row)
        return out

    def start_run(self, sweep: str, cases: int, skipped: int) -> int:
        with self._transaction():
            cur = self._db.execute("INSERT INTO runs (sweep, started_at, cases, skipped) VALUES (?, ?, ?, ?)",
                                   (sweep, _now(), cases, skipped))
        return int(cur.lastrowid)

    def end_run(self, run_id: int, stored: int, interrupted: bool) -> None:
        with self._transaction():
            self._db.execute("UPDATE runs SET finished_at = ?, stored = ?, interrupted = ? WHERE run_id = ?",
                             (_now(), stored, int(interrupted), run_id))

    def _transaction(self):
        return _Transaction(self._db)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on an error), retried while another process holds the lock."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> None:
        for attempt in range(50):
            try:
                self.db.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as e:  # database is locked (e.g. a reader checkpointing)
                if "locked" not in str(e) or attempt == 49:
                    raise
                time.sleep(0.1)

    def __exit__(self, exc_type, exc, tb) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")
