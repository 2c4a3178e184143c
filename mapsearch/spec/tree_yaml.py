"""Step 1 of reading a tree file (``docs/tree-format.md``): YAML with the five tags and marks.

The loader knows ``!Memory``, ``!ProcessingStage``, ``!Compute``,
``!Parallel`` and ``!Hierarchical``, remembers where every mapping, list and
value starts (:class:`Where`), and rejects a key given twice. Every problem is
one :class:`TreeError` line that starts with ``FILE:LINE:COLUMN``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from mapsearch.errors import SpecError
from mapsearch.spec import limits
from mapsearch.spec.reading import construct_int

__all__ = ["TAGS", "Where", "TreeError", "is_tree_file"]

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


def _construct_str(loader: _TreeLoader, node: yaml.ScalarNode) -> str:
    """SafeLoader's text, refusing a lone surrogate (a ``"\\ud800"`` escape): no report could print it."""
    text = yaml.SafeLoader.construct_yaml_str(loader, node)
    if limits.surrogate_at(text) is not None:
        raise TreeError(_mark_where(loader, node.start_mark), "expected text without unpaired surrogates "
                        f"(U+D800..U+DFFF), got {limits.describe(text)}")
    return text


def _unknown_tag(loader: _TreeLoader, suffix: str, node: yaml.Node) -> Any:
    tag = node.tag
    close = difflib.get_close_matches(tag, TAGS, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise TreeError(_mark_where(loader, node.start_mark), f"unknown tag {tag}{hint}; expected one of {', '.join(TAGS)}")


_TreeLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_TreeLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)
_TreeLoader.add_constructor("tag:yaml.org,2002:int", construct_int)
_TreeLoader.add_constructor("tag:yaml.org,2002:str", _construct_str)
for _tag in TAGS:
    _TreeLoader.add_constructor(_tag, _construct_tagged)
_TreeLoader.add_multi_constructor("!", _unknown_tag)
_TreeLoader.add_multi_constructor("tag:yaml.org,2002:python/", _unknown_tag)


def _parse_yaml(text: str, source: str) -> Any:
    """The YAML document with marks; malformed YAML is one TreeError at the problem's line and column."""
    loader = None
    try:
        loader = _TreeLoader(text)  # refuses characters YAML forbids (NUL, ...) already here
        loader.source = source
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or e.context or "syntax error"
        where = Where(source, mark.line + 1, mark.column + 1) if mark is not None else Where(source, 1, 1)
        raise TreeError(where, f"malformed YAML: {problem}") from None
    except yaml.YAMLError as e:
        raise TreeError(Where(source, 1, 1), f"malformed YAML: {e}") from None
    except RecursionError:
        raise TreeError(Where(source, 1, 1), f"nested deeper than {limits.MAX_DEPTH} levels; the specs nest a few") from None
    finally:
        if loader is not None:
            loader.dispose()
    deep = limits.depth_error(data)
    if deep is not None:
        raise TreeError(Where(source, 1, 1), deep)
    return data


_TREE_MARKERS = re.compile(r"(^arch\s*:)|(!(Memory|ProcessingStage|Compute|Parallel|Hierarchical)\b)", re.MULTILINE)


def is_tree_file(path: str | Path) -> bool:
    """True when the file looks like a tree (a top-level ``arch:`` key or one of the tags); never raises."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return _TREE_MARKERS.search(text) is not None
