"""Ctrl-C during the check replay after a solve: the walk stops, the result is reported unchecked, nothing is written.

The first Ctrl-C stops the active budget (mapsearch/solve/interrupt.py); the
check replay's walk polls a stop hook (mapsearch/sim/stop.py) and ends within
about a second. The solve then raises CheckInterrupted carrying the result,
and ``mapsearch solve`` reports the schedule with its solver figures marked
as not replayed, says ``REPLAY NOT RUN``, writes nothing and exits 1, as for
any check that did not run. A check that starts after a Ctrl-C stopped the
search still runs (the best schedule so far is checked); a second Ctrl-C
aborts it.

Most tests stop the budget from the replay itself (as the signal handler
would, without a signal); the last one sends a real SIGINT to a child process
while its check walks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import mapsearch.budget as budget
from mapsearch import cli
from mapsearch.errors import Interrupted
from mapsearch.model.options import SolveOptions
from mapsearch.solve import chain_replay, entry
from mapsearch.solve.interrupt import CheckInterrupted, check_stop_hook

ROOT = Path(__file__).resolve().parents[2]
MATMUL = str(ROOT / "examples" / "matmul-4x4x4.yaml")
ARCH = str(ROOT / "examples" / "arch-three-level.yaml")
CHAIN = str(ROOT / "examples" / "chains" / "fusion-wins.yaml")
CHAIN_ARCH = str(ROOT / "examples" / "chains" / "fusion-arch.yaml")
OPTIONS = SolveOptions(time_limit=30, workers=1, seed=0)

WHY = ("the check replay (count mode) did not run: interrupted by Ctrl-C before it ended; the schedule is neither "
       "checked nor refuted")


def _ctrl_c_during(module, monkeypatch) -> list[str]:
    """``module.replay`` first stops the active budget, as a first Ctrl-C does, then walks (and is stopped)."""
    real = module.replay
    calls: list[str] = []

    def replay(*args, **kwargs):
        calls.append("walk")
        budget.current().stop()
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "replay", replay)
    return calls


# --------------------------------------------------------------------------
# The library: CheckInterrupted with the unchecked result; a check after a stopped search still runs.
# --------------------------------------------------------------------------


def test_a_stop_during_the_check_raises_with_the_unchecked_result(monkeypatch) -> None:
    calls = _ctrl_c_during(entry, monkeypatch)
    with budget.within(budget.Budget(None)):
        with pytest.raises(CheckInterrupted) as caught:
            entry.solve(MATMUL, ARCH, options=OPTIONS)
    assert calls == ["walk"]
    e = caught.value
    assert isinstance(e, Interrupted) and str(e) == e.why == WHY
    assert e.result.status == "OPTIMAL" and e.result.replayed is None and e.result.mismatches == ()
    assert e.result.schedule.predicted.time == 192  # the solver's figures are all there


def test_not_strict_is_no_different(monkeypatch) -> None:
    _ctrl_c_during(entry, monkeypatch)
    with budget.within(budget.Budget(None)):
        with pytest.raises(CheckInterrupted):
            entry.solve(MATMUL, ARCH, options=OPTIONS, strict=False)


def test_a_check_after_a_stopped_search_runs_and_an_abort_stops_it() -> None:
    result = entry.solve(MATMUL, ARCH, options=OPTIONS, replay_mode=None)
    with budget.within(budget.Budget(None)) as b:
        b.stop()  # Ctrl-C during the search: its best schedule is checked before it is reported
        checked = entry.replay_result(result, "count")
        assert checked.replayed is not None and checked.mismatches == ()
        b.abort()  # the second Ctrl-C
        with pytest.raises(CheckInterrupted):
            entry.replay_result(result, "count")


def test_the_hook_follows_the_budget() -> None:
    assert check_stop_hook() is None  # no budget: nothing stops a walk
    with budget.within(budget.Budget(None)) as b:
        hook = check_stop_hook()
        assert hook is not None and not hook()
        b.stop()
        assert hook()
    with budget.within(budget.Budget(None)) as b:
        b.stop()
        hook = check_stop_hook()
        assert hook is not None and not hook()
        b.abort()
        assert hook()


def test_a_chain_check_stopped_is_not_run_and_names_the_interrupt(monkeypatch) -> None:
    _ctrl_c_during(chain_replay, monkeypatch)
    with budget.within(budget.Budget(None)):
        result = entry.solve_chain(CHAIN, CHAIN_ARCH, options=OPTIONS, strict=False)
    checks = result.replay.checks
    assert [(c.name, c.not_run, c.interrupted, c.replayed) for c in checks] == [
        ("fused at L1", True, True, None), ("unfused", True, True, None)]
    assert {c.error for c in checks} == {chain_replay.INTERRUPTED}
    assert result.replay.failures(result.best) == checks[:1]
    with budget.within(budget.Budget(None)):
        with pytest.raises(CheckInterrupted, match="fused at L1: interrupted by Ctrl-C before it ended"):
            entry.solve_chain(CHAIN, CHAIN_ARCH, options=OPTIONS)


# --------------------------------------------------------------------------
# The command: the report unchecked, REPLAY NOT RUN, exit 1, nothing written.
# --------------------------------------------------------------------------


def test_solve_reports_the_schedule_unchecked_and_writes_nothing(monkeypatch, tmp_path, capsys) -> None:
    _ctrl_c_during(entry, monkeypatch)
    out = tmp_path / "s.json"
    code = cli.main(["solve", MATMUL, ARCH, "-q", "--workers", "1", "-o", str(out)])
    report, err = capsys.readouterr()
    assert code == 1 and not out.exists()
    lines = report.splitlines()
    assert lines[2].startswith("status: OPTIMAL: time 192 clocks (bound 192)")
    at = lines.index("predicted, not replayed (the count replay did not run):")
    assert lines[at + 1].split() == ["quantity", "predicted"]
    assert f"  REPLAY NOT RUN: {WHY}; no figure above is checked" in lines
    assert "the replay agrees" not in report and "predicted vs replayed" not in report
    assert err.splitlines() == [f"mapsearch: REPLAY NOT RUN: {WHY}; the schedule is not written"]


def test_solve_json_says_the_replay_did_not_run(monkeypatch, capsys) -> None:
    _ctrl_c_during(entry, monkeypatch)
    code = cli.main(["solve", MATMUL, ARCH, "-q", "--workers", "1", "--json"])
    report, err = capsys.readouterr()
    assert code == 1
    data = json.loads(report)
    assert data["replayed"] is False and data["replay_not_run"] == WHY
    assert data["predicted_equals_replayed"] is None and data["mismatches"] == []
    assert data["status"] == "OPTIMAL" and data["time"] == 192  # the solver's figures
    assert err.splitlines() == [f"mapsearch: REPLAY NOT RUN: {WHY}; the schedule is not written"]


def test_a_chain_solve_says_which_check_did_not_run_and_writes_nothing(monkeypatch, tmp_path, capsys) -> None:
    _ctrl_c_during(chain_replay, monkeypatch)
    out = tmp_path / "chain.json"
    code = cli.main(["solve", CHAIN, CHAIN_ARCH, "-q", "--workers", "1", "-o", str(out)])
    report, err = capsys.readouterr()
    assert code == 1 and not out.exists()
    assert ("  fused at L1: - the check did not run: interrupted by Ctrl-C before it ended; neither checked nor "
            "refuted") in report.splitlines()
    assert err.splitlines() == [
        "mapsearch: warning: REPLAY NOT RUN: unfused: interrupted by Ctrl-C before it ended; neither checked nor "
        "refuted",
        "mapsearch: REPLAY NOT RUN: fused at L1: interrupted by Ctrl-C before it ended; neither checked nor refuted",
        "mapsearch: REPLAY NOT RUN: Ctrl-C stopped the check replay: the best schedule is neither checked nor "
        "refuted; nothing is written"]


# --------------------------------------------------------------------------
# A real SIGINT while the check walks.
# --------------------------------------------------------------------------

# The child solves the 4x4x4 matmul; its check replay first walks a long schedule with spatial splits (2^20
# lockstep steps of 16 instances, one by one, unfolded: about 20 s), through the same polling walk, so that the
# signal lands while the check walks.
CHILD = textwrap.dedent("""
    import sys
    sys.path.insert(0, {sim_tests!r})
    from mapsearch import cli
    from mapsearch.sim.walk_spatial import count_spatial
    from mapsearch.solve import entry
    from test_walk_stop import _array_schedule

    long_one = _array_schedule(256)
    real = entry.replay

    def replay(*args, **kwargs):
        print("WALKING", file=sys.stderr, flush=True)
        count_spatial(long_one, one_by_one=True, fold=False)
        return real(*args, **kwargs)

    entry.replay = replay
    sys.exit(cli.main(sys.argv[1:]))
""")


def test_a_real_ctrl_c_during_the_check(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(sim_tests=str(ROOT / "tests" / "sim")), "solve", MATMUL, ARCH, "-q",
         "--workers", "1", "-o", str(out)], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        first = child.stderr.readline()  # blocks until the check walks (or the child ends)
        assert first == "WALKING\n", first + child.stderr.read()
        time.sleep(1.0)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        report, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    stopped_in = time.monotonic() - sent
    assert child.returncode == 1, err
    assert stopped_in < 5, f"took {stopped_in:.1f} s to stop the check after Ctrl-C"  # not the walk's 20 s
    assert not out.exists()
    assert "Traceback" not in err
    assert err.splitlines()[-2:] == ["mapsearch: interrupted: stopping the check replay; Ctrl-C again to abort",
                                     f"mapsearch: REPLAY NOT RUN: {WHY}; the schedule is not written"]
    assert "status: OPTIMAL" in report and f"  REPLAY NOT RUN: {WHY}; no figure above is checked" in report
