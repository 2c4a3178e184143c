"""Helpers for the sweep tests. Tiny sweeps for the sweep tests: small matmuls on small three-level hierarchies (well under a second a case)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import yaml

MATMUL = "Z[m,n] += A[m,k] * B[k,n]"


def arch(name: str, l1: int, l0: int = 64, top: str = "L2") -> dict:
    return {
        "name": name,
        "levels": [
            {"name": top, "capacity": None},
            {"name": "L1", "capacity": l1, "link": {"input_clocks_per_word": 4}},
            {"name": "L0", "capacity": l0, "link": {"input_clocks_per_word": 1, "lines": "separate"}},
        ],
    }


def write_sweep(directory: Path, data: dict, name: str = "sweep.yaml") -> Path:
    path = directory / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def stored(db: Path) -> dict[str, tuple[str, int]]:
    """case_id -> (status, solves) read from the database (a reader beside the writer)."""
    if not db.exists():
        return {}
    with sqlite3.connect(db, timeout=10) as con:
        try:
            return {k: (s, n) for k, s, n in con.execute("SELECT case_id, status, solves FROM cases")}
        except sqlite3.OperationalError:  # the writer has not created the table yet
            return {}


def grid_sweep_file(tmp_path: Path) -> Path:
    """2 matmuls x 2 architectures (one a file, one inline) x L1 capacity {256, 512}: 8 cases."""
    (tmp_path / "arch-a.yaml").write_text(yaml.safe_dump(arch("small-a", 512)))
    (tmp_path / "mm1.yaml").write_text(yaml.safe_dump({"name": "mm-12x10x7", "einsum": MATMUL, "extents": {"m": 12, "n": 10, "k": 7}}))
    return write_sweep(tmp_path, {
        "name": "tiny-grid",
        "workloads": ["mm1.yaml", {"name": "mm-9x8x5", "einsum": MATMUL, "extents": {"m": 9, "n": 8, "k": 5}}],
        "architectures": ["arch-a.yaml", arch("small-b", 512, l0=32, top="DRAM")],
        "params": {"architectures.L1.capacity": {"range": [256, 512], "scale": "log2"}},
        "time_limit": 30,
    })
