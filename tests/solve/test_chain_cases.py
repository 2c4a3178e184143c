"""``mapsearch solve CHAIN.yaml ARCH``: fusion wins, fusion loses, 3-einsum chains, the Tensaurus kernels.

Every case is solved at every fusion level and unfused, the best fused
schedule and every unfused stage are replayed, and predicted == replayed.
The pinned numbers are the ones docs/fusion-results.md quotes.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path

import pytest

from mapsearch import cli
from mapsearch.presets import resolve_architecture
from mapsearch.schedule.figures import LinkFigures, differences
from mapsearch.schedule.fused_json import load_fused
from mapsearch.sim.counters import ReplayResult
from mapsearch.solve.chain import solve_chain
from mapsearch.spec.workload_files import is_chain_file, load_chain
from mapsearch.model.options import SolveOptions

ROOT = Path(__file__).resolve().parents[2]
CHAINS = ROOT / "examples" / "chains"
ARCH = str(CHAINS / "fusion-arch.yaml")
TEAAL = CHAINS / "teaal"


def solve_json(capsys, *args: str) -> tuple[int, dict, str]:
    code = cli.main(["solve", *args, "--json"])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def option(report: dict, name: str) -> dict:
    return next(o for o in report["options"] if o["option"] == name)


def write_chain(tmp_path: Path, extents: str, name: str = "mm3") -> str:
    p = tmp_path / f"{name}.yaml"
    p.write_text(f"name: {name}\neinsums:\n  - \"T[m,n] += A[m,k] * B[k,n]\"\n  - \"Y[m,p] += T[m,n] * C[n,p]\"\n"
                 f"extents: {extents}\n")
    return str(p)


# --------------------------------------------------------------------------- wins / loses


def test_fusion_wins_large_intermediate(capsys):
    code, report, _ = solve_json(capsys, str(CHAINS / "fusion-wins.yaml"), ARCH)
    assert code == 0
    assert report["best"] == "fused at L1"
    fused, unfused = option(report, "fused at L1"), option(report, "unfused")
    # Fused stages keep default buffer positions: proven over that family only.
    assert (fused["status"], fused["time"], fused["words"]) == ("OPTIMAL_IN_FAMILY", 7680, 22528)
    assert (unfused["status"], unfused["time"], unfused["words"]) == ("OPTIMAL", 9216, 23552)
    saved = report["saved"]
    assert saved["words"] == 1024 and saved["time"] == 1536
    # T never travels to DRAM when fused; unfused it goes there and back (64 x 64 x 2).
    assert saved["intermediate_words_top_fused"] == 0 and saved["intermediate_words_top_unfused"] == 8192
    assert report["replay"]["ok"] and all(c["ok"] for c in report["replay"]["checks"])


def test_fusion_loses_small_intermediate_long_reductions(capsys):
    code, report, _ = solve_json(capsys, str(CHAINS / "fusion-loses.yaml"), ARCH)
    assert code == 0
    assert report["best"] == "unfused"
    fused, unfused = option(report, "fused at L1"), option(report, "unfused")
    assert (fused["time"], fused["words"]) == (20480, 60672)
    assert (unfused["time"], unfused["words"]) == (16000, 44288)
    assert report["saved"]["time"] < 0 and report["saved"]["words"] < 0
    assert report["replay"]["ok"]


# --------------------------------------------------------------------------- 3-einsum chains


def test_mlp3_three_einsums_fused_data_matches_numpy():
    from mapsearch.sim.replay import replay

    graph, homes, _ = load_chain(CHAINS / "mlp3.yaml")
    assert len(graph.einsums) == 3 and graph.intermediates == ("H1", "H2")
    arch, _ = resolve_architecture(ARCH)
    result = solve_chain(graph, arch, homes, SolveOptions())
    best = result.best_fused()
    assert best.status in ("OPTIMAL", "OPTIMAL_IN_FAMILY")
    r = replay(best.schedule, mode="data")
    assert r.data_ok is True
    assert differences(best.schedule.predicted, r.figures) == []
    assert (best.schedule.predicted.time, best.schedule.predicted.words_total) == (800, 1952)
    assert (result.unfused.time, result.unfused.words) == (864, 2304)
    # H1 and H2 homed whole in L1, each einsum alone with its buffers placed: faster than the fused
    # group, whose stages keep default buffer positions (a named restriction).
    assert result.best == "materialized at L1"
    level, outcome, _ = result.materialized[0]
    assert (level, outcome.time, outcome.words) == ("L1", 720, 1792)


def test_attention_solved_and_replayed(capsys):
    code, report, _ = solve_json(capsys, str(CHAINS / "attention.yaml"), ARCH)
    assert code == 0
    assert report["replay"]["ok"]
    # The fused stages keep default buffer positions (named); the unfused einsums, placed, are faster.
    assert report["best"] == "unfused"
    assert option(report, "fused at L1")["time"] == 62464 and option(report, "unfused")["time"] == 57344
    assert option(report, "fused at L1")["family_restrictions"] == [
        "buffer placement: default positions only (fused chain stage)"]


# --------------------------------------------------------------------------- TeAAL (Tensaurus)


@pytest.mark.parametrize("kernel", ["gemm", "gemv", "mttkrp", "ttmc"])
def test_tensaurus_kernel_teaal_constraints_data_replay(capsys, kernel):
    path = TEAAL / f"{kernel}.yaml"
    assert is_chain_file(path)
    code, report, _ = solve_json(capsys, str(path), "edge-3level", "--replay-mode", "data")
    assert code == 0
    assert any("TeAAL mapping constraints apply" in n for n in report["notes"])
    assert [o["option"] for o in report["options"]] == ["unfused"]
    checks = report["replay"]["checks"]
    assert checks and all(c["ok"] and c["data_ok"] is True for c in checks)


@pytest.mark.parametrize("kernel", ["mttkrp", "ttmc"])
def test_tensaurus_two_einsum_kernels_fused_unconstrained(kernel):
    """MTTKRP and TTMc as chains (TeAAL mapping not applied): fused replays exactly and matches numpy."""
    from mapsearch.sim.replay import replay

    graph, _, _ = load_chain(TEAAL / f"{kernel}.yaml")
    arch, _ = resolve_architecture("edge-3level")
    result = solve_chain(graph, arch, {}, SolveOptions())
    for o in result.fused:
        if o.schedule is None:
            continue
        r = replay(o.schedule, mode="data")
        assert r.data_ok is True, (kernel, o.level)
        assert differences(o.schedule.predicted, r.figures) == []


# --------------------------------------------------------------------------- the CLI


def test_output_fused_schedule_file_round_trips(tmp_path, capsys):
    chain = write_chain(tmp_path, "{m: 8, n: 8, k: 2, p: 2}")
    out = tmp_path / "best.json"
    assert cli.main(["solve", chain, ARCH, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "best: fused at" in text and "best schedule (fused at" in text
    fs = load_fused(out)
    assert fs.predicted is not None and len(fs.stages) == 2


def test_output_unfused_writes_stage_schedules(tmp_path, capsys):
    out = tmp_path / "best.json"
    assert cli.main(["solve", str(CHAINS / "fusion-loses.yaml"), ARCH, "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["format"] == "mapsearch-unfused-chain"
    assert len(data["stages"]) == 2 and data["time"] == "16000" and data["words"] == 44288
    from mapsearch.schedule.json_io import schedule_from_dict

    assert schedule_from_dict(data["stages"][0]).workload.einsum.output.name == "T"


def test_replay_mismatch_exits_1_and_writes_nothing(tmp_path, capsys, monkeypatch):
    sim_replay = importlib.import_module("mapsearch.solve.chain_replay")  # where the chain solve's replay is looked up
    real = sim_replay.replay

    def wrong(schedule, mode="events", **kw):
        r = real(schedule, mode, **kw)
        f = r.figures
        link = f.links[0]
        bad = LinkFigures(link.name, link.words_down + 1, link.words_up, link.time + 1, link.tensors)
        return ReplayResult(dataclasses.replace(f, links=(bad,) + f.links[1:]))

    monkeypatch.setattr(sim_replay, "replay", wrong)
    chain = write_chain(tmp_path, "{m: 4, n: 4, k: 2, p: 2}")
    out = tmp_path / "best.json"
    assert cli.main(["solve", chain, ARCH, "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert "REPLAY MISMATCH" in captured.err and "REPLAY MISMATCH" in captured.out
    assert "words_down" in captured.err
    assert not out.exists()


def test_chain_rejects_other_objectives(tmp_path, capsys):
    chain = write_chain(tmp_path, "{m: 2, n: 2, k: 2, p: 2}")
    assert cli.main(["solve", chain, ARCH, "--objective", "words"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--objective" in err[0]


def test_single_einsum_files_still_go_the_single_way():
    assert not is_chain_file(ROOT / "examples" / "matmul-4x4x4.yaml")
    assert is_chain_file(CHAINS / "triple-matmul.yaml")
