"""End to end: solve through the sweep machinery, add up, resume, CLI outputs."""

from __future__ import annotations

import json

import pytest

from mapsearch.characterize.models import load_model
from mapsearch.characterize.profiles import load_profile
from mapsearch.characterize.run import characterize
from mapsearch.cli import main


SMALL = """
name: small-mlp
nodes:
  - {name: fc1, op: linear, in: [[16, 64]], out: [16, 32]}
  - {name: relu1, op: relu, in: [[16, 32]], out: [16, 32]}
  - {name: fc2, op: linear, in: [[16, 32]], out: [16, 32]}
  - {name: add, op: add, in: [[16, 32], [16, 32]], out: [16, 32], from: [fc2, relu1]}
  - {name: fc3, op: linear, in: [[16, 32]], out: [16, 32]}
"""


@pytest.fixture(scope="module")
def mlp_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("mlp")
    (out / "small-mlp.yaml").write_text(SMALL)
    profile = load_profile("kpu")
    first = characterize(load_model(str(out / "small-mlp.yaml")), [profile], out, workers=1, time_limit=30)
    return out, profile, first


def test_totals_are_the_sums_of_the_layers(mlp_run):
    _, profile, c = mlp_run
    (t,) = c.totals
    rows = c.layers
    assert t["optimal"] + t["feasible"] == 3 and t["failed"] == 0 and t["distinct_shapes"] == 2
    assert t["time_clocks"] == pytest.approx(sum(r["time_clocks"] for r in rows))
    assert t["energy_pj"] == pytest.approx(sum(r["energy_pj"] for r in rows))
    assert t["macs"] == 16 * (64 * 32 + 32 * 32 + 32 * 32)
    assert t["bandwidth_steps"] == 1 and t["fused_epilogues"] == 1
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    for r in rows:
        if r["kind"] == "einsum":
            assert r["status"] in ("OPTIMAL", "FEASIBLE") and r["gap"] is not None
            words = sum(l["words"] for l in r["links"].values())
            assert words == r["words_total"]
            assert r["energy_pj"] == pytest.approx(
                sum(l["words"] * profile.link_energy_pj[n] for n, l in r["links"].items()) + r["macs"] * profile.mac_energy_pj)
        elif r["status"] == "FUSED":
            assert r["words_total"] == 0 and r["fused_into"]


def test_a_rerun_skips_the_finished_cases(mlp_run):
    out, profile, first = mlp_run
    again = characterize(load_model(str(out / "small-mlp.yaml")), [profile], out, workers=1, time_limit=30)
    assert again.outcome.skipped == 2 and again.outcome.stored == 0
    assert again.totals == first.totals


def test_cli_tables_csv_json(mlp_run, capsys):
    out, _, _ = mlp_run
    assert main(["characterize", str(out / "small-mlp.yaml"), "kpu", "--out", str(out), "--time-limit", "30", "-q"]) == 0
    text = capsys.readouterr().out
    assert "small-mlp on KPU" in text and "totals per profile" in text and "linear+activation" in text
    totals = json.loads((out / "totals.json").read_text())
    assert totals[0]["profile"] == "KPU"
    assert (out / "layers.csv").read_text().startswith("model,profile,layer,")
    assert (out / "results.jsonl").exists()
    pytest.importorskip("matplotlib")
    assert (out / "roofline.png").exists()


def test_bad_profile_is_one_line(capsys):
    assert main(["characterize", "mlp", "nosuch"]) == 2
    assert "profiles: cpu, cpu-quick, gpu, gpu-quick, kpu, kpu-quick, tpu, tpu-quick" in capsys.readouterr().err
