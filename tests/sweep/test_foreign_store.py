"""A results.sqlite that is not a sweep database (garbage, another program's SQLite file) is one line and exit 2,
and it is left exactly as it was; a sweep's keep/bypass constraints are checked against the workload's homes."""

from __future__ import annotations

import contextlib
import io
import sqlite3
from pathlib import Path

import pytest
import yaml
from sweep_helpers import MATMUL, arch, write_sweep

from mapsearch.cli import main
from mapsearch.errors import SpecError
from mapsearch.sweep.store import ResultStore

GARBAGE = b"this is not a database\n" * 30


def run_cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


def one_case_sweep(tmp_path: Path, **extra: object) -> Path:
    return write_sweep(tmp_path, {
        "name": "one", "workloads": [{"name": "mm", "einsum": MATMUL, "extents": {"m": 4, "n": 4, "k": 4}}],
        "architectures": [arch("a", 64)], "time_limit": 5, **extra})


def test_garbage_database_is_refused_and_kept(tmp_path: Path) -> None:
    out = tmp_path / "res"
    out.mkdir()
    db = out / "results.sqlite"
    db.write_bytes(GARBAGE)
    code, err = run_cli(["sweep", str(one_case_sweep(tmp_path)), "--out", str(out), "--workers", "1", "-q"])
    assert code == 2
    assert err == (f"mapsearch: {db}: not a sweep database (file is not a database); give another output directory, "
                   "or move the file away to start afresh\n")
    assert db.read_bytes() == GARBAGE
    assert sorted(p.name for p in out.iterdir()) == ["results.sqlite"]


def test_another_programs_sqlite_file_is_refused_untouched(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE photos (id INTEGER, path TEXT)")
    before = db.read_bytes()
    with pytest.raises(SpecError) as e:
        ResultStore(db)
    assert str(e.value) == (f"{db}: not a sweep database (no table cases); give another output directory, "
                            "or move the file away to start afresh")
    assert db.read_bytes() == before


def test_a_cases_table_of_another_shape_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE cases (case_id TEXT, status TEXT)")
    with pytest.raises(SpecError, match=r"not a sweep database \(table cases lacks architecture, constraints, "):
        ResultStore(db)


def test_an_empty_file_and_an_existing_sweep_database_open(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    db.write_bytes(b"")
    with ResultStore(db) as store:
        assert store.statuses() == {}
    with ResultStore(db) as store:  # the tables it made are its own
        assert store.statuses() == {}


def test_a_sweep_bypassing_a_tensor_at_its_home_is_refused(tmp_path: Path) -> None:
    workload = {"name": "mm", "einsum": MATMUL, "extents": {"m": 4, "n": 4, "k": 4}, "homes": {"A": "L1"}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"keep": {"L1": {"A": False}}}))
    sweep = write_sweep(tmp_path, {"name": "one", "workloads": [workload], "architectures": [arch("a", 64)],
                                   "constraints": ["c.yaml"], "time_limit": 5})
    code, err = run_cli(["sweep", str(sweep), "--out", str(tmp_path / "res"), "--workers", "1", "-q"])
    assert code == 2, err
    assert "keep.L1.A: cannot bypass A at L1: it is A's home" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "res").exists()
