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
the frozen tree nodes (checking each field: :mod:`mapsearch.spec.tree_fields`),
then :func:`flatten` into :class:`FlatPath` objects. A path's ``tensors``
rules and ``may_reuse`` expressions name tensors, so they are bound to a
workload separately (:func:`path_constraints`, :func:`path_architecture`).

Every error is one :class:`TreeError` line that starts with
``FILE:LINE:COLUMN`` of the offending YAML, e.g.
``arch.yaml:7:20: arch.nodes[1].tensors.keep: unknown tensor 'Q' ...``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from mapsearch.spec import limits
from mapsearch.spec.architecture import SPLIT_BOUND_OPERATORS, Link
from mapsearch.spec.reading import read_text
from mapsearch.spec.tree_fields import _NAME, _Fields, _guard, _join, _short
from mapsearch.spec.tree_nodes import (
    ComputeNode,
    HierarchicalNode,
    LoopBound,
    MemoryNode,
    Node,
    ParallelNode,
    SpatialAxis,
    StageNode,
    Tree,
)
from mapsearch.spec.tree_paths import flatten
from mapsearch.spec.tree_yaml import TAGS, TreeError, Where, _MDict, _MList, _parse_yaml, _Tagged, is_tree_file

__all__ = ["load_tree", "parse_tree", "tree_from_text", "is_tree_file"]


_DIM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


class _Builder(_Fields):
    """Builds nodes from the marked YAML, one field at a time (the fields: :class:`_Fields`)."""

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
