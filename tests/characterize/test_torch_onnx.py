"""MACs per layer equal PyTorch's FlopCounterMode; ONNX and PyTorch imports give the same layer table.

Skipped without torch (``pip install 'mapsearch[torch]'``) or onnx.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mapsearch.characterize import examples  # noqa: E402
from mapsearch.characterize.fusion import lower_all  # noqa: E402
from mapsearch.characterize.models import load_model  # noqa: E402


def _flop_counts(factory):
    from torch.utils.flop_counter import FlopCounterMode

    model, shapes = factory()  # real CPU tensors: tiny, random init, nothing downloaded
    model.eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(*(torch.zeros(*s) for s in shapes))
    return {k: {str(op): v for op, v in d.items()} for k, d in counter.get_flop_counts().items()}


def _layers(spec):
    return [l for l in lower_all(load_model(f"mapsearch.characterize.examples:{spec}").nodes) if l.einsum]


def _module_flops(counts, root, name):
    return sum(counts.get(f"{root}.{name}", {}).values())


def test_tiny_convnet_macs_per_layer_equal_flop_counter():
    counts = _flop_counts(examples.tiny_convnet)
    layers = _layers("tiny_convnet")
    assert [l.op for l in layers] == ["conv", "conv", "linear", "linear"]
    for layer in layers:
        assert 2 * layer.macs == _module_flops(counts, "Sequential", layer.name), layer.name
    assert 2 * sum(l.macs for l in layers) == sum(counts["Global"].values())


def test_tiny_transformer_block_macs_equal_flop_counter_including_attention():
    counts = _flop_counts(examples.tiny_transformer_block)
    layers = _layers("tiny_transformer_block")
    linears = [l for l in layers if l.op == "linear"]
    matmuls = [l for l in layers if l.op == "matmul"]
    assert {l.name for l in linears} == {"q", "k", "v", "o", "up", "down"}
    for layer in linears:
        assert 2 * layer.macs == _module_flops(counts, "Block", layer.name), layer.name
    # QK^T and AV: batched over the 4 heads, 16 x 16 x 16 each; FlopCounterMode counts them as bmm
    assert len(matmuls) == 2 and all(l.macs == 4 * 16 * 16 * 16 for l in matmuls)
    bmm = sum(v for k, v in counts["Global"].items() if "bmm" in k)
    assert bmm == 2 * sum(l.macs for l in matmuls) > 0
    assert 2 * sum(l.macs for l in layers) == sum(counts["Global"].values())


def test_scaled_dot_product_attention_becomes_qk_and_av():
    from torch import nn

    class Attn(nn.Module):
        def forward(self, q, k, v):
            return nn.functional.scaled_dot_product_attention(q, k, v)

    from mapsearch.characterize.torch_import import nodes_from_module

    layers = lower_all(nodes_from_module(Attn(), [(1, 2, 8, 4)] * 3))
    ops = [(l.op, l.pattern, l.fused_into) for l in layers]
    assert ops[0] == ("matmul", "matmul+scale", None) and ops[1][2] is not None and ops[2][0] == "softmax"
    assert [l.macs for l in layers if l.einsum] == [2 * 8 * 8 * 4, 2 * 8 * 4 * 8]


def test_onnx_and_pytorch_imports_give_the_same_layer_table(tmp_path):
    pytest.importorskip("onnx")
    model, shapes = examples.tiny_mlp_convnet()
    path = tmp_path / "tiny.onnx"
    try:
        torch.onnx.export(model.eval(), tuple(torch.zeros(*s) for s in shapes), str(path), dynamo=False)
    except Exception as e:  # pragma: no cover - an exporter that needs onnxscript or is gone
        pytest.skip(f"torch.onnx.export unavailable here: {type(e).__name__}: {e}")
    from_onnx = lower_all(load_model(str(path)).nodes)
    from_torch = lower_all(load_model("mapsearch.characterize.examples:tiny_mlp_convnet").nodes)
    assert [l.signature() for l in from_onnx] == [l.signature() for l in from_torch]
    assert sum(1 for l in from_onnx if l.einsum) == 4
