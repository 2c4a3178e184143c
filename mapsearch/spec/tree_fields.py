"""Reading the fields of a tree architecture file (for tree.py, which builds its nodes): where a value is
(``FILE:LINE:COLUMN``), and each kind of field checked into what the nodes hold: mappings with known keys, unique
names, fields given directly or under ``attributes:``, exact numbers, sizes in words, links, set expressions.
Every problem is one :class:`TreeError` at the offending YAML.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import replace
from fractions import Fraction
from typing import Any, Iterable, Mapping

import yaml

from mapsearch.spec import limits
from mapsearch.spec.architecture import SEPARATE, SHARED, Link, as_fraction
from mapsearch.spec.set_expr import SetExprSyntaxError, parse_set_expr
from mapsearch.spec.tree_nodes import SetRule
from mapsearch.spec.tree_yaml import TreeError, Where, _MDict, _MList, _Tagged

_NAME = re.compile(r"^[^\s]+\Z")  # \Z: "$" also matches before a final newline
_PRODUCT = re.compile(r"^\s*\d+(\s*\*\s*\d+)*\s*$")


class _Fields:
    """Reads the fields of the marked YAML, one at a time; :class:`tree._Builder` builds the nodes on it."""

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
