"""Resuming a sweep into a damaged output directory is one line and exit 2, before anything runs or is written:
a lock or a schedules entry of the wrong kind, damaged rows in results.sqlite, nothing to export; a different sweep
into the same directory leaves no stale schedule files. No case is solved here: results are stored directly."""

from __future__ import annotations

import contextlib
import io
import sqlite3
from pathlib import Path

import pytest
from sweep_helpers import MATMUL, arch, write_sweep

from mapsearch.cli import main
from mapsearch.errors import MapsearchError, SpecError
from mapsearch.sweep.session import run_sweep_file
from mapsearch.sweep.spec import load_sweep
from mapsearch.sweep.store import DB_NAME, ResultStore

LINK = {"words_down": 32, "words_up": 16, "words": 48, "time": 192}
RESULT = {"status": "OPTIMAL", "error": None, "solve_seconds": 0.25, "wall_seconds": 0.5, "schedule": '{"fake": 1}\n',
          "report": {"time": 192, "utilization": 0.5, "words_total": 96, "compute_time": 64, "op_calls": 64,
                     "mac_efficiency": 1.0, "macs": 64, "bound": "L2->L1", "gap": 0.0,
                     "links": [{"name": "L2->L1", **LINK}, {"name": "L1->L0", **LINK}]}}


def run_cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


def sweep_file(tmp_path: Path, name: str = "one", m: int = 4) -> Path:
    return write_sweep(tmp_path, {
        "name": name, "workloads": [{"name": "mm", "einsum": MATMUL, "extents": {"m": m, "n": 4, "k": 4}}],
        "architectures": [arch("a", 64)], "time_limit": 5}, name=f"{name}.yaml")


def store_results(spec: Path, out: Path) -> list[str]:
    """Store a (made-up) finished result for every case of ``spec`` in ``out`` and export: a finished sweep."""
    sweep = load_sweep(spec)
    with ResultStore(out / DB_NAME) as store:
        for case in sweep.cases:
            store.put(case, {"case_id": case.case_id, **RESULT})
    run_sweep_file(spec, out, export_only=True)
    return [c.case_id for c in sweep.cases]


@pytest.fixture
def finished(tmp_path: Path) -> tuple[Path, Path, str]:
    spec, out = sweep_file(tmp_path), tmp_path / "res"
    (case_id,) = store_results(spec, out)
    assert (out / "schedules" / f"{case_id}.json").is_file()
    return spec, out, case_id


def resume(spec: Path, out: Path, *extra: str) -> tuple[int, str]:
    return run_cli(["sweep", str(spec), "--out", str(out), "--workers", "1", "-q", *extra])


def exports(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != ".mapsearch.lock"}


HINT = "move it away, or give another output directory"


@pytest.mark.parametrize("extra", [(), ("--export-only",)])
def test_a_lock_that_is_a_directory_is_one_line(finished, extra) -> None:
    spec, out, _ = finished
    lock = out / ".mapsearch.lock"
    lock.unlink()
    lock.mkdir()
    before = exports(out)
    assert resume(spec, out, *extra) == (2, f"mapsearch: {lock}: expected the directory's lock file, got a "
                                            f"directory; {HINT}\n")
    assert lock.is_dir() and exports(out) == before


@pytest.mark.parametrize("extra", [(), ("--export-only",)])
def test_schedules_that_is_a_file_is_one_line(finished, extra) -> None:
    spec, out, _ = finished
    schedules = out / "schedules"
    for p in schedules.iterdir():
        p.unlink()
    schedules.rmdir()
    schedules.write_text("x")
    before = exports(out)
    assert resume(spec, out, *extra) == (2, f"mapsearch: {schedules}: expected a directory (of schedule files), "
                                            f"got a file; {HINT}\n")
    assert exports(out) == before


def test_a_failure_before_any_case_runs_comes_before_the_progress_line(finished) -> None:
    spec, out, _ = finished
    (out / "results.jsonl").unlink()
    (out / "results.jsonl").mkdir()
    assert resume(spec, out) == (2, f"mapsearch: {out / 'results.jsonl'}: expected a file, got a directory; {HINT}\n")
    started = []
    with pytest.raises(MapsearchError, match="expected a file, got a directory"):
        run_sweep_file(spec, out, workers=1, on_start=started.append)
    assert started == []


DAMAGE = [
    ("report", "'not json'", "a JSON object (the solve report) or null", "'not json'"),
    ("report", "'[1,2]'", "a JSON object (the solve report) or null", "[1, 2]"),
    ("report", """'{"time": "abc"}'""", "a number or null", "'abc'"),
    ("report", """'{"links": [{"name": "x"}]}'""", "a number", "None"),
    ("params", "'garbage'", "a JSON object {path: value}", "'garbage'"),
    ("params", "'[1]'", "a JSON object {path: value}", "[1]"),
    ("solve_seconds", "'abc'", "seconds (a number >= 0) or null", "'abc'"),
    ("status", "'BOGUS'", "one of OPTIMAL, OPTIMAL_IN_FAMILY, FEASIBLE, INFEASIBLE, TIMEOUT, MISMATCH, ERROR, "
     "INTERRUPTED", "'BOGUS'"),
    ("schedule", "x'00'", "text or null", "b'\\x00'"),
]


@pytest.mark.parametrize("extra", [(), ("--export-only",), ("--retry-failed",)])
@pytest.mark.parametrize("column, value, expected, got", DAMAGE)
def test_a_damaged_row_is_one_line_naming_the_case_and_the_column(finished, extra, column, value, expected,
                                                                   got) -> None:
    spec, out, case_id = finished
    db = out / DB_NAME
    with sqlite3.connect(db) as con:
        con.execute(f"UPDATE cases SET {column} = {value}")
    con.close()
    before = exports(out)
    field = column + {"'{\"time\": \"abc\"}'": ".time", "'{\"links\": [{\"name\": \"x\"}]}'": ".links[0].words_down"}.get(value, "")
    assert resume(spec, out, *extra) == (
        2, f"mapsearch: {db}: case {case_id}: column {field}: expected {expected}, got {got} (a damaged row); "
           "move the file away to start afresh, or give another output directory\n")
    assert exports(out) == before  # nothing written over the exports
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)  # no run started
    con.close()


def test_the_store_refuses_a_damaged_row(tmp_path: Path) -> None:
    spec = sweep_file(tmp_path)
    (case,) = load_sweep(spec).cases
    with ResultStore(tmp_path / DB_NAME) as store:
        store.put(case, {"case_id": case.case_id, **RESULT, "report": None})
        assert store.rows()[case.case_id]["report"] is None
        store._db.execute("UPDATE cases SET wall_seconds = -1")
        with pytest.raises(SpecError, match=r"case \w+: column wall_seconds: expected seconds \(a number >= 0\) or "
                                            r"null, got -1\.0 \(a damaged row\)"):
            store.rows()


def test_export_only_with_nothing_stored_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    spec, out = sweep_file(tmp_path), tmp_path / "nowhere"
    assert resume(spec, out, "--export-only") == (
        2, f"mapsearch: {out}: nothing to export: no results in {out} (no results.sqlite); run the sweep first\n")
    assert not out.exists()
    out.mkdir()
    assert resume(spec, out, "--export-only")[0] == 2
    assert list(out.iterdir()) == []


def test_export_only_of_a_sweep_with_no_results_there_keeps_the_other_sweeps_exports(finished, tmp_path) -> None:
    _, out, _ = finished
    other = sweep_file(tmp_path, "other", m=8)
    before = exports(out)
    assert resume(other, out, "--export-only") == (
        2, f"mapsearch: {out}: nothing to export: no results of sweep other in {out / DB_NAME}; run the sweep first\n")
    assert exports(out) == before


def test_another_sweep_into_the_directory_leaves_no_stale_schedule_files(finished, tmp_path) -> None:
    _, out, old = finished
    (out / "schedules" / "notes.json").write_text("mine")  # not a case's file: left alone
    other = sweep_file(tmp_path, "other", m=8)
    (new,) = store_results(other, out)
    assert new != old
    assert sorted(p.name for p in (out / "schedules").iterdir()) == sorted([f"{new}.json", "notes.json"])
    assert [line.count(new) for line in (out / "results.jsonl").read_text().splitlines()] == [1]
    with ResultStore(out / DB_NAME) as store:
        assert set(store.rows()) == {old, new}  # the earlier sweep's results stay stored
