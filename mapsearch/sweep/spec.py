"""Read a sweep file and expand it into :class:`~mapsearch.sweep.case.Case` s.

Steps, as for the other specs: parse the YAML, validate it against
``sweep.schema.json`` (the first error names the field, e.g.
``sweep.yaml: params.architectures.L1.capacity.range: expected [lo, hi], got [1]``),
read every workload, architecture and constraints file it names (paths
relative to the sweep file; an architecture may be a preset name), apply
the parameters, and validate each resolved spec again, so that every case
handed to a worker is known to be well formed.

Parameters. A key is a path into one kind of spec: ``architectures.L1.capacity``
(a level by name, then its field: ``capacity``, ``link.input_clocks_per_word``,
...), ``architectures.compute.clocks_per_call``, ``workloads.extents.m``. A
parameter applies to the specs that have that path and is crossed only with
them; a parameter that applies to no spec is an error. Values: a list,
``{values: [...]}``, ``{range: [lo, hi], scale: log2}`` (lo, 2 lo, 4 lo, ...
up to hi) or ``{range: [lo, hi], step: S}`` (lo, lo + S, ... up to hi).
``mode: grid`` (default) takes every combination of the applicable values;
``mode: list`` takes the i-th value of every parameter together (all lists
of one length).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from mapsearch.errors import SpecError
from mapsearch.spec.constraints import check_constraints, constraints_from_dict
from mapsearch.spec.load import (
    architecture_from_dict,
    architecture_to_dict,
    check_homes,
    check_problem,
    homes_from_dict,
    workload_from_dict,
    workload_to_dict,
)
from mapsearch.spec.reading import parse_yaml, read_text, read_yaml
from mapsearch.spec.schema import validate_against
from mapsearch.sweep.case import Case
from mapsearch.solve.named_options import check_seconds

__all__ = ["Sweep", "load_sweep", "sweep_from_dict", "expand", "case_content_id", "DEFAULT_TIME_LIMIT"]

SCHEMA = Path(__file__).resolve().parent / "sweep.schema.json"
DEFAULT_TIME_LIMIT = 60.0
MAX_VALUES = 100_000  # values of one parameter
MAX_CASES = 100_000  # cases of one sweep: each is a solve of up to its time limit
_WORKLOAD_KEYS = ("name", "einsum", "extents", "homes")


@dataclass(frozen=True)
class Sweep:
    """A sweep file, read and expanded: its cases in a stable order."""

    name: str
    source: str
    cases: tuple[Case, ...]
    time_limit: float


def _prefixed(e: SpecError, source: str, prefix: str) -> SpecError:
    """The same error, re-sourced to the sweep file with ``prefix`` before its field."""
    field = f"{prefix}.{e.field}" if e.field and not e.field.startswith("[") else f"{prefix}{e.field}"
    detail = e.detail if e.detail is not None else f"expected {e.expected}, got {e.got!r}"
    return SpecError(source, field, e.expected, e.got, detail=detail)


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def case_content_id(content: Mapping[str, Any]) -> str:
    """The first 16 hex digits of the SHA-256 of the case's canonical JSON."""
    return hashlib.sha256(_canonical(content).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------
# Reading the named specs.
# --------------------------------------------------------------------------


def _resolve(base: Path, path: str) -> Path:
    p = Path(path)
    return p if p.is_absolute() else base / p


def _workloads(entries: list, base: Path, source: str) -> list[tuple[str, dict]]:
    """(label, workload dict with homes) per workload; a file with ``layers`` is a suite of inline workloads."""
    out: list[tuple[str, dict]] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, dict):
            out.append(_workload(entry, source, f"workloads[{i}]"))
            continue
        path = _resolve(base, entry)
        if not path.exists():
            raise SpecError(source, f"workloads[{i}]", "", detail=f"no such file: {entry} (looked in {path.parent})")
        data = read_yaml(path)
        if isinstance(data, dict) and "layers" in data:
            layers = data["layers"]
            if not isinstance(layers, list) or not layers:
                raise SpecError(str(path), "layers", "a non-empty list of workloads {name, einsum, extents}", layers)
            # A suite's layers may carry more than a workload (e.g. count); only the workload fields are read.
            out += [_workload({k: v for k, v in layer.items() if k in _WORKLOAD_KEYS} if isinstance(layer, dict) else layer,
                              str(path), f"layers[{j}]") for j, layer in enumerate(layers)]
        else:
            out.append(_workload(data, str(path), ""))
    return out


def _workload(data: object, source: str, prefix: str) -> tuple[str, dict]:
    try:
        w = workload_from_dict(data, source)
        homes = homes_from_dict(data, source)
    except SpecError as e:
        raise (_prefixed(e, source, prefix) if prefix else e) from None
    return w.name, {**workload_to_dict(w), "homes": dict(sorted(homes.items()))}


def _architectures(entries: list, base: Path, source: str) -> list[tuple[str, dict]]:
    from mapsearch.presets import preset_names, resolve_architecture

    out = []
    for i, entry in enumerate(entries):
        if isinstance(entry, dict):
            try:
                arch = architecture_from_dict(entry, source)
            except SpecError as e:
                raise _prefixed(e, source, f"architectures[{i}]") from None
        else:
            path = _resolve(base, entry)
            if path.exists():
                arch, _ = resolve_architecture(path)
            elif entry in preset_names():
                arch, _ = resolve_architecture(entry)
            else:
                raise SpecError(source, f"architectures[{i}]", "", detail=f"{entry}: no such file (in {base}) or preset; "
                                f"presets: {', '.join(preset_names())}")
        out.append((arch.name, architecture_to_dict(arch)))
    return out


def _constraints(entries: list | None, base: Path, source: str) -> list[tuple[str, dict | None]]:
    if not entries:
        return [("", None)]
    out: list[tuple[str, dict | None]] = []
    for i, entry in enumerate(entries):
        if entry is None:
            out.append(("", None))
            continue
        path = _resolve(base, entry)
        if not path.exists():
            raise SpecError(source, f"constraints[{i}]", "", detail=f"no such file: {entry} (looked in {path.parent})")
        raw = parse_yaml(read_text(path), str(path)) or {}
        constraints_from_dict(raw, str(path))  # validate now; a bad file fails before any case runs
        out.append((str(raw.get("name") or Path(entry).stem), raw))
    return out


# --------------------------------------------------------------------------
# Parameters.
# --------------------------------------------------------------------------


def _values(spec: object, source: str, field: str) -> list:
    if isinstance(spec, list):
        return list(spec)
    if "values" in spec:  # type: ignore[operator]
        return list(spec["values"])  # type: ignore[index]
    lo, hi = spec["range"]  # type: ignore[index]
    scale = spec.get("scale", "linear")  # type: ignore[union-attr]
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise SpecError(source, f"{field}.range", "[lo, hi] of finite numbers", [lo, hi])
    if hi < lo:
        raise SpecError(source, f"{field}.range", "[lo, hi] with lo <= hi", [lo, hi])
    if scale == "log2":
        if "step" in spec:  # type: ignore[operator]
            raise SpecError(source, f"{field}.step", "", detail="not used with scale: log2 (values double); remove it")
        if lo <= 0:
            raise SpecError(source, f"{field}.range", "[lo, hi] with lo > 0 for scale: log2", [lo, hi])
        out = []
        x = lo
        while x <= hi:  # at most about 2,100 doublings from the smallest float to the largest
            out.append(x)
            x *= 2
        return _at_most(out, len(out), source, f"{field}.range")
    step = spec.get("step", 1)  # type: ignore[union-attr]
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not (math.isfinite(step) and step > 0):
        raise SpecError(source, f"{field}.step", "a number > 0", step)
    exact = isinstance(lo, int) and isinstance(step, int)
    # Count first: a range of 10^12 values is refused, not built.
    count = (int(hi) - lo) // step + 1 if exact and isinstance(hi, int) else int((hi - lo + 1e-12) / step) + 1
    _at_most([], count, source, f"{field}.range")
    return [lo + n * step for n in range(count)]


def _at_most(values: list, count: int, source: str, field: str) -> list:
    if count > MAX_VALUES:
        raise SpecError(source, field, "", detail=f"{count:,} values; at most {MAX_VALUES:,}")
    return values


def _locate(doc: dict, parts: list[str]) -> tuple[dict, str] | None:
    """The mapping and key the path ``parts`` ends at in ``doc``, or None when the path is not there.

    In an architecture a part may name a level (``L1``), which steps into
    that level's entry of ``levels``.
    """
    node: Any = doc
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if not isinstance(node, dict):
            return None
        levels = node.get("levels") if "levels" in node else None
        if isinstance(levels, list) and part != "levels" and not last:
            level = next((lv for lv in levels if lv.get("name") == part), None)
            if level is not None:
                node = level
                continue
        if part not in node:
            return None
        if last:
            return node, part
        node = node[part]
    return None


def _apply(doc: dict, parts: list[str], value: object) -> dict:
    out = copy.deepcopy(doc)
    node, key = _locate(out, parts)  # type: ignore[misc]
    node[key] = value
    return out


@dataclass(frozen=True)
class _Param:
    path: str
    kind: str  # "architectures" or "workloads"
    parts: tuple[str, ...]
    values: tuple


def _params(raw: Mapping[str, Any], source: str) -> list[_Param]:
    out = []
    for path, spec in raw.items():
        kind, *parts = path.split(".")
        out.append(_Param(path, kind, tuple(parts), tuple(_values(spec, source, f"params.{path}"))))
    return out


# --------------------------------------------------------------------------
# Expansion.
# --------------------------------------------------------------------------


def load_sweep(path: str | Path, *, time_limit: float | None = None, work_limit: float | None = None) -> Sweep:
    """Read and expand the sweep file at ``path``; ``time_limit`` and ``work_limit`` override the file's."""
    data = read_yaml(path)
    return sweep_from_dict(data, str(path), base=Path(path).resolve().parent, time_limit=time_limit,
                           work_limit=work_limit)


def sweep_from_dict(data: object, source: str = "<sweep>", *, base: Path | None = None,
                    time_limit: float | None = None, work_limit: float | None = None) -> Sweep:
    """Validate the raw sweep and expand it (file paths relative to ``base``, default the cwd)."""
    validate_against(data, SCHEMA, source)
    assert isinstance(data, dict)
    base = base or Path.cwd()
    workloads = _workloads(data["workloads"], base, source)
    architectures = _architectures(data["architectures"], base, source)
    objectives = list(dict.fromkeys(data.get("objectives") or ["time"]))
    constraints = _constraints(data.get("constraints"), base, source)
    params = _params(data.get("params") or {}, source)
    mode = data.get("mode", "grid")
    if time_limit is not None:  # overrides are checked as solve's options are (the file's by its schema)
        check_seconds("time_limit", time_limit)
    if work_limit is not None:
        check_seconds("work_limit", work_limit, "deterministic seconds > 0")
    limit = float(time_limit if time_limit is not None else data.get("time_limit", DEFAULT_TIME_LIMIT))
    if mode == "list" and len({len(p.values) for p in params}) > 1:
        lengths = ", ".join(f"{p.path}: {len(p.values)}" for p in params)
        raise SpecError(source, "params", "", detail=f"mode: list needs value lists of one length; got {lengths}")
    for p in params:
        specs = workloads if p.kind == "workloads" else architectures
        if not any(_locate(doc, list(p.parts)) for _, doc in specs):
            raise SpecError(source, f"params.{p.path}", "", detail=f"no {p.kind[:-1]} of this sweep has "
                            f"{'.'.join(p.parts)}; names: {', '.join(label for label, _ in specs)}")
    work = work_limit if work_limit is not None else data.get("work_limit")
    _check_case_count(workloads, architectures, objectives, constraints, params, mode, source)
    cases = list(expand(workloads, architectures, objectives, constraints, params, mode, limit, source, work,
                        bool(data.get("warm_start", False))))
    unique = list({c.case_id: c for c in reversed(cases)}.values())[::-1]  # first of each id, in order
    return Sweep(str(data.get("name") or Path(source).stem), source, tuple(unique), limit)


def _check_case_count(workloads, architectures, objectives, constraints, params: list[_Param], mode: str,
                      source: str) -> None:
    """Refuse, before expanding anything, a sweep of more than ``MAX_CASES`` cases."""
    count = 0
    for (_, wdoc), (_, adoc) in itertools.product(workloads, architectures):
        lengths = [len(p.values) for p in params if _locate(wdoc if p.kind == "workloads" else adoc, list(p.parts))]
        count += (lengths[0] if mode == "list" and lengths else math.prod(lengths)) * len(objectives) * len(constraints)
    if count > MAX_CASES:
        raise SpecError(source, "params", "", detail=f"{count:,} cases; at most {MAX_CASES:,} in one sweep")


def _points(params: list[_Param], mode: str) -> Iterable[tuple[tuple[_Param, object], ...]]:
    if not params:
        return [()]
    if mode == "list":
        return [tuple((p, p.values[i]) for p in params) for i in range(len(params[0].values))]
    return [tuple(zip(params, combo)) for combo in itertools.product(*(p.values for p in params))]


def expand(workloads, architectures, objectives, constraints, params: list[_Param], mode: str,
           time_limit: float, source: str, work_limit: float | None = None, warm_start: bool = False) -> Iterable[Case]:
    """Every case in a stable order: workload, architecture, objective, constraints, parameter point.

    ``warm_start``: each case is hinted with its neighbour's schedule (mapsearch/sweep/neighbours.py).
    """
    for (wname, wdoc), (aname, adoc), objective, (cname, craw) in itertools.product(
            workloads, architectures, objectives, constraints):
        applicable = [p for p in params if _locate(wdoc if p.kind == "workloads" else adoc, list(p.parts))]
        for point in _points(applicable, mode):
            w, a = wdoc, adoc
            for p, value in point:
                if p.kind == "workloads":
                    w = _apply(w, list(p.parts), value)
                else:
                    a = _apply(a, list(p.parts), value)
            w, a = _check(w, a, craw, cname, point, source)
            solver = {"workers": 1, "seed": 0}
            if work_limit is not None:  # a deterministic limit decides the result: part of the case
                solver["work_limit"] = float(work_limit)
            if warm_start:  # so does a start, when the limit cuts a search short
                solver["warm_start"] = True
            content = {"workload": w, "architecture": a, "objective": objective, "constraints": craw,
                       "solver": solver, "replay_mode": "count"}
            yield Case(
                case_id=case_content_id(content),
                workload=wname,
                architecture=aname,
                objective=objective,
                constraints=cname,
                params=tuple((p.path, value) for p, value in point),
                spec=_canonical(content),
                time_limit=time_limit,
            )


def _check(w: dict, a: dict, craw: dict | None, cname: str, point, source: str) -> tuple[dict, dict]:
    """Validate the resolved specs; an error names the parameter values that made it."""
    where = ", ".join(f"{p.path}={v!r}" for p, v in point)
    try:
        workload = workload_from_dict(w, f"{w['name']}")
        arch = architecture_from_dict(a, f"{a['name']}")
        check_homes(w.get("homes") or {}, workload, arch, w["name"])
        check_problem(workload.extents, workload.tensor_names, arch, w["name"], a["name"], (workload.einsum,))
        if craw is not None:
            check_constraints(constraints_from_dict(craw, cname), workload, arch, cname, homes=w.get("homes") or {})
    except SpecError as e:
        if not point:
            raise
        raise SpecError(source, "params", "", detail=f"{where} makes an invalid spec: {e}") from None
    # Normal form, so that equal specs written differently get one id.
    return {**workload_to_dict(workload), "homes": dict(sorted((w.get("homes") or {}).items()))}, architecture_to_dict(arch)
