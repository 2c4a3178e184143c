"""Partly fused chains: per intermediate, fused (inside a group) or materialized at a level (between groups)."""

from __future__ import annotations

from pathlib import Path

from mapsearch.schedule.figures import differences
from mapsearch.sim.replay import replay
from mapsearch.solve.chain import contiguous_groups, solve_chain
from mapsearch.spec.workload_files import load_workload_any
from mapsearch.spec.load import load_architecture

ROOT = Path(__file__).resolve().parents[2]


def test_contiguous_groups_leave_out_all_and_none():
    assert list(contiguous_groups(3)) == [((0,), (1, 2)), ((0, 1), (2,))]
    assert len(list(contiguous_groups(4))) == 2 ** 3 - 2


def test_every_plan_of_a_three_stage_chain_replays_exactly():
    graph = load_workload_any(ROOT / "examples" / "chains" / "three-stage.yaml")
    arch = load_architecture(ROOT / "examples" / "chains" / "fusion-arch.yaml")
    result = solve_chain(graph, arch)
    assert result.plans, "a 3-einsum chain has partly fused plans"
    names = {p.name for p in result.plans}
    assert "groups 0 | 1+2, between at DRAM" in names
    for plan in result.plans:
        assert plan.words == sum(p.schedule.predicted.words_total for p in plan.parts)
        for part in plan.parts:
            replayed = replay(part.schedule, mode="count").figures
            assert differences(part.schedule.predicted, replayed) == []
        if plan.level == "DRAM":
            # The intermediate between the groups goes up to DRAM and back: it is on the top link.
            cut = graph.einsums[plan.groups[0][-1]].output.name
            first = plan.parts[0].schedule.predicted.links[0]
            assert any(t.tensor == cut and t.words_up > 0 for t in first.tensors)
    # Fused inside a group: that group's own intermediate never reaches the top link.
    plan = next(p for p in result.plans if p.name == "groups 0 | 1+2, between at DRAM")
    fused = plan.parts[1].schedule
    assert all(t.words_down == t.words_up == 0 for t in fused.predicted.links[0].tensors if t.tensor == "U")
    # The best of all options is no worse than any of them.
    best = min(result.candidates(), key=lambda c: (c[1], c[2]))
    assert result.best == best[0]


def test_replay_cli_reads_a_fused_schedule_written_by_solve(tmp_path, capsys):
    from mapsearch.cli import main

    out = tmp_path / "best.json"
    chain = ROOT / "examples" / "chains" / "fusion-wins.yaml"
    arch = ROOT / "examples" / "chains" / "fusion-arch.yaml"
    assert main(["solve", str(chain), str(arch), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["replay", "--check", str(out)]) == 0
    assert "check: the replay matches the predicted figures" in capsys.readouterr().out
