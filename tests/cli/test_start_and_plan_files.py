"""The chain files ``solve -o`` writes, where a command takes one einsum's schedule, and a partly fused plan.

Before: ``solve --start`` on an unfused chain's file or a plan said ``graph: unknown field``, and
``replay`` on a ``mapsearch-chain-plan`` (a partly fused chain, one schedule per group) said the same.
Now ``--start`` refuses every chain file in one line naming what it is, and ``replay`` runs a plan group
by group (``--check``: each group's predictions, fields ``groups[g].…``, and the totals ``time``, ``words``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mapsearch import api
from mapsearch.errors import SpecError
from mapsearch.schedule.fused_json import save_fused
from mapsearch.solve.chain import solve_chain
from mapsearch.solve.chain_files import plan_to_dict, unfused_to_dict
from mapsearch.solve.named_options import solve_options
from mapsearch.spec.load import load_architecture
from mapsearch.spec.workload_files import load_workload_any
from cli_run import one_line_refusal, run_cli

ROOT = Path(__file__).resolve().parents[2]
CHAINS = ROOT / "examples" / "chains"
WORKED = (ROOT / "examples" / "matmul-4x4x4.yaml", ROOT / "examples" / "arch-worked-example.yaml")
PLAN_NAME = "groups 0 | 1+2, between at DRAM"  # einsum 0 alone, then 1 and 2 fused


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One solve of a three-einsum chain written as each chain format: its fused option, its unfused option and
    a partly fused plan (what ``save_best`` writes when that plan is the best)."""
    folder = tmp_path_factory.mktemp("chain-files")
    result = solve_chain(load_workload_any(CHAINS / "three-stage.yaml"), load_architecture(CHAINS / "fusion-arch.yaml"))
    out = {name: folder / f"{name}.json" for name in ("fused", "unfused", "plan")}
    save_fused(result.best_fused().schedule, out["fused"])
    out["unfused"].write_text(json.dumps(unfused_to_dict(result)), encoding="utf-8")
    plan = next(p for p in result.plans if p.name == PLAN_NAME)
    out["plan"].write_text(json.dumps(plan_to_dict(result, plan)), encoding="utf-8")
    return out


@pytest.mark.parametrize("name, what", [
    ("fused", "a fused chain's schedule (mapsearch-fused-schedule)"),
    ("unfused", "an unfused chain (mapsearch-unfused-chain)"),
    ("plan", "a partly fused chain's plan (mapsearch-chain-plan)"),
])
def test_start_refuses_a_chain_file_in_one_line(files, tmp_path, name, what) -> None:
    out = tmp_path / "out.json"
    line = one_line_refusal(["solve", *WORKED, "-q", "--start", files[name], "-o", out], out)
    assert line == f"{files[name]}: --start takes one einsum's schedule (format mapsearch-schedule); this is {what}"
    with pytest.raises(SpecError, match=r": start takes one einsum's schedule"):
        solve_options(start=files[name])  # the API names its parameter


def test_replay_check_runs_a_plan_group_by_group(files) -> None:
    code, stdout, err = run_cli(["replay", files["plan"], "--check"])
    assert (code, err) == (0, "")
    assert "plan3 group 0, T[m,n] += A[m,k] * B[k,n], on fusion-arch" in stdout
    assert "plan3 group 1, einsums 1+2 fused at L1, on fusion-arch" in stdout
    assert "total (2 groups one after another, between at DRAM): time 4480, words 10,752\n" in stdout
    assert stdout.endswith("check: the replay matches the predicted figures\n")


def test_each_group_replays_to_its_predicted_figures(files) -> None:
    plan = api.load_schedule(files["plan"])
    assert isinstance(plan, api.ChainPlan) and plan.groups == ((0,), (1, 2)) and plan.between_level == "DRAM"
    assert type(plan.stages[0]) is api.Schedule and type(plan.stages[1]) is api.FusedSchedule
    result = api.replay(plan)
    assert len(result.stages) == 2
    for stage, replayed in zip(plan.stages, result.stages):
        assert api.compare(stage.predicted, replayed.figures) == []
    assert (result.time, result.figures.words_total) == (plan.time, plan.words)


def test_replay_check_json_and_a_wrong_total(files, tmp_path) -> None:
    code, stdout, _ = run_cli(["replay", files["plan"], "--check", "--json"])
    report = json.loads(stdout)
    assert code == 0 and report["check"] == {"ok": True, "mismatches": []}
    assert [g["einsums"] for g in report["groups"]] == [
        ["T[m,n] += A[m,k] * B[k,n]"], ["U[m,p] += T[m,n] * C[n,p]", "Y[m,q] += U[m,p] * D[p,q]"]]
    data = json.loads(files["plan"].read_text(encoding="utf-8"))
    data["words"] += 1
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(data), encoding="utf-8")
    code, _, err = run_cli(["replay", wrong, "--check"])
    assert (code, err) == (1, f"mapsearch: replay mismatch in words: predicted {data['words']}, "
                              f"replayed {data['words'] - 1}\n")


def test_a_bad_plan_is_one_line_naming_the_file_and_field(files, tmp_path) -> None:
    data = json.loads(files["plan"].read_text(encoding="utf-8"))
    data["groups"][1]["einsums"] = [2, 3]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    line = one_line_refusal(["replay", bad, "--check"])
    assert line.startswith(f"{bad}: groups[1].einsums: expected the next einsums of the graph in order, from 1")


def test_export_refuses_a_plan_in_one_line(files, tmp_path) -> None:
    out = tmp_path / "out.yaml"
    line = one_line_refusal(["export", files["plan"], "-o", out], out)
    assert line.startswith(f"{files['plan']}: export takes one einsum's schedule (format mapsearch-schedule); this "
                           "is a partly fused chain's plan (mapsearch-chain-plan)")
