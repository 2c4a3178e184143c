"""Chain fusion of consecutive einsum layers: pairs, the solver's decision, totals, replay, cache, CLI."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from mapsearch.characterize import chains as chains_mod
from mapsearch.characterize.chains import Pair, choose, find_pairs
from mapsearch.characterize.fusion import lower_all
from mapsearch.characterize.models import load_model, model_from_dict
from mapsearch.characterize.profiles import load_profile
from mapsearch.characterize.run import characterize
from mapsearch.cli import main

# linear 64 -> 256, GELU, linear 256 -> 64, batch 16: the 4,096-word intermediate against a small cache.
MLP = """
name: tiny-mlp
nodes:
  - {name: fc1, op: linear, in: [[16, 64]], out: [16, 256]}
  - {name: gelu, op: gelu, in: [[16, 256]], out: [16, 256]}
  - {name: fc2, op: linear, in: [[16, 256]], out: [16, 64]}
"""

# The same two linears with a layer norm between them: a reduction, not an epilogue.
MLP_LN = MLP.replace("name: tiny-mlp", "name: tiny-mlp-ln").replace("op: gelu", "op: layernorm")

PROFILE = """
name: {name}
clock_hz: 1.0e9
word_bytes: 2
architecture:
  name: {name}-cache
  levels:
    - {{name: DRAM, capacity: null}}
    - {{name: CACHE, capacity: {capacity}, link: {{input_clocks_per_word: 1/4, lines: shared}}}}
  compute: {{block: {{}}, clocks_per_call: 1/64}}
  double_buffering: false
energy_pj:
  links: {{DRAM->CACHE: 100}}
  mac: 1.0
"""


def _nodes(text):
    import yaml

    return model_from_dict(yaml.safe_load(text), "test").nodes


def test_pairs_look_through_epilogues_only():
    nodes = _nodes(MLP)
    (pair,) = find_pairs(nodes, lower_all(nodes))
    assert (pair.first, pair.second) == ("fc1", "fc2")
    assert pair.texts == ("T[m,n] += X1[m,k] * W1[k,n]", "Y2[m,n2] += T[m,n] * W2[n,n2]")
    g = pair.graph()
    assert g.intermediates == ("T",) and g.extent == {"m": 16, "n": 256, "k": 64, "n2": 64}
    for op in ("layernorm", "softmax", "groupnorm", "add"):
        nodes = _nodes(MLP.replace("op: gelu", f"op: {op}"))
        assert find_pairs(nodes, lower_all(nodes)) == [], op


def test_a_second_reader_or_a_view_breaks_a_pair():
    residual = MLP + "  - {name: add, op: add, in: [[16, 64], [16, 256]], out: [16, 64], from: [fc2, gelu]}\n"
    nodes = _nodes(residual)
    assert find_pairs(nodes, lower_all(nodes)) == []
    view = MLP.replace("  - {name: fc2,", "  - {name: t, op: transpose, in: [[16, 256]], out: [16, 256]}\n  - {name: fc2,")
    nodes = _nodes(view)
    assert find_pairs(nodes, lower_all(nodes)) == []


def test_builtin_pairs():
    def pairs(name):
        m = load_model(name)
        return find_pairs(m.nodes, lower_all(m.nodes))

    bert = pairs("bert-base")  # the FFNs only: attention's matmuls are separated by views and softmax
    assert [(p.first.split(".")[-2], p.second.split(".")[-2]) for p in bert] == [("intermediate", "output")] * 12
    assert len({p.key for p in bert}) == 1  # solved once per profile
    resnet = pairs("resnet50")  # the bottleneck's 3x3 -> bn -> relu -> 1x1; conv3 meets the residual add
    assert len(resnet) == 16 and all(p.first.endswith("conv2") and p.second.endswith("conv3") for p in resnet)
    assert pairs("resnet18") == []  # 3x3 -> 3x3 reads the intermediate with a window: not the output layout
    assert [(p.first, p.second) for p in pairs("mlp")] == [("fc1", "fc2"), ("fc2", "fc3")]


def test_choose_maximises_the_total_saving_not_greedily():
    def pair(a, b):
        return Pair(a, b, ("", ""), ())

    ps = [pair("a", "b"), pair("b", "c"), pair("c", "d")]
    gains = {"a": (Fraction(5), 0), "b": (Fraction(6), 0), "c": (Fraction(5), 0)}
    assert [(p.first, p.second) for p in choose(ps, gains)] == [("a", "b"), ("c", "d")]  # 10, not the greedy 6
    gains = {"a": None, "b": (Fraction(6), 0), "c": (Fraction(5), 0)}
    assert [(p.first, p.second) for p in choose(ps, gains)] == [("b", "c")]
    # two producers of one consumer (a matmul's two operands): one of them, the larger
    ps = [pair("x", "z"), pair("y", "z")]
    assert [p.first for p in choose(ps, {"x": (Fraction(1), 9), "y": (Fraction(1), 10)})] == ["y"]


@pytest.fixture(scope="module")
def mlp_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("chains")
    (out / "mlp.yaml").write_text(MLP)
    (out / "mlp-ln.yaml").write_text(MLP_LN)
    (out / "roomy.yaml").write_text(PROFILE.format(name="ROOMY", capacity=4096))  # fusion wins
    (out / "cramped.yaml").write_text(PROFILE.format(name="CRAMPED", capacity=1024))  # fusion loses
    profiles = [load_profile(str(out / "roomy.yaml")), load_profile(str(out / "cramped.yaml"))]
    model = load_model(str(out / "mlp.yaml"))
    fused = characterize(model, profiles, out / "fused", workers=1, time_limit=30)
    alone = characterize(model, profiles, out / "alone", workers=1, time_limit=30, chain_fusion=False)
    return out, profiles, fused, alone


def test_fusion_wins_where_the_intermediate_outgrows_the_cache(mlp_runs):
    out, profiles, fused, alone = mlp_runs
    roomy, cramped = fused.chains
    assert roomy["profile"] == "ROOMY" and roomy["fused"] and roomy["best"].startswith("fused at")
    assert roomy["replay"] == "ok" and roomy["schedule"]
    # the decision is the solver's figures: the chain beats the two layers solved alone, time then words
    assert (roomy["chain_clocks"], roomy["chain_words"]) < (roomy["separate_clocks"], roomy["separate_words"])
    assert roomy["saved_words"] == 2 * 16 * 256  # the intermediate no longer goes up and down
    t_fused, t_alone = fused.totals[0], alone.totals[0]
    assert t_fused["time_clocks"] == roomy["chain_clocks"] < t_alone["time_clocks"] == roomy["separate_clocks"]
    assert t_fused["words_total"] == roomy["chain_words"] < t_alone["words_total"]
    assert t_fused["energy_pj"] < t_alone["energy_pj"]
    assert t_fused["fused_pairs"] == 1 and t_fused["chain_saved_clocks"] == roomy["saved_clocks"]
    rows = {r["layer"]: r for r in fused.layers if r["profile"] == "ROOMY"}
    assert rows["fc1"]["fused_with"] == "fc2" and rows["fc2"]["fused_with"] == "fc1"
    assert rows["fc1"]["time_clocks"] == roomy["chain_clocks"] and rows["fc2"]["time_clocks"] == 0
    assert rows["fc1"]["separate_clocks"] + rows["fc2"]["separate_clocks"] == roomy["separate_clocks"]
    ours = [r for r in fused.layers if r["profile"] == "ROOMY"]
    assert t_fused["time_clocks"] == pytest.approx(sum(r["time_clocks"] for r in ours))
    assert t_fused["energy_pj"] == pytest.approx(sum(r["energy_pj"] for r in ours))
    assert sum(r["share"] for r in ours) == pytest.approx(1.0)


def test_no_fusion_where_it_does_not_pay(mlp_runs):
    _, _, fused, alone = mlp_runs
    cramped = fused.chains[1]
    assert cramped["profile"] == "CRAMPED" and not cramped["fused"] and cramped["best"] == "unfused"
    assert fused.totals[1]["time_clocks"] == alone.totals[1]["time_clocks"]
    assert fused.totals[1]["words_total"] == alone.totals[1]["words_total"]
    assert fused.totals[1]["fused_pairs"] == 0 and fused.totals[1]["chain_pairs"] == 1
    assert all(r["fused_with"] is None for r in fused.layers if r["profile"] == "CRAMPED")


def test_no_pair_across_a_layer_norm(mlp_runs):
    out, profiles, _, alone = mlp_runs
    ln = characterize(load_model(str(out / "mlp-ln.yaml")), profiles[:1], out / "ln", workers=1, time_limit=30)
    assert ln.chains == [] and ln.totals[0]["chain_pairs"] == 0
    assert all(r["fused_with"] is None for r in ln.layers)


def test_the_chosen_schedule_replays_and_a_rerun_uses_the_cache(mlp_runs, monkeypatch):
    out, profiles, fused, _ = mlp_runs
    from mapsearch.schedule.fused_json import load_fused
    from mapsearch.schedule.figures import differences
    from mapsearch.sim.replay import replay

    fs = load_fused(out / "fused" / fused.chains[0]["schedule"])
    assert differences(fs.predicted, replay(fs, mode="count").figures) == []
    assert replay(fs, mode="data").data_ok

    def no_solve(*a, **k):
        raise AssertionError("solved again")

    monkeypatch.setattr("mapsearch.characterize.run.solve_pair", no_solve)
    again = characterize(load_model(str(out / "mlp.yaml")), profiles, out / "fused", workers=1, time_limit=30)
    assert again.totals == fused.totals and again.chains == fused.chains


def test_cli_flag_and_files(mlp_runs, capsys):
    out, _, fused, _ = mlp_runs
    args = ["characterize", str(out / "mlp.yaml"), str(out / "roomy.yaml"), "--time-limit", "30", "-q", "--no-plot"]
    assert main(args + ["--out", str(out / "fused")]) == 0
    text = capsys.readouterr().out
    assert "chain fusion" in text
    assert "FUSED" in text and "fc1 (figures there)" in text
    assert json.loads((out / "fused" / "chains.json").read_text())[0]["fused"] is True
    assert (out / "fused" / "chains.csv").read_text().startswith("model,profile,first,second,")
    assert main(args + ["--out", str(out / "cli-alone"), "--no-chain-fusion"]) == 0
    text = capsys.readouterr().out
    assert "chain fusion" not in text
    totals = json.loads((out / "cli-alone" / "totals.json").read_text())
    assert totals[0]["fused_pairs"] == 0 and totals[0]["time_clocks"] > fused.totals[0]["time_clocks"]


def test_a_replay_mismatch_keeps_the_layers_apart(mlp_runs, monkeypatch, tmp_path):
    out, profiles, _, _ = mlp_runs
    monkeypatch.setattr(chains_mod, "_replay", lambda schedules, mode="count": "MISMATCH: time: predicted 1, replayed 2")
    c = characterize(load_model(str(out / "mlp.yaml")), profiles[:1], tmp_path, workers=1, time_limit=30)
    (d,) = c.chains
    assert not d["fused"] and "does not replay" in d["decision"]


def test_a_chain_that_does_not_beat_the_layers_is_not_replayed(mlp_runs, monkeypatch):
    """The pair's replay checks a schedule only where it could be fused: with the layers' own figures better
    than anything (0 clocks, 0 words) the chain's best option is never replayed; with none given, it is."""
    out, profiles, _, _ = mlp_runs
    model = load_model(str(out / "mlp.yaml"))
    (pair,) = find_pairs(model.nodes, lower_all(model.nodes))
    replayed = []
    monkeypatch.setattr(chains_mod, "_replay", lambda schedules, mode="count": replayed.append(schedules) or "ok")
    rec = chains_mod.solve_pair(pair, profiles[0], 30, separate=(Fraction(0), 0))
    assert rec["best"].startswith("fused at") and rec["replay"] is None and replayed == []
    rec = chains_mod.solve_pair(pair, profiles[0], 30)
    assert rec["replay"] == "ok" and len(replayed) == 1
