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

The loader does what the peers' own loaders (accelergy's and AccelForge's
``load_yaml``) do before any reader sees the data: Jinja with
``include_text('path')`` (:func:`render_jinja`), and the recursive merge key
``<<<`` (:func:`merge_keys`) next to YAML's shallow ``<<``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

import yaml

from mapsearch.errors import SpecError, short_repr

__all__ = [
    "ForeignSpecError",
    "Untranslatable",
    "Tagged",
    "bad",
    "untranslatable",
    "parse_tagged_yaml",
    "render_jinja",
    "merge_keys",
    "exact",
    "parse_var",
    "over_limit",
    "check_tree_limits",
]


class ForeignSpecError(SpecError):
    """A peer's file that is not valid in its own format."""


class Untranslatable(SpecError):
    """A valid peer file that mapsearch's model cannot express exactly."""


def bad(source: str, field: str, expected: str, got: object) -> ForeignSpecError:
    text = short_repr(got, 60)  # a huge int has no repr: its size instead
    return ForeignSpecError(source, field, expected, got, detail=f"expected {expected}, got {text}")


def untranslatable(source: str, field: str, why: str) -> Untranslatable:
    return Untranslatable(source, field, "", None, detail="cannot be translated exactly: " + " ".join(why.split()))


def over_limit(source: str, field: str, why: str | None) -> None:
    """Raise one line naming the file and the field when ``why`` (a message of mapsearch/spec/limits.py's
    ``*_error`` helpers) says a number passes the native formats' caps."""
    if why is not None:
        raise ForeignSpecError(source, field, "", None, detail=why)


def check_tree_limits(tree: Any, source: str) -> None:
    """The native formats' caps (mapsearch/spec/limits.py) on a translated tree, before anything is built from
    it: each memory's words, each mesh axis and a level's instances, each link's clocks per word, the compute's
    block and clocks per call. The readers check the fields they read where they read them; this catches what
    a translation computed from several (a size in bits / a word's bits, a bandwidth's inverse)."""
    from mapsearch.spec import limits
    from mapsearch.spec.tree_nodes import ComputeNode, MemoryNode

    stack = [tree.root]
    while stack:
        node = stack.pop()
        if hasattr(node, "nodes"):
            stack.extend(reversed(node.nodes))
            continue
        where = getattr(node, "where", None)
        src = getattr(where, "source", None) or source
        field = getattr(where, "field", None) or getattr(node, "name", "")
        if isinstance(node, MemoryNode):
            over_limit(src, f"{field} ({node.name})", limits.capacity_error(node.size))
            for axis in node.spatial:
                over_limit(src, f"{field} ({node.name})", limits.instances_error(axis.fanout, axis.name))
            over_limit(src, f"{field} ({node.name})", limits.instances_error(math.prod(a.fanout for a in node.spatial)))
            if node.link is not None:
                for cost in (node.link.input_clocks_per_word, node.link.output_clocks_per_word):
                    over_limit(src, f"{field} ({node.name}): clocks per word", limits.exact_error(Fraction(cost)))
        elif isinstance(node, ComputeNode):
            for d, b in node.block:
                over_limit(src, f"{field} ({node.name}).block.{d}", limits.extent_error(b))
            over_limit(src, f"{field} ({node.name}): clocks per call", limits.exact_error(Fraction(node.clocks_per_call)))


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
    # The keys written in this mapping, before YAML's ``<<`` adds the merged ones (which its own keys override).
    seen: set = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, (str, int, float, bool)) and key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"key {key!r} is given twice in one mapping",
                                                    key_node.start_mark)
        seen.add(key) if isinstance(key, (str, int, float, bool)) else None
    loader.flatten_mapping(node)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictTagLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _strict_mapping)


def parse_tagged_yaml(text: str, source: str, *, duplicate_keys: str = "error") -> Any:
    """The document with tags kept; malformed YAML is one line with the line number.

    ``duplicate_keys="last"`` reads a key given twice as the peer's own
    loader does (PyYAML keeps the last one; ZigZag's shipped files rely on it).
    """
    loader_class = _StrictTagLoader if duplicate_keys == "error" else _TagLoader
    try:
        data = yaml.load(text, Loader=loader_class)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}" if mark is not None else ""
        raise ForeignSpecError(source, where, "", None, detail=f"malformed YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise ForeignSpecError(source, "", "", None, detail=f"malformed YAML: {e}") from None
    return merge_keys(data, source)


_MERGE = "<<<"


def merge_keys(data: Any, source: str, field: str = "", _done: dict | None = None) -> Any:
    """``data`` with every ``<<<:`` key merged into its mapping, as accelergy's and AccelForge's loaders do.

    ``<<<`` is timeloopfe's recursive merge: the mapping's own keys win; a key
    both have whose values are mappings is merged the same way, whose values
    are lists is the own list followed by the merged one; a key only the
    merged mapping has is added. A list of mappings under ``<<<`` is merged
    first to last (the first one's keys win). YAML's own ``<<`` (shallow: the
    own keys win, nothing below is merged) is PyYAML's already. Nothing is
    changed in place: anchors shared by several aliases stay as written.

    A node shared by several aliases is merged once and its result shared
    (``_done``, by identity): the walk is linear in the file's nodes, not in
    the tree its aliases spell out (a "billion laughs" file hung it).
    """
    done = {} if _done is None else _done
    if id(data) in done:
        return done[id(data)][1]
    if isinstance(data, Tagged):
        out: Any = Tagged(data.tag, merge_keys(data.value, source, field, done), data.line)
    elif isinstance(data, list):
        out = [merge_keys(v, source, f"{field}[{i}]", done) for i, v in enumerate(data)]
    elif isinstance(data, dict):
        out = {k: merge_keys(v, source, f"{field}.{k}" if field else str(k), done) for k, v in data.items()}
        if _MERGE in out:
            where = f"{field}.{_MERGE}" if field else _MERGE
            out = _deep_merge(out, out.pop(_MERGE), source, where)
    else:
        return data
    done[id(data)] = (data, out)  # the input is kept alive with its result, so its id is not reused meanwhile
    return out


def _deep_merge(into: dict, other: Any, source: str, field: str) -> dict:
    if isinstance(other, list):
        combined: dict = {}
        for i, item in enumerate(other):
            combined = _deep_merge(combined, item, source, f"{field}[{i}]")
        other = combined
    if not isinstance(other, dict):
        raise bad(source, field, "a mapping (or a list of mappings) to merge", other)
    out = dict(into)
    for k, v in other.items():
        if k not in out:
            out[k] = v
        elif isinstance(out[k], dict) and isinstance(v, dict):
            out[k] = _deep_merge(out[k], v, source, field)
        elif isinstance(out[k], list) and isinstance(v, list):
            out[k] = out[k] + v
    return out


_JINJA = re.compile(r"{%|{{|{#")


_INCLUDE_DEPTH = 8  # files including files: deeper than any peer's examples, shallow enough to stop a cycle early


def render_jinja(text: str, source: str, variables: Mapping[str, Any], _including: tuple[Path, ...] = (),
                 _roots: tuple[Path, ...] | None = None) -> str:
    """Render a Jinja2 template (AccelForge's and timeloopfe's templated YAML) with ``variables``, as they do.

    Files without Jinja syntax are returned unchanged. As in AccelForge a
    variable the template uses without a ``default`` must be given
    (``--var NAME=VALUE``); any template error is one line.

    ``include_text('path')`` (accelergy's and AccelForge's Jinja global)
    pastes another file's text, itself rendered with the same variables, in
    place; ``path`` is relative to the including file. It must stay under
    the first file's folder or the folder above it (the peers' examples
    include ``_include.yaml`` and ``../problem_base.yaml``), names one file
    (no glob pattern), and a file may not include itself, directly or not. Rendering is sandboxed and
    bounded (:mod:`mapsearch.spec.foreign.jinja_env`): a template is input, never code to trust.
    """
    if not _JINJA.search(text):
        return text
    try:
        import jinja2
    except ImportError:
        raise ForeignSpecError(source, "", "", None, detail="a Jinja-templated file needs jinja2: "
                               "pip install 'mapsearch[peers]'") from None

    here = Path(source).resolve() if source and Path(source).is_file() else None
    if _roots is None:
        _roots = (here.parent, here.parent.parent) if here is not None else ()

    def include_text(p: Any) -> str:
        return _include_text(p, source, here, variables, _including, _roots)

    from mapsearch.spec.foreign.jinja_env import BoundedEnvironment

    env = BoundedEnvironment()  # sandboxed and bounded: a template is input, not code to trust
    env.globals["include_text"] = include_text
    try:
        return env.from_string(text).render(**dict(variables))
    except SpecError:
        raise
    except jinja2.TemplateSyntaxError as e:
        raise ForeignSpecError(source, f"line {e.lineno}", "", None, detail=f"Jinja template: {e.message}") from None
    except jinja2.UndefinedError as e:
        name = re.search(r"'([^']+)' is undefined", str(e))
        hint = f"; give it with --var {name.group(1)}=VALUE" if name else ""
        raise ForeignSpecError(source, "", "", None, detail=f"Jinja template: {e}{hint}") from None
    except jinja2.exceptions.SecurityError as e:
        raise ForeignSpecError(source, "", "", None, detail=f"Jinja template refused: {e}") from None
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError, OverflowError, RecursionError) as e:
        raise ForeignSpecError(source, "", "", None, detail=f"Jinja template: {e}") from None


def _include_text(p: Any, source: str, here: Path | None, variables: Mapping[str, Any],
                  including: tuple[Path, ...], roots: tuple[Path, ...]) -> str:
    """The rendered text of the file ``include_text(p)`` names (see :func:`render_jinja`)."""
    field = f"include_text({p!r})"
    if here is None:
        raise bad(source, field, "a template read from a file (the path is relative to it)", p)
    if not isinstance(p, str) or not p.strip() or any(c in p for c in "*?["):
        raise bad(source, field, "the path of one file (no glob pattern)", p)
    target = (here.parent / p).resolve()

    def refuse(expected: str, got: str) -> ForeignSpecError:  # paths in full: they are the point of the message
        return ForeignSpecError(source, field, "", None, detail=f"expected {expected}, got {got}")

    if not any(target == r or r in target.parents for r in roots):
        raise refuse(f"a file under {' or '.join(str(r) for r in dict.fromkeys(roots))}", str(target))
    chain = including + (here,)
    if target in chain:
        raise refuse("a file that does not include itself", " -> ".join(str(f) for f in chain + (target,)))
    if len(chain) > _INCLUDE_DEPTH:
        raise refuse(f"at most {_INCLUDE_DEPTH} files including each other", str(len(chain)))
    if not target.is_file():
        raise refuse("an existing file", str(target))
    try:
        text = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise refuse("a readable UTF-8 text file", f"{target} ({e})") from None
    return render_jinja(text, str(target), variables, chain, roots)


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
