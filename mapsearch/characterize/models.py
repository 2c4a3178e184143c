"""Load a model as a list of :class:`~mapsearch.characterize.graph.Node` s, from any front end.

``MODEL`` is one of:

- a built-in layer table name (``mlp``, ``conv-stack``, ``resnet18``,
  ``resnet50``, ``bert-base``, ``gpt2-small``; ``models/<name>.yaml``), or a
  YAML file in the same format;
- an ONNX file (``*.onnx``; needs ``pip install 'mapsearch[onnx]'``), shapes
  by ONNX shape inference (:mod:`mapsearch.characterize.onnx_import`);
- a PyTorch module as ``package.module:callable`` (needs ``pip install
  'mapsearch[torch]'``), traced with torch.fx on meta tensors
  (:mod:`mapsearch.characterize.torch_import`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from mapsearch.characterize.graph import Model, Node, canonical_op, known_ops
from mapsearch.errors import MapsearchError, SpecError
from mapsearch.spec import limits

__all__ = ["MODEL_DIR", "builtin_names", "load_model", "model_from_dict"]

MODEL_DIR = Path(__file__).resolve().parent / "models"


def builtin_names() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in MODEL_DIR.glob("*.yaml")))


def model_from_dict(data: object, source: str) -> Model:
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) or not data["nodes"]:
        raise SpecError(source, "nodes", "a non-empty list of {name, op, in, out}", data)
    nodes = []
    previous = ""
    names: set[str] = set()
    for i, n in enumerate(data["nodes"]):
        if not isinstance(n, dict) or not {"name", "op", "in", "out"} <= set(n):
            raise SpecError(source, f"nodes[{i}]", "{name, op, in: [[shape], ...], out: [shape]}", n)
        if canonical_op(str(n["op"])) not in known_ops():
            raise SpecError(source, f"nodes[{i}].op", "", detail=f"unknown op {n['op']!r}; expected one of "
                            f"{', '.join(known_ops())}")
        _check_shapes(n, source, f"nodes[{i}]")
        srcs = n.get("from")
        if srcs is None:
            srcs = [previous] * max(1, len(n["in"])) if len(n["in"]) <= 1 else None
            if srcs is None:
                raise SpecError(source, f"nodes[{i}].from", "the producers of a node with several inputs", None)
        if not isinstance(srcs, list):
            raise SpecError(source, f"nodes[{i}].from", "a list of node names ('' for a model input)", srcs)
        for j, src in enumerate(srcs):
            if src != "" and str(src) not in names:
                raise SpecError(source, f"nodes[{i}].from[{j}]", "", detail=f"unknown producer {src!r}; expected '' "
                                "(a model input) or the name of an earlier node")
        try:
            nodes.append(Node(str(n["name"]), str(n["op"]), n["in"], n["out"], dict(n.get("attrs") or {}), list(srcs)))
        except (TypeError, ValueError) as e:
            raise SpecError(source, f"nodes[{i}]", "shapes as lists of ints", n) from e
        previous = str(n["name"])
        names.add(previous)
    return Model(str(data.get("name") or Path(source).stem), nodes, source, str(data.get("description") or ""))


def _check_shapes(node: dict, source: str, field: str) -> None:
    """Every dimension of the node's shapes is an int the solver takes as an extent."""
    shapes = [(f"{field}.in[{k}]", s) for k, s in enumerate(node["in"] if isinstance(node["in"], list) else [])]
    for where, shape in shapes + [(f"{field}.out", node["out"])]:
        for d, x in enumerate(shape if isinstance(shape, list) else []):
            if isinstance(x, bool) or not isinstance(x, int) or x < 1:
                raise SpecError(source, f"{where}[{d}]", "an int >= 1", limits.describe(x))
            too_big = limits.extent_error(x)
            if too_big is not None:
                raise SpecError(source, f"{where}[{d}]", "", detail=too_big)


def load_model(spec: str, input_shapes: Sequence[Sequence[int]] | None = None) -> Model:
    """The model named by ``spec`` (see the module docstring)."""
    path = Path(spec)
    if spec.endswith(".onnx"):
        if not path.exists():
            raise MapsearchError(f"{spec}: no such file")
        from mapsearch.characterize.onnx_import import load_onnx

        return load_onnx(path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        from mapsearch.spec.reading import read_yaml

        return model_from_dict(read_yaml(path), str(path))
    if spec in builtin_names():
        from mapsearch.spec.reading import read_yaml

        p = MODEL_DIR / f"{spec}.yaml"
        return model_from_dict(read_yaml(p), f"builtin:{spec}")
    if ":" in spec:
        from mapsearch.characterize.torch_import import load_torch

        return load_torch(spec, input_shapes)
    raise MapsearchError(f"{spec}: not a built-in model ({', '.join(builtin_names())}), a .onnx or .yaml file, "
                         "or a PyTorch module:callable")
