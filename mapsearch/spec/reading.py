"""Steps 1 of reading a spec: the file's text and its YAML, and the one-line errors every reader raises.

A syntax error names the file and line; a key given twice is an error too,
not a silent overwrite. The helpers name a field by its path
(``levels[2].capacity``) and read exact numbers (``1/3``, ``0.25``).
Step 2 (the JSON Schema) is :mod:`mapsearch.spec.schema`; steps 3 and 4
(semantic checks, frozen objects) are :mod:`mapsearch.spec.load`.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable

import yaml

from mapsearch.errors import SpecError
from mapsearch.spec import limits
from mapsearch.spec.architecture import as_fraction

__all__ = ["read_text", "parse_yaml", "read_yaml", "join_path", "fraction_to_json", "fraction_from_json", "construct_int",
           "check_text", "AmbiguousNumber"]


# --------------------------------------------------------------------------
# Small helpers shared with the schedule JSON reader.
# --------------------------------------------------------------------------


def _short(value: object, limit: int = 60) -> str:
    """``repr`` on one line, cut to ``limit`` characters (a huge int by its number of digits)."""
    return limits.describe(value, limit)


def _error(source: str, field: str, expected: str, got: object) -> SpecError:
    """``source: field: expected X, got Y`` with ``Y`` kept short and on one line."""
    return SpecError(source, field, expected, got, detail=f"expected {expected}, got {_short(got)}")


def _note(source: str, field: str, detail: str) -> SpecError:
    """``source: field: detail`` for errors that do not read as expected/got."""
    return SpecError(source, field, "", None, detail=" ".join(detail.split()))


def join_path(parts: Iterable[object], prefix: str = "") -> str:
    """``['levels', 2, 'capacity']`` -> ``'levels[2].capacity'`` (after ``prefix``)."""
    out = prefix
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif not _PLAIN_KEY.match(str(p)) or len(str(p)) > _KEY_LIMIT:
            out += f"[{_short(str(p), _KEY_LIMIT)}]"  # e.g. a key with spaces or newlines, or a whole document
        else:
            out += f".{p}" if out else str(p)
    return out


_KEY_LIMIT = 40  # characters of one key in a field path
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*\Z")  # \Z: "$" also matches before a final newline


def check_text(data: object, source: str, prefix: str = "") -> None:
    """Refuse text that cannot be printed: a lone surrogate (``"\\ud800"`` in JSON or YAML) in a key or a value.

    Names, tensor names, level names... end up in reports, error lines and
    files, which are UTF-8; checked once where a document is read.
    """
    found = limits.surrogate_at(data)
    if found is None:
        return
    path, text, is_key = found
    what = "a key" if is_key else "text"
    raise _error(source, join_path(path, prefix), f"{what} without unpaired surrogates (U+D800..U+DFFF)", text)


def fraction_to_json(value: Fraction | int) -> int | str:
    """An exact number as JSON: an int when integral, else the text ``'a/b'``."""
    value = Fraction(value)
    return value.numerator if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def fraction_from_json(value: object, source: str, field: str, *, positive: bool = False, nonnegative: bool = False) -> Fraction:
    """The exact value of an int, a decimal, or ``'a/b'`` text; SpecError naming ``field`` otherwise."""
    want = "a number > 0 (int, decimal or 'a/b')" if positive else "a number (int, decimal or 'a/b')"
    if nonnegative:
        want = "a number >= 0 (int, decimal or 'a/b')"
    try:
        x = as_fraction(value)
    except (TypeError, ValueError, ZeroDivisionError):
        raise _error(source, field, want, value) from None
    if (positive and x <= 0) or (nonnegative and x < 0):
        raise _error(source, field, want, value)
    return x


# --------------------------------------------------------------------------
# Step 1: YAML.
# --------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: dict[object, None] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key: let SafeLoader report it
            break
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is given twice in one mapping", key_node.start_mark
            )
        seen[key] = None
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


class AmbiguousNumber(yaml.constructor.ConstructorError):
    """A plain scalar YAML 1.1 reads as a number its writer rarely means: ``1:00`` (base 60: 60), ``010`` (octal: 8)."""


_OCTAL = re.compile(r"[-+]?0[0-7]+\Z")


def construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """SafeLoader's int, with an int too long for Python to convert as a YAML error at its line.

    YAML 1.1 (PyYAML) reads ``1:00`` as 60 and ``010`` as 8; those are
    refused (:class:`AmbiguousNumber`) rather than silently read as numbers
    nobody wrote.
    """
    digits = node.value.replace("_", "")
    try:
        value = yaml.SafeLoader.construct_yaml_int(loader, node)
    except ValueError:
        raise yaml.constructor.ConstructorError(
            None, None, f"an integer of {len(node.value):,} characters, beyond what Python converts", node.start_mark
        ) from None
    if ":" in digits:
        raise AmbiguousNumber(None, None, f"{limits.describe(node.value)} reads as the base-60 number {value} in "
                              f"YAML 1.1; write {value}, or quote it for text", node.start_mark)
    if _OCTAL.match(digits):
        raise AmbiguousNumber(None, None, f"{limits.describe(node.value)} reads as the octal number {value} in "
                              f"YAML 1.1; drop the leading zero (or write {value} if octal was meant)", node.start_mark)
    return value


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    """SafeLoader's float, refusing YAML 1.1's base-60 floats (``1:30.5``) as :func:`construct_int` does."""
    value = yaml.SafeLoader.construct_yaml_float(loader, node)
    if ":" in node.value:
        raise AmbiguousNumber(None, None, f"{limits.describe(node.value)} reads as the base-60 number {value} in "
                              "YAML 1.1; write the number, or quote it for text", node.start_mark)
    return value


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", construct_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def read_text(path: str | Path) -> str:
    """The file's text; a missing or unreadable file is a one-line SpecError."""
    source = str(path)
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _note(source, "", "no such file") from None
    except IsADirectoryError:
        raise _note(source, "", "is a directory, expected a file") from None
    except UnicodeDecodeError as e:
        raise _note(source, "", f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise _note(source, "", f"cannot read: {e.strerror or e}") from None


def parse_yaml(text: str, source: str) -> Any:
    """Parse YAML text; a syntax error names the source and the line, too deep a nesting is refused."""
    loader = None
    try:
        loader = _StrictLoader(text)  # refuses characters YAML forbids (NUL, ...) already here
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}" if mark is not None else ""
        problem = e.problem or e.context or "syntax error"
        raise _note(source, where, problem if isinstance(e, AmbiguousNumber) else f"malformed YAML: {problem}") from None
    except yaml.YAMLError as e:
        raise _note(source, "", f"malformed YAML: {e}") from None
    except RecursionError:
        raise _note(source, "", f"nested deeper than {limits.MAX_DEPTH} levels; the specs nest a few") from None
    finally:
        if loader is not None:
            loader.dispose()
    deep = limits.depth_error(data)
    if deep is not None:
        raise _note(source, "", deep)
    check_text(data, source)
    return data


def read_yaml(path: str | Path) -> Any:
    return parse_yaml(read_text(path), str(path))
