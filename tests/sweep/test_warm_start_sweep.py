"""Sweeps with ``warm_start: true``: each case hinted with its neighbour's schedule (mapsearch/sweep/neighbours.py).

- Neighbours are the cases before, in the sweep's order, that differ only
  in capacities; the runner holds a case back until its neighbour's result
  is stored and starts it from that schedule (a failed neighbour: no start).
- Results do not depend on how the sweep runs: one worker, two, or resumed
  after its first case, the rows and schedules are the same.
- Along a capacity axis a warm result is never worse than its neighbour's
  (the neighbour's schedule fits the larger buffer and a phase never ends
  worse than its start), and ends below the cold run cut short by the same
  work limit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mapsearch.cli import main
from mapsearch.sweep.case import Case
from mapsearch.sweep.neighbours import neighbours
from mapsearch.sweep.runner import _Plan, run_sweep
from mapsearch.sweep.spec import load_sweep
from mapsearch.sweep.store import ResultStore

from sweep_helpers import MATMUL, arch, write_sweep

THREE_LEVELS = {"name": "3L", "levels": [
    {"name": "L2", "capacity": None},
    {"name": "L1", "capacity": 1024, "link": {"input_clocks_per_word": 4, "output_clocks_per_word": 4}},
    {"name": "L0", "capacity": 64, "link": {"input_clocks_per_word": 1, "output_clocks_per_word": 1}}]}


def capacity_sweep(directory: Path, warm: bool, capacities=(1024, 1536, 2048), name: str = "sweep.yaml") -> Path:
    """97x193x61 on 3 levels, L1 swept, each phase cut at 0.05 deterministic s: FEASIBLE, so a start can matter."""
    return write_sweep(directory, {
        "name": "warm" if warm else "cold",
        "workloads": [{"name": "mm-97x193x61", "einsum": MATMUL, "extents": {"m": 97, "n": 193, "k": 61}}],
        "architectures": [THREE_LEVELS],
        "params": {"architectures.L1.capacity": list(capacities)},
        "work_limit": 0.05,
        "time_limit": 120,
        "warm_start": warm,
    }, name)


def results(out: Path) -> list[tuple]:
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    schedules = {p.stem: p.read_text() for p in (out / "schedules").iterdir()}
    return [(r["params"]["architectures.L1.capacity"], r["status"], r["time"], r["words_total"],
             json.loads(schedules[r["case_id"]])["levels"]) for r in rows]


def test_neighbours_differ_only_in_capacity(tmp_path) -> None:
    data = {
        "workloads": [{"name": "a", "einsum": MATMUL, "extents": {"m": 8, "n": 6, "k": 5}},
                      {"name": "b", "einsum": MATMUL, "extents": {"m": 6, "n": 6, "k": 5}}],
        "architectures": [arch("small", 512)],
        "objectives": ["time", "words"],
        "params": {"architectures.L1.capacity": [256, 512, 1024], "architectures.L0.capacity": [32, 64]},
        "warm_start": True,
    }
    cases = load_sweep(write_sweep(tmp_path, data)).cases
    assert len(cases) == 2 * 2 * 3 * 2
    before = neighbours(cases)
    index = {c.case_id: n for n, c in enumerate(cases)}
    for case in cases:
        if case.case_id not in before:
            continue
        other = cases[index[before[case.case_id]]]
        assert index[other.case_id] < index[case.case_id]
        assert (other.workload, other.objective) == (case.workload, case.objective)
    # One chain per (workload, objective): its first case has no neighbour, each other case the one before it.
    assert len(cases) - len(before) == 4
    chain = [c for c in cases if (c.workload, c.objective) == ("a", "time")]
    assert [before.get(c.case_id) for c in chain] == [None] + [c.case_id for c in chain[:-1]]
    # Without warm_start no case has a neighbour, and the cases are other cases (the start is part of the result).
    data["warm_start"] = False
    cold = load_sweep(write_sweep(tmp_path, data, "cold.yaml")).cases
    assert neighbours(cold) == {} and not {c.case_id for c in cold} & {c.case_id for c in cases}
    # A link cost that differs is another hierarchy: no neighbour across it.
    data["warm_start"] = True
    data["params"] = {"architectures.L1.link.input_clocks_per_word": [4, 8]}
    assert neighbours(load_sweep(write_sweep(tmp_path, data, "links.yaml")).cases) == {}


def _case(case_id: str, warm: bool = True) -> Case:
    content = {"workload": {"name": "w"}, "architecture": {"name": "a", "levels": [{"capacity": int(case_id[-1])}]},
               "objective": "time", "constraints": None, "solver": {"workers": 1, "seed": 0, "warm_start": warm}}
    return Case(case_id, "w", "a", "time", "", (), json.dumps(content), 1.0)


def test_the_plan_waits_for_a_neighbour_and_starts_from_its_stored_schedule(tmp_path) -> None:
    cases = [_case(f"c{n}") for n in range(1, 5)]
    with ResultStore(tmp_path / "r.sqlite") as store:
        store.put(cases[0], {"status": "OPTIMAL", "schedule": "S1"})  # finished in an earlier run
        plan = _Plan(cases[1:], cases, store)
        assert plan.first == [(cases[1], "S1")]  # c3 waits for c2, c4 for c3
        store.put(cases[1], {"status": "FEASIBLE", "schedule": "S2"})
        assert plan.after(cases[1]) == [(cases[2], "S2")]
        store.put(cases[2], {"status": "TIMEOUT", "schedule": None, "error": "TimeoutError: x"})
        assert plan.after(cases[2]) == [(cases[3], None)]  # a failed neighbour gives no start
        assert plan.after(cases[3]) == []


def test_a_warm_sweep_gives_the_same_results_however_it_runs(tmp_path, capsys) -> None:
    warm = capacity_sweep(tmp_path, True)
    runs = {}
    for label, workers in (("one", "1"), ("two", "2")):
        assert main(["sweep", str(warm), "--out", str(tmp_path / label), "--workers", workers, "-q"]) == 0
        runs[label] = results(tmp_path / label)
    # Resumed: the first capacity alone (the same case), then the whole sweep.
    first = capacity_sweep(tmp_path, True, (1024,), "first.yaml")
    assert main(["sweep", str(first), "--out", str(tmp_path / "resumed"), "--workers", "2", "-q"]) == 0
    capsys.readouterr()
    assert main(["sweep", str(warm), "--out", str(tmp_path / "resumed"), "--workers", "2", "-q"]) == 0
    assert "skipped 1 finished" in capsys.readouterr().err
    runs["resumed"] = results(tmp_path / "resumed")
    assert runs["one"] == runs["two"] == runs["resumed"]
    # Never worse than the neighbour: the same time, words non-increasing as L1 grows.
    words = [(r[0], r[1], r[2], r[3]) for r in runs["one"]]
    assert [w[1] for w in words] == ["FEASIBLE"] * 3 and len({w[2] for w in words}) == 1
    assert words[0][3] >= words[1][3] >= words[2][3]
    # Cold, the same limit: each case with a start ends above the warm run (measured: 479,814 and 444,495 words
    # cold, 468,529 and 433,027 warm; before the coarse search's probes, cold 2048 ended at 847,098).
    cold = capacity_sweep(tmp_path, False, name="cold.yaml")
    assert main(["sweep", str(cold), "--out", str(tmp_path / "cold"), "--workers", "2", "-q"]) == 0
    cold_words = [r[3] for r in results(tmp_path / "cold")]
    assert cold_words[0] == words[0][3]  # the first case has no start: the same run
    assert cold_words[1] > words[1][3] and cold_words[2] > words[2][3]
    assert yaml.safe_load(warm.read_text())["warm_start"] is True
    # On a Dask cluster of two worker processes: the same rows again.
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        with ResultStore(tmp_path / "dask.sqlite") as store:
            outcome = run_sweep(load_sweep(warm).cases, store, scheduler=cluster.scheduler_address)
            assert (outcome.stored, outcome.failed) == (3, 0)
            dask = store.rows()
    assert sorted((r["params"]["architectures.L1.capacity"], r["status"], r["report"]["words_total"],
                   json.loads(r["schedule"])["levels"]) for r in dask.values()) == \
        [(c, status, words, levels) for c, status, _, words, levels in runs["one"]]
