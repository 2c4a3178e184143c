"""The layer graph every front end produces, and its lowering to einsums and bandwidth-only steps.

A model, whatever it came from (a built-in YAML table, an ONNX file, a traced
PyTorch module), is a list of :class:`Node` s in execution order: an
operation (``conv``, ``linear``, ``matmul``, ``relu``, ``batchnorm``, ...),
the shapes of its activation inputs and of its output, a few attributes and
the names of the nodes it reads. Weights are not inputs: a convolution or a
linear layer knows its weight shape from its attributes, so no weights are
ever needed.

:func:`lower` turns one node into a :class:`Layer`:

- ``conv``, ``linear``, ``matmul`` become an **einsum** with extents. Dimension
  names follow the implicit-GEMM roles, so that block ops of the presets
  (``{n: 8}``, ``{m, n, k}``) apply: ``m`` output columns / rows of the
  GEMM, ``n`` output channels / features, ``k`` the reduction over input
  channels / features; ``b`` batch, ``h`` a batch of matmuls (heads), ``p``
  output rows, ``r, s`` the filter window, ``g`` groups. A strided or
  dilated convolution reads ``X[k, p*S+r*D, m*S+s*D]`` (affine indices).
  Dimensions of extent 1 are left out (a batch of 1 has no ``b``); the
  layer also keeps the einsum with ``m``, ``n``, ``k`` of extent 1 kept
  (``gemm_einsum``, where it differs: a GEMV at batch 1), which a profile
  whose op is given in GEMM roles solves when the plain one has no
  dimension for a role.
- ``view`` operations (reshape, flatten, transpose, dropout in eval,
  identity) cost nothing and are dropped.
- everything else (elementwise, activation, normalisation, pooling, softmax)
  is a **bandwidth-only step**: it reads its inputs and writes its output
  once over the top link, unless a fused pattern makes it an epilogue of its
  producer (:mod:`mapsearch.characterize.fusion`).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Sequence

from mapsearch.errors import MapsearchError

__all__ = ["Node", "Layer", "Model", "lower", "EINSUM_OPS", "VIEW_OPS", "BANDWIDTH_KINDS", "op_kind", "canonical_op"]

EINSUM_OPS = ("conv", "linear", "matmul")
VIEW_OPS = ("view",)

# canonical op -> bandwidth kind
_KINDS = {
    "relu": "activation", "gelu": "activation", "silu": "activation", "sigmoid": "activation", "tanh": "activation",
    "relu6": "activation", "hardswish": "activation", "leaky_relu": "activation", "elu": "activation",
    "add": "elementwise", "sub": "elementwise", "mul": "elementwise", "div": "elementwise", "scale": "elementwise",
    "bias": "elementwise", "where": "elementwise", "concat": "elementwise", "pow": "elementwise", "sqrt": "elementwise",
    "batchnorm": "normalisation", "layernorm": "normalisation", "groupnorm": "normalisation", "rmsnorm": "normalisation",
    "lrn": "normalisation",  # local response norm: x / (bias + alpha/size * sum of x^2 over nearby channels)^beta
    "maxpool": "pooling", "avgpool": "pooling", "reduce": "pooling",
    "softmax": "softmax", "embedding": "embedding",
}
BANDWIDTH_KINDS = tuple(sorted(set(_KINDS.values())))

# Aliases the front ends may use.
_ALIASES = {
    "batch_norm": "batchnorm", "bn": "batchnorm", "layer_norm": "layernorm", "ln": "layernorm",
    "group_norm": "groupnorm", "max_pool": "maxpool", "avg_pool": "avgpool", "adaptive_avg_pool": "avgpool",
    "global_avg_pool": "avgpool", "mean": "reduce", "gemm": "linear", "dense": "linear", "bmm": "matmul",
    "reshape": "view", "flatten": "view", "transpose": "view", "permute": "view", "dropout": "view",
    "identity": "view", "contiguous": "view", "hardtanh": "relu6", "swish": "silu", "truediv": "div",
}


def canonical_op(op: str) -> str:
    op = op.lower()
    return _ALIASES.get(op, op)


def known_ops() -> tuple[str, ...]:
    """Every op name a layer table may use (canonical names and their aliases)."""
    return tuple(sorted(set(EINSUM_OPS) | set(VIEW_OPS) | set(_KINDS) | set(_ALIASES)))


def op_kind(op: str) -> str:
    """``einsum``, ``view`` or a bandwidth kind (``activation``, ``elementwise``, ...)."""
    op = canonical_op(op)
    if op in EINSUM_OPS:
        return "einsum"
    if op in VIEW_OPS:
        return "view"
    return _KINDS.get(op, "elementwise")


@dataclass
class Node:
    """One operation of a model: op, activation input shapes, output shape, attributes, producers."""

    name: str
    op: str
    inputs: list[tuple[int, ...]]
    output: tuple[int, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    srcs: list[str] = field(default_factory=list)  # names of the nodes whose outputs it reads ("" = a model input)

    def __post_init__(self) -> None:
        self.op = canonical_op(self.op)
        self.inputs = [tuple(int(x) for x in s) for s in self.inputs]
        self.output = tuple(int(x) for x in self.output)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "op": self.op, "in": [list(s) for s in self.inputs],
                               "out": list(self.output)}
        if self.attrs:
            out["attrs"] = dict(self.attrs)
        if self.srcs:
            out["from"] = list(self.srcs)
        return out


@dataclass
class Layer:
    """A lowered node: an einsum to solve, a bandwidth-only step, or a fused epilogue."""

    name: str
    op: str
    kind: str  # "einsum" or a bandwidth kind
    einsum: str | None = None
    extents: dict[str, int] | None = None
    read_words: int = 0  # bandwidth-only steps: words read over the top link
    write_words: int = 0
    fused_into: str | None = None  # the producer this epilogue is applied in place to
    pattern: str | None = None  # on a producer: the fused pattern that matched; on an epilogue: the same
    epilogues: list[str] = field(default_factory=list)
    # The einsum with its GEMM dimensions (m, n, k) kept where their extent is 1, set only where that differs from
    # ``einsum`` (a GEMV: batch 1 leaves no m): an op given in GEMM roles needs a dimension per role, and runs
    # padded on a unit one, as the hardware does.
    gemm_einsum: str | None = None
    gemm_extents: dict[str, int] | None = None

    @property
    def macs(self) -> int:
        return math.prod(self.extents.values()) if self.extents else 0

    @property
    def words(self) -> int:
        return self.read_words + self.write_words

    def shape_key(self) -> str | None:
        """The dedupe key of an einsum layer: a hash of its einsum text and extents (not its name)."""
        if self.einsum is None:
            return None
        text = self.einsum + "|" + ",".join(f"{d}={e}" for d, e in sorted(self.extents.items()))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def signature(self) -> tuple:
        """What makes two layer tables equal regardless of names: kind, einsum, extents, words, fused."""
        if self.einsum is not None:
            return ("einsum", self.op, self.einsum, tuple(sorted(self.extents.items())), self.pattern)
        return (self.kind, self.op, self.read_words, self.write_words, self.fused_into is not None)


# --------------------------------------------------------------------------
# Einsum text from index lists, leaving out extent-1 dimensions.
# --------------------------------------------------------------------------


GEMM_DIMS = ("m", "n", "k")  # the lowered names of the implicit-GEMM roles


def _index_text(terms: Sequence[tuple[str, int]], extents: Mapping[str, int], keep: Collection[str]) -> str | None:
    kept = [(d, c) for d, c in terms if extents[d] > 1 or d in keep]
    if not kept:
        return None
    return "+".join(d if c == 1 else f"{d}*{c}" for d, c in kept)


Access = tuple[str, list]  # a tensor and its index terms: each a dim or a list of (dim, coefficient)
Lowered = tuple[Access, list[Access], dict[str, int]]  # output, inputs, extents


def _einsum(out: Access, ins: list[Access], extents: dict[str, int],
            keep: Collection[str] = ()) -> tuple[str, dict[str, int]]:
    """``(text, extents)`` without the dimensions of extent 1, except those in ``keep``."""

    def access(name: str, indices: list) -> str:
        parts = []
        for ix in indices:
            terms = [(ix, 1)] if isinstance(ix, str) else ix
            t = _index_text(terms, extents, keep)
            if t is not None:
                parts.append(t)
        return f"{name}[{','.join(parts)}]"

    used = {d for d, e in extents.items() if e > 1 or d in keep}
    if not used:  # a 1x1x1 product: keep one dim so the einsum is well formed
        first = next(iter(extents))
        extents = {**extents, first: 1}
        used = {first}
        return f"{out[0]}[{first}] += " + " * ".join(f"{n}[{first}]" for n, _ in ins), {first: 1}
    text = f"{access(*out)} += " + " * ".join(access(n, ix) for n, ix in ins)
    return text, {d: e for d, e in extents.items() if d in used}


def _lower_conv(node: Node) -> Lowered:
    x = node.inputs[0]
    y = node.output
    if len(x) not in (3, 4) or len(y) != len(x):
        raise MapsearchError(f"{node.name}: conv: expected (N, C, H, W) or (N, C, L) shapes, got {x} -> {y}")
    one_d = len(x) == 3
    if one_d:
        x, y = (x[0], x[1], 1, x[2]), (y[0], y[1], 1, y[2])
    a = node.attrs
    kernel = list(a.get("kernel", [1, 1]))
    stride = list(a.get("stride", [1, 1]))
    dil = list(a.get("dilation", [1, 1]))
    if one_d:
        kernel, stride, dil = [1] + kernel[-1:], [1] + stride[-1:], [1] + dil[-1:]
    g = int(a.get("groups", 1))
    B, C, _, _ = x
    _, K, P, Q = y
    if C % g or K % g:
        raise MapsearchError(f"{node.name}: conv: {C} input and {K} output channels do not split into {g} groups")
    ext = {"b": B, "g": g, "n": K // g, "k": C // g, "p": P, "m": Q, "r": kernel[0], "s": kernel[1]}
    rows = [("p", stride[0]), ("r", dil[0])]
    cols = [("m", stride[1]), ("s", dil[1])]
    return (("Y", ["b", "g", "n", "p", "m"]), [("X", ["b", "g", "k", rows, cols]), ("W", ["g", "n", "k", "r", "s"])],
            ext)


def _lower_linear(node: Node) -> Lowered:
    x, y = node.inputs[0], node.output
    K, N = x[-1], y[-1]
    M = math.prod(x[:-1])
    return ("Y", ["m", "n"]), [("X", ["m", "k"]), ("W", ["k", "n"])], {"m": M, "k": K, "n": N}


def _lower_matmul(node: Node) -> Lowered:
    """A matmul of two activations ``A[..., M, K] @ B[..., K, N]``: a batch ``h`` of GEMMs (attention's QK^T, AV)."""
    if len(node.inputs) != 2:
        raise MapsearchError(f"{node.name}: matmul: expected two activation inputs, got {len(node.inputs)}")
    a, b = node.inputs
    y = node.output
    if len(a) < 2 or len(b) < 2:
        raise MapsearchError(f"{node.name}: matmul: expected inputs of rank >= 2, got {a} and {b}")
    M, K = a[-2], a[-1]
    N = b[-1]
    if b[-2] != K:
        raise MapsearchError(f"{node.name}: matmul: inner extents differ: {a} @ {b}")
    H = math.prod(y[:-2])
    return ("Y", ["h", "m", "n"]), [("A", ["h", "m", "k"]), ("B", ["h", "k", "n"])], {"h": H, "m": M, "k": K, "n": N}


def lower(node: Node) -> Layer | None:
    """The layer of one node; None for a view (no traffic, no work)."""
    kind = op_kind(node.op)
    if kind == "view":
        return None
    if kind == "einsum":
        lowered = {"conv": _lower_conv, "linear": _lower_linear, "matmul": _lower_matmul}[node.op](node)
        text, ext = _einsum(*lowered)
        gemm_text, gemm_ext = _einsum(*lowered, keep=GEMM_DIMS)
        if gemm_text == text:
            gemm_text, gemm_ext = None, None
        return Layer(node.name, node.op, "einsum", einsum=text, extents=ext, gemm_einsum=gemm_text,
                     gemm_extents=gemm_ext)
    reads = sum(math.prod(s) for s in node.inputs)
    return Layer(node.name, node.op, kind, read_words=reads, write_words=math.prod(node.output))


@dataclass
class Model:
    """A network as the front ends read it: its nodes in execution order (:mod:`mapsearch.characterize.models`)."""

    name: str
    nodes: list[Node]
    source: str
    description: str = ""
