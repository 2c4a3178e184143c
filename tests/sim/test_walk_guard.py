"""A spatial schedule too long to walk is refused at once, naming its size, and never reported as checked."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from spatial_helpers import arch, level, matmul, schedule

from mapsearch.schedule.json_io import save_schedule
from mapsearch.sim import walk_spatial
from mapsearch.sim.errors import WalkTooLong
from mapsearch.sim.replay import replay
from mapsearch.sim.spatial_fold import walk_folded
from mapsearch.sim.walk_spatial import SpatialWalk
from mapsearch.spec.architecture import MeshAxis


def _array_schedule(e: int):
    # e^3 on a 4x4 array, L0 tiles of one MAC: e^3 / 16 lockstep steps, one instance walked (all do the same work).
    wl = matmul(e, e, e)
    a = arch(level("DRAM", None), level("L1", 1 << 40),
             level("L0", 3, [MeshAxis("x", 4, ("input",)), MeshAxis("y", 4, ("output",))]))
    return schedule(wl, a, [({"m": e, "n": e, "k": e}, "mnk", "ABZ"),
                            ({"m": 1, "n": 1, "k": 1}, "mnk", "ABZ", [("m", e // 4, "x"), ("k", e // 4, "y")])])


def test_the_walk_refuses_past_its_limit_and_walks_up_to_it(monkeypatch) -> None:
    s = _array_schedule(16)  # 256 steps, too few to fold: walked one by one
    monkeypatch.setattr(walk_spatial, "MAX_WALK_CELLS", 255)
    with pytest.raises(WalkTooLong, match="256 lockstep steps of 1 instance"):
        replay(s, mode="count")
    monkeypatch.setattr(walk_spatial, "MAX_WALK_CELLS", 256)
    assert replay(s, mode="count").figures.op_calls == 16 ** 3


def test_a_huge_array_schedule_is_refused_in_a_moment(tmp_path) -> None:
    # 65536^3 / 16 = 2^44 steps: before the limit the replay ran for days; now one line, exit 2, at once.
    s = _array_schedule(65536)
    with pytest.raises(WalkTooLong, match="17,592,186,044,416 lockstep steps"):
        replay(s, mode="count")
    path = tmp_path / "huge.json"
    save_schedule(s, path)
    run = subprocess.run([sys.executable, "-m", "mapsearch", "replay", str(path)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "huge.json" in lines[0] and "neither checked nor refuted" in lines[0]
    assert json.loads(path.read_text())  # the file is untouched


def test_solve_says_the_check_did_not_run_and_writes_nothing(monkeypatch, tmp_path, capsys) -> None:
    # The 4x4 array example solved as usual, with the check walk's limit below its schedule's steps.
    from mapsearch import cli
    from mapsearch.solve import entry

    monkeypatch.setattr(entry, "CHECK_WALK_MIN_CELLS", 1)
    monkeypatch.setattr(entry, "WALK_CELLS_PER_SECOND", 0)
    out = tmp_path / "s.json"
    code = cli.main(["solve", "examples/matmul-4x4x4.yaml", "examples/arch-array-4x4.yaml", "-q", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and not out.exists()
    assert "REPLAY NOT RUN: the count replay would walk" in err and "REPLAY MISMATCH" not in err
    assert "more than its limit of 1:" in err


def test_the_check_after_a_solve_walks_about_as_long_as_the_solve_may_run() -> None:
    """A solve's check walk takes at most about its time limit (never less than about 22 minutes); an
    infinite limit leaves the walk's own."""
    from mapsearch.solve.entry import CHECK_WALK_MIN_CELLS, check_walk_cells

    rate = walk_spatial.WALK_CELLS_PER_SECOND
    assert check_walk_cells(60) == CHECK_WALK_MIN_CELLS == 1 << 28 > 60 * rate  # 22 minutes at least
    assert check_walk_cells(3600) == 3600 * rate > CHECK_WALK_MIN_CELLS
    assert check_walk_cells(3600) < walk_spatial.MAX_WALK_CELLS
    s = _array_schedule(256)  # 2^20 steps, one instance walked; folded, far fewer
    walk = SpatialWalk(s, False, None)
    walk_folded(walk)
    walked = walk.cells
    assert walked < (1 << 20) // 32
    with pytest.raises(WalkTooLong, match=f"1,048,576 lockstep steps of 1 instance.*left more than its limit of "
                                          f"{walked - 1:,}:"):
        replay(s, mode="count", max_cells=walked - 1)
    counted = replay(s, mode="count", max_cells=walked).figures
    assert counted.op_calls == 256 ** 3
    import dataclasses

    from mapsearch.solve.entry import replay_result
    from mapsearch.solve.run import SolveResult

    solved = SolveResult(dataclasses.replace(s, predicted=counted), "FEASIBLE", "time", (), 0.0, (), None)
    unbounded = replay_result(solved, "count", time_limit=math.inf)  # no OverflowError: the walk's own limit
    assert unbounded.mismatches == () and unbounded.replayed.figures == counted
