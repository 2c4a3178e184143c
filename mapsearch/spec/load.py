"""Read workload and architecture specs from YAML, in steps.

1. Read the text and parse the YAML (a syntax error names the file and line;
   a key given twice is an error too, not a silent overwrite).
2. Validate the raw data against the JSON Schema shipped in ``schemas/``; the
   first error names its field by its path, e.g. ``levels[2].capacity``.
3. Semantic checks the schema cannot express (the einsum parses, every
   dimension has an extent, level names are unique, ...).
4. Build the frozen objects of :mod:`mapsearch.spec.workload` and
   :mod:`mapsearch.spec.architecture`.

Every error is one :class:`~mapsearch.errors.SpecError` whose message is one
line, e.g. ``arch.yaml: levels[2].capacity: expected int > 0, got -4``.

The ``*_to_dict`` functions write the same formats back (used for the
architecture and workload embedded in a schedule file), so that
``architecture_from_dict(architecture_to_dict(a), src) == a``.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

import jsonschema
import yaml

from mapsearch.errors import SpecError
from mapsearch.spec.architecture import SHARED, Architecture, Compute, Level, Link, MeshAxis, as_fraction
from mapsearch.spec.einsum_text import EinsumSyntaxError, parse_einsum
from mapsearch.spec.workload import Workload

__all__ = [
    "load_workload",
    "load_architecture",
    "load_homes",
    "load_problem",
    "workload_from_dict",
    "architecture_from_dict",
    "homes_from_dict",
    "check_homes",
    "workload_to_dict",
    "architecture_to_dict",
    "fraction_to_json",
    "fraction_from_json",
    "validate_against",
    "schema",
]

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"

# --------------------------------------------------------------------------
# Small helpers shared with the schedule JSON reader.
# --------------------------------------------------------------------------


def _short(value: object, limit: int = 60) -> str:
    """``repr`` on one line, cut to ``limit`` characters."""
    text = repr(value).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
        elif not _PLAIN_KEY.match(str(p)):
            out += f"[{str(p)!r}]"  # e.g. a key with spaces or newlines
        else:
            out += f".{p}" if out else str(p)
    return out


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


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


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


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
    """Parse YAML text; a syntax error names the source and the line."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}" if mark is not None else ""
        problem = e.problem or e.context or "syntax error"
        raise _note(source, where, f"malformed YAML: {problem}") from None
    except yaml.YAMLError as e:
        raise _note(source, "", f"malformed YAML: {e}") from None


def read_yaml(path: str | Path) -> Any:
    return parse_yaml(read_text(path), str(path))


# --------------------------------------------------------------------------
# Step 2: JSON Schema.
# --------------------------------------------------------------------------


def _is_int(checker: object, instance: object) -> bool:
    """JSON Schema 'integer' without booleans and without floats such as 4.0."""
    return isinstance(instance, int) and not isinstance(instance, bool)


_TYPE_CHECKER = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_int)
_Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=_TYPE_CHECKER)


@lru_cache(maxsize=None)
def _load_schema(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def schema(name: str) -> dict:
    """A schema shipped in ``mapsearch/spec/schemas`` by file stem, e.g. ``'architecture'``."""
    return _load_schema(str(SCHEMA_DIR / f"{name}.schema.json"))


@lru_cache(maxsize=None)
def _validator_for(path: str) -> Any:
    from referencing import Registry, Resource

    resources = [
        (s["$id"], Resource.from_contents(s))
        for s in (_load_schema(str(p)) for p in sorted(SCHEMA_DIR.glob("*.schema.json")))
        if "$id" in s
    ]
    return _Validator(_load_schema(path), registry=Registry().with_resources(resources))


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


def validate_against(data: object, schema_name_or_path: str | Path, source: str, prefix: str = "") -> None:
    """Raise a SpecError for the first schema violation of ``data``.

    ``schema_name_or_path`` is a schema stem in ``mapsearch/spec/schemas`` or
    the path of a schema file. ``prefix`` is put before every field name (for
    a part of a bigger document, e.g. ``'architecture'``).
    """
    path = Path(schema_name_or_path)
    if path.suffix != ".json":
        path = SCHEMA_DIR / f"{schema_name_or_path}.schema.json"
    validator = _validator_for(str(path))
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


# --------------------------------------------------------------------------
# Steps 3 and 4: semantic checks and frozen objects.
# --------------------------------------------------------------------------


def _workload(data: Mapping[str, Any], source: str, prefix: str) -> Workload:
    f = lambda *parts: join_path(parts, prefix)  # noqa: E731
    text = data["einsum"]
    try:
        einsum = parse_einsum(text)
    except EinsumSyntaxError as e:
        raise _note(source, f("einsum"), f"{e} (in {text!r})") from None
    dims = einsum.dims
    extents = data["extents"]
    for d in extents:
        if d not in dims:
            raise _note(source, f("extents", d), f"unknown dimension; the einsum {text!r} uses {', '.join(dims)}")
    for d in dims:
        if d not in extents:
            raise _note(source, f("extents", d), f"missing; the einsum uses dimension {d!r} (expected int >= 1)")
    return Workload(data["name"], einsum, tuple((d, int(extents[d])) for d in dims))


def _homes(data: Mapping[str, Any], workload: Workload, source: str, prefix: str) -> dict[str, str]:
    homes = dict(data.get("homes") or {})
    names = workload.tensor_names
    for t in homes:
        if t not in names:
            raise _note(source, join_path(["homes", t], prefix), f"unknown tensor; expected one of {', '.join(names)}")
    return homes


def workload_from_dict(data: object, source: str = "<workload>") -> Workload:
    """Validate raw data (as read from YAML or JSON) and build the :class:`Workload`.

    ``source`` names the origin in error messages (normally the file path).
    The optional ``homes`` entry is checked against the einsum's tensors but
    not returned; see :func:`homes_from_dict`.
    """
    return _workload_and_homes(data, source)[0]


def homes_from_dict(data: object, source: str = "<workload>") -> dict[str, str]:
    """The ``homes`` of a workload document (tensor -> level name), ``{}`` when absent."""
    return _workload_and_homes(data, source)[1]


def _workload_and_homes(data: object, source: str) -> tuple[Workload, dict[str, str]]:
    validate_against(data, "workload", source)
    w = _workload(data, source, "")  # type: ignore[arg-type]
    return w, _homes(data, w, source, "")  # type: ignore[arg-type]


def _architecture(data: Mapping[str, Any], source: str, prefix: str) -> Architecture:
    f = lambda *parts: join_path(parts, prefix)  # noqa: E731
    levels: list[Level] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(data["levels"]):
        name = raw["name"]
        if name in seen:
            raise _error(source, f("levels", i, "name"), f"a name not used by another level (levels[{seen[name]}])", name)
        seen[name] = i
        capacity = raw["capacity"]
        if capacity is None and i != 0:
            raise _error(source, f("levels", i, "capacity"), "int > 0 (only the top level may be unbounded, null)", None)
        link = None
        if i == 0:
            if "link" in raw:
                raise _note(source, f("levels", 0, "link"), "the top level has no link above it; remove this field")
        else:
            raw_link = raw.get("link") or {}
            # 0 is a free link (a peer's unbounded bandwidth, or the wires to a MAC's operand latches).
            down = fraction_from_json(raw_link.get("input_clocks_per_word", 1), source, f("levels", i, "link", "input_clocks_per_word"), nonnegative=True)
            up_raw = raw_link.get("output_clocks_per_word")
            up = down if up_raw is None else fraction_from_json(up_raw, source, f("levels", i, "link", "output_clocks_per_word"), nonnegative=True)
            link = Link(down, up, raw_link.get("lines", SHARED))
        instances, mesh = _mesh(raw, i, source, f)
        levels.append(Level(name, capacity, link, instances, mesh))
    compute_raw = data.get("compute") or {}
    block = tuple((d, int(b)) for d, b in (compute_raw.get("block") or {}).items())
    clocks = fraction_from_json(compute_raw.get("clocks_per_call", 1), source, f("compute", "clocks_per_call"), positive=True)
    from mapsearch.dram.spec import dram_from_dict  # the DRAM entry's own reader (docs/dram.md)

    from mapsearch.spec.energy import energy_from_dict

    energy = energy_from_dict(data.get("energy"), source, f("energy"), tuple(lv.name for lv in levels))
    return Architecture(data["name"], tuple(levels), Compute(block, clocks), bool(data.get("double_buffering", False)),
                        dram_from_dict(data.get("dram"), source, f("dram")), energy)


def _mesh(raw: Mapping[str, Any], i: int, source: str, f: Any) -> tuple[int, tuple[MeshAxis, ...]]:
    """A level's instances and mesh axes (docs/spatial.md); ``instances`` alone is one axis ``x`` reusing all."""
    raw_mesh = raw.get("mesh")
    given = raw.get("instances")
    if raw_mesh is None:
        n = 1 if given is None else int(given)
        if n != 1 and i == 0:
            raise _note(source, f("levels", 0, "instances"), "the top level cannot have a mesh (spatial instances); remove this field")
        return n, (() if n == 1 else (MeshAxis("x", n, ("all",)),))
    if i == 0:
        raise _note(source, f("levels", 0, "mesh"), "the top level cannot have a mesh (spatial instances); remove this field")
    axes: list[MeshAxis] = []
    seen: dict[str, int] = {}
    for j, ax in enumerate(raw_mesh):
        if ax["name"] in seen:
            raise _error(source, f("levels", i, "mesh", j, "name"), f"an axis name not used by another axis (mesh[{seen[ax['name']]}])", ax["name"])
        seen[ax["name"]] = j
        reuse = tuple(ax.get("may_reuse", ["all"]))
        axes.append(MeshAxis(ax["name"], int(ax["size"]), reuse))
    n = math.prod(a.size for a in axes)
    if given is not None and int(given) != n:
        raise _error(source, f("levels", i, "instances"), f"{n} (the product of the mesh sizes) or no instances field", given)
    return n, tuple(axes)


def architecture_from_dict(data: object, source: str = "<architecture>") -> Architecture:
    """Validate raw data (as read from YAML or JSON) and build the :class:`Architecture`.

    Link defaults: ``input_clocks_per_word`` 1, ``output_clocks_per_word``
    the same as the input, ``lines: shared``. Compute default: a scalar MAC
    at 1 clock per call.
    """
    validate_against(data, "architecture", source)
    return _architecture(data, source, "")  # type: ignore[arg-type]


def check_homes(homes: Mapping[str, str], workload: Workload, architecture: Architecture, source: str) -> None:
    """Every home names a tensor of the workload and a level of the architecture."""
    names = workload.tensor_names
    levels = architecture.level_names
    for tensor, level in homes.items():
        if tensor not in names:
            raise _note(source, join_path(["homes", tensor]), f"unknown tensor; expected one of {', '.join(names)}")
        if level not in levels:
            raise _error(source, join_path(["homes", tensor]), f"a level of {architecture.name!r} ({', '.join(levels)})", level)


def load_workload(path: str | Path) -> Workload:
    """Read a workload YAML file (see ``examples/matmul-4x4x4.yaml``)."""
    return workload_from_dict(read_yaml(path), str(path))


def load_homes(path: str | Path) -> dict[str, str]:
    """The optional ``homes`` of a workload YAML file, tensor -> level name."""
    return homes_from_dict(read_yaml(path), str(path))


def load_architecture(path: str | Path) -> Architecture:
    """Read an architecture YAML file (see ``examples/arch-three-level.yaml``)."""
    return architecture_from_dict(read_yaml(path), str(path))


def load_problem(workload_path: str | Path, architecture_path: str | Path) -> tuple[Workload, Architecture, dict[str, str]]:
    """Read both files and check the workload's homes against the architecture.

    ``architecture_path`` may also name a preset (:mod:`mapsearch.presets`)
    when no such file exists.
    """
    from mapsearch.presets import resolve_architecture  # presets read files through this module

    workload, homes = _workload_and_homes(read_yaml(workload_path), str(workload_path))
    architecture, _ = resolve_architecture(architecture_path)
    check_homes(homes, workload, architecture, str(workload_path))
    return workload, architecture, homes


# --------------------------------------------------------------------------
# Writing back.
# --------------------------------------------------------------------------


def workload_to_dict(workload: Workload) -> dict[str, Any]:
    """The workload in its file format (without homes)."""
    return {"name": workload.name, "einsum": workload.einsum.text(), "extents": dict(workload.extents)}


def _link_to_dict(link: Link) -> dict[str, Any]:
    return {
        "input_clocks_per_word": fraction_to_json(link.input_clocks_per_word),
        "output_clocks_per_word": fraction_to_json(link.output_clocks_per_word),
        "lines": link.lines,
    }


def architecture_to_dict(architecture: Architecture) -> dict[str, Any]:
    """The architecture in its file format, every default written out."""
    levels = []
    for lv in architecture.levels:
        entry: dict[str, Any] = {"name": lv.name, "capacity": lv.capacity}
        if lv.mesh:
            entry["mesh"] = [{"name": a.name, "size": a.size, "may_reuse": list(a.may_reuse)} for a in lv.mesh]
        elif lv.instances != 1:
            entry["instances"] = lv.instances
        if lv.link is not None:
            entry["link"] = _link_to_dict(lv.link)
        levels.append(entry)
    return {
        "name": architecture.name,
        "levels": levels,
        "compute": {
            "block": dict(architecture.compute.block),
            "clocks_per_call": fraction_to_json(architecture.compute.clocks_per_call),
        },
        "double_buffering": architecture.double_buffering,
        **({"dram": _dram_to_dict(architecture.dram)} if architecture.dram is not None else {}),
        **({"energy": _energy_to_dict(architecture.energy)} if architecture.energy is not None else {}),
    }


def _energy_to_dict(model: Any) -> dict[str, Any]:
    from mapsearch.spec.energy import energy_to_dict

    return energy_to_dict(model)


def _dram_to_dict(spec: Any) -> dict[str, Any]:
    from mapsearch.dram.spec import dram_to_dict

    return dram_to_dict(spec)

