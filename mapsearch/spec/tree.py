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
import logging
import math
import re
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Union

import yaml

from mapsearch.errors import InfeasibleError, MapsearchError, SolverTimeout, SpecError
from mapsearch.spec.architecture import SEPARATE, SHARED, Architecture, Compute, Level, Link, MeshAxis, as_fraction
from mapsearch.spec.energy import EnergyModel, LevelEnergy
from mapsearch.spec.set_expr import SetExpr, SetExprError, SetExprSyntaxError, evaluate, parse_set_expr, union_terms
from mapsearch.spec.workload import Workload

if TYPE_CHECKING:  # the solver imports ortools; the format itself does not need it
    from mapsearch.solve.constraints import Constraints
    from mapsearch.solve.options import SolveOptions
    from mapsearch.solve.run import SolveResult

log = logging.getLogger(__name__)

__all__ = [
    "TAGS",
    "Where",
    "TreeError",
    "UnusablePath",
    "NoUsablePath",
    "SetRule",
    "SpatialAxis",
    "MemoryNode",
    "StageNode",
    "ComputeNode",
    "ParallelNode",
    "HierarchicalNode",
    "Tree",
    "KeepRule",
    "ReuseRule",
    "FlatPath",
    "PathOutcome",
    "load_tree",
    "parse_tree",
    "tree_from_text",
    "is_tree_file",
    "flatten",
    "single_architecture",
    "path_architecture",
    "path_constraints",
    "path_must_reuse",
    "solve_tree",
]

TAGS = ("!Memory", "!ProcessingStage", "!Compute", "!Parallel", "!Hierarchical")

# --------------------------------------------------------------------------
# Locations and errors.
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Where:
    """A place in a YAML file: 1-based line and column, and the field path (``arch.nodes[2].size``)."""

    source: str
    line: int
    column: int
    field: str = ""

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"

    def at_offset(self, offset: int) -> "Where":
        """The same place ``offset`` characters further along the line."""
        return replace(self, column=self.column + offset)


class TreeError(SpecError):
    """A bad tree file: ``FILE:LINE:COLUMN: FIELD: what is wrong`` on one line."""

    def __init__(self, where: Where, detail: str):
        self.where = where
        super().__init__(str(where), where.field, "", None, detail=" ".join(detail.split()))


class UnusablePath(MapsearchError):
    """A path whose rules contradict the workload's homes (e.g. it bypasses a tensor at the level next to compute).

    :func:`solve_tree` reports such a path as skipped; called directly,
    :func:`path_constraints` raises it.
    """

    def __init__(self, message: str, where: Where | None = None):
        self.where = where
        super().__init__(f"{where}: {message}" if where is not None else message)


class NoUsablePath(MapsearchError):
    """Every path of a tree was skipped; the message gives each path's reason."""


# --------------------------------------------------------------------------
# Step 1: YAML with tags and marks.
# --------------------------------------------------------------------------


class _MDict(dict):
    """A mapping that remembers where it and each of its values start."""

    mark: Any = None
    value_nodes: dict
    key_nodes: dict


class _MList(list):
    mark: Any = None
    item_nodes: list


@dataclass
class _Tagged:
    tag: str
    body: Any  # an _MDict when well formed
    node: Any


class _TreeLoader(yaml.SafeLoader):
    """SafeLoader with the five tags, marks on every mapping and list, and no duplicate keys."""

    source = "<tree>"


def _mark_where(loader: _TreeLoader, mark: Any, field: str = "") -> Where:
    return Where(loader.source, mark.line + 1, mark.column + 1, field)


def _construct_mapping(loader: _TreeLoader, node: yaml.MappingNode, deep: bool = False) -> _MDict:
    loader.flatten_mapping(node)
    out = _MDict()
    out.mark = node.start_mark
    out.value_nodes = {}
    out.key_nodes = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in out
        except TypeError:
            raise TreeError(_mark_where(loader, key_node.start_mark), "a mapping key must be text") from None
        if duplicate:
            raise TreeError(_mark_where(loader, key_node.start_mark), f"key {key!r} is given twice in one mapping")
        out[key] = loader.construct_object(value_node, deep=True)
        out.value_nodes[key] = value_node
        out.key_nodes[key] = key_node
    return out


def _construct_sequence(loader: _TreeLoader, node: yaml.SequenceNode, deep: bool = False) -> _MList:
    out = _MList(loader.construct_object(child, deep=True) for child in node.value)
    out.mark = node.start_mark
    out.item_nodes = list(node.value)
    return out


def _construct_tagged(loader: _TreeLoader, node: yaml.Node) -> _Tagged:
    if isinstance(node, yaml.MappingNode):
        return _Tagged(node.tag, _construct_mapping(loader, node), node)
    value = loader.construct_object(node, deep=True) if not isinstance(node, yaml.ScalarNode) else loader.construct_scalar(node)
    return _Tagged(node.tag, value, node)


def _unknown_tag(loader: _TreeLoader, suffix: str, node: yaml.Node) -> Any:
    tag = node.tag
    close = difflib.get_close_matches(tag, TAGS, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise TreeError(_mark_where(loader, node.start_mark), f"unknown tag {tag}{hint}; expected one of {', '.join(TAGS)}")


_TreeLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_TreeLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)
for _tag in TAGS:
    _TreeLoader.add_constructor(_tag, _construct_tagged)
_TreeLoader.add_multi_constructor("!", _unknown_tag)
_TreeLoader.add_multi_constructor("tag:yaml.org,2002:python/", _unknown_tag)


def _parse_yaml(text: str, source: str) -> Any:
    """The YAML document with marks; malformed YAML is one TreeError at the problem's line and column."""
    loader = _TreeLoader(text)
    loader.source = source
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or e.context or "syntax error"
        where = Where(source, mark.line + 1, mark.column + 1) if mark is not None else Where(source, 1, 1)
        raise TreeError(where, f"malformed YAML: {problem}") from None
    except yaml.YAMLError as e:
        raise TreeError(Where(source, 1, 1), f"malformed YAML: {e}") from None
    finally:
        loader.dispose()


# --------------------------------------------------------------------------
# Step 2: tree nodes.
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SetRule:
    """A set expression as written, its AST and where its text starts."""

    text: str
    expr: SetExpr
    where: Where

    def evaluate(self, workload: Workload) -> frozenset[str]:
        """The tensors of ``workload`` it names; an unknown name is a TreeError at the name's column."""
        tensors = {t: workload.is_output(t) for t in workload.tensor_names}
        try:
            return evaluate(self.expr, tensors, self.text)
        except SetExprError as e:
            raise TreeError(self.where.at_offset(e.position), f"{e.reason} (in {self.text!r})") from None


@dataclass(frozen=True)
class SpatialAxis:
    """One fanout dimension of a component: ``fanout`` instances along ``name``."""

    name: str
    fanout: int
    may_reuse: SetRule
    must_reuse: SetRule
    where: Where


@dataclass(frozen=True)
class MemoryNode:
    """``!Memory``: stores tensors. ``size`` in words per instance (None: unbounded, top only);
    ``link`` is the link from the nearest memory above down to this one (None: not given)."""

    name: str
    size: int | None
    link: Link | None
    spatial: tuple[SpatialAxis, ...]
    keep: SetRule | None
    may_keep: SetRule | None
    bypass: SetRule | None
    where: Where
    energy: LevelEnergy | None = None  # per word read/written and leakage (a peer's file; spec/energy.py)


@dataclass(frozen=True)
class StageNode:
    """``!ProcessingStage``: holds nothing; every word on the link it sits on also passes through it."""

    name: str
    link: Link
    where: Where


@dataclass(frozen=True)
class ComputeNode:
    """``!Compute``: the op at the end of a path."""

    name: str
    block: tuple[tuple[str, int], ...]
    clocks_per_call: Fraction
    where: Where
    energy: tuple[Fraction, Fraction] | None = None  # (per MAC, leakage per clock per instance)


@dataclass(frozen=True)
class ParallelNode:
    """``!Parallel``: alternatives; an einsum takes one of the branches."""

    nodes: tuple["Node", ...]
    where: Where


@dataclass(frozen=True)
class HierarchicalNode:
    """``!Hierarchical``: a chain; each node is the parent of the nodes after it."""

    nodes: tuple["Node", ...]
    where: Where


Node = Union[MemoryNode, StageNode, ComputeNode, ParallelNode, HierarchicalNode]


@dataclass(frozen=True)
class Tree:
    name: str
    root: HierarchicalNode
    double_buffering: bool = False
    source: str = "<tree>"
    description: str = ""
    energy_unit: str = ""  # of the nodes' energies, when they carry any


_NAME = re.compile(r"^[^\s]+$")
_DIM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
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
        return x

    def size(self, value: Any, where: Where) -> int | None:
        if value is None or (isinstance(value, float) and math.isinf(value) and value > 0) or value in ("inf", "unbounded"):
            return None
        if isinstance(value, str) and _PRODUCT.match(value):
            value = math.prod(int(p) for p in value.split("*"))
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TreeError(where, f"expected words: int > 0 (or a product such as 64*1024), or inf, got {_short(value)}")
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
            item = self.mapping(item, at, "a mapping with name, fanout, may_reuse, must_reuse")
            self.check_keys(item, ("name", "fanout", "may_reuse", "must_reuse"), f, "a spatial fanout")
            name = item.get("name")
            if not isinstance(name, str) or not _NAME.match(name):
                raise TreeError(self.value_at(item, "name", _join(f, "name")), f"expected a fanout dimension name, got {_short(name)}")
            if any(a.name == name for a in axes):
                raise TreeError(self.value_at(item, "name", _join(f, "name")), f"fanout dimension {name!r} is given twice")
            fanout = item.get("fanout")
            if isinstance(fanout, bool) or not isinstance(fanout, int) or fanout < 1:
                raise TreeError(self.value_at(item, "fanout", _join(f, "fanout")), f"expected fanout: int >= 1, got {_short(fanout)}")
            may = self.rule(item, "may_reuse", f, "All")
            must = self.rule(item, "must_reuse", f, "Nothing")
            axes.append(SpatialAxis(name, fanout, may, must, at))
        if len(axes) > 2:
            raise TreeError(axes[2].where, "a component has at most two fanout dimensions (docs/spatial.md)")
        return tuple(axes)

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
        self.check_keys(data, ("name", "attributes", "block", "clocks_per_call"), field, "!Compute")
        name = self.name(data, field, "!Compute", where)
        fields = self.attributes(data, field, ("block", "clocks_per_call"))
        block: tuple[tuple[str, int], ...] = ()
        if "block" in fields:
            value, at, holder, key = fields["block"]
            if value is None:
                value = _MDict()
                value.value_nodes, value.key_nodes = {}, {}
            blk = self.mapping(value, at, "a mapping from dimension name to int >= 1")
            pairs = []
            for d, b in blk.items():
                if not isinstance(d, str) or not _DIM.match(d):
                    raise TreeError(at, f"expected a dimension name (letters, digits, _), got {_short(d)}")
                if isinstance(b, bool) or not isinstance(b, int) or b < 1:
                    raise TreeError(self.value_at(blk, d, _join(at.field, d)), f"expected int >= 1, got {_short(b)}")
                pairs.append((d, b))
            block = tuple(pairs)
        clocks = self.number(*fields["clocks_per_call"][:2]) if "clocks_per_call" in fields else Fraction(1)
        return ComputeNode(name, block, clocks, replace(where, field=field))

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


def _short(value: object, limit: int = 60) -> str:
    if isinstance(value, _Tagged):
        return value.tag
    if isinstance(value, (_MDict, _MList)):
        value = type(value).__mro__[1](value)
    text = repr(value).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
    from mapsearch.spec.load import read_text

    return tree_from_text(read_text(path), str(path))


_TREE_MARKERS = re.compile(r"(^arch\s*:)|(!(Memory|ProcessingStage|Compute|Parallel|Hierarchical)\b)", re.MULTILINE)


def is_tree_file(path: str | Path) -> bool:
    """True when the file looks like a tree (a top-level ``arch:`` key or one of the tags); never raises."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return _TREE_MARKERS.search(text) is not None


# --------------------------------------------------------------------------
# Step 3: flattening.
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class KeepRule:
    """The ``tensors`` rules of one memory on a path."""

    level: str
    keep: SetRule | None
    may_keep: SetRule | None
    bypass: SetRule | None


@dataclass(frozen=True)
class ReuseRule:
    """A ``may_reuse`` or ``must_reuse`` expression of one fanout dimension."""

    level: str
    axis: str
    rule: SetRule


@dataclass(frozen=True)
class FlatPath:
    """One compute and the memories from the root down to it.

    ``architecture`` needs no workload: a ``may_reuse`` that is a plain union
    of names and roles is copied as such into ``MeshAxis.may_reuse``; any
    other expression (``~B``, ``All - A``) is written ``('none',)`` there (no
    multicast: the safe side) until :func:`path_architecture` binds it to a
    workload.
    """

    compute_name: str
    architecture: Architecture
    keep_rules: tuple[KeepRule, ...]
    must_reuse: tuple[ReuseRule, ...]
    may_reuse: tuple[ReuseRule, ...] = ()
    where: Where | None = None

    @property
    def name(self) -> str:
        return self.compute_name


def _items(nodes: Iterable[Node]) -> list[Node]:
    """A chain's nodes with nested ``!Hierarchical`` chains spliced in."""
    out: list[Node] = []
    for n in nodes:
        if isinstance(n, HierarchicalNode):
            out.extend(_items(n.nodes))
        else:
            out.append(n)
    return out


def _walk_chain(nodes: Iterable[Node], prefix: tuple[Node, ...], out: list[tuple[tuple[Node, ...], ComputeNode]]) -> None:
    """Paths of a chain: each node is the parent of the ones after it.

    After a ``!Parallel`` the chain goes on from the node above the
    ``!Parallel`` (the seed's rule): the nodes that follow are one more
    alternative, not children of the branches.
    """
    items = _items(nodes)
    pending: list[Node] = []  # appended since the chain start or the last !Parallel
    current = prefix
    for i, n in enumerate(items):
        if isinstance(n, ParallelNode):
            for branch in n.nodes:
                _walk_branch(branch, current, out)
            pending = []
            continue
        if isinstance(n, ComputeNode):
            if i + 1 < len(items):
                nxt = items[i + 1]
                raise TreeError(n.where, f"!Compute {n.name!r} is not a leaf: {_describe(nxt)} (at {nxt.where}) "
                                f"follows it in the same chain. A compute ends its path; to give a "
                                f"compute its own path beside others, put it in a !Parallel branch")
            out.append((current, n))
            return
        current = current + (n,)
        pending.append(n)
    if pending:
        first = pending[0]
        raise TreeError(first.where, f"this chain ends without a !Compute: {_describe(first)} and the nodes after it "
                        f"lead to no compute")


def _walk_branch(node: Node, prefix: tuple[Node, ...], out: list[tuple[tuple[Node, ...], ComputeNode]]) -> None:
    if isinstance(node, HierarchicalNode):
        _walk_chain(node.nodes, prefix, out)
    elif isinstance(node, ParallelNode):
        for branch in node.nodes:
            _walk_branch(branch, prefix, out)
    else:
        _walk_chain((node,), prefix, out)


def _describe(n: Node) -> str:
    if isinstance(n, MemoryNode):
        return f"!Memory {n.name!r}"
    if isinstance(n, StageNode):
        return f"!ProcessingStage {n.name!r}"
    if isinstance(n, ComputeNode):
        return f"!Compute {n.name!r}"
    return "!Parallel" if isinstance(n, ParallelNode) else "!Hierarchical"


def _fold(link: Link, stage: StageNode) -> Link:
    """A stage on a link: every word crosses both, so the slower cost per word per direction binds.

    Under ``time = max over links`` this is exact: ``max(w*a, w*b) = w*max(a, b)``.
    """
    s = stage.link
    if s.lines != link.lines:
        raise TreeError(stage.where, f"!ProcessingStage {stage.name!r} has lines: {s.lines} but the link it sits on "
                        f"has lines: {link.lines}; give both the same lines")
    return Link(max(link.input_clocks_per_word, s.input_clocks_per_word),
                max(link.output_clocks_per_word, s.output_clocks_per_word), link.lines)


def _mesh_axis(axis: SpatialAxis) -> MeshAxis:
    terms = union_terms(axis.may_reuse.expr)
    return MeshAxis(axis.name, axis.fanout, terms if terms is not None else ("none",))


def _path(tree: Tree, nodes: tuple[Node, ...], compute: ComputeNode) -> FlatPath:
    levels: list[Level] = []
    keep_rules: list[KeepRule] = []
    must: list[ReuseRule] = []
    may: list[ReuseRule] = []
    stages: list[StageNode] = []
    for n in nodes:
        if isinstance(n, StageNode):
            if not levels:
                raise TreeError(n.where, f"!ProcessingStage {n.name!r} has no !Memory above it; a stage sits on "
                                f"the link between two memories")
            stages.append(n)
            continue
        assert isinstance(n, MemoryNode)
        top = not levels
        if top:
            if n.link is not None:
                raise TreeError(n.where, f"!Memory {n.name!r} is the top of the path to {compute.name!r}: no link "
                                f"above it; remove its clocks-per-word fields")
        elif n.size is None:
            raise TreeError(n.where, f"!Memory {n.name!r}: only the top memory may be unbounded (size: inf)")
        link = None
        if not top:
            link = n.link or Link()
            for s in stages:
                link = _fold(link, s)
        stages = []
        mesh = tuple(_mesh_axis(a) for a in n.spatial)
        instances = math.prod(a.size for a in mesh)
        levels.append(Level(n.name, n.size, link, instances, mesh))
        if n.keep or n.may_keep or n.bypass:
            keep_rules.append(KeepRule(n.name, n.keep, n.may_keep, n.bypass))
        for a in n.spatial:
            may.append(ReuseRule(n.name, a.name, a.may_reuse))
            if union_terms(a.must_reuse.expr) != ("none",):
                must.append(ReuseRule(n.name, a.name, a.must_reuse))
    if stages:
        s = stages[0]
        raise TreeError(s.where, f"!ProcessingStage {s.name!r} sits between the last memory and !Compute "
                        f"{compute.name!r}; a stage must sit between two memories")
    if not levels:
        raise TreeError(compute.where, f"!Compute {compute.name!r} has no !Memory above it")
    memories = [n for n in nodes if isinstance(n, MemoryNode)]
    energy = None
    if compute.energy is not None and all(n.energy is not None for n in memories):  # a model only when complete
        energy = EnergyModel(tuple(n.energy for n in memories), compute.energy[0], compute.energy[1], tree.energy_unit)
    arch = Architecture(f"{tree.name}/{compute.name}", tuple(levels), Compute(compute.block, compute.clocks_per_call),
                        tree.double_buffering, energy=energy)
    return FlatPath(compute.name, arch, tuple(keep_rules), tuple(must), tuple(may), compute.where)


def flatten(tree: Tree) -> list[FlatPath]:
    """One :class:`FlatPath` per ``!Compute``, in the order the computes appear in the file."""
    found: list[tuple[tuple[Node, ...], ComputeNode]] = []
    _walk_chain(tree.root.nodes, (), found)
    if not found:
        raise TreeError(tree.root.where, "the tree has no !Compute")
    return [_path(tree, nodes, compute) for nodes, compute in found]


def single_architecture(tree: Tree) -> Architecture:
    """The architecture of a tree with exactly one compute (a preset, say), named after the tree.

    A tree with several computes is a TreeError naming them.
    """
    paths = flatten(tree)
    if len(paths) != 1:
        names = ", ".join(p.compute_name for p in paths)
        raise TreeError(tree.root.where, f"the tree has {len(paths)} computes ({names}); pick one with flatten() "
                        f"or solve them all with solve_tree()")
    return replace(paths[0].architecture, name=tree.name)


# --------------------------------------------------------------------------
# Step 4: binding a path to a workload.
# --------------------------------------------------------------------------


def _ordered(names: frozenset[str], workload: Workload) -> tuple[str, ...]:
    return tuple(t for t in workload.tensor_names if t in names)


def path_architecture(path: FlatPath, workload: Workload) -> Architecture:
    """``path.architecture`` with every ``may_reuse`` evaluated to the workload's tensor names.

    An expression that names no tensor becomes ``('none',)``. Unknown names
    are a TreeError at their place in the file.
    """
    if not path.may_reuse and not path.must_reuse:
        return path.architecture
    bound = {(r.level, r.axis): _ordered(r.rule.evaluate(workload), workload) for r in path.may_reuse}
    must = {key: _ordered(names, workload) for key, names in path_must_reuse(path, workload).items()}
    levels = []
    for lv in path.architecture.levels:
        mesh = tuple(replace(a, may_reuse=(bound[(lv.name, a.name)] or ("none",)) if (lv.name, a.name) in bound
                             else a.may_reuse, must_reuse=must.get((lv.name, a.name), ())) for a in lv.mesh)
        levels.append(replace(lv, mesh=mesh))
    return replace(path.architecture, levels=tuple(levels))


def path_must_reuse(path: FlatPath, workload: Workload) -> dict[tuple[str, str], frozenset[str]]:
    """``(level, fanout dimension) -> tensors`` that every instance along it must share.

    :func:`path_architecture` writes them into ``MeshAxis.must_reuse``; the
    solver then splits that axis only over dimensions that index none of
    them (model/spatial.py).
    """
    return {(r.level, r.axis): r.rule.evaluate(workload) for r in path.must_reuse}


def path_constraints(path: FlatPath, workload: Workload, homes: Mapping[str, str] | None = None,
                     name: str = "") -> "Constraints":
    """The path's ``tensors`` rules as solver constraints (``Constraints(keep=...)``).

    Per memory: tensors in ``keep`` are kept, tensors in ``bypass`` or outside
    ``may_keep`` (when given) are bypassed; a tensor in both is a TreeError.
    Rules at a tensor's home or above it, and at the innermost memory, are
    not decisions of the solver: a rule that agrees with what must happen
    there is dropped, one that contradicts it (bypass at the home or at the
    memory next to compute, keep above the home) raises :class:`UnusablePath`.
    The top memory's rules are dropped for a tensor homed lower (they
    describe the backing store, e.g. ``keep: All``).
    """
    from mapsearch.solve.constraints import Constraints

    arch = path.architecture
    homes = dict(homes or {})
    for t, level in homes.items():
        if level not in arch.level_names:
            raise UnusablePath(f"the home of {t}, {level!r}, is not on the path to {path.compute_name!r} "
                               f"({', '.join(arch.level_names)})", path.where)
    home_index = {t: arch.index(homes.get(t, arch.levels[0].name)) for t in workload.tensor_names}
    innermost = arch.depth - 1
    keep: list[tuple[str, str, bool]] = []
    for rule in path.keep_rules:
        i = arch.index(rule.level)
        kept = rule.keep.evaluate(workload) if rule.keep else frozenset()
        bypassed = rule.bypass.evaluate(workload) if rule.bypass else frozenset()
        if rule.may_keep is not None:
            bypassed = bypassed | (frozenset(workload.tensor_names) - rule.may_keep.evaluate(workload) - kept)
        both = kept & (rule.bypass.evaluate(workload) if rule.bypass else frozenset())
        if both:
            raise TreeError(rule.bypass.where, f"{', '.join(_ordered(both, workload))} both kept and bypassed at "
                            f"{rule.level} (keep: {rule.keep.text!r}, bypass: {rule.bypass.text!r})")
        for t in workload.tensor_names:
            flag = True if t in kept else False if t in bypassed else None
            if flag is None:
                continue
            h = home_index[t]
            src = rule.keep if flag else (rule.bypass or rule.may_keep)
            if i == 0 and i != h:
                continue  # the top memory's rules describe the backing store; a home below it overrides them
            if i < h and flag:
                raise UnusablePath(f"{rule.level} keeps {t} ({src.text!r}) but is above {t}'s home "
                                   f"{arch.levels[h].name}", src.where)
            if i == h and not flag:
                raise UnusablePath(f"{rule.level} bypasses {t} ({src.text!r}) but is its home", src.where)
            if i == innermost and i > h and not flag:
                raise UnusablePath(f"{rule.level} bypasses {t} ({src.text!r}) but is the memory next to "
                                   f"{path.compute_name!r} on this path, which holds every operand", src.where)
            if h < i < innermost:
                keep.append((rule.level, t, flag))
    return Constraints(name=name or f"tensors rules of {path.compute_name}", keep=tuple(keep))


# --------------------------------------------------------------------------
# Solving every path.
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class PathOutcome:
    """One path's result: a SolveResult, or why it was skipped."""

    compute_name: str
    architecture: Architecture
    result: "SolveResult | None" = None
    skipped: str | None = None


def _rank(result: "SolveResult", objective: str) -> tuple:
    figures = result.schedule.predicted
    time = figures.time if figures is not None else result.phases[0].value
    words = figures.words_total if figures is not None else result.phases[-1].value
    if objective == "time":
        return (time, words)
    if objective == "words":
        return (words, time)
    return (result.phases[0].value, time, words)


def solve_tree(tree: Tree, workload: Workload, homes: Mapping[str, str] | None = None,
               options: "SolveOptions | None" = None, constraints: "Constraints | None" = None,
               ) -> tuple[str, "SolveResult", tuple[PathOutcome, ...]]:
    """Solve the workload on every path; return ``(best compute name, its SolveResult, every outcome)``.

    The best path has the best objective (``time``: the shortest time, then
    the fewest words; ``words``: the fewest words, then the time; ``energy``:
    the energy); a tie goes to the path listed first. A path the solver
    cannot handle (:class:`~mapsearch.model.problem.UnsupportedProblem`, e.g.
    a mesh), whose rules contradict the homes, that is infeasible or runs out
    of time is skipped with its reason; :class:`NoUsablePath` when every path
    is. ``constraints`` (optional) are added to every path's ``tensors``
    rules; a path lacking a level they name is skipped.
    """
    from mapsearch.model.problem import Problem, UnsupportedProblem
    from mapsearch.solve.constraints import Constraints, check_constraints
    from mapsearch.solve.options import SolveOptions
    from mapsearch.solve.run import solve

    options = options or SolveOptions()
    extra = constraints or Constraints()
    homes = dict(homes or {})
    paths = flatten(tree)
    bound = [(p, path_architecture(p, workload)) for p in paths]  # unknown names: an error before any solve
    outcomes: list[PathOutcome] = []
    for path, arch in bound:
        try:
            rules = path_constraints(path, workload, homes)
        except UnusablePath as e:
            outcomes.append(PathOutcome(path.compute_name, arch, skipped=str(e)))
            continue
        merged = replace(extra, name=extra.name or rules.name, keep=rules.keep + extra.keep)
        try:
            check_constraints(merged, workload, arch, "constraints")
        except SpecError as e:
            outcomes.append(PathOutcome(path.compute_name, arch, skipped=f"constraints do not fit this path: {e}"))
            continue
        problem = Problem(workload, arch, tuple(sorted(homes.items())))
        try:
            result = solve(problem, merged, options)
        except UnsupportedProblem as e:
            reason = f"not supported by the solver yet: {e}"
        except InfeasibleError as e:
            reason = f"infeasible: {e}"
        except SolverTimeout as e:
            reason = f"timed out: {e}"
        else:
            log.info("path %s: %s, %s", path.compute_name, result.status, _rank(result, options.objective))
            outcomes.append(PathOutcome(path.compute_name, arch, result=result))
            continue
        log.info("path %s skipped: %s", path.compute_name, reason)
        outcomes.append(PathOutcome(path.compute_name, arch, skipped=reason))
    solved = [o for o in outcomes if o.result is not None]
    if not solved:
        reasons = "; ".join(f"{o.compute_name}: {o.skipped}" for o in outcomes)
        raise NoUsablePath(f"{tree.source}: no path of {tree.name!r} could be solved ({reasons})")
    best = min(solved, key=lambda o: _rank(o.result, options.objective))  # min keeps the first of equals
    return best.compute_name, best.result, tuple(outcomes)
