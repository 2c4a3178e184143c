"""The check replay after a solve says that it runs, and how long it may take; a chain's cut plans are named.

A solve's progress line ended with the search, and the check replay ran on
in silence (the 2024 Timeloop tutorial's 8.6 G-MAC problem on its 8-PE
array: 3.4 s of search, then 70 s of replay). The check now reports its own
phase, with its bound: the walk's limit in time for one einsum with
spatial splits, the fused walk's tiles for a chain.
"""

from __future__ import annotations

import io
import json
from fractions import Fraction
from pathlib import Path

from mapsearch import cli
from mapsearch.cli.solve_progress import ProgressLine
from mapsearch.model.options import SolveOptions
from mapsearch.solve import chain, entry
from mapsearch.sim.fused_count import fused_count_tiles
from mapsearch.solve.progress import SolveProgress, listening

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = SolveOptions(time_limit=5, workers=1, seed=0)


def test_the_check_of_a_schedule_with_spatial_splits_says_its_bound() -> None:
    seen: list[SolveProgress] = []
    with listening(seen.append):
        entry.solve(ROOT / "examples" / "matmul-4x4x4.yaml", ROOT / "examples" / "arch-array-4x4.yaml", options=OPTIONS)
    phases = [p.phase for p in seen]
    # 2^28 cells at 200,000 a second: the check's floor (entry.CHECK_WALK_MIN_CELLS), whatever the 5 s limit.
    assert phases[-3:] == ["finished", "checking: the count replay checks the schedule (a walk with spatial splits: "
                           "at most about 22 minutes, its limit of 268,435,456 cells)", "finished"]


def test_the_check_of_a_chain_says_the_fused_walks_size() -> None:
    seen: list[SolveProgress] = []
    with listening(seen.append):
        result = entry.solve_chain(ROOT / "examples" / "chains" / "fusion-wins.yaml",
                                   ROOT / "examples" / "chains" / "fusion-arch.yaml", options=OPTIONS)
    tiles = fused_count_tiles(result.best_fused().schedule)
    assert [p.phase for p in seen][-2:] == [f"checking: the count replay checks the chain's schedules (the best fused "
                                            f"schedule: {tiles:,} tiles, under a second)", "finished"]


def test_the_progress_line_of_the_check_claims_no_search() -> None:
    stream = io.StringIO()
    ProgressLine(stream)(SolveProgress("checking: the count replay checks the schedule", 6.0))
    assert stream.getvalue() == "\rmapsearch: 6 s, checking: the count replay checks the schedule"
    assert ProgressLine.text(SolveProgress("time", 1.0)) == "mapsearch: 1 s, time; no schedule yet"
    assert ProgressLine.text(SolveProgress("time", 1.0, (("time", Fraction(4)),))) == \
        "mapsearch: 1 s, time; best time 4; no bound yet"


def test_plans_left_out_are_a_warning_and_in_the_json(monkeypatch, tmp_path, capsys) -> None:
    path = tmp_path / "three.yaml"
    path.write_text('name: three\neinsums: ["T[m,n] += A[m,k] * B[k,n]", "U[m,p] += T[m,n] * C[n,p]", '
                    '"Y[m,q] += U[m,p] * D[p,q]"]\nextents: {m: 4, n: 2, k: 2, p: 2, q: 2}\n')
    why = "4 of 4 partly fused plans not tried (the time limit of 5 s ran out after 0 distinct groups were solved)"
    monkeypatch.setattr(chain, "group_plans", lambda *args: ((), why))
    arch = str(ROOT / "examples" / "chains" / "fusion-arch.yaml")
    assert cli.main(["solve", str(path), arch, "--time-limit", "5", "--workers", "1", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["plans_left_out"] == why
    assert f"mapsearch: warning: {why}\n" in out.err
