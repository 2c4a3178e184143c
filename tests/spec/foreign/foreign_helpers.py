"""Solve a peer's files through the API (what `mapsearch solve` does), and check the replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from mapsearch.errors import SpecError
from mapsearch.schedule.figures import differences
from mapsearch.sim.replay import replay
from mapsearch.model.options import SolveOptions
from mapsearch.spec.foreign import load_foreign_arch, load_foreign_workload
from mapsearch.solve.tree import solve_tree
from mapsearch.spec.workload import Workload

PEERS = Path(__file__).resolve().parents[2] / "data" / "peers"
MATMUL = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 8, "n": 8, "k": 8})


def solve_peer(workload, arch_path, variables=None, objective="time", time_limit=60):
    """``(best compute, SolveResult, notes)``; ``workload`` is a path of a peer's workload or a Workload."""
    if isinstance(workload, (str, Path)):
        workload = load_foreign_workload(workload, variables)
    fa = load_foreign_arch(arch_path, workload, variables)
    w = getattr(workload, "workload", workload)
    best, result, _ = solve_tree(fa.tree, w, {}, SolveOptions(objective=objective, time_limit=time_limit), fa.constraints)
    replayed = replay(result.schedule, mode="count")
    assert differences(result.schedule.predicted, replayed.figures) == []
    return best, result, fa.notes


def workload_error(tmp_path: Path, text: str, name: str = "p.yaml", format: str | None = None) -> tuple[Path, str]:
    """``(path, message)``: the one-line SpecError of a peer's workload file holding ``text``."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SpecError) as e:
        load_foreign_workload(path, format=format)
    return path, str(e.value)
