"""`mapsearch solve` on a tree with two compute paths picks the better one per workload."""

from __future__ import annotations

import json
from pathlib import Path

from mapsearch.cli import main

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "examples" / "trees" / "two-paths.yaml"


def _workload(tmp_path: Path, m: int, n: int, k: int) -> Path:
    p = tmp_path / f"mm{m}x{n}x{k}.yaml"
    p.write_text(f'name: mm\neinsum: "Z[m,n] += A[m,k] * B[k,n]"\nextents: {{m: {m}, n: {n}, k: {k}}}\n')
    return p


def _chosen(report: dict) -> str:
    chosen = [line for line in report["compute_paths"] if "<- chosen" in line]
    assert len(chosen) == 1
    return chosen[0].split(":")[0].strip()


def test_small_awkward_matmul_takes_the_scalar_unit(tmp_path, capsys):
    assert main(["solve", str(_workload(tmp_path, 5, 3, 7)), str(TREE), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert _chosen(report) == "scalar_unit"
    assert report["status"] == "OPTIMAL"
    assert report["time"] == 105  # 105 MACs, one per clock: compute-bound
    assert report["predicted_equals_replayed"] is True


def test_large_matmul_takes_the_mac_array(tmp_path, capsys):
    assert main(["solve", str(_workload(tmp_path, 64, 64, 64)), str(TREE), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert _chosen(report) == "mac_array"
    assert report["time"] < 64 ** 3  # the 4x4x4 block op beats one MAC per clock
    assert report["predicted_equals_replayed"] is True
