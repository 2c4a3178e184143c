"""The chain report says which checks did not run and why, apart from the simulator's refusals, and the plans
the time limit left out (mapsearch/report/chain_report.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mapsearch.model.options import SolveOptions
from mapsearch.report.chain_report import chain_report_dict, render_chain_text
from mapsearch.solve import entry
from mapsearch.sim.fused_count import fused_count_tiles
from mapsearch.solve.chain_replay import INTERRUPTED, ChainReplay, replay_checks

ROOT = Path(__file__).resolve().parents[2]
CHAIN = ROOT / "examples" / "chains" / "fusion-wins.yaml"
ARCH = ROOT / "examples" / "chains" / "fusion-arch.yaml"
LEFT_OUT = "4 of 4 partly fused plans not tried (the time limit of 5 s ran out after 0 distinct groups were solved)"


@pytest.fixture(scope="module")
def solved():
    """The two-einsum example chain, solved (fused at L1 is best), not replayed."""
    return entry.solve_chain(CHAIN, ARCH, options=SolveOptions(time_limit=30, workers=1, seed=0), replay_mode=None)


def _lines(result, checks: ChainReplay) -> list[str]:
    return render_chain_text(result, checks).splitlines()


def test_a_fused_check_past_its_bound_did_not_run_and_says_its_bound(solved) -> None:
    checks = replay_checks(solved, "count", max_fused_tiles=1)
    tiles = fused_count_tiles(solved.best_fused().schedule)
    lines = _lines(solved, checks)
    at = lines.index("replay (count mode):")
    assert lines[at + 1] == (
        f"  fused at L1: - the check did not run: the count replay would walk {tiles:,} tiles (under a second at "
        "the 5,000,000 a second of a 2-core machine), more than its limit of 1: a fused schedule's small stages are "
        "walked tile by tile (sim/fused_count.py), so this one is neither checked nor refuted")
    assert lines[at + 2].startswith("  unfused [0] T[m,n] += A[m,k] * B[k,n]: \u2713 replay == prediction")
    assert not any("refused" in line for line in lines)
    fused = chain_report_dict(solved, checks)["replay"]["checks"][0]
    assert fused["not_run"] is True and fused["ok"] is False and "interrupted" not in fused


def test_a_check_stopped_by_ctrl_c_says_so(solved) -> None:
    checks = replay_checks(solved, "count")
    stopped = replace(checks.checks[0], replayed=None, differences=(), error=INTERRUPTED, not_run=True,
                      interrupted=True)
    lines = _lines(solved, replace(checks, checks=(stopped,) + checks.checks[1:]))
    assert ("  fused at L1: - the check did not run: interrupted by Ctrl-C before it ended; neither checked nor "
            "refuted") in lines
    d = chain_report_dict(solved, replace(checks, checks=(stopped,)))["replay"]["checks"][0]
    assert d["not_run"] is True and d["interrupted"] is True


def test_a_refusal_is_still_a_refusal(solved) -> None:
    checks = replay_checks(solved, "count")
    refused = replace(checks.checks[0], replayed=None, differences=(), error="L1: no room for T[0:5,0:64]")
    lines = _lines(solved, replace(checks, checks=(refused,) + checks.checks[1:]))
    assert "  fused at L1: \u2717 the simulator refused it: L1: no room for T[0:5,0:64]" in lines
    assert not any("did not run" in line for line in lines)


def test_the_plans_left_out_are_one_line_under_the_options(solved) -> None:
    checks = replay_checks(solved, "count")
    assert not any("plans left out" in line for line in _lines(solved, checks))  # none left out: no line
    lines = _lines(replace(solved, plans_left_out=LEFT_OUT), checks)
    at = lines.index(f"  plans left out: {LEFT_OUT}")
    assert lines[at - 1].startswith("  materialized at L0: ")  # after the options and their reasons
    assert lines[at + 1] == ""
    assert sum("plans left out" in line for line in lines) == 1
