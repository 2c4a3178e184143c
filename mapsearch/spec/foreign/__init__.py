"""The peers' file formats, read unchanged and translated into mapsearch's own spec objects.

One module per format; nothing else in the package knows them:

- :mod:`.accelforge_workload`, :mod:`.accelforge_arch` (+ :mod:`.accelforge_parts`): AccelForge 1.0.x;
- :mod:`.timeloop`: Timeloop v0.4 problem, architecture and constraints;
- :mod:`.zigzag`: ZigZag 3.x hardware and workload YAML.

:func:`load_foreign` is what the CLI and the API call. The format is found
by content (:func:`detect_format`) or named (``format=``). Jinja templates
are rendered first with ``variables`` (``--var NAME=VALUE``). An
architecture is translated for a workload (AccelForge evaluates sizes and
rules per einsum), so read the workload first. Errors are one line
(:class:`~mapsearch.spec.foreign.common.ForeignSpecError`,
:class:`~mapsearch.spec.foreign.common.Untranslatable`); what the model
expresses differently is in ``notes``. docs/peer-formats.md has the table of
the peers' files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from mapsearch.spec.foreign.common import (ForeignSpecError, Tagged, Untranslatable, check_tree_limits, parse_tagged_yaml,
                                          parse_var, render_jinja)
from mapsearch.spec.workload import Workload, WorkloadGraph

__all__ = [
    "FORMATS",
    "ForeignWorkload",
    "ForeignArch",
    "ForeignSpecError",
    "Untranslatable",
    "detect_format",
    "load_foreign",
    "load_foreign_workload",
    "load_foreign_arch",
    "parse_var",
    "einsum_views",
]

FORMATS = ("accelforge", "timeloop", "zigzag")
_ARCH_ONLY_KEYS = {"input_clocks_per_word", "output_clocks_per_word", "lines", "clocks_per_call", "block", "attributes"}
_ACCELFORGE_KEYS = {"actions", "leak_power", "area", "component_class", "total_latency", "enabled",
                    "extra_attributes_for_component_model"}


@dataclass(frozen=True)
class ForeignWorkload:
    workload: Workload | WorkloadGraph
    format: str
    source: str
    homes: Mapping[str, str] = field(default_factory=dict)
    bits: Mapping[str, int] = field(default_factory=dict)  # tensor -> bits per value, where the file says
    renames: Mapping[str, Mapping[str, frozenset[str]]] = field(default_factory=dict)  # einsum -> name -> tensors
    notes: tuple[str, ...] = ()
    instance: Mapping[str, Any] | None = None  # a Timeloop problem's instance as written: spec.problem.instance
    dimensions: tuple[str, ...] = ()  # a Timeloop problem's shape.dimensions (those of extent 1 included)


@dataclass(frozen=True)
class ForeignArch:
    tree: Any  # a mapsearch.spec.tree.Tree
    format: str
    source: str
    constraints: Any = None  # mapsearch.spec.constraints.Constraints from the file's mapping constraints, or None
    notes: tuple[str, ...] = ()
    clock_hz: Any = None  # seconds per clock when the file says (AccelForge: the compute's op rate), else None


def _read(path: str | Path, variables: Mapping[str, Any] | None, duplicate_keys: str = "error") -> Any:
    from mapsearch.spec.reading import read_text

    source = str(path)
    text = render_jinja(read_text(path), source, variables or {})
    return parse_tagged_yaml(text, source, duplicate_keys=duplicate_keys)


def _tags(nodes: Any) -> set[str]:
    out: set[str] = set()
    for n in nodes if isinstance(nodes, list) else []:
        if isinstance(n, Tagged):
            out.add(n.tag)
            if isinstance(n.value, dict):
                out |= _tags(n.value.get("nodes"))
                if set(n.value) & _ACCELFORGE_KEYS:
                    out.add("<accelforge>")
                if set(n.value) & _ARCH_ONLY_KEYS:
                    out.add("<native>")
    return out


def detect_format(data: Any) -> str | None:
    """``accelforge``, ``timeloop``, ``zigzag``, or None for mapsearch's own formats (and anything else)."""
    if not isinstance(data, dict):
        return "zigzag" if isinstance(data, list) and data and isinstance(data[0], dict) and "operator_type" in data[0] \
            else None
    if "memories" in data and "operational_array" in data:
        return "zigzag"
    arch = data.get("architecture")
    timeloop_arch = isinstance(arch, dict) and ("nodes" in arch or "subtree" in arch) and "levels" not in arch
    if isinstance(data.get("problem"), dict) or "architecture_constraints" in data or timeloop_arch \
            or "mapspace_constraints" in data or _timeloopfe_variables(data) \
            or (isinstance(data.get("constraints"), dict) and "targets" in data["constraints"]):
        return "timeloop"
    if isinstance(data.get("workload"), dict) and "einsums" in data["workload"]:
        return "accelforge"
    arch = data.get("arch")
    if isinstance(arch, dict):
        tags = _tags(arch.get("nodes"))
        native = {"Memory", "Compute", "Parallel", "Hierarchical", "ProcessingStage", "<native>"}
        if tags - native or "<accelforge>" in tags or "extra_attributes_for_all_component_models" in arch:
            return "accelforge" if "<native>" not in tags else None
    return None


_TIMELOOP_SIDE_KEYS = {"variables", "constraints", "mapspace_constraints", "architecture_constraints", "globals"}


def _timeloopfe_variables(data: Mapping[str, Any]) -> bool:
    """A timeloopfe variables file (``variables: {version: 0.4, NAME: value}``), alone or beside constraints."""
    v = data.get("variables")
    return isinstance(v, dict) and "version" in v and set(data) <= _TIMELOOP_SIDE_KEYS


def _format_of(path: str | Path, data: Any, format: str | None) -> str:
    if format is not None:
        if format not in FORMATS:
            raise ForeignSpecError("--format", "", "", None, detail=f"expected one of {', '.join(FORMATS)}, got {format!r}")
        return format
    found = detect_format(data)
    if found is None:
        raise ForeignSpecError(str(path), "", "", None, detail="not a file of a peer's format (AccelForge, Timeloop v0.4, "
                               "ZigZag); name one with --format")
    return found


def is_foreign_file(path: str | Path, variables: Mapping[str, Any] | None = None) -> str | None:
    """The format of a peer's file at ``path``, None for mapsearch's own files (never raises)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        data = parse_tagged_yaml(render_jinja(text, str(path), variables or {}), str(path), duplicate_keys="last")
    except Exception:  # noqa: BLE001 - a file that does not read is not a peer's file of ours to claim
        return "accelforge" if "{%" in text or "{{" in text else None
    return detect_format(data)


def load_foreign_workload(path: str | Path, variables: Mapping[str, Any] | None = None,
                          format: str | None = None) -> ForeignWorkload:
    source, name = str(path), Path(path).stem
    data = _read(path, variables)
    fmt = _format_of(path, data, format)
    if fmt == "accelforge":
        from mapsearch.spec.foreign.accelforge_workload import accelforge_workload

        w = accelforge_workload(data, source, name)
        return ForeignWorkload(w.workload, fmt, source, {}, w.bits_per_value, w.renames, w.notes)
    if fmt == "timeloop":
        from mapsearch.spec.foreign.timeloop import timeloop_problem

        workload, bits, notes = timeloop_problem(data, source, name)
        dims = data["problem"]["shape"]["dimensions"]  # checked by timeloop_problem
        dims = tuple(re.split(r"[\s,]+", dims) if isinstance(dims, str) else dims)
        return ForeignWorkload(workload, fmt, source, {}, bits, notes=notes, instance=data["problem"]["instance"],
                               dimensions=tuple(d for d in dims if d))
    from mapsearch.spec.foreign.zigzag import zigzag_workload

    workload, bits, notes = zigzag_workload(data, source, name)
    return ForeignWorkload(workload, fmt, source, {}, bits, notes=notes)


def einsum_views(fw: ForeignWorkload | Workload | WorkloadGraph, default_bits: int = 8):
    """``(EinsumView per einsum, notes)``: what an AccelForge architecture's expressions see of each einsum.

    A workload without renames gets mapsearch's roles (``input``: the first
    input, ``weight``: the last of two or more, ``output``); without bits per
    value, ``default_bits`` (noted).
    """
    from mapsearch.spec.foreign.accelforge_arch import EinsumView
    from mapsearch.spec.foreign.operands import operand_words

    workload = fw.workload if isinstance(fw, ForeignWorkload) else fw
    bits = dict(fw.bits) if isinstance(fw, ForeignWorkload) else {}
    renames = fw.renames if isinstance(fw, ForeignWorkload) else {}
    einsums = [workload.einsum] if isinstance(workload, Workload) else list(workload.einsums)
    names = list(renames) if len(renames) == len(einsums) else [None] * len(einsums)
    extents = workload.extent
    outputs = {e.output.name for e in einsums}
    reads = {t.name for e in einsums for t in e.inputs}
    notes = []
    views = []
    for e, ename in zip(einsums, names):
        tensors = tuple(t.name for t in e.tensors)
        missing = [t for t in tensors if t not in bits]
        if missing:
            notes.append(f"no bits per value for {', '.join(missing)}; {default_bits} assumed (words of "
                         f"{default_bits} bits)")
            bits.update({t: default_bits for t in missing})
        roles = {"output": frozenset({e.output.name}), "input": frozenset({e.inputs[0].name}),
                 "weight": frozenset({e.inputs[-1].name}) if len(e.inputs) > 1 else frozenset()}
        own = {**roles, **(renames.get(ename, {}) if ename else {})}
        views.append(EinsumView(tensors, e.output.name, bits, own, frozenset(outputs & reads & set(tensors)),
                                 rank_variables=tuple(e.dims)))
    # One architecture for a whole chain: the operand level fits every einsum's op, an unbounded memory every tensor.
    block = max(operand_words(e, extents) for e in einsums)
    total = sum({t.name: t.words(extents) for e in einsums for t in e.tensors}.values())
    views = [replace(v, block_words=block, total_words=total) for v in views]
    return views, tuple(dict.fromkeys(notes))


def load_foreign_arch(path: str | Path, workload: ForeignWorkload | Workload | WorkloadGraph,
                      variables: Mapping[str, Any] | None = None, format: str | None = None,
                      constraints: str | Path | None = None) -> ForeignArch:
    """Translate an architecture file for ``workload`` (a chain: for every einsum; they must agree).

    ``constraints``: a Timeloop constraints file (``constraints:``, ``mapspace_constraints:`` or
    ``architecture_constraints: {targets: [...]}``) or a timeloopfe variables file (``variables:``) for a Timeloop
    architecture. ``variables``: the Jinja variables (``--var``); for a Timeloop architecture they also set
    timeloopfe's ``variables`` of the same name.
    """
    source, name = str(path), Path(path).stem
    fmt_probe = format or is_foreign_file(path, variables)
    data = _read(path, variables, duplicate_keys="last" if fmt_probe == "zigzag" else "error")
    fmt = _format_of(path, data, format)
    if constraints is not None and fmt != "timeloop":
        raise ForeignSpecError(str(constraints), "", "", None, detail=f"a Timeloop constraints or variables file goes "
                               f"with a Timeloop architecture; {source} is {fmt}'s")
    if fmt == "accelforge":
        from mapsearch.spec.foreign.accelforge_arch import accelforge_tree

        views, notes = einsum_views(workload)
        trees = [accelforge_tree(data, source, name, v) for v in views]
        for t in trees:
            check_tree_limits(t[0], source)
        if len(trees) > 1:
            _check_chain_trees(trees, source)
        return ForeignArch(trees[0][0], fmt, source, None, notes + trees[0][1], trees[0][2])
    if fmt == "timeloop":
        from mapsearch.spec.foreign.timeloop import timeloop_arch

        more = _read(constraints, variables) if constraints is not None else None
        tree, found, notes = timeloop_arch(data, source, name, workload, more,
                                           constraints_source=str(constraints) if constraints is not None else None,
                                           variables=variables)
        check_tree_limits(tree, source)
        return ForeignArch(tree, fmt, source, found, notes)
    from mapsearch.spec.foreign.zigzag import zigzag_tree

    tree, notes = zigzag_tree(data, source, name, workload)
    check_tree_limits(tree, source)
    return ForeignArch(tree, fmt, source, None, notes)


def _check_chain_trees(trees: list, source: str) -> None:
    """A chain is solved on one architecture: every einsum's translation must be the same tree and rules."""
    from mapsearch.spec.tree_paths import flatten

    first = [(p.compute_name, p.architecture.levels) for p in flatten(trees[0][0])]
    for tree, *_ in trees[1:]:
        if [(p.compute_name, p.architecture.levels) for p in flatten(tree)] != first:
            raise Untranslatable(source, "arch", "", None, detail="cannot be translated exactly: the architecture "
                                 "differs between the chain's einsums (sizes or enabled components depend on the "
                                 "einsum); solve the einsums one at a time")


def load_foreign(path: str | Path, kind: str = "auto", variables: Mapping[str, Any] | None = None,
                 workload: ForeignWorkload | Workload | WorkloadGraph | None = None,
                 format: str | None = None) -> ForeignWorkload | ForeignArch:
    """A peer's workload (``kind="workload"``) or architecture (``kind="arch"``, needs ``workload``).

    ``kind="auto"`` reads a workload when the file is one, else an architecture.
    """
    if kind not in ("auto", "workload", "arch"):
        raise ValueError(f"kind: expected auto, workload or arch, got {kind!r}")
    if kind == "auto":
        data = _read(path, variables, duplicate_keys="last")
        fmt = _format_of(path, data, format)
        is_workload = (fmt == "accelforge" and "workload" in data) or (fmt == "timeloop" and "problem" in data) or (
            fmt == "zigzag" and isinstance(data, list))
        kind = "workload" if is_workload else "arch"
    if kind == "workload":
        return load_foreign_workload(path, variables, format)
    if workload is None:
        raise ValueError("an architecture is translated for a workload: pass workload=")
    return load_foreign_arch(path, workload, variables, format)
