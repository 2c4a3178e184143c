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

from mapsearch.characterize.graph import Model, Node
from mapsearch.errors import MapsearchError, SpecError

__all__ = ["MODEL_DIR", "builtin_names", "load_model", "model_from_dict"]

MODEL_DIR = Path(__file__).resolve().parent / "models"


def builtin_names() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in MODEL_DIR.glob("*.yaml")))


def model_from_dict(data: object, source: str) -> Model:
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) or not data["nodes"]:
        raise SpecError(source, "nodes", "a non-empty list of {name, op, in, out}", data)
    nodes = []
    previous = ""
    for i, n in enumerate(data["nodes"]):
        if not isinstance(n, dict) or not {"name", "op", "in", "out"} <= set(n):
            raise SpecError(source, f"nodes[{i}]", "{name, op, in: [[shape], ...], out: [shape]}", n)
        srcs = n.get("from")
        if srcs is None:
            srcs = [previous] * max(1, len(n["in"])) if len(n["in"]) <= 1 else None
            if srcs is None:
                raise SpecError(source, f"nodes[{i}].from", "the producers of a node with several inputs", None)
        try:
            nodes.append(Node(str(n["name"]), str(n["op"]), n["in"], n["out"], dict(n.get("attrs") or {}), list(srcs)))
        except (TypeError, ValueError) as e:
            raise SpecError(source, f"nodes[{i}]", "shapes as lists of ints", n) from e
        previous = str(n["name"])
    return Model(str(data.get("name") or Path(source).stem), nodes, source, str(data.get("description") or ""))


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
