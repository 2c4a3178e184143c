"""Ctrl-C on real runs: a child process is sent SIGINT once it is searching, and what it wrote is checked.

- ``solve``: the first SIGINT stops CP-SAT at once; the best schedule so far
  is replayed, reported FEASIBLE and written (``-o``), exit 130. A second
  SIGINT aborts: exit 130, nothing written.
- ``sweep``: SIGINT to the whole process group (as a terminal's Ctrl-C)
  while a case searches: exit 130, the running case is recorded INTERRUPTED,
  never as a result; the rerun gives the results of an uninterrupted run.

The solve runs on a pseudo-terminal so that its progress line shows: the
test waits until the line reports a schedule in the words phase.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from mapsearch.schedule.figures import differences
from mapsearch.schedule.json_io import load_schedule
from mapsearch.sim.replay import replay

ROOT = Path(__file__).resolve().parents[1]
MATMUL = "Z[m,n] += A[m,k] * B[k,n]"


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


class Child:
    """``python -m mapsearch ARGS`` with stderr on a pseudo-terminal (so the progress line shows)."""

    def __init__(self, args: list[str], cwd: Path):
        master, slave = pty.openpty()
        self.master = master
        self.process = subprocess.Popen([sys.executable, "-m", "mapsearch", *args], cwd=cwd, env=_env(),
                                        stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
        os.close(slave)
        self.err = b""

    def read(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if not ready:
                if self.process.poll() is not None:
                    return
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the child closed the terminal
                return
            if not chunk:
                return
            self.err += chunk

    def wait_for(self, predicate, seconds: float) -> str:
        end = time.monotonic() + seconds
        while time.monotonic() < end and self.process.poll() is None:
            self.read(0.5)
            line = self.err.decode(errors="replace").split("\r")[-1]
            if predicate(line):
                return line
        pytest.fail(f"the child never got there; stderr so far:\n{self.err.decode(errors='replace')[-2000:]}")

    def finish(self, seconds: float) -> tuple[int, str, str]:
        end = time.monotonic() + seconds
        while self.process.poll() is None and time.monotonic() < end:
            self.read(0.5)
        if self.process.poll() is None:
            self.process.kill()
            pytest.fail("the child did not stop")
        self.read(0.5)
        out = self.process.stdout.read().decode()
        os.close(self.master)
        return self.process.returncode, out, self.err.decode(errors="replace").replace("\r", "\n")


@pytest.fixture
def long_solve(tmp_path: Path) -> Path:
    """256^3 on cpu-core: the time phase is proven in seconds, the words phase then searches for minutes."""
    path = tmp_path / "mm256.yaml"
    path.write_text(yaml.safe_dump({"name": "mm256", "einsum": MATMUL, "extents": {"m": 256, "n": 256, "k": 256}}))
    return path


def _searching_words(line: str) -> bool:
    return ", words; best time" in line


def test_first_ctrl_c_reports_the_best_schedule_so_far_and_writes_it_checked(long_solve: Path, tmp_path: Path) -> None:
    out = tmp_path / "best.json"
    child = Child(["solve", str(long_solve), "cpu-core", "--time-limit", "300", "-o", str(out)], tmp_path)
    line = child.wait_for(_searching_words, 240)
    sent = time.monotonic()
    child.process.send_signal(signal.SIGINT)
    code, report, err = child.finish(60)
    stopped_in = time.monotonic() - sent
    assert code == 130, err
    assert stopped_in < 15, f"took {stopped_in:.1f} s to stop after Ctrl-C"  # not the 300 s limit
    assert "Ctrl-C stopped the search" in report and "status: FEASIBLE" in report
    assert "time 1048576 clocks (bound 1048576)" in report  # the time phase had been proven before the Ctrl-C
    assert "interrupted by Ctrl-C" in err and "Traceback" not in err
    assert "best time 1,048,576" in line
    # Written because it was replayed and checked: the file's figures replay exactly.
    schedule = load_schedule(out)
    assert schedule.predicted.time == 1048576
    assert differences(schedule.predicted, replay(schedule, mode="count").figures) == []


def test_second_ctrl_c_aborts_and_writes_nothing(long_solve: Path, tmp_path: Path) -> None:
    out = tmp_path / "best.json"
    out.write_text("precious\n")
    # The events replay of 16.7 M MACs takes long: the second Ctrl-C lands while it runs.
    child = Child(["solve", str(long_solve), "cpu-core", "--time-limit", "300", "-o", str(out),
                   "--replay-mode", "events"], tmp_path)
    child.wait_for(_searching_words, 240)
    child.process.send_signal(signal.SIGINT)
    child.wait_for(lambda line: True, 5)
    time.sleep(1.0)
    child.process.send_signal(signal.SIGINT)
    code, report, err = child.finish(30)
    assert code == 130, err
    assert out.read_text() == "precious\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".best.json")]  # no temporary file left
    assert "interrupted; nothing written" in err and "Traceback" not in err
    assert "status:" not in report  # aborted before the report


def test_ctrl_c_before_any_schedule_writes_nothing(long_solve: Path, tmp_path: Path) -> None:
    out = tmp_path / "best.json"
    child = Child(["solve", str(long_solve), "cpu-core", "--time-limit", "300", "-o", str(out)], tmp_path)
    child.wait_for(lambda line: "building the model" in line or "no schedule yet" in line, 120)
    child.process.send_signal(signal.SIGINT)
    code, report, err = child.finish(60)
    assert code == 130, err
    assert not out.exists() and report == ""
    assert "Traceback" not in err and err.rstrip().splitlines()[-1].startswith("mapsearch: interrupted")


# --------------------------------------------------------------------------
# A sweep: Ctrl-C on the process group, as a terminal sends it.
# --------------------------------------------------------------------------


def _sweep_file(tmp_path: Path) -> Path:
    """A quick case, then one whose search takes seconds (so Ctrl-C lands inside it)."""
    arch = {"name": "three", "levels": [
        {"name": "L2", "capacity": None},
        {"name": "L1", "capacity": 4096, "link": {"input_clocks_per_word": 4}},
        {"name": "L0", "capacity": 64, "link": {"input_clocks_per_word": 1, "lines": "separate"}}]}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({
        "name": "interrupt-me",
        "workloads": [{"name": "mm", "einsum": MATMUL, "extents": {"m": 97, "n": 999, "k": 1001}}],
        "architectures": [arch],
        "params": {"workloads.extents.m": [12, 1000]},
        "time_limit": 120,
    }, sort_keys=False))
    return path


def _rows(db: Path) -> dict[str, tuple[str, int, str | None]]:
    with sqlite3.connect(db, timeout=10) as con:
        try:
            rows = con.execute("SELECT case_id, status, solves, schedule FROM cases").fetchall()
        except sqlite3.OperationalError:  # the sweep made the file but not its table yet (polled while starting)
            return {}
        return {k: (s, n, sched) for k, s, n, sched in rows}


def _results(out: Path) -> list[dict]:
    volatile = ("solve_seconds",)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for r in rows:
        for key in volatile:
            r.pop(key, None)
        r.pop("phases", None)
    return rows


def test_ctrl_c_during_a_sweep_records_the_running_case_as_interrupted(tmp_path: Path) -> None:
    sweep = _sweep_file(tmp_path)
    reference = tmp_path / "uninterrupted"
    done = subprocess.run([sys.executable, "-m", "mapsearch", "sweep", str(sweep), "--out", str(reference),
                           "--workers", "1", "-q"], env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr

    out = tmp_path / "interrupted"
    process = subprocess.Popen([sys.executable, "-m", "mapsearch", "sweep", str(sweep), "--out", str(out),
                                "--workers", "1", "-q"], env=_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    db = out / "results.sqlite"
    end = time.monotonic() + 120
    while time.monotonic() < end and not (db.exists() and len(_rows(db)) >= 1):
        time.sleep(0.1)
    time.sleep(0.3)  # the second case is searching now
    os.killpg(process.pid, signal.SIGINT)  # the whole group, workers included, as Ctrl-C in a terminal
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    rows = _rows(db)
    statuses = sorted(s for s, _, _ in rows.values())
    assert statuses == ["INTERRUPTED", "OPTIMAL"], rows  # never FEASIBLE: a search cut short is not a result
    interrupted = next(v for v in rows.values() if v[0] == "INTERRUPTED")
    assert interrupted[1] == 0 and interrupted[2] is None  # no solve counted, no schedule
    assert len(_results(out)) == 1  # the exports list only the finished case

    again = subprocess.run([sys.executable, "-m", "mapsearch", "sweep", str(sweep), "--out", str(out),
                            "--workers", "1", "-q"], env=_env(), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "skipped 1 finished" in again.stderr and "running 1" in again.stderr
    assert all(v[:2] == ("OPTIMAL", 1) for v in _rows(db).values())
    assert _results(out) == _results(reference)


def test_two_sweeps_on_one_directory(tmp_path: Path) -> None:
    sweep = _sweep_file(tmp_path)
    out = tmp_path / "out"
    first = subprocess.Popen([sys.executable, "-m", "mapsearch", "sweep", str(sweep), "--out", str(out),
                              "--workers", "1", "-q"], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end and not (out / "results.sqlite").exists():
            time.sleep(0.1)
        second = subprocess.run([sys.executable, "-m", "mapsearch", "sweep", str(sweep), "--out", str(out), "-q"],
                                env=_env(), capture_output=True, text=True, timeout=120)
        assert second.returncode == 2
        lines = second.stderr.splitlines()
        assert len(lines) == 1 and f"in use by process {first.pid}" in lines[0], second.stderr
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    # The first one is gone (its lock with it): a third run takes the directory over and finishes.
    third = subprocess.run([sys.executable, "-m", "mapsearch", "sweep", str(sweep), "--out", str(out), "-q",
                            "--workers", "1"], env=_env(), capture_output=True, text=True, timeout=600)
    assert third.returncode == 0, third.stderr
