"""``mapsearch sweep``: expansion, storage, exports, resuming after kill -9 and Ctrl-C, failures, Dask."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from mapsearch.cli import main
from mapsearch.model.problem import Problem
from mapsearch.schedule.json_io import load_schedule
from mapsearch.sim.replay import replay
from mapsearch.schedule.figures import differences
from mapsearch.solve.run import solve
from mapsearch.spec.load import architecture_from_dict, workload_from_dict
from mapsearch.sweep.export import ROW_KEYS
from mapsearch.sweep.runner import run_sweep
from mapsearch.sweep.spec import load_sweep
from mapsearch.sweep.store import ResultStore

from sweep_helpers import MATMUL, arch, grid_sweep_file, stored, write_sweep

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def sweep_cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mapsearch", "sweep", *args], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_rows(db: Path, at_least: int, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(stored(db)) < at_least:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no case stored in time"
        time.sleep(0.05)


# --------------------------------------------------------------------------
# A grid sweep, end to end through the CLI, against direct solves.
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> tuple[Path, Path]:
    """The tiny grid run once by ``mapsearch sweep`` (2 local workers): (sweep file, out dir)."""
    directory = tmp_path_factory.mktemp("grid")
    sweep = grid_sweep_file(directory)
    out = directory / "out"
    assert main(["sweep", str(sweep), "--out", str(out), "--workers", "2", "-q"]) == 0
    return sweep, out


def test_grid_results_equal_direct_solves(local_run):
    sweep, out = local_run
    got = rows(out)
    assert len(got) == 8 and len({r["case_id"] for r in got}) == 8
    assert all(list(r) == list(ROW_KEYS) for r in got)
    workloads = {"mm-12x10x7": {"m": 12, "n": 10, "k": 7}, "mm-9x8x5": {"m": 9, "n": 8, "k": 5}}
    archs = {"small-a": dict(l0=64), "small-b": dict(l0=32, top="DRAM")}
    for r in got:
        assert r["status"] == "OPTIMAL" and r["error"] is None
        capacity = r["params"]["architectures.L1.capacity"]
        assert capacity in (256, 512) and r["capacities"]["L1"] == capacity
        w = workload_from_dict({"name": r["workload"], "einsum": MATMUL, "extents": workloads[r["workload"]]})
        a = architecture_from_dict(arch(r["architecture"], capacity, **archs[r["architecture"]]))
        direct = solve(Problem(w, a))
        figures = direct.schedule.predicted
        assert (r["time"], r["words_total"], r["op_calls"]) == (figures.time, figures.words_total, figures.op_calls)
        assert r["utilization"] == float(figures.utilization)
        assert [(l["name"], l["words_down"], l["words_up"]) for l in r["links"]] == \
            [(l.name, l.words_down, l.words_up) for l in figures.links]
        # The exported schedule is the one a direct solve finds, and replays to its predicted figures.
        schedule = load_schedule(out / "schedules" / f"{r['case_id']}.json")
        assert replace(schedule, predicted=None) == replace(direct.schedule, predicted=None)
        assert schedule.predicted.words_total == figures.words_total and schedule.predicted.time == figures.time
        assert not differences(schedule.predicted, replay(schedule, mode="count").figures)
    # Stored once each, WAL mode.
    assert {v for v in stored(out / "results.sqlite").values()} == {("OPTIMAL", 1)}
    with ResultStore(out / "results.sqlite") as s:
        assert s._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_exports(local_run):
    sweep, out = local_run
    csv_lines = (out / "results.csv").read_text().splitlines()
    header = csv_lines[0].split(",")
    assert len(csv_lines) == 9
    for column in ("case_id", "status", "time", "utilization", "words_total", "solve_seconds",
                   "param:architectures.L1.capacity", "link:L1->L0:words"):
        assert column in header
    summary = (out / "summary.txt").read_text()
    assert "mm-12x10x7" in summary and "small-b" in summary and "L1.capacity=256" in summary
    assert "totals: 8 finished (OPTIMAL 8), 0 pending" in summary
    # --export-only rewrites the same files from the database.
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.suffix in (".jsonl", ".csv", ".txt")}
    for name in before:
        (out / name).unlink()
    assert main(["sweep", str(sweep), "--out", str(out), "--export-only"]) == 0
    assert {name: (out / name).read_bytes() for name in before} == before


def test_case_ids_are_stable_and_an_edited_sweep_reuses_cases(local_run, tmp_path, capsys):
    sweep, out = local_run
    first = load_sweep(sweep)
    assert [c.case_id for c in load_sweep(sweep).cases] == [c.case_id for c in first.cases]
    data = yaml.safe_load(sweep.read_text())
    # Reordered lists, an inline copy of a file, and one more capacity: the 8 old cases are reused.
    data["workloads"].reverse()
    data["architectures"][0] = yaml.safe_load((sweep.parent / "arch-a.yaml").read_text())
    data["params"]["architectures.L1.capacity"] = [512, 256, 1024]
    edited = write_sweep(sweep.parent, data, "edited.yaml")
    assert {c.case_id for c in first.cases} < {c.case_id for c in load_sweep(edited).cases}
    capsys.readouterr()
    assert main(["sweep", str(edited), "--out", str(out), "--workers", "2", "-q"]) == 0
    err = capsys.readouterr().err
    assert "skipped 8 finished" in err and "running 4" in err
    assert len(rows(out)) == 12
    assert all(solves == 1 for _, solves in stored(out / "results.sqlite").values())


# --------------------------------------------------------------------------
# Failures are recorded; the rest completes.
# --------------------------------------------------------------------------


def test_failing_case_is_recorded_and_retried(tmp_path, capsys):
    sweep = write_sweep(tmp_path, {
        "workloads": [{"name": "mm-12x10x7", "einsum": MATMUL, "extents": {"m": 12, "n": 10, "k": 7}}],
        "architectures": [arch("small", 512)],
        "params": {"architectures.L0.capacity": [2, 64]},  # L0 of 2 words cannot hold a tile of Z, A and B
    })
    out = tmp_path / "out"
    assert main(["sweep", str(sweep), "--out", str(out), "--workers", "2", "-q"]) == 0
    by_capacity = {r["params"]["architectures.L0.capacity"]: r for r in rows(out)}
    assert by_capacity[64]["status"] == "OPTIMAL"
    bad = by_capacity[2]
    assert bad["status"] == "INFEASIBLE" and bad["error"].startswith("InfeasibleError: ") and "capacity" in bad["error"]
    assert "\n" not in bad["error"] and bad["time"] is None and bad["links"] == []
    assert not (out / "schedules" / f"{bad['case_id']}.json").exists()
    assert "failed:" in (out / "summary.txt").read_text()
    # A rerun skips both; --retry-failed reruns the failed one only.
    assert main(["sweep", str(sweep), "--out", str(out), "-q"]) == 0
    assert main(["sweep", str(sweep), "--out", str(out), "--retry-failed", "-q"]) == 0
    assert "skipped 1 finished" in capsys.readouterr().err
    solves = stored(out / "results.sqlite")
    assert solves[bad["case_id"]] == ("INFEASIBLE", 2) and solves[by_capacity[64]["case_id"]] == ("OPTIMAL", 1)


# --------------------------------------------------------------------------
# kill -9 and Ctrl-C lose nothing; a rerun finishes without redoing cases.
# --------------------------------------------------------------------------


@pytest.fixture
def slow_sweep(tmp_path) -> Path:
    """6 cases of about half a second each, run one at a time."""
    return write_sweep(tmp_path, {
        "workloads": [{"name": "mm-40x36x28", "einsum": MATMUL, "extents": {"m": 40, "n": 36, "k": 28}}],
        "architectures": [arch("small", 512)],
        "params": {"architectures.L1.capacity": {"range": [256, 8192], "scale": "log2"}},
    })


@pytest.mark.parametrize("how", ["kill -9", "SIGINT"])
def test_interrupted_sweep_resumes_without_redoing_cases(slow_sweep, tmp_path, how):
    out = tmp_path / "out"
    db = out / "results.sqlite"
    process = sweep_cli(str(slow_sweep), "--out", str(out), "--workers", "1", "-q")
    wait_for_rows(db, 1, process)
    process.send_signal(signal.SIGKILL if how == "kill -9" else signal.SIGINT)
    _, err = process.communicate(timeout=30)
    kept = {k: v for k, v in stored(db).items() if v[0] != "INTERRUPTED"}
    assert 1 <= len(kept) < 6, "the sweep finished before it was interrupted; the test needs slower cases"
    if how == "SIGINT":
        assert process.returncode == 130 and "interrupted:" in err and "rerun" in err
        # The case that was running is recorded as interrupted, not as a result.
        assert [v for v in stored(db).values() if v[0] == "INTERRUPTED"] == [("INTERRUPTED", 0)]
    else:
        assert process.returncode == -signal.SIGKILL

    process = sweep_cli(str(slow_sweep), "--out", str(out), "--workers", "2", "-q")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert f"skipped {len(kept)} finished" in err
    final = stored(db)
    assert len(final) == 6 and all(v == ("OPTIMAL", 1) for v in final.values())  # each case solved and stored once
    assert {k: final[k] for k in kept} == kept
    assert len(rows(out)) == 6


# --------------------------------------------------------------------------
# Dask: the same results on a LocalCluster of worker processes.
# --------------------------------------------------------------------------


def test_dask_local_cluster_equals_local_run(local_run, tmp_path):
    distributed = pytest.importorskip("distributed")
    sweep, out = local_run
    cases = load_sweep(sweep).cases[:8]
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        with ResultStore(tmp_path / "results.sqlite") as store:
            outcome = run_sweep(cases, store, scheduler=cluster.scheduler_address)
            assert (outcome.stored, outcome.failed, outcome.skipped) == (8, 0, 0)
            dask_rows = store.rows()
    with ResultStore(out / "results.sqlite") as store:
        local_rows = store.rows(c.case_id for c in cases)
    assert set(dask_rows) == set(local_rows)
    volatile = {"solve_seconds", "wall_seconds", "worker", "finished_at", "solves"}
    for case_id, local in local_rows.items():
        theirs = dask_rows[case_id]
        for field in set(local) - volatile:
            if field == "report":
                strip = lambda r: {k: v for k, v in r.items() if k not in ("solve_seconds", "phases")}  # noqa: E731
                assert strip(theirs[field]) == strip(local[field])
                assert [(p["name"], p["status"], p["value"]) for p in theirs[field]["phases"]] == \
                    [(p["name"], p["status"], p["value"]) for p in local[field]["phases"]]
            else:
                assert theirs[field] == local[field], field


# --------------------------------------------------------------------------
# Bad sweep files: one line naming the file and the field, exit 2.
# --------------------------------------------------------------------------


@pytest.mark.parametrize("data, message", [
    ({"architectures": ["edge-3level"]}, "workloads: missing"),
    ({"workloads": [], "architectures": ["edge-3level"]}, "workloads: expected a non-empty list"),
    ({"workloads": ["nope.yaml"], "architectures": ["edge-3level"]}, "workloads[0]: no such file: nope.yaml"),
    ({"workloads": [{"name": "w", "einsum": MATMUL, "extents": {"m": 2, "n": 2}}], "architectures": ["edge-3level"]},
     "workloads[0].extents.k: missing"),
    ({"workloads": [{"name": "w", "einsum": MATMUL, "extents": {"m": 2, "n": 2, "k": 2}}], "architectures": ["edge3"]},
     "architectures[0]: edge3: no such file"),
    ({"workloads": [{"name": "w", "einsum": MATMUL, "extents": {"m": 2, "n": 2, "k": 2}}], "architectures": ["edge-3level"],
      "params": {"architectures.L1.capacity": [64]}}, "params.architectures.L1.capacity: no architecture of this sweep has L1"),
    ({"workloads": [{"name": "w", "einsum": MATMUL, "extents": {"m": 2, "n": 2, "k": 2}}], "architectures": ["edge-3level"],
      "params": {"architectures.GLB.capacity": {"range": [64]}}}, "params.architectures.GLB.capacity.range: expected [lo, hi], got [64]"),
    ({"workloads": [{"name": "w", "einsum": MATMUL, "extents": {"m": 2, "n": 2, "k": 2}}], "architectures": ["edge-3level"],
      "params": {"architectures.GLB.capacity": [0]}}, "params: architectures.GLB.capacity=0 makes an invalid spec"),
    ({"workloads": [{"name": "w", "einsum": MATMUL, "extents": {"m": 2, "n": 2, "k": 2}}], "architectures": ["edge-3level"],
      "objectives": ["speed"]}, "objectives[0]: expected 'time' or 'words'"),
    ({"workloads": [{"name": "w", "einsum": MATMUL, "extents": {"m": 2, "n": 2, "k": 2}}], "architectures": ["edge-3level"],
      "mode": "list", "params": {"workloads.extents.m": [1, 2], "workloads.extents.n": [1]}}, "params: mode: list needs"),
    ({"workloads": [{"name": "w", "einsum": MATMUL, "extents": {"m": 2, "n": 2, "k": 2}}], "architectures": ["edge-3level"],
      "paramz": {}}, "paramz: unknown field (did you mean 'params'?)"),
])
def test_bad_sweep_file_is_one_line_exit_2(tmp_path, capsys, data, message):
    sweep = write_sweep(tmp_path, data, "bad.yaml")
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"mapsearch: {sweep}: "), err
    assert message in err, err


def test_bad_sweep_file_in_a_subprocess(tmp_path):
    sweep = tmp_path / "bad.yaml"
    sweep.write_text("workloads: [\n")
    process = sweep_cli(str(sweep))
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2 and err.strip().count("\n") == 0 and f"{sweep}: line" in err and "malformed YAML" in err


# --------------------------------------------------------------------------
# Expansion details.
# --------------------------------------------------------------------------


def test_ranges_and_modes(tmp_path):
    base = {"workloads": [{"name": "w", "einsum": MATMUL, "extents": {"m": 4, "n": 4, "k": 4}}],
            "architectures": ["edge-3level", arch("small", 512)]}
    sweep = write_sweep(tmp_path, {**base, "params": {"architectures.L1.capacity": {"range": [100, 300], "step": 100},
                                                      "workloads.extents.m": {"values": [2, 3]}}})
    cases = load_sweep(sweep).cases
    # The L1 parameter applies to "small" only (edge-3level has no L1): 1*2 + 3*2 cases.
    assert len(cases) == 8
    assert sorted(dict(c.params).get("architectures.L1.capacity", 0) for c in cases) == [0, 0, 100, 100, 200, 200, 300, 300]
    listed = write_sweep(tmp_path, {**base, "mode": "list", "params": {
        "architectures.L1.capacity": [128, 256], "workloads.extents.m": [2, 3]}}, "list.yaml")
    pairs = {(c.architecture, tuple(v for _, v in c.params)) for c in load_sweep(listed).cases}
    assert pairs == {("edge-3level", (2,)), ("edge-3level", (3,)), ("small", (128, 2)), ("small", (256, 3))}
    log2 = write_sweep(tmp_path, {**base, "params": {"architectures.L1.capacity": {"range": [1024, 65536], "scale": "log2"}}},
                       "log2.yaml")
    assert [dict(c.params)["architectures.L1.capacity"] for c in load_sweep(log2).cases if c.params] == \
        [1024, 2048, 4096, 8192, 16384, 32768, 65536]


def test_cases_pickle(grid_sweep):
    import pickle

    cases = load_sweep(grid_sweep).cases
    assert pickle.loads(pickle.dumps(cases)) == cases and len(set(cases)) == len(cases)
