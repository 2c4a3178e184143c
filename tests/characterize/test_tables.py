"""Built-in layer tables, lowering, fused patterns, dedupe, profiles (no solver, no torch)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from mapsearch.characterize.fusion import default_registry, fuse
from mapsearch.characterize.generate import MODELS, model_text
from mapsearch.characterize.fusion import lower_all
from mapsearch.characterize.graph import Node, lower
from mapsearch.characterize.models import MODEL_DIR, builtin_names, load_model
from mapsearch.characterize.profiles import load_profile, profile_names
from mapsearch.characterize.run import layer_cases
from mapsearch.spec.workload import Workload

SUITES = Path(__file__).resolve().parents[2] / "benchmarks" / "suites"


def _einsums(name):
    return [l for l in lower_all(load_model(name).nodes) if l.einsum]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_checked_in_tables_equal_the_generator(name):
    assert (MODEL_DIR / f"{name}.yaml").read_text() == model_text(name)


def test_builtin_names():
    assert set(builtin_names()) == {"mlp", "conv-stack", "resnet18", "resnet50", "bert-base", "gpt2-small"}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_einsum_parses_and_its_macs_are_the_product_of_extents(name):
    for layer in _einsums(name):
        w = Workload.from_text(layer.name, layer.einsum, layer.extents)
        assert w.macs == layer.macs


def _stride(text):
    m = re.search(r"p\*(\d+)", text)
    return int(m.group(1)) if m else 1


def test_resnet50_convs_equal_the_benchmark_suite():
    suite = yaml.safe_load((SUITES / "resnet50_conv.yaml").read_text())["layers"]
    want = Counter()
    for l in suite:
        e = l["extents"]
        want[(e["k"], e["c"], e["p"], e["q"], e.get("r", 1), e.get("s", 1), _stride(l["einsum"]))] += l["count"]
    got = Counter()
    for l in _einsums("resnet50"):
        if l.op == "conv":
            e = l.extents
            got[(e["n"], e["k"], e["p"], e["m"], e.get("r", 1), e.get("s", 1), _stride(l.einsum))] += 1
    assert got == want
    assert sum(l.macs for l in _einsums("resnet50")) == 4_089_184_256  # 4.09 GMACs incl. the FC layer


def test_bert_base_macs_equal_the_benchmark_suite_at_sequence_128():
    suite = yaml.safe_load((SUITES / "bert_base_gemm.yaml").read_text())["layers"]
    want = sum(l["count"] * l["extents"]["m" if "m" in l["extents"] else "h"] *
               (l["extents"]["k"] * l["extents"]["n"] if "m" in l["extents"] else
                l["extents"]["i"] * l["extents"]["j"] * l["extents"]["d"])
               for l in suite if l["name"].startswith("s128"))
    layers = _einsums("bert-base")
    pooler = 768 * 768
    assert sum(l.macs for l in layers) - pooler == want
    # the attention matmuls are there: QK^T and AV per head, 12 heads x 128 x 128 x 64 each, in all 12 layers
    attn = [l for l in layers if l.op == "matmul"]
    assert len(attn) == 24 and all(l.macs == 12 * 128 * 128 * 64 for l in attn)


def test_identical_shapes_are_solved_once():
    layers = lower_all(load_model("resnet50").nodes)
    profiles = [load_profile("kpu"), load_profile("cpu")]
    cases, index = layer_cases(layers, profiles, 5)
    assert len([l for l in layers if l.einsum]) == 54
    assert len(cases) == 2 * 24
    # every layer of one shape maps to one case; the case id does not depend on the layer's name
    keys = {l.shape_key() for l in layers if l.einsum}
    assert {index[("KPU", k)].case_id for k in keys} == {c.case_id for c in cases if c.architecture == "kpu-wavefront"}


def test_conv_lowering_strides_groups_and_padding():
    n = Node("c", "conv", [(1, 32, 57, 57)], (1, 64, 28, 28), {"kernel": [3, 3], "stride": [2, 2], "groups": 2})
    l = lower(n)
    assert l.einsum == "Y[g,n,p,m] += X[g,k,p*2+r,m*2+s] * W[g,n,k,r,s]"
    assert l.extents == {"g": 2, "n": 32, "k": 16, "p": 28, "m": 28, "r": 3, "s": 3}
    dw = lower(Node("d", "conv", [(1, 8, 10, 10)], (1, 8, 10, 10), {"kernel": [3, 3], "groups": 8}))
    assert dw.einsum == "Y[g,p,m] += X[g,p+r,m+s] * W[g,r,s]"


def test_views_cost_nothing_and_bandwidth_steps_read_and_write_once():
    assert lower(Node("v", "reshape", [(2, 3)], (6,))) is None
    add = lower(Node("a", "add", [(1, 4, 5), (1, 4, 5)], (1, 4, 5)))
    assert (add.kind, add.read_words, add.write_words) == ("elementwise", 40, 20)


def test_fused_patterns_are_recorded_and_add_no_traffic():
    layers = {l.name: l for l in lower_all(load_model("resnet50").nodes)}
    assert layers["conv1"].pattern == "conv+bn+relu" and layers["conv1"].epilogues == ["bn1", "relu"]
    assert layers["bn1"].fused_into == "conv1" and layers["bn1"].words == 0
    assert layers["layer1.0.conv3"].pattern == "conv+bn"  # its output meets the residual add
    assert layers["layer1.0.add"].pattern == "add+relu" and layers["layer1.0.add"].words > 0
    bert = {l.name: l for l in lower_all(load_model("bert-base").nodes)}
    assert bert["encoder.layer.0.attention.qk"].pattern == "matmul+scale"
    assert bert["encoder.layer.0.intermediate.dense"].pattern == "linear+activation"
    assert bert["encoder.layer.0.attention.softmax"].fused_into is None


def test_the_fusion_decider_hook():
    nodes = load_model("conv-stack").nodes
    seen = []

    def never(producer, epilogue, pattern):
        seen.append((producer.name, pattern))
        return False

    layers = fuse(nodes, default_registry(), never)
    assert ("conv1", "conv+bn+relu") in seen
    assert all(l.fused_into is None for l in layers)
    assert sum(l.words for l in layers) > sum(l.words for l in lower_all(nodes))


@pytest.mark.parametrize("name", ["cpu", "gpu", "tpu", "kpu", "cpu-quick", "gpu-quick", "tpu-quick", "kpu-quick"])
def test_profiles(name):
    p = load_profile(name)
    assert set(p.links) <= set(p.link_energy_pj) and p.mac_energy_pj > 0 and p.citations
    assert p.peak_macs_per_clock > 0 and p.clock_hz > 0
    assert name in profile_names()


def test_kpu_working_set_fits_in_64_MB():
    p = load_profile("kpu")
    tile = p.architecture["levels"][1]
    assert tile["capacity"] * p.word_bytes == 64 * 2**20
