"""The tree architecture format: YAML with ``!Memory``, ``!ProcessingStage``,
``!Compute``, ``!Parallel`` and ``!Hierarchical`` nodes, flattened into one
flat :class:`~mapsearch.spec.architecture.Architecture` per compute.

The format, the flattening and the set expressions are documented in
``docs/tree-format.md``; in short::

    name: two-paths
    arch:
      nodes:                              # the root chain (a !Hierarchical)
      - !Memory {name: DRAM, size: inf}
      - !Memory {name: GLB, size: 65536, input_clocks_per_word: 1}
      - !Parallel                         # one of the branches is taken
        nodes:
        - !Compute {name: scalar_unit}
        - !Hierarchical
          nodes:
          - !Memory {name: L0, size: 256, input_clocks_per_word: 2}
          - !Compute {name: mac_array, block: {m: 4, n: 4, k: 4}}

Reading goes in steps, as in :mod:`mapsearch.spec.load`: parse the YAML with
a loader that knows the five tags and remembers where every value is, build
the frozen tree nodes (checking each field), then :func:`flatten` into
:class:`FlatPath` objects. A path's ``tensors`` rules and ``may_reuse``
expressions name tensors, so they are bound to a workload separately
(:func:`path_constraints`, :func:`path_architecture`).

Every error is one :class:`TreeError` line that starts with
``FILE:LINE:COLUMN`` of the offending YAML, e.g.
``arch.yaml:7:20: arch.nodes[1].tensors.keep: unknown tensor 'Q' ...``.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from mapsearch.spec import limits
from mapsearch.spec.architecture import SEPARATE, SHARED, SPLIT_BOUND_OPERATORS, Link, as_fraction
from mapsearch.spec.reading import read_text
from mapsearch.spec.set_expr import SetExprSyntaxError, parse_set_expr
from mapsearch.spec.tree_nodes import (
    ComputeNode,
    HierarchicalNode,
    LoopBound,
    MemoryNode,
    Node,
    ParallelNode,
    SetRule,
    SpatialAxis,
    StageNode,
    Tree,
)
from mapsearch.spec.tree_paths import flatten
from mapsearch.spec.tree_yaml import TAGS, TreeError, Where, _MDict, _MList, _parse_yaml, _Tagged, is_tree_file

__all__ = ["load_tree", "parse_tree", "tree_from_text", "is_tree_file"]


_NAME = re.compile(r"^[^\s]+\Z")  # \Z: "$" also matches before a final newline
_DIM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_PRODUCT = re.compile(r"^\s*\d+(\s*\*\s*\d+)*\s*$")


class _Builder:
    """Builds nodes from the marked YAML, one field at a time."""

    def __init__(self, source: str):
        self.source = source
        self.names: dict[str, Where] = {}

    # -- locations --------------------------------------------------------

    def at(self, thing: Any, field: str) -> Where:
        mark = getattr(thing, "mark", None)
        if isinstance(thing, _Tagged):
            mark = thing.node.start_mark
        if mark is None:
            return Where(self.source, 1, 1, field)
        return Where(self.source, mark.line + 1, mark.column + 1, field)

    def value_at(self, mapping: _MDict, key: str, field: str) -> Where:
        node = mapping.value_nodes.get(key)
        if node is None:
            return self.at(mapping, field)
        return Where(self.source, node.start_mark.line + 1, node.start_mark.column + 1, field)

    def text_at(self, mapping: _MDict, key: str, field: str) -> Where:
        """Where the text of a scalar value starts (after an opening quote)."""
        where = self.value_at(mapping, key, field)
        node = mapping.value_nodes.get(key)
        if isinstance(node, yaml.ScalarNode) and node.style in ("'", '"'):
            return where.at_offset(1)
        return where

    # -- fields -----------------------------------------------------------

    def mapping(self, value: Any, where: Where, expected: str) -> _MDict:
        if not isinstance(value, _MDict):
            raise TreeError(where, f"expected {expected}, got {_short(value)}")
        return value

    def check_keys(self, data: _MDict, known: Iterable[str], field: str, what: str) -> None:
        known = list(known)
        for key in data:
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                where = self.key_at(data, key, _join(field, key))
                raise TreeError(where, f"unknown field of {what}{hint}; expected one of {', '.join(known)}")

    def key_at(self, data: _MDict, key: Any, field: str) -> Where:
        node = data.key_nodes.get(key)
        return Where(self.source, node.start_mark.line + 1, node.start_mark.column + 1, field) if node else self.at(data, field)

    def name(self, data: _MDict, field: str, what: str, where: Where) -> str:
        if "name" not in data:
            raise TreeError(replace(where, field=_join(field, "name")), f"{what} needs a name")
        value = data["name"]
        at = self.value_at(data, "name", _join(field, "name"))
        if not isinstance(value, str) or not _NAME.match(value):
            raise TreeError(at, f"expected a name without spaces, got {_short(value)}")
        if value in self.names:
            raise TreeError(at, f"the name {value!r} is already used at {self.names[value]}; names must be unique in a tree")
        self.names[value] = at
        return value

    def attributes(self, data: _MDict, field: str, keys: tuple[str, ...]) -> dict[str, tuple[Any, Where, _MDict, str]]:
        """Fields given either directly or under ``attributes:``; both at once is an error."""
        out: dict[str, tuple[Any, Where, _MDict, str]] = {}
        for key in keys:
            if key in data:
                out[key] = (data[key], self.value_at(data, key, _join(field, key)), data, key)
        if "attributes" in data:
            attrs = self.mapping(data["attributes"], self.value_at(data, "attributes", _join(field, "attributes")),
                                 "a mapping of attributes")
            sub = _join(field, "attributes")
            self.check_keys(attrs, keys, sub, "attributes")
            for key in keys:
                if key in attrs:
                    at = self.value_at(attrs, key, _join(sub, key))
                    if key in out:
                        raise TreeError(at, f"{key} is also given at {out[key][1]}; give it once")
                    out[key] = (attrs[key], at, attrs, key)
        return out

    def number(self, value: Any, where: Where) -> Fraction:
        try:
            x = as_fraction(value)
        except (TypeError, ValueError, ZeroDivisionError):
            raise TreeError(where, f"expected a number > 0 (int, decimal or 'a/b'), got {_short(value)}") from None
        if x <= 0:
            raise TreeError(where, f"expected a number > 0 (int, decimal or 'a/b'), got {_short(value)}")
        _guard(limits.exact_error(x), where)
        return x

    def size(self, value: Any, where: Where) -> int | None:
        if value is None or (isinstance(value, float) and math.isinf(value) and value > 0) or value in ("inf", "unbounded"):
            return None
        if isinstance(value, str) and _PRODUCT.match(value):
            try:
                value = math.prod(int(p) for p in value.split("*"))
            except ValueError:  # a factor of more digits than Python converts
                raise TreeError(where, f"expected words: a product of ints, got {_short(value)}") from None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TreeError(where, f"expected words: int > 0 (or a product such as 64*1024), or inf, got {_short(value)}")
        _guard(limits.capacity_error(value), where)
        return value

    def link(self, fields: Mapping[str, tuple[Any, Where, _MDict, str]]) -> Link | None:
        if not any(k in fields for k in ("input_clocks_per_word", "output_clocks_per_word", "lines")):
            return None
        down = self.number(*fields["input_clocks_per_word"][:2]) if "input_clocks_per_word" in fields else Fraction(1)
        up = self.number(*fields["output_clocks_per_word"][:2]) if "output_clocks_per_word" in fields else down
        lines = SHARED
        if "lines" in fields:
            value, where = fields["lines"][:2]
            if value not in (SHARED, SEPARATE):
                raise TreeError(where, f"expected 'shared' or 'separate', got {_short(value)}")
            lines = value
        return Link(down, up, lines)

    def rule(self, data: _MDict, key: str, field: str, default: str | None) -> SetRule | None:
        if key not in data:
            if default is None:
                return None
            where = self.at(data, _join(field, key))
            return SetRule(default, parse_set_expr(default), where)
        value = data[key]
        where = self.text_at(data, key, _join(field, key))
        if isinstance(value, bool) or value is None:
            raise TreeError(where, f"expected a set expression (e.g. 'input | output'), got {_short(value)}")
        if isinstance(value, list):  # a list of names is their union
            if not value or not all(isinstance(v, str) for v in value):
                raise TreeError(where, f"expected a set expression or a non-empty list of names, got {_short(value)}")
            value_text = " | ".join(value)
            try:
                return SetRule(value_text, parse_set_expr(value_text), where)
            except SetExprSyntaxError as e:
                raise TreeError(where, f"{e.reason} (in {value_text!r})") from None
        text = str(value)
        try:
            return SetRule(text, parse_set_expr(text), where)
        except SetExprSyntaxError as e:
            raise TreeError(where.at_offset(e.position), f"{e.reason} (in {text!r})") from None

    # -- nodes ------------------------------------------------------------

    def node(self, raw: Any, field: str, parent_where: Where) -> Node:
        if not isinstance(raw, _Tagged):
            where = self.at(raw, field) if hasattr(raw, "mark") else replace(parent_where, field=field)
            raise TreeError(where, f"expected a tagged node ({', '.join(TAGS)}), got {_short(raw)}")
        where = self.at(raw, field)
        if not isinstance(raw.body, _MDict):
            raise TreeError(where, f"{raw.tag} expects a mapping of fields, got {_short(raw.body)}")
        build = {
            "!Memory": self.memory,
            "!ProcessingStage": self.stage,
            "!Compute": self.compute,
            "!Parallel": self.parallel,
            "!Hierarchical": self.hierarchical,
        }[raw.tag]
        return build(raw.body, field, where)

    def memory(self, data: _MDict, field: str, where: Where) -> MemoryNode:
        link_keys = ("input_clocks_per_word", "output_clocks_per_word", "lines")
        self.check_keys(data, ("name", "size", "attributes", "spatial", "tensors") + link_keys, field, "!Memory")
        name = self.name(data, field, "!Memory", where)
        fields = self.attributes(data, field, ("size",) + link_keys)
        if "size" not in fields:
            raise TreeError(replace(where, field=_join(field, "size")),
                            f"!Memory {name!r} needs a size in words (size: or attributes: {{size: }}; inf for unbounded)")
        size = self.size(*fields["size"][:2])
        spatial = self.spatial(data, field)
        keep = may_keep = bypass = None
        if "tensors" in data:
            sub = _join(field, "tensors")
            tensors = self.mapping(data["tensors"], self.value_at(data, "tensors", sub), "a mapping with keep, may_keep, bypass")
            self.check_keys(tensors, ("keep", "may_keep", "bypass"), sub, "tensors")
            keep = self.rule(tensors, "keep", sub, None)
            may_keep = self.rule(tensors, "may_keep", sub, None)
            bypass = self.rule(tensors, "bypass", sub, None)
        return MemoryNode(name, size, self.link(fields), spatial, keep, may_keep, bypass, replace(where, field=field))

    def spatial(self, data: _MDict, field: str) -> tuple[SpatialAxis, ...]:
        if "spatial" not in data:
            return ()
        sub = _join(field, "spatial")
        items = data["spatial"]
        if not isinstance(items, _MList):
            raise TreeError(self.value_at(data, "spatial", sub), f"expected a list of fanouts {{name, fanout, may_reuse, must_reuse}}, got {_short(items)}")
        axes: list[SpatialAxis] = []
        for i, item in enumerate(items):
            f = f"{sub}[{i}]"
            at = self.at(item, f) if hasattr(item, "mark") else self.at(items, f)
            item = self.mapping(item, at, "a mapping with name, fanout, may_reuse, must_reuse, loop_bounds")
            self.check_keys(item, ("name", "fanout", "may_reuse", "must_reuse", "loop_bounds"), f, "a spatial fanout")
            name = item.get("name")
            if not isinstance(name, str) or not _NAME.match(name):
                raise TreeError(self.value_at(item, "name", _join(f, "name")), f"expected a fanout dimension name, got {_short(name)}")
            if any(a.name == name for a in axes):
                raise TreeError(self.value_at(item, "name", _join(f, "name")), f"fanout dimension {name!r} is given twice")
            fanout = item.get("fanout")
            if isinstance(fanout, bool) or not isinstance(fanout, int) or fanout < 1:
                raise TreeError(self.value_at(item, "fanout", _join(f, "fanout")), f"expected fanout: int >= 1, got {_short(fanout)}")
            _guard(limits.instances_error(fanout, name), self.value_at(item, "fanout", _join(f, "fanout")))
            may = self.rule(item, "may_reuse", f, "All")
            must = self.rule(item, "must_reuse", f, "Nothing")
            axes.append(SpatialAxis(name, fanout, may, must, at, loop_bounds=self.loop_bounds(item, f)))
        if len(axes) > 2:
            raise TreeError(axes[2].where, "a component has at most two fanout dimensions (docs/spatial.md)")
        return tuple(axes)

    def loop_bounds(self, item: _MDict, field: str) -> tuple[LoopBound, ...]:
        """A fanout's ``loop_bounds``: ``{expression: <dimensions>, operator: ==|<=|...|product<=|..., value: int}``."""
        if "loop_bounds" not in item:
            return ()
        sub = _join(field, "loop_bounds")
        items = item["loop_bounds"]
        if not isinstance(items, _MList):
            raise TreeError(self.value_at(item, "loop_bounds", sub),
                            f"expected a list of {{expression, operator, value}}, got {_short(items)}")
        out = []
        for k, entry in enumerate(items):
            f = f"{sub}[{k}]"
            at = self.at(entry, f) if hasattr(entry, "mark") else self.at(items, f)
            entry = self.mapping(entry, at, "a mapping with expression, operator and value")
            self.check_keys(entry, ("expression", "operator", "value"), f, "a loop bound")
            dims = self.rule(entry, "expression", f, None)
            if dims is None:
                raise TreeError(at, f"{f}: expected an expression (the dimensions it bounds), got none")
            operator = entry.get("operator")
            if operator not in SPLIT_BOUND_OPERATORS:
                raise TreeError(self.value_at(entry, "operator", _join(f, "operator")),
                                f"expected operator: one of {', '.join(SPLIT_BOUND_OPERATORS)}, got {_short(operator)}")
            value = entry.get("value")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TreeError(self.value_at(entry, "value", _join(f, "value")), f"expected value: int >= 0, got {_short(value)}")
            out.append(LoopBound(dims, operator, value))
        return tuple(out)

    def stage(self, data: _MDict, field: str, where: Where) -> StageNode:
        link_keys = ("input_clocks_per_word", "output_clocks_per_word", "lines")
        if "spatial" in data:
            raise TreeError(self.key_at(data, "spatial", _join(field, "spatial")),
                            "a !ProcessingStage has no spatial fanout; put the fanout on the !Memory below it")
        if "tensors" in data:
            raise TreeError(self.key_at(data, "tensors", _join(field, "tensors")),
                            "a !ProcessingStage holds no tensors; keep/bypass rules go on a !Memory")
        self.check_keys(data, ("name", "attributes") + link_keys, field, "!ProcessingStage")
        name = self.name(data, field, "!ProcessingStage", where)
        link = self.link(self.attributes(data, field, link_keys)) or Link()
        return StageNode(name, link, replace(where, field=field))

    def compute(self, data: _MDict, field: str, where: Where) -> ComputeNode:
        if "spatial" in data:
            raise TreeError(self.key_at(data, "spatial", _join(field, "spatial")),
                            "a !Compute has no spatial fanout; put the fanout on the !Memory above it "
                            "(each of its instances has its own compute)")
        self.check_keys(data, ("name", "attributes", "block", "block_roles", "clocks_per_call"), field, "!Compute")
        name = self.name(data, field, "!Compute", where)
        fields = self.attributes(data, field, ("block", "block_roles", "clocks_per_call"))
        blocks: dict[str, tuple[tuple[str, int], ...]] = {"block": (), "block_roles": ()}
        for kind, keys, what in (("block", _DIM, "a dimension name (letters, digits, _)"),
                                 ("block_roles", re.compile(r"^[mnk]\Z"), "a GEMM role: m, n or k")):
            if kind not in fields:
                continue
            value, at, holder, key = fields[kind]
            if value is None:
                value = _MDict()
                value.value_nodes, value.key_nodes = {}, {}
            blk = self.mapping(value, at, f"a mapping from {what.split(' (')[0]} to int >= 1")
            pairs = []
            for d, b in blk.items():
                if not isinstance(d, str) or not keys.match(d):
                    raise TreeError(at, f"expected {what}, got {_short(d)}")
                if isinstance(b, bool) or not isinstance(b, int) or b < 1:
                    raise TreeError(self.value_at(blk, d, _join(at.field, d)), f"expected int >= 1, got {_short(b)}")
                _guard(limits.extent_error(b), self.value_at(blk, d, _join(at.field, d)))
                pairs.append((d, b))
            blocks[kind] = tuple(pairs)
        if blocks["block"] and blocks["block_roles"]:
            raise TreeError(fields["block_roles"][1], "give the block either by dimension (block) or by GEMM role "
                            "(block_roles), not both")
        clocks = self.number(*fields["clocks_per_call"][:2]) if "clocks_per_call" in fields else Fraction(1)
        return ComputeNode(name, blocks["block"], clocks, replace(where, field=field), block_roles=blocks["block_roles"])

    def children(self, data: _MDict, field: str, where: Where, tag: str) -> tuple[Node, ...]:
        self.check_keys(data, ("name", "nodes"), field, tag)
        sub = _join(field, "nodes")
        if "nodes" not in data:
            raise TreeError(replace(where, field=sub), f"{tag} needs nodes: a non-empty list")
        items = data["nodes"]
        if not isinstance(items, _MList) or not items:
            raise TreeError(self.value_at(data, "nodes", sub), f"expected a non-empty list of nodes, got {_short(items)}")
        return tuple(self.node(item, f"{sub}[{i}]", self.at(items, sub)) for i, item in enumerate(items))

    def parallel(self, data: _MDict, field: str, where: Where) -> ParallelNode:
        return ParallelNode(self.children(data, field, where, "!Parallel"), replace(where, field=field))

    def hierarchical(self, data: _MDict, field: str, where: Where) -> HierarchicalNode:
        return HierarchicalNode(self.children(data, field, where, "!Hierarchical"), replace(where, field=field))


def _join(field: str, key: object) -> str:
    return f"{field}.{key}" if field else str(key)


def _guard(problem: str | None, where: Where) -> None:
    """A size guard's complaint (:mod:`mapsearch.spec.limits`), if any, as a TreeError at ``where``."""
    if problem is not None:
        raise TreeError(where, problem)


def _short(value: object, limit: int = 60) -> str:
    if isinstance(value, _Tagged):
        return value.tag
    if isinstance(value, (_MDict, _MList)):
        value = type(value).__mro__[1](value)
    return limits.describe(value, limit)


def parse_tree(data: Any, source: str = "<tree>") -> Tree:
    """Build the :class:`Tree` from a document read by the tree loader, then check that it flattens."""
    b = _Builder(source)
    top = Where(source, 1, 1, "")
    if not isinstance(data, _MDict):
        raise TreeError(top, f"expected a mapping with arch: {{nodes: [...]}} (and optionally name), got {_short(data)}")
    b.check_keys(data, ("name", "description", "arch", "double_buffering"), "", "a tree file")
    if "arch" not in data:
        raise TreeError(top, "arch: missing; expected a mapping with nodes: [...]")
    arch = data["arch"]
    if isinstance(arch, _Tagged):
        if arch.tag != "!Hierarchical":
            raise TreeError(b.at(arch, "arch"), f"arch is the root chain: a mapping with nodes (or !Hierarchical), got {arch.tag}")
        arch = arch.body
    arch = b.mapping(arch, b.value_at(data, "arch", "arch"), "a mapping with nodes: [...]")
    root = b.hierarchical(arch, "arch", b.at(arch, "arch"))
    name = data.get("name", Path(source).stem if source != "<tree>" else "tree")
    if not isinstance(name, str) or not name:
        raise TreeError(b.value_at(data, "name", "name"), f"expected a non-empty string, got {_short(name)}")
    double = data.get("double_buffering", False)
    if not isinstance(double, bool):
        raise TreeError(b.value_at(data, "double_buffering", "double_buffering"), f"expected true or false, got {_short(double)}")
    description = data.get("description", "")
    tree = Tree(name, root, double, source, str(description or ""))
    flatten(tree)  # every structural error is reported at load time
    return tree


def tree_from_text(text: str, source: str = "<tree>") -> Tree:
    """Parse a tree file's text (``source`` names it in errors)."""
    return parse_tree(_parse_yaml(text, source), source)


def load_tree(path: str | Path) -> Tree:
    """Read a tree architecture file; any problem is one :class:`TreeError` line with FILE:LINE:COLUMN."""
    return tree_from_text(read_text(path), str(path))

