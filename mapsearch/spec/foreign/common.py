"""What the foreign-format readers share: their errors, their YAML loader and Jinja rendering.

Errors are one line, as everywhere in mapsearch (``FILE: FIELD: expected
..., got ...``). Two kinds:

- :class:`ForeignSpecError`: the file is not valid in its own format (a
  missing field, a wrong type);
- :class:`Untranslatable`: the file is valid but says something mapsearch's
  model cannot express exactly (a compute-in-memory component, an energy
  that only a peer's plug-in computes). The CLI exits 2 on both: mapsearch
  never solves a silently different model.

What the model expresses differently but faithfully enough to solve (for
example a memory port shared by two links) is a *note*: one line each, kept
with the translated spec and printed by the CLI as a warning.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

import yaml

from mapsearch.errors import SpecError

__all__ = [
    "ForeignSpecError",
    "Untranslatable",
    "Tagged",
    "bad",
    "untranslatable",
    "parse_tagged_yaml",
    "render_jinja",
    "exact",
    "parse_var",
]


class ForeignSpecError(SpecError):
    """A peer's file that is not valid in its own format."""


class Untranslatable(SpecError):
    """A valid peer file that mapsearch's model cannot express exactly."""


def bad(source: str, field: str, expected: str, got: object) -> ForeignSpecError:
    text = repr(got).replace("\n", " ")
    text = text if len(text) <= 60 else text[:57] + "..."
    return ForeignSpecError(source, field, expected, got, detail=f"expected {expected}, got {text}")


def untranslatable(source: str, field: str, why: str) -> Untranslatable:
    return Untranslatable(source, field, "", None, detail="cannot be translated exactly: " + " ".join(why.split()))


@dataclass(frozen=True)
class Tagged:
    """A YAML node with a tag (``!Memory {...}``): the tag without ``!`` and the plain value."""

    tag: str
    value: Any
    line: int


class _TagLoader(yaml.SafeLoader):
    """SafeLoader that keeps every ``!Tag`` as a :class:`Tagged` value."""


def _tagged(loader: _TagLoader, suffix: str, node: yaml.Node) -> Tagged:
    if isinstance(node, yaml.MappingNode):
        value: Any = loader.construct_mapping(node, deep=True)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_scalar(node)
    return Tagged(suffix, value, node.start_mark.line + 1)


_TagLoader.add_multi_constructor("!", _tagged)


class _StrictTagLoader(_TagLoader):
    """As :class:`_TagLoader`, and a key given twice in one mapping is an error."""


def _strict_mapping(loader: _StrictTagLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, (str, int, float, bool)) and key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"key {key!r} is given twice in one mapping",
                                                    key_node.start_mark)
        seen.add(key) if isinstance(key, (str, int, float, bool)) else None
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictTagLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _strict_mapping)


def parse_tagged_yaml(text: str, source: str, *, duplicate_keys: str = "error") -> Any:
    """The document with tags kept; malformed YAML is one line with the line number.

    ``duplicate_keys="last"`` reads a key given twice as the peer's own
    loader does (PyYAML keeps the last one; ZigZag's shipped files rely on it).
    """
    loader_class = _StrictTagLoader if duplicate_keys == "error" else _TagLoader
    try:
        return yaml.load(text, Loader=loader_class)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}" if mark is not None else ""
        raise ForeignSpecError(source, where, "", None, detail=f"malformed YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise ForeignSpecError(source, "", "", None, detail=f"malformed YAML: {e}") from None


_JINJA = re.compile(r"{%|{{|{#")


def render_jinja(text: str, source: str, variables: Mapping[str, Any]) -> str:
    """Render a Jinja2 template (AccelForge's templated YAML) with ``variables``, as AccelForge does.

    Files without Jinja syntax are returned unchanged. As in AccelForge a
    variable the template uses without a ``default`` must be given
    (``--var NAME=VALUE``); any template error is one line.
    """
    if not _JINJA.search(text):
        return text
    try:
        import jinja2
    except ImportError:
        raise ForeignSpecError(source, "", "", None, detail="a Jinja-templated file needs jinja2: "
                               "pip install 'mapsearch[peers]'") from None

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    try:
        return env.from_string(text).render(**dict(variables))
    except jinja2.TemplateSyntaxError as e:
        raise ForeignSpecError(source, f"line {e.lineno}", "", None, detail=f"Jinja template: {e.message}") from None
    except jinja2.UndefinedError as e:
        name = re.search(r"'([^']+)' is undefined", str(e))
        hint = f"; give it with --var {name.group(1)}=VALUE" if name else ""
        raise ForeignSpecError(source, "", "", None, detail=f"Jinja template: {e}{hint}") from None
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError) as e:
        raise ForeignSpecError(source, "", "", None, detail=f"Jinja template: {e}") from None


def exact(value: Any) -> Fraction | float:
    """An int, a float (read as the decimal it prints as) or a Fraction as an exact Fraction; inf stays inf."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            return value
        return Fraction(repr(value))
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    raise TypeError(f"not a number: {value!r}")


def parse_var(item: str) -> tuple[str, Any]:
    """``NAME=VALUE`` of ``--var``: the value read as YAML (``8`` is an int, ``inf`` text, ``[1, 2]`` a list)."""
    name, eq, value = item.partition("=")
    if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name.strip()):
        raise SpecError("--var", "", "", None, detail=f"expected NAME=VALUE with NAME a variable name, got {item!r}")
    try:
        parsed = yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError:
        parsed = value
    return name.strip(), parsed
