"""Read an ONNX model into :class:`~mapsearch.characterize.graph.Node` s, shapes by ONNX shape inference.

Needs ``pip install 'mapsearch[onnx]'``. Initializers and ``Constant``
outputs are weights or numbers, not activations. Recognised: ``Conv``,
``Gemm``, ``MatMul`` (a weight operand makes it a linear layer, and a
following ``Add`` of a weight is folded in as its bias, as ``nn.Linear``
has it), elementwise and activation ops, ``BatchNormalization``,
``LayerNormalization``, pools, ``Softmax``; shape plumbing (``Reshape``,
``Flatten``, ``Transpose``, ``Shape``, ``Gather`` of shapes, ``Identity``,
``Dropout``, ``Cast``, ...) costs nothing. Every activation must have an
inferred static shape.

Weights are never read: the model is loaded with ``load_external_data=False``
(as ZigZag does), so a model whose weights live in external files that are
not there (ZigZag's ``resnet18.onnx``, ``mobilenetv2.onnx``) loads; weight
shapes come from the initializers' ``dims``.

``LRN`` (local response normalisation, AlexNet's) is not an einsum: each
output is ``x / (bias + alpha/size * sum of x^2 over size nearby channels)^beta``,
a windowed sum of squares followed by a power and a division. It is kept as
a bandwidth-only normalisation step (op ``lrn``: it reads its input and
writes its output once, like ``batchnorm``), and a note is logged, so the
model's convolutions and GEMMs are characterised and the LRN's traffic
still counts.
"""

from __future__ import annotations

import logging
from pathlib import Path

from mapsearch.characterize.graph import Model, Node
from mapsearch.errors import MapsearchError

__all__ = ["load_onnx", "nodes_from_onnx"]

log = logging.getLogger(__name__)

_OPS = {
    "Relu": "relu", "Gelu": "gelu", "Sigmoid": "sigmoid", "Tanh": "tanh", "LeakyRelu": "leaky_relu", "Elu": "elu",
    "HardSwish": "hardswish", "Clip": "relu6", "Softmax": "softmax", "BatchNormalization": "batchnorm",
    "LayerNormalization": "layernorm", "GroupNormalization": "groupnorm", "MaxPool": "maxpool",
    "AveragePool": "avgpool", "GlobalAveragePool": "avgpool", "GlobalMaxPool": "maxpool", "ReduceMean": "reduce",
    "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "Sqrt": "sqrt", "Erf": "gelu",
    "Where": "where", "Concat": "concat", "Exp": "pow", "Gather": "embedding", "LRN": "lrn",
}
# Ops that are not einsums but are kept as bandwidth-only steps, with why (logged once per model).
_NOT_EINSUM = {
    "LRN": "LRN (local response normalisation) is not an einsum (a windowed sum of squares, then a power and a "
           "division); kept as a bandwidth-only normalisation step (reads its input, writes its output once)",
}
_VIEWS = {"Reshape", "Flatten", "Transpose", "Identity", "Dropout", "Squeeze", "Unsqueeze", "Shape", "Cast",
          "Constant", "ConstantOfShape", "Slice", "Expand", "Split"}


def load_onnx(path: str | Path) -> Model:
    try:
        import onnx
    except ImportError as e:
        raise MapsearchError("an ONNX model needs onnx: pip install 'mapsearch[onnx]'") from e
    # Shapes come from the graph and the initializers' dims: weights, often in external files, are never needed.
    model = onnx.load(str(path), load_external_data=False)
    return Model(Path(path).stem, nodes_from_onnx(model), str(path), f"ONNX {path}")


def nodes_from_onnx(model) -> list[Node]:
    import onnx
    from onnx import shape_inference

    inferred = shape_inference.infer_shapes(model, strict_mode=False)
    g = inferred.graph
    shapes: dict[str, tuple[int, ...]] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        if t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            shapes[vi.name] = tuple(int(d.dim_value) for d in t.shape.dim)
    weights = {i.name: tuple(i.dims) for i in g.initializer}
    consts: set[str] = set(weights)
    alias: dict[str, str] = {i.name: "" for i in g.input}  # tensor -> the Node that produced it ("" = model input)
    nodes: list[Node] = []
    noted: set[str] = set()
    readers: dict[str, int] = {}
    for n in g.node:
        for i in n.input:
            readers[i] = readers.get(i, 0) + 1

    def is_act(name: str) -> bool:
        return bool(name) and name not in consts and name in alias

    def attr(n, key, default):
        for a in n.attribute:
            if a.name == key:
                return list(a.ints) if a.ints else (a.i if a.type == onnx.AttributeProto.INT else a.f)
        return default

    def out_shape(n) -> tuple[int, ...]:
        s = shapes.get(n.output[0])
        if s is None:
            raise MapsearchError(f"ONNX node {n.name or n.op_type}: output {n.output[0]!r} has no inferred static shape")
        return s

    for idx, n in enumerate(g.node):
        name = n.name or f"{n.op_type}_{idx}"
        ins = [i for i in n.input if is_act(i)]
        if n.op_type in _VIEWS or (n.op_type == "Gather" and not any(i in alias and alias.get(i) is not None and shapes.get(i) and len(shapes[i]) > 1 for i in ins)):
            if n.op_type in ("Constant", "Shape", "ConstantOfShape") or not ins:
                consts.update(n.output)
            else:
                for o in n.output:
                    alias[o] = alias[ins[0]]
            continue
        if not ins:  # computed from weights and numbers only
            consts.update(n.output)
            continue
        srcs = [alias[i] for i in ins]
        in_shapes = [shapes[i] for i in ins]
        op = None
        attrs: dict = {}
        if n.op_type == "Conv":
            w = weights.get(n.input[1]) or shapes.get(n.input[1])
            attrs = {"kernel": list(attr(n, "kernel_shape", list(w[2:]))), "stride": list(attr(n, "strides", [1, 1])),
                     "dilation": list(attr(n, "dilations", [1, 1])), "groups": int(attr(n, "group", 1))}
            op, ins, in_shapes, srcs = "conv", ins[:1], in_shapes[:1], srcs[:1]
        elif n.op_type == "Gemm":
            op = "linear"
        elif n.op_type == "MatMul":
            op = "linear" if len(ins) == 1 else "matmul"
        elif n.op_type in ("Add", "Sub") and len(ins) == 1:
            producer = nodes[-1] if nodes and nodes[-1].name == srcs[0] else None
            if producer is not None and producer.op == "linear" and readers.get(ins[0], 0) == 1:
                alias[n.output[0]] = producer.name  # the bias of the linear layer before it
                continue
            op = "bias"
        elif n.op_type in ("Mul", "Div") and len(ins) == 1:
            op = "scale"
        elif n.op_type in _OPS:
            op = _OPS[n.op_type]
            if n.op_type in _NOT_EINSUM and n.op_type not in noted:
                noted.add(n.op_type)
                log.warning("ONNX node %s: %s", name, _NOT_EINSUM[n.op_type])
        else:
            raise MapsearchError(f"ONNX node {name}: op {n.op_type} is not supported")
        nodes.append(Node(name, op, in_shapes, out_shape(n), attrs, srcs))
        for o in n.output[:1]:
            alias[o] = name
        for o in n.output[1:]:
            consts.add(o)
    return nodes
