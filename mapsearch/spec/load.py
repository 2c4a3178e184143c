"""Read workload and architecture specs from YAML, in steps.

1. Read the text and parse the YAML (a syntax error names the file and line;
   a key given twice is an error too, not a silent overwrite):
   :mod:`mapsearch.spec.reading`.
2. Validate the raw data against the JSON Schema shipped in ``schemas/``; the
   first error names its field by its path, e.g. ``levels[2].capacity``:
   :mod:`mapsearch.spec.schema`.
3. Semantic checks the schema cannot express (the einsum parses, every
   dimension has an extent, level names are unique, ...).
4. Build the frozen objects of :mod:`mapsearch.spec.workload` and
   :mod:`mapsearch.spec.architecture`.

Every error is one :class:`~mapsearch.errors.SpecError` whose message is one
line, e.g. ``arch.yaml: levels[2].capacity: expected int > 0, got -4``.

The ``*_to_dict`` functions write the same formats back (used for the
architecture and workload embedded in a schedule file), so that
``architecture_from_dict(architecture_to_dict(a), src) == a``; they live in
:mod:`mapsearch.spec.write_back`, and the checks of a workload and an
architecture together (``check_homes``, ``check_problem``) in
:mod:`mapsearch.spec.problem_check`, both re-exported here.
An architecture argument may also name a tree file with one compute, or a
preset (:func:`resolve_architecture`; the presets are ``mapsearch/presets/*.yaml``).
"""

from __future__ import annotations

import math
from pathlib import Path
from fractions import Fraction
from typing import Any, Mapping

from mapsearch.errors import SpecError
from mapsearch.spec import limits, problem_check
from mapsearch.spec.architecture import SHARED, Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.energy import energy_from_dict
from mapsearch.spec.einsum_text import EinsumSyntaxError, parse_einsum
from mapsearch.spec.problem_check import check_homes, check_problem
from mapsearch.spec.reading import (
    _error,
    _note,
    fraction_from_json,
    join_path,
    read_yaml,
)
from mapsearch.spec.schema import validate_against
from mapsearch.spec.tree import is_tree_file, load_tree
from mapsearch.spec.tree_paths import single_architecture
from mapsearch.spec.workload import Workload
from mapsearch.spec.write_back import architecture_to_dict, workload_to_dict

__all__ = [
    "load_workload",
    "load_architecture",
    "load_homes",
    "load_problem",
    "workload_from_dict",
    "architecture_from_dict",
    "homes_from_dict",
    "check_homes",
    "check_problem",
    "workload_to_dict",
    "architecture_to_dict",
    "read_yaml",
    "PRESET_DIR",
    "preset_names",
    "preset_path",
    "load_preset",
    "load_architecture_file",
    "resolve_architecture",
]

# Checked together with the workload (problem_check.py); importable from here as before.
span_factor = problem_check.span_factor

# --------------------------------------------------------------------------
# Steps 3 and 4: semantic checks and frozen objects.
# --------------------------------------------------------------------------


def _workload(data: Mapping[str, Any], source: str, prefix: str) -> Workload:
    f = lambda *parts: join_path(parts, prefix)  # noqa: E731
    text = data["einsum"]
    try:
        einsum = parse_einsum(text)
    except EinsumSyntaxError as e:
        raise _note(source, f("einsum"), f"{e} (in {limits.describe(text, 80)})") from None
    dims = einsum.dims
    extents = data["extents"]
    for d in extents:
        if d not in dims:
            raise _note(source, f("extents", d), f"unknown dimension; the einsum {limits.describe(text, 80)} uses {', '.join(dims)}")
    for d in dims:
        if d not in extents:
            raise _note(source, f("extents", d), f"missing; the einsum uses dimension {limits.describe(d, 40)} (expected int >= 1)")
        too_big = limits.extent_error(extents[d])
        if too_big is not None:
            raise _note(source, f("extents", d), too_big)
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
        _guard(limits.capacity_error(capacity), source, f("levels", i, "capacity"))
        link = None
        if i == 0:
            if "link" in raw:
                raise _note(source, f("levels", 0, "link"), "the top level has no link above it; remove this field")
        else:
            raw_link = raw.get("link") or {}
            # 0 is a free link (a peer's unbounded bandwidth, or the wires to a MAC's operand latches).
            down = _rate(raw_link.get("input_clocks_per_word", 1), source, f("levels", i, "link", "input_clocks_per_word"),
                         free=True)
            up_raw = raw_link.get("output_clocks_per_word")
            up = down if up_raw is None else _rate(up_raw, source, f("levels", i, "link", "output_clocks_per_word"),
                                                   free=True)
            link = Link(down, up, raw_link.get("lines", SHARED))
        instances, mesh = _mesh(raw, i, source, f)
        levels.append(Level(name, capacity, link, instances, mesh))
    compute_raw = data.get("compute") or {}
    block, roles = (tuple((d, int(b)) for d, b in (compute_raw.get(key) or {}).items()) for key in ("block", "block_roles"))
    for key, pairs in (("block", block), ("block_roles", roles)):
        for d, b in pairs:
            _guard(limits.extent_error(b), source, f("compute", key, d))
    if block and roles:
        raise _note(source, f("compute", "block_roles"), "give the block either by dimension (block) or by GEMM role "
                    "(block_roles), not both")
    clocks = _rate(compute_raw.get("clocks_per_call", 1), source, f("compute", "clocks_per_call"))
    from mapsearch.dram.spec import dram_from_dict  # the DRAM entry's own reader (docs/dram.md)

    energy = energy_from_dict(data.get("energy"), source, f("energy"), tuple(lv.name for lv in levels))
    return Architecture(data["name"], tuple(levels), Compute(block, clocks, roles), bool(data.get("double_buffering", False)),
                        dram_from_dict(data.get("dram"), source, f("dram")), energy)


def _mesh(raw: Mapping[str, Any], i: int, source: str, f: Any) -> tuple[int, tuple[MeshAxis, ...]]:
    """A level's instances and mesh axes (docs/spatial.md); ``instances`` alone is one axis ``x`` reusing all."""
    raw_mesh = raw.get("mesh")
    given = raw.get("instances")
    if raw_mesh is None:
        n = 1 if given is None else int(given)
        _guard(limits.instances_error(n), source, f("levels", i, "instances"))
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
        _guard(limits.instances_error(ax["size"], ax["name"]), source, f("levels", i, "mesh", j, "size"))
        reuse = tuple(ax.get("may_reuse", ["all"]))
        axes.append(MeshAxis(ax["name"], int(ax["size"]), reuse))
    n = math.prod(a.size for a in axes)
    _guard(limits.instances_error(n), source, f("levels", i, "mesh"))
    if given is not None and int(given) != n:
        raise _error(source, f("levels", i, "instances"), f"{n} (the product of the mesh sizes) or no instances field", given)
    return n, tuple(axes)


def _guard(problem: str | None, source: str, field: str) -> None:
    """Raise the size guard's complaint (:mod:`mapsearch.spec.limits`), if any, as a SpecError on ``field``."""
    if problem is not None:
        raise _note(source, field, problem)


def _rate(value: object, source: str, field: str, free: bool = False) -> Fraction:
    """A cost in clocks (per word, per call): an exact number > 0 the solver can scale by (``free``: >= 0)."""
    x = fraction_from_json(value, source, field, positive=not free, nonnegative=free)
    _guard(limits.exact_error(x), source, field)
    return x


def architecture_from_dict(data: object, source: str = "<architecture>") -> Architecture:
    """Validate raw data (as read from YAML or JSON) and build the :class:`Architecture`.

    Link defaults: ``input_clocks_per_word`` 1, ``output_clocks_per_word``
    the same as the input, ``lines: shared``. Compute default: a scalar MAC
    at 1 clock per call.
    """
    validate_against(data, "architecture", source)
    return _architecture(data, source, "")  # type: ignore[arg-type]


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

    ``architecture_path`` may also name a preset (:func:`resolve_architecture`)
    when no such file exists.
    """
    workload, homes = _workload_and_homes(read_yaml(workload_path), str(workload_path))
    architecture, _ = resolve_architecture(architecture_path)
    check_homes(homes, workload, architecture, str(workload_path))
    check_problem(workload.extents, workload.tensor_names, architecture, str(workload_path), str(architecture_path),
                  (workload.einsum,))
    return workload, architecture, homes


# --------------------------------------------------------------------------
# Architecture files of any format, and the bundled presets.
# --------------------------------------------------------------------------

# The presets are package data of mapsearch.presets (which re-exports the
# functions below); they are found by path so that reading them needs no
# import of that package, which sits above this module.
PRESET_DIR = Path(__file__).resolve().parent.parent / "presets"


def preset_names() -> tuple[str, ...]:
    """The names of the shipped presets, sorted."""
    return tuple(sorted(p.stem for p in PRESET_DIR.glob("*.yaml")))


def preset_path(name: str) -> Path:
    """The YAML file of preset ``name``; SpecError listing the presets if there is none."""
    path = PRESET_DIR / f"{name}.yaml"
    if "/" in name or "\\" in name or not path.is_file():
        raise SpecError(str(name), "", "", detail=f"no such file or preset; presets: {', '.join(preset_names())}")
    return path


def load_architecture_file(path: str | Path) -> Architecture:
    """A flat architecture file, or a tree file (``docs/tree-format.md``) with one compute."""
    if is_tree_file(path):
        return single_architecture(load_tree(path))
    return load_architecture(path)


def load_preset(name: str) -> Architecture:
    """The architecture of preset ``name``, a flat architecture file or a one-path tree."""
    return load_architecture_file(preset_path(name))


def resolve_architecture(name_or_path: str | Path) -> tuple[Architecture, str]:
    """``(architecture, source)`` for a file path if it exists, else a preset name.

    ``source`` is the path as given, or ``preset:NAME``. Neither a file nor a
    preset: one SpecError line, ``NAME: no such file or preset; presets: ...``.
    """
    path = Path(name_or_path)
    if path.exists():
        return load_architecture_file(path), str(name_or_path)
    name = str(name_or_path)
    return load_preset(name), f"preset:{name}"
