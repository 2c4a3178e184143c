"""Trace a PyTorch module with torch.fx on meta tensors into :class:`~mapsearch.characterize.graph.Node` s.

``MODEL`` is ``package.module:callable``. The callable is called under
``torch.device("meta")`` (parameters are created without storage: no
weights, no download) and returns a module, or ``(module, inputs)`` where
inputs are tensors or shapes; without inputs, ``--input-shape`` gives them.
The module is moved to the meta device, put in eval mode, traced with
``torch.fx.symbolic_trace`` and its shapes propagated with
``torch.fx.passes.shape_prop.ShapeProp``.

Recognised: ``nn.Conv1d/2d``, ``nn.Linear``, norms, activations, pools,
dropout, flatten, softmax; ``F.conv2d``, ``F.linear``, ``torch.matmul`` /
``@`` / ``bmm`` (a parameter operand makes it a linear layer),
``F.scaled_dot_product_attention`` (QK^T, scale, softmax and AV), and
elementwise arithmetic (a multiplication or division by a number is a
``scale``, an addition of a parameter a ``bias``). Views (view, reshape,
transpose, permute, getitem, size) cost nothing.
"""

from __future__ import annotations

import importlib
from typing import Any, Sequence

from mapsearch.characterize.graph import Model, Node
from mapsearch.errors import MapsearchError

__all__ = ["load_torch", "nodes_from_module"]


def _torch():
    try:
        import torch
        import torch.fx  # noqa: F401
    except ImportError as e:
        raise MapsearchError("a PyTorch model needs torch: pip install 'mapsearch[torch]'") from e
    return torch


def load_torch(spec: str, input_shapes: Sequence[Sequence[int]] | None = None) -> Model:
    torch = _torch()
    module_name, _, attr = spec.partition(":")
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise MapsearchError(f"{spec}: cannot import {attr} from {module_name}: {e}") from e
    with torch.device("meta"):
        made = fn()
    module, inputs = made if isinstance(made, tuple) else (made, None)
    if input_shapes:
        inputs = [tuple(s) for s in input_shapes]
    if not inputs:
        raise MapsearchError(f"{spec}: no example inputs; return (module, inputs) or give --input-shape")
    return Model(attr, nodes_from_module(module, inputs), spec, f"traced from {spec}")


def _meta(x: Any, torch: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to("meta")
    return torch.empty(tuple(int(v) for v in x), device="meta")


def nodes_from_module(module: Any, inputs: Sequence[Any]) -> list[Node]:
    """Trace ``module`` on meta tensors of ``inputs`` (tensors or shapes)."""
    torch = _torch()
    from torch.fx.passes.shape_prop import ShapeProp

    module = module.to("meta").eval()
    args = [_meta(x, torch) for x in inputs]
    gm = torch.fx.symbolic_trace(module)
    ShapeProp(gm).propagate(*args)
    return _walk(gm, torch)


def _shape(n: Any) -> tuple[int, ...] | None:
    meta = n.meta.get("tensor_meta") if hasattr(n, "meta") else None
    if meta is None or not hasattr(meta, "shape"):
        return None
    return tuple(int(v) for v in meta.shape)


def _pair(v: Any) -> list[int]:
    return [int(v), int(v)] if isinstance(v, int) else [int(x) for x in v]


_MODULE_OPS = {
    "ReLU": "relu", "ReLU6": "relu6", "GELU": "gelu", "SiLU": "silu", "Sigmoid": "sigmoid", "Tanh": "tanh",
    "Hardswish": "hardswish", "LeakyReLU": "leaky_relu", "ELU": "elu", "Hardtanh": "relu6",
    "BatchNorm1d": "batchnorm", "BatchNorm2d": "batchnorm", "LayerNorm": "layernorm", "GroupNorm": "groupnorm",
    "RMSNorm": "rmsnorm", "MaxPool1d": "maxpool", "MaxPool2d": "maxpool", "AvgPool2d": "avgpool",
    "AdaptiveAvgPool2d": "avgpool", "AdaptiveAvgPool1d": "avgpool", "AdaptiveMaxPool2d": "maxpool",
    "Softmax": "softmax", "Dropout": "view", "Identity": "view", "Flatten": "view", "Embedding": "embedding",
}
_FN_OPS = {
    "relu": "relu", "relu6": "relu6", "gelu": "gelu", "silu": "silu", "sigmoid": "sigmoid", "tanh": "tanh",
    "hardswish": "hardswish", "leaky_relu": "leaky_relu", "elu": "elu", "softmax": "softmax",
    "layer_norm": "layernorm", "batch_norm": "batchnorm", "group_norm": "groupnorm", "rms_norm": "rmsnorm",
    "max_pool2d": "maxpool", "avg_pool2d": "avgpool", "adaptive_avg_pool2d": "avgpool", "dropout": "view",
    "flatten": "view", "reshape": "view", "view": "view", "transpose": "view", "permute": "view", "contiguous": "view",
    "getitem": "view", "getattr": "view", "size": "view", "unsqueeze": "view", "squeeze": "view", "expand": "view",
    "chunk": "view", "split": "view", "t": "view", "mean": "reduce", "sum": "reduce", "cat": "concat",
    "where": "where", "masked_fill": "where", "pow": "pow", "sqrt": "sqrt", "rsqrt": "sqrt", "exp": "pow",
    "add": "add", "iadd": "add", "sub": "sub", "mul": "mul", "imul": "mul", "truediv": "div", "div": "div",
    "matmul": "matmul", "bmm": "matmul", "mm": "matmul", "linear": "linear", "conv2d": "conv", "conv1d": "conv",
    "scaled_dot_product_attention": "sdpa", "embedding": "embedding", "type_as": "view", "to": "view",
}


def _fn_name(target: Any) -> str:
    if isinstance(target, str):
        return target
    name = getattr(target, "__name__", str(target))
    return name.strip("_")


def _walk(gm: Any, torch: Any) -> list[Node]:
    nodes: list[Node] = []
    params: set[str] = set()  # fx nodes that are parameters / buffers (get_attr)
    alias: dict[str, str] = {}  # fx node -> the Node whose output it is (through views)
    modules = dict(gm.named_modules())

    def src_of(n: Any) -> str:
        return alias.get(n.name, n.name)

    def acts(args: Sequence[Any]) -> list[Any]:
        out = []
        for a in args:
            if isinstance(a, (list, tuple)):
                out += acts(a)
            elif isinstance(a, torch.fx.Node) and a.name not in params and _shape(a) is not None:
                out.append(a)
        return out

    def emit(n: Any, op: str, ins: list[Any], attrs: dict | None = None, out: tuple | None = None) -> None:
        shape = out if out is not None else _shape(n)
        name = str(n.target) if n.op == "call_module" else n.name
        alias[n.name] = name
        nodes.append(Node(name, op, [_shape(a) for a in ins], shape, attrs or {}, [src_of(a) for a in ins]))

    for n in gm.graph.nodes:
        if n.op == "placeholder":
            alias[n.name] = ""
            continue
        if n.op == "get_attr":
            params.add(n.name)
            continue
        if n.op == "output":
            continue
        if n.op == "call_module":
            mod = modules[n.target]
            kind = type(mod).__name__
            ins = acts(n.args)
            if kind in ("Conv1d", "Conv2d"):
                emit(n, "conv", ins[:1], {"kernel": _pair(mod.kernel_size), "stride": _pair(mod.stride),
                                          "dilation": _pair(mod.dilation), "groups": int(mod.groups)})
            elif kind == "Linear":
                emit(n, "linear", ins[:1])
            elif kind in _MODULE_OPS:
                op = _MODULE_OPS[kind]
                if op == "view":
                    alias[n.name] = src_of(ins[0]) if ins else ""
                else:
                    emit(n, op, ins[:1] if op != "embedding" else ins)
            else:
                raise MapsearchError(f"{n.target}: {kind} is not supported by the tracer (a leaf module of torch.nn); "
                                     "write its computation with matmuls and functions, or wrap it")
            continue
        # call_function / call_method
        name = _fn_name(n.target)
        op = _FN_OPS.get(name)
        ins = acts(n.args) + acts(list(n.kwargs.values()))
        if op is None:
            raise MapsearchError(f"{n.name}: {name} is not supported by the tracer")
        if op == "view":
            alias[n.name] = src_of(ins[0]) if ins else ""
            if not ins:
                params.add(n.name) if any(isinstance(a, torch.fx.Node) and a.name in params for a in n.args) else None
            elif any(isinstance(a, torch.fx.Node) and a.name in params for a in n.args[:1]):
                params.add(n.name)
            continue
        if op == "matmul":
            pargs = [a for a in n.args if isinstance(a, torch.fx.Node) and a.name in params]
            if pargs and len(ins) == 1:
                emit(n, "linear", ins)
            else:
                emit(n, "matmul", ins)
        elif op == "linear":
            emit(n, "linear", ins[:1])
        elif op == "conv":
            stride = n.args[3] if len(n.args) > 3 else n.kwargs.get("stride", 1)
            dil = n.args[5] if len(n.args) > 5 else n.kwargs.get("dilation", 1)
            groups = n.args[6] if len(n.args) > 6 else n.kwargs.get("groups", 1)
            w = n.args[1]
            wshape = _shape(w) if isinstance(w, torch.fx.Node) else None
            kernel = list(wshape[2:]) if wshape else [1, 1]
            emit(n, "conv", ins[:1], {"kernel": kernel if len(kernel) == 2 else [1] + kernel, "stride": _pair(stride),
                                      "dilation": _pair(dil), "groups": int(groups)})
        elif op == "sdpa":
            q, k, v = ins[:3]
            qs, ks = _shape(q), _shape(k)
            scores = qs[:-1] + (ks[-2],)
            kt = ks[:-2] + (ks[-1], ks[-2])
            nodes.append(Node(f"{n.name}.qk", "matmul", [qs, kt], scores, {}, [src_of(q), src_of(k)]))
            nodes.append(Node(f"{n.name}.scale", "scale", [scores], scores, {}, [f"{n.name}.qk"]))
            nodes.append(Node(f"{n.name}.softmax", "softmax", [scores], scores, {}, [f"{n.name}.scale"]))
            nodes.append(Node(n.name, "matmul", [scores, _shape(v)], _shape(n), {}, [f"{n.name}.softmax", src_of(v)]))
        elif op in ("add", "sub", "mul", "div") and len(ins) == 1:
            others = [a for a in n.args if isinstance(a, torch.fx.Node) and a.name in params]
            emit(n, ("bias" if op in ("add", "sub") else "mul") if others else
                 ("scale" if op in ("mul", "div") else "add"), ins)
        else:
            emit(n, op, ins)
    return nodes
