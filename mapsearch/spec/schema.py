"""Step 2 of reading a spec: its JSON Schema, one line for the first violation; and the schemas' registry.

The first error names its field by its path, e.g. ``levels[2].capacity``,
and says what was expected (a schema's ``x-expected`` / ``x-detail``, else a
sentence made from the failed keyword).

Every file format mapsearch reads has a schema shipped in the package
(``mapsearch/**/*.schema.json``; the list is in docs/modules.md). A schema's
``$id`` is :data:`SCHEMA_ID_BASE` followed by its path in the repository, so
it is the URL of the published file, and schemas refer to each other by
relative ``$ref`` (``../spec/schemas/workload.schema.json``), which resolves
against that ``$id`` as well as against the file on disk. :func:`registry`
holds every bundled schema under its ``$id``, for any validator::

    import jsonschema
    from mapsearch.spec.schema import registry, schema
    jsonschema.Draft202012Validator(schema("workload"), registry=registry()).validate(data)
"""

from __future__ import annotations

import difflib
import math
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import jsonschema
from referencing import Registry, Resource

from mapsearch.errors import SpecError
from mapsearch.spec.reading import _error, _note, check_text, join_path

__all__ = ["SCHEMA_DIR", "SCHEMA_ID_BASE", "schema", "schema_files", "schema_id", "registry", "validate_against"]

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
PACKAGE_DIR = SCHEMA_DIR.parents[1]  # mapsearch/
SCHEMA_ID_BASE = "https://raw.githubusercontent.com/mapsearch/mapsearch/main/"


def schema_files() -> list[Path]:
    """Every schema shipped in the package, sorted."""
    return sorted(PACKAGE_DIR.rglob("*.schema.json"))


def schema_id(path: str | Path) -> str:
    """The ``$id`` a bundled schema must carry: :data:`SCHEMA_ID_BASE` + its path from the repository root."""
    return SCHEMA_ID_BASE + Path(path).resolve().relative_to(PACKAGE_DIR.parent).as_posix()


@lru_cache(maxsize=None)
def registry() -> Registry:
    """A :class:`referencing.Registry` of every bundled schema by its ``$id``: every ``$ref`` resolves in it."""
    return Registry().with_resources(
        (schema_id(p), Resource.from_contents(_load_schema(str(p)))) for p in schema_files())


def _is_int(checker: object, instance: object) -> bool:
    """JSON Schema 'integer' without booleans and without floats such as 4.0."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _same(a: object, b: object) -> bool:
    """JSON equality as the schemas mean it: ``1.0`` is not the integer ``1`` (as ``4.0`` is no extent)."""
    if isinstance(a, float) != isinstance(b, float) and isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return jsonschema._utils.equal(a, b)


def _const(validator: Any, const: object, instance: object, schema: dict) -> Iterator[jsonschema.ValidationError]:
    if not _same(instance, const):
        yield jsonschema.ValidationError(f"{const!r} was expected")


def _enum(validator: Any, enums: list, instance: object, schema: dict) -> Iterator[jsonschema.ValidationError]:
    if not any(_same(instance, each) for each in enums):
        yield jsonschema.ValidationError(f"{instance!r} is not one of {enums!r}")


def _is_number(checker: object, instance: object) -> bool:
    """JSON Schema 'number' without booleans and without NaN or infinities (YAML's .nan and .inf, JSON's NaN,
    Infinity and 1e309), which every comparison (``exclusiveMinimum: 0``) lets through."""
    if isinstance(instance, bool) or not isinstance(instance, (int, float)):
        return False
    return not isinstance(instance, float) or math.isfinite(instance)


_TYPE_CHECKER = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many({"integer": _is_int, "number": _is_number})
_Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, validators={"const": _const, "enum": _enum},
                                          type_checker=_TYPE_CHECKER)


@lru_cache(maxsize=None)
def _load_schema(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def schema(name: str) -> dict:
    """A schema shipped in ``mapsearch/spec/schemas`` by file stem, e.g. ``'architecture'``."""
    return _load_schema(str(SCHEMA_DIR / f"{name}.schema.json"))


@lru_cache(maxsize=None)
def _validator_for(path: str, definition: str | None = None) -> Any:
    if definition is None:
        return _Validator(_load_schema(path), registry=registry())
    return _Validator({"$ref": f"{schema_id(path)}#/$defs/{definition}"}, registry=registry())


_FALLBACK = {
    "type": lambda v: " or ".join(v) if isinstance(v, list) else str(v),
    "minimum": lambda v: f"a number >= {v}",
    "exclusiveMinimum": lambda v: f"a number > {v}",
    "maximum": lambda v: f"a number <= {v}",
    "enum": lambda v: "one of " + ", ".join(repr(x) for x in v),
    "const": lambda v: repr(v),
    "minLength": lambda v: f"a string of at least {v} characters",
    "minItems": lambda v: f"at least {v} items",
    "minProperties": lambda v: f"at least {v} entries",
    "pattern": lambda v: f"text matching {v}",
    "uniqueItems": lambda v: "items without repeats",
}


def _schema_error(error: jsonschema.ValidationError, source: str, prefix: str) -> SpecError:
    """One line for one jsonschema error, named by the instance path."""
    parts = list(error.absolute_path)
    sub = error.schema if isinstance(error.schema, dict) else {}
    instance = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        missing = next((k for k in error.validator_value if k not in instance), None)
        want = sub.get("properties", {}).get(missing, {}).get("x-expected", "a value")
        return _note(source, join_path(parts + [missing], prefix), f"missing; expected {want}")
    if error.validator == "additionalProperties" and isinstance(instance, dict) and error.validator_value is False:
        known = list(sub.get("properties", {}))
        extra = str(next((k for k in instance if k not in known), None))
        close = difflib.get_close_matches(extra, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return _note(source, join_path(parts + [extra], prefix), f"unknown field{hint}; expected one of {', '.join(known)}")
    if error.schema is False:
        return _note(source, join_path(parts, prefix), "not allowed here")
    if "x-detail" in sub:
        return _note(source, join_path(parts, prefix), sub["x-detail"])
    expected = sub.get("x-expected")
    if expected is None:
        fallback = _FALLBACK.get(str(error.validator))
        expected = fallback(error.validator_value) if fallback else error.message
    return _error(source, join_path(parts, prefix), expected, instance)


def validate_against(data: object, schema_name_or_path: str | Path, source: str, prefix: str = "",
                     definition: str | None = None) -> None:
    """Raise a SpecError for the first schema violation of ``data``.

    ``schema_name_or_path`` is a schema stem in ``mapsearch/spec/schemas`` or
    the path of a schema file. ``prefix`` is put before every field name (for
    a part of a bigger document, e.g. ``'architecture'``). ``definition``:
    validate against that entry of the schema's ``$defs`` instead of the
    whole schema (a part read on its own, e.g. ``'figures'``).
    """
    check_text(data, source, prefix)  # JSON read elsewhere (a schedule file) has not been checked yet
    path = Path(schema_name_or_path)
    if path.suffix != ".json":
        path = SCHEMA_DIR / f"{schema_name_or_path}.schema.json"
    validator = _validator_for(str(path), definition)
    errors = list(validator.iter_errors(data))
    if not errors:
        return
    # The shallowest error first (a missing block before what is inside it),
    # then document order, so the message is stable.
    # At one depth an unknown field comes first: it is usually a misspelling
    # of the field that is then reported missing.
    best = min(
        errors,
        key=lambda e: (len(e.absolute_path), e.validator != "additionalProperties", [str(p) for p in e.absolute_path]),
    )
    if best.context:  # anyOf / oneOf: report the most specific branch
        best = jsonschema.exceptions.best_match(best.context) or best
    raise _schema_error(best, source, prefix)
