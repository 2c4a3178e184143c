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

import difflib
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from mapsearch.characterize.graph import Model, Node, canonical_op, known_ops, op_kind
from mapsearch.errors import MapsearchError, SpecError
from mapsearch.spec import limits

__all__ = ["MODEL_DIR", "NAME_EXPECTED", "builtin_names", "check_name", "load_model", "model_from_dict"]

MODEL_DIR = Path(__file__).resolve().parent / "models"
MODEL_SCHEMA = Path(__file__).resolve().parent / "model.schema.json"

# The attributes an op reads (by canonical op); an op not listed here reads none, and its attributes are not checked.
# A conv's are read by graph.lower; a pool's are documentation (a pool is a bandwidth-only step).
_ATTRS = {
    "conv": ("kernel", "stride", "pad", "dilation", "groups"),
    "linear": (),
    "matmul": (),
    "maxpool": ("kernel", "stride", "pad", "dilation"),
    "avgpool": ("kernel", "stride", "pad", "dilation"),
}
# Ops whose output has the shape of each of their inputs.
_SHAPE_KEEPING_KINDS = ("activation", "normalisation", "softmax")


NAME_BYTES = 200  # a name is part of file names (at most 255 bytes each on most file systems)
NAME_EXPECTED = (f"a non-empty name of printable characters, at most {NAME_BYTES} bytes in UTF-8, without '/', '\\' "
                 "or '..' (it names output files and directories)")


def check_name(name: str, source: str, field: str = "name") -> str:
    """``name`` if it is safe as part of a file name, else a SpecError naming ``source`` and ``field``.

    A model's name names the default output directory (``characterize-<model>``) and a profile's the chain
    pairs' schedule files (``chains/<pair>-<profile>.json``): an empty name, a path separator, ``..`` or a
    control character (a newline would also break the one-line tables) could write elsewhere, or nowhere.
    """
    if (not name.strip() or not name.isprintable() or len(name.encode("utf-8")) > NAME_BYTES or "/" in name
            or "\\" in name or ".." in name):
        raise SpecError(source, field, NAME_EXPECTED, name)
    return name


@lru_cache(maxsize=None)
def _fields(*where: str) -> tuple[str, ...]:
    """The field names the model schema allows at ``where`` (a path of ``properties`` / ``items`` keys)."""
    node = json.loads(MODEL_SCHEMA.read_text(encoding="utf-8"))
    for key in where:
        node = node[key]
    return tuple(node["properties"])


def _check_keys(mapping: dict, known: tuple[str, ...], source: str, field: str, what: str = "field") -> None:
    """Refuse a key not in ``known``: a misspelt field is otherwise silently ignored (``group`` for ``groups``)."""
    for key in mapping:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            expected = f"one of {', '.join(known)}" if known else "none"
            from mapsearch.spec.reading import join_path

            raise SpecError(source, join_path([str(key)], field), "",
                            detail=f"unknown {what}{hint}; expected {expected}")


def builtin_names() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in MODEL_DIR.glob("*.yaml")))


def model_from_dict(data: object, source: str) -> Model:
    """Validate a layer table (``models/*.yaml``) and build its :class:`Model`; each problem is one SpecError line.

    Beyond the shapes' types: names are unique, every node reads at least
    one input and names one producer per input, and the einsum ops' shapes
    and attributes agree (:func:`_check_einsum_node`): a table that would
    silently solve another layer than the one it describes is refused.
    """
    if isinstance(data, dict):
        _check_keys(data, _fields(), source, "")
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) or not data["nodes"]:
        raise SpecError(source, "nodes", "a non-empty list of {name, op, in, out}", data)
    nodes = []
    previous = ""
    names: dict[str, int] = {}
    outs: dict[str, list] = {}
    for i, n in enumerate(data["nodes"]):
        field = f"nodes[{i}]"
        if isinstance(n, dict):
            _check_keys(n, _fields("properties", "nodes", "items"), source, field)
        if not isinstance(n, dict) or not {"name", "op", "in", "out"} <= set(n):
            raise SpecError(source, field, "{name, op, in: [[shape], ...], out: [shape]}", n)
        name = n["name"]
        if not isinstance(name, str) or not name:
            raise SpecError(source, f"{field}.name", "a non-empty string", name)
        if name in names:
            raise SpecError(source, f"{field}.name", f"a name not used by another node (nodes[{names[name]}])", name)
        if canonical_op(str(n["op"])) not in known_ops():
            raise SpecError(source, f"{field}.op", "", detail=f"unknown op {n['op']!r}; expected one of "
                            f"{', '.join(known_ops())}")
        if not isinstance(n["in"], list) or not n["in"] or not all(isinstance(x, list) for x in n["in"]):
            raise SpecError(source, f"{field}.in", "a non-empty list of input shapes, e.g. [[1, 64]]", n["in"])
        if not isinstance(n["out"], list) or not n["out"]:
            raise SpecError(source, f"{field}.out", "the output's shape, a non-empty list of ints", n["out"])
        _check_shapes(n, source, field)
        attrs = n.get("attrs") or {}
        if not isinstance(attrs, dict):
            raise SpecError(source, f"{field}.attrs", "a mapping of attributes", attrs)
        op = canonical_op(str(n["op"]))
        if op in _ATTRS:
            _check_keys(attrs, _ATTRS[op], source, f"{field}.attrs", f"attribute of a {op}")
        if op_kind(op) in _SHAPE_KEEPING_KINDS:
            for k, shape in enumerate(n["in"]):
                if shape != n["out"]:
                    raise SpecError(source, f"{field}.out", f"{shape}, the shape of in[{k}] (a {op} keeps its "
                                    "input's shape)", n["out"])
        srcs = n.get("from")
        if srcs is None:
            srcs = [previous] * max(1, len(n["in"])) if len(n["in"]) <= 1 else None
            if srcs is None:
                raise SpecError(source, f"{field}.from", "the producers of a node with several inputs", None)
        if not isinstance(srcs, list):
            raise SpecError(source, f"{field}.from", "a list of node names ('' for a model input)", srcs)
        if len(srcs) != len(n["in"]):
            raise SpecError(source, f"{field}.from", f"one producer per input ({len(n['in'])}; '' for a model input)",
                            srcs)
        for j, src in enumerate(srcs):
            if src != "" and str(src) not in names:
                raise SpecError(source, f"{field}.from[{j}]", "", detail=f"unknown producer {src!r}; expected '' "
                                "(a model input) or the name of an earlier node")
            if src != "" and n["in"][j] != outs[str(src)]:
                raise SpecError(source, f"{field}.in[{j}]", f"{outs[str(src)]}, the output of its producer "
                                f"{str(src)!r} (from[{j}])", n["in"][j])
        _check_einsum_node(canonical_op(str(n["op"])), n["in"], n["out"], attrs, source, field)
        nodes.append(Node(name, str(n["op"]), n["in"], n["out"], dict(attrs), list(srcs)))
        previous = name
        names[name] = i
        outs[name] = n["out"]
    from mapsearch.spec.schema import validate_against

    validate_against(data, MODEL_SCHEMA, source)  # what the checks above leave: the types of name, description
    name = data["name"] if data.get("name") is not None else Path(source).stem  # no name: the file's
    return Model(check_name(str(name), source), nodes, source, str(data.get("description") or ""))


def _check_shapes(node: dict, source: str, field: str) -> None:
    """Every dimension of the node's shapes is an int the solver takes as an extent."""
    shapes = [(f"{field}.in[{k}]", s) for k, s in enumerate(node["in"] if isinstance(node["in"], list) else [])]
    for where, shape in shapes + [(f"{field}.out", node["out"])]:
        if not shape:
            raise SpecError(source, where, "a shape: a non-empty list of ints >= 1", shape)
        for d, x in enumerate(shape if isinstance(shape, list) else []):
            if isinstance(x, bool) or not isinstance(x, int) or x < 1:
                raise SpecError(source, f"{where}[{d}]", "an int >= 1", x)
            too_big = limits.extent_error(x)
            if too_big is not None:
                raise SpecError(source, f"{where}[{d}]", "", detail=too_big)


def _check_einsum_node(op: str, ins: list, out: list, attrs: dict, source: str, field: str) -> None:
    """The shapes and attributes of a conv, linear or matmul agree, as :func:`~mapsearch.characterize.graph.lower`
    reads them: its inputs' count and ranks, the extents it derives (``M``, ``K``, ``N``, the output's rows
    and columns) and the output shape it would produce."""
    if op not in ("conv", "linear", "matmul"):
        return
    want = 2 if op == "matmul" else 1
    if len(ins) != want:
        raise SpecError(source, f"{field}.in", f"{want} input shape(s) for a {op} (weights are implied)", ins)
    if op == "linear":
        x = ins[0]
        if out[:-1] != x[:-1]:
            lead = "".join(f"{e}, " for e in x[:-1])
            raise SpecError(source, f"{field}.out", f"[{lead}N] (a linear keeps the input's leading extents and "
                            f"maps its {x[-1]} features to N)", out)
        return
    if op == "matmul":
        a, b = ins
        for k, shape in enumerate(ins):
            if len(shape) < 2:
                raise SpecError(source, f"{field}.in[{k}]", "a shape of rank >= 2 (..., rows, columns)", shape)
        if b[-2] != a[-1]:
            raise SpecError(source, f"{field}.in[1]", f"{a[-1]} rows (the columns of in[0] {a})", b)
        batch = math.prod(out[:-2])
        if len(out) < 2 or out[-2:] != [a[-2], b[-1]] or any(math.prod(s[:-2]) not in (1, batch) for s in ins):
            raise SpecError(source, f"{field}.out", f"[..., {a[-2]}, {b[-1]}] with the inputs' batch extents "
                            f"(in {a} @ {b})", out)
        return
    x = ins[0]
    if len(x) not in (3, 4):
        raise SpecError(source, f"{field}.in[0]", "a conv input (N, C, H, W) or (N, C, L)", x)
    if len(out) != len(x):
        raise SpecError(source, f"{field}.out", f"a conv output of the input's rank {len(x)}", out)
    if out[0] != x[0]:
        raise SpecError(source, f"{field}.out[0]", f"the input's batch {x[0]}", out[0])
    axes = len(x) - 2
    values = {}
    for key, default, least in (("kernel", 1, 1), ("stride", 1, 1), ("dilation", 1, 1), ("pad", 0, 0)):
        raw = attrs.get(key, [default] * axes)
        ok = isinstance(raw, list) and len(raw) in ({axes, 2} if axes == 1 else {axes}) and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= least for v in raw)
        if not ok:
            raise SpecError(source, f"{field}.attrs.{key}", f"{axes} int(s) >= {least}", raw)
        values[key] = raw[-axes:]
    groups = attrs.get("groups", 1)
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise SpecError(source, f"{field}.attrs.groups", "an int >= 1", groups)
    if x[1] % groups or out[1] % groups:
        raise SpecError(source, f"{field}.attrs.groups", f"a divisor of the {x[1]} input and {out[1]} output "
                        "channels", groups)
    if "pad" not in attrs:
        return  # the padding is not known: the output's extents are as given
    for a in range(axes):
        k, s, d, p = (values[key][a] for key in ("kernel", "stride", "dilation", "pad"))
        size = x[2 + a] + 2 * p - d * (k - 1) - 1
        expected = size // s + 1 if size >= 0 else 0
        if out[2 + a] != expected:
            raise SpecError(source, f"{field}.out[{2 + a}]", f"{expected} (input {x[2 + a]}, kernel {k}, stride {s}, "
                            f"pad {p}, dilation {d})", out[2 + a])


def load_model(spec: str, input_shapes: Sequence[Sequence[int]] | None = None) -> Model:
    """The model named by ``spec`` (see the module docstring)."""
    path = Path(spec)
    if spec.endswith(".onnx"):
        if not path.exists():
            raise MapsearchError(f"{spec}: no such file")
        from mapsearch.characterize.onnx_import import load_onnx

        return _named(load_onnx(path), spec)  # named by the file
    if path.suffix in (".yaml", ".yml") and path.exists():
        from mapsearch.spec.reading import read_yaml

        return model_from_dict(read_yaml(path), str(path))
    if spec in builtin_names():
        from mapsearch.spec.reading import read_yaml

        p = MODEL_DIR / f"{spec}.yaml"
        return model_from_dict(read_yaml(p), f"builtin:{spec}")
    if ":" in spec:
        from mapsearch.characterize.torch_import import load_torch

        return _named(load_torch(spec, input_shapes), spec)  # named by the callable
    raise MapsearchError(f"{spec}: not a built-in model ({', '.join(builtin_names())}), a .onnx or .yaml file, "
                         "or a PyTorch module:callable")


def _named(model: Model, source: str) -> Model:
    check_name(model.name, source)
    return model
