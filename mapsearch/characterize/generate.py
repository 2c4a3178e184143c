"""Generate the built-in layer tables in ``models/*.yaml`` (shapes as data, no weights).

    python -m mapsearch.characterize.generate        # rewrites models/*.yaml

The tables are checked in; this script is how they were written, so that a
reader can see every shape's derivation. ``tests/characterize`` checks that
the files equal this script's output and that ResNet-50's and BERT-base's
einsum layers equal ``benchmarks/suites/resnet50_conv.yaml`` and
``bert_base_gemm.yaml`` (the sequence-128 half).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

MODEL_DIR = Path(__file__).resolve().parent / "models"


class Builder:
    """Appends nodes; each helper returns the output (name, shape)."""

    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []

    def add(self, name: str, op: str, srcs: list[tuple[str, tuple]], out: tuple, **attrs: Any) -> tuple[str, tuple]:
        node: dict[str, Any] = {"name": name, "op": op, "in": [list(s) for _, s in srcs], "out": list(out)}
        if attrs:
            node["attrs"] = attrs
        node["from"] = [n for n, _ in srcs]
        self.nodes.append(node)
        return name, out

    def conv(self, name, x, cout, k, stride=1, pad=0, groups=1):
        n, c, h, w = x[1]
        ho, wo = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        attrs = {"kernel": [k, k], "stride": [stride, stride], "pad": [pad, pad]}
        if groups != 1:
            attrs["groups"] = groups
        return self.add(name, "conv", [x], (n, cout, ho, wo), **attrs)

    def unary(self, name, op, x, **attrs):
        return self.add(name, op, [x], x[1], **attrs)

    def binary(self, name, op, x, y):
        return self.add(name, op, [x, y], x[1])

    def pool(self, name, op, x, k, stride, pad=0):
        n, c, h, w = x[1]
        return self.add(name, op, [x], (n, c, (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1),
                        kernel=[k, k], stride=[stride, stride], pad=[pad, pad])

    def gap(self, name, x):
        n, c, _, _ = x[1]
        return self.add(name, "avgpool", [x], (n, c, 1, 1), kernel="global")

    def view(self, name, x, shape):
        return self.add(name, "view", [x], tuple(shape))

    def linear(self, name, x, nout):
        return self.add(name, "linear", [x], tuple(x[1][:-1]) + (nout,))

    def matmul(self, name, a, b):
        return self.add(name, "matmul", [a, b], tuple(a[1][:-1]) + (b[1][-1],))


def mlp() -> Builder:
    b = Builder()
    x = ("", (64, 784))
    for i, width in enumerate([512, 512]):
        x = b.linear(f"fc{i + 1}", x, width)
        x = b.unary(f"relu{i + 1}", "relu", x)
    b.linear("fc3", x, 10)
    return b


def conv_stack() -> Builder:
    b = Builder()
    x = ("", (1, 3, 32, 32))
    for i, c in enumerate([32, 64, 64]):
        x = b.conv(f"conv{i + 1}", x, c, 3, 1, 1)
        x = b.unary(f"bn{i + 1}", "batchnorm", x)
        x = b.unary(f"relu{i + 1}", "relu", x)
        if i < 2:
            x = b.pool(f"pool{i + 1}", "maxpool", x, 2, 2)
    x = b.gap("avgpool", x)
    x = b.view("flatten", x, (1, 64))
    b.linear("fc", x, 10)
    return b


def resnet(blocks: list[int], bottleneck: bool) -> Builder:
    """torchvision's ResNet (v1.5: the stride on the 3x3 conv), batch 1, 224x224."""
    b = Builder()
    x = ("", (1, 3, 224, 224))
    x = b.conv("conv1", x, 64, 7, 2, 3)
    x = b.unary("bn1", "batchnorm", x)
    x = b.unary("relu", "relu", x)
    x = b.pool("maxpool", "maxpool", x, 3, 2, 1)
    cin = 64
    for stage, (count, width) in enumerate(zip(blocks, [64, 128, 256, 512])):
        for i in range(count):
            p = f"layer{stage + 1}.{i}"
            stride = 2 if stage > 0 and i == 0 else 1
            cout = width * 4 if bottleneck else width
            identity = x
            if bottleneck:
                y = b.conv(f"{p}.conv1", x, width, 1)
                y = b.unary(f"{p}.bn1", "batchnorm", y)
                y = b.unary(f"{p}.relu1", "relu", y)
                y = b.conv(f"{p}.conv2", y, width, 3, stride, 1)
                y = b.unary(f"{p}.bn2", "batchnorm", y)
                y = b.unary(f"{p}.relu2", "relu", y)
                y = b.conv(f"{p}.conv3", y, cout, 1)
                y = b.unary(f"{p}.bn3", "batchnorm", y)
            else:
                y = b.conv(f"{p}.conv1", x, width, 3, stride, 1)
                y = b.unary(f"{p}.bn1", "batchnorm", y)
                y = b.unary(f"{p}.relu1", "relu", y)
                y = b.conv(f"{p}.conv2", y, width, 3, 1, 1)
                y = b.unary(f"{p}.bn2", "batchnorm", y)
            if stride != 1 or cin != cout:
                identity = b.conv(f"{p}.downsample.0", x, cout, 1, stride)
                identity = b.unary(f"{p}.downsample.1", "batchnorm", identity)
            y = b.binary(f"{p}.add", "add", y, identity)
            x = b.unary(f"{p}.relu", "relu", y)
            cin = cout
    x = b.gap("avgpool", x)
    x = b.view("flatten", x, (1, cin))
    b.linear("fc", x, 1000)
    return b


def encoder_layer(b: Builder, p: str, x, heads: int, seq: int, hidden: int, ffn: int, act: str,
                  fused_qkv: bool, pre_norm: bool, mask: bool):
    """One transformer layer; attention per head as batched matmuls QK^T and AV over the heads."""
    d = hidden // heads
    inp = x
    if pre_norm:
        x = b.unary(f"{p}.ln_1", "layernorm", x)
    if fused_qkv:
        qkv = b.linear(f"{p}.attn.c_attn", x, 3 * hidden)
        q = b.view(f"{p}.attn.q", qkv, (1, heads, seq, d))
        k = b.view(f"{p}.attn.kT", qkv, (1, heads, d, seq))
        v = b.view(f"{p}.attn.v", qkv, (1, heads, seq, d))
    else:
        q = b.view(f"{p}.attention.q_heads", b.linear(f"{p}.attention.query", x, hidden), (1, heads, seq, d))
        k = b.view(f"{p}.attention.kT_heads", b.linear(f"{p}.attention.key", x, hidden), (1, heads, d, seq))
        v = b.view(f"{p}.attention.v_heads", b.linear(f"{p}.attention.value", x, hidden), (1, heads, seq, d))
    s = b.matmul(f"{p}.attention.qk", q, k)
    s = b.unary(f"{p}.attention.scale", "scale", s)
    if mask:
        s = b.unary(f"{p}.attention.mask", "where", s)
    s = b.unary(f"{p}.attention.softmax", "softmax", s)
    c = b.matmul(f"{p}.attention.av", s, v)
    c = b.view(f"{p}.attention.merge_heads", c, (1, seq, hidden))
    o = b.linear(f"{p}.attention.output.dense", c, hidden)
    x = b.binary(f"{p}.attention.add", "add", o, inp)
    if not pre_norm:
        x = b.unary(f"{p}.attention.output.LayerNorm", "layernorm", x)
    inp = x
    if pre_norm:
        x = b.unary(f"{p}.ln_2", "layernorm", x)
    h = b.linear(f"{p}.intermediate.dense", x, ffn)
    h = b.unary(f"{p}.intermediate.act", act, h)
    o = b.linear(f"{p}.output.dense", h, hidden)
    x = b.binary(f"{p}.output.add", "add", o, inp)
    if not pre_norm:
        x = b.unary(f"{p}.output.LayerNorm", "layernorm", x)
    return x


def bert_base(seq: int = 128) -> Builder:
    """BERT-base (Devlin et al. 2019): 12 layers, hidden 768, 12 heads, FFN 3072; batch 1."""
    b = Builder()
    x = b.add("embeddings", "embedding", [("", (1, seq))], (1, seq, 768))
    x = b.unary("embeddings.LayerNorm", "layernorm", x)
    for i in range(12):
        x = encoder_layer(b, f"encoder.layer.{i}", x, 12, seq, 768, 3072, "gelu", False, False, False)
    first = b.view("pooler.first_token", x, (1, 768))
    p = b.linear("pooler.dense", first, 768)
    b.unary("pooler.activation", "tanh", p)
    return b


def gpt2_small(seq: int = 128) -> Builder:
    """GPT-2 small (Radford et al. 2019): 12 layers, 768, 12 heads, pre-norm, causal mask, tied lm_head; batch 1."""
    b = Builder()
    x = b.add("wte+wpe", "embedding", [("", (1, seq))], (1, seq, 768))
    for i in range(12):
        x = encoder_layer(b, f"h.{i}", x, 12, seq, 768, 3072, "gelu", True, True, True)
    x = b.unary("ln_f", "layernorm", x)
    b.linear("lm_head", x, 50257)
    return b


MODELS = {
    "mlp": (mlp, "3-layer MLP, 784-512-512-10, batch 64"),
    "conv-stack": (conv_stack, "3 conv3x3+BN+ReLU layers (3-32-64-64) on 32x32, max pools, global pool, FC; batch 1"),
    "resnet18": (lambda: resnet([2, 2, 2, 2], False), "ResNet-18 (He et al. 2016, torchvision), batch 1, 224x224"),
    "resnet50": (lambda: resnet([3, 4, 6, 3], True), "ResNet-50 v1.5 (He et al. 2016, torchvision), batch 1, 224x224"),
    "bert-base": (bert_base, "BERT-base encoder (Devlin et al. 2019), batch 1, sequence 128, pooler"),
    "gpt2-small": (gpt2_small, "GPT-2 small (Radford et al. 2019), batch 1, 128-token prefill, tied lm_head"),
}


def model_text(name: str) -> str:
    import json

    fn, description = MODELS[name]
    lines = [f"# {description}.", "# Generated by `python -m mapsearch.characterize.generate`; shapes only, no weights.",
             "# A node: op, activation input shapes (in), output shape (out), attributes, producers (from;",
             '# "" is a model input). Weights are implied by the op and shapes.',
             f"name: {name}", f"description: {json.dumps(description)}", "nodes:"]
    for node in fn().nodes:
        lines.append("  - " + json.dumps(node, separators=(", ", ": ")))
    return "\n".join(lines) + "\n"


def main() -> None:
    MODEL_DIR.mkdir(exist_ok=True)
    for name in MODELS:
        (MODEL_DIR / f"{name}.yaml").write_text(model_text(name))
        print(f"wrote {MODEL_DIR / (name + '.yaml')}")


if __name__ == "__main__":
    main()
