"""Fused schedule files (``format: mapsearch-fused-schedule``) and the stage agreement rules.

A fused schedule file embeds the chain, the architecture, the fusion level and
one stage per einsum (docs/fusion.md)::

    {
      "format": "mapsearch-fused-schedule", "version": 1,
      "graph": {"name": "mm3", "einsums": ["T[m,n] += A[m,k] * B[k,n]", ...], "extents": {...}},
      "architecture": {... as in the architecture YAML ...},
      "fusion_level": "L1",
      "stages": [                    # one per einsum, in the graph's order
        {"levels": [... as in a schedule file ...], "homes": {"A": "DRAM", "T": "L1", ...},
         "predicted": {...}},        # optional, per stage
        ...
      ],
      "predicted": {...}             # optional: the figures of the whole fused run
    }

Reading checks every stage as a schedule file's levels are checked
(:func:`mapsearch.schedule.json_io.schedule_from_dict`, errors prefixed
``stages[e].``) and then :func:`fused_violations`. Every error is one
:class:`~mapsearch.errors.SpecError` line naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from mapsearch.errors import ScheduleError, SpecError
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.json_io import (
    _pretty,
    _raise_violation,
    SCHEMA_PATH,
    figures_from_dict,
    figures_to_dict,
    read_json,
    refuse_block_roles,
    schedule_from_parts,
    schedule_to_dict,
)
from mapsearch.spec.load import _architecture, architecture_to_dict, check_problem, workload_to_dict
from mapsearch.spec.reading import _error, _note
from mapsearch.spec.schema import validate_against
from mapsearch.spec.workload import WorkloadGraph

__all__ = ["FORMAT", "VERSION", "fused_violations", "chain_fusion_violations", "check_fused", "fused_to_dict", "fused_from_dict",
           "dumps_fused", "save_fused", "load_fused"]

FORMAT = "mapsearch-fused-schedule"
VERSION = 1


# --------------------------------------------------------------------------
# The agreement rules.
# --------------------------------------------------------------------------


def fused_violations(fs: FusedSchedule) -> list[str]:
    """Every broken rule of docs/fusion.md (and of this version's replay), as ``field: text`` lines.

    1. one stage per einsum, each over that einsum and the schedule's architecture;
    2. ``0 <= fusion_level < depth``;
    3. at levels ``0..f``: the shared dimensions' tiles and loop order (restricted to them) equal
       stage 0's; every other dimension whole;
    4. every intermediate homed at level ``f`` in the stages that use it, read by its consumers with
       the producer's output dimensions, and every dimension its producer sums over whole at levels
       ``<= f`` (so each intermediate tile is produced once);
    5. every other tensor used by one einsum and homed at or above level ``f``;
    6. this version: no spatial splits, no meshed level, no double buffering, every buffer at its default
       position.
    """
    from mapsearch.schedule.legality import violations

    g, arch, f = fs.graph, fs.architecture, fs.fusion_level
    out: list[str] = []
    if len(fs.stages) != len(g.einsums):
        return [f"stages: expected one stage per einsum ({len(g.einsums)}), got {len(fs.stages)}"]
    if not 0 <= f < arch.depth:
        return [f"fusion_level: expected a level index 0..{arch.depth - 1}, got {f}"]
    extent = g.extent
    for e, st in enumerate(fs.stages):
        if st.workload.einsum != g.einsums[e]:
            out.append(f"stages[{e}].workload: expected einsum {g.einsums[e].text()!r}, got {st.workload.einsum.text()!r}")
        elif dict(st.workload.extents) != {d: extent[d] for d in g.einsums[e].dims}:
            out.append(f"stages[{e}].workload.extents: expected {({d: extent[d] for d in g.einsums[e].dims})}, got {dict(st.workload.extents)}")
        if st.architecture != arch:
            out.append(f"stages[{e}].architecture: every stage must use the fused schedule's architecture {arch.name}")
    if out:
        return out
    for e, st in enumerate(fs.stages):
        out += [f"stages[{e}].{v}" for v in violations(st)]
    if out:
        return out
    fname = arch.levels[f].name
    shared = g.shared_dims
    ref = fs.stages[0]
    for e, st in enumerate(fs.stages):
        for i in range(0, f + 1):
            tiles = st.tile_extents(i)
            for d in st.workload.dims:
                if d in shared:
                    if tiles[d] != ref.tile_extents(i)[d]:
                        out.append(f"stages[{e}].levels[{i}].tile.{d}: shared dimension {d} must have stage 0's tile "
                                   f"{ref.tile_extents(i)[d]} at levels <= {fname}, got {tiles[d]}")
                elif tiles[d] != extent[d]:
                    out.append(f"stages[{e}].levels[{i}].tile.{d}: {d} is not shared by every einsum; it must be whole "
                               f"({extent[d]}) at levels <= {fname}, got {tiles[d]}")
            if i > 0:
                mine = [d for d in st.levels[i].order if d in shared]
                theirs = [d for d in ref.levels[i].order if d in shared]
                if mine != theirs:
                    out.append(f"stages[{e}].levels[{i}].order: the shared dimensions must be ordered as in stage 0 "
                               f"{theirs} at levels <= {fname}, got {mine}")
            if any(s for s in st.levels[i].spatial):
                out.append(f"stages[{e}].levels[{i}].spatial: spatial splits are not supported in fused schedules (this version)")
    for e, st in enumerate(fs.stages):  # every replay of a fused chain holds each buffer's own level's tile
        for i, lm in enumerate(st.levels):
            for t, pos in lm.positions:
                if pos != i * len(st.workload.dims):
                    out.append(f"stages[{e}].levels[{i}].positions.{t}: buffers of fused stages sit at their "
                               f"level's default position {i * len(st.workload.dims)} (this version), got {pos}")
    for i, lv in enumerate(arch.levels):
        if lv.instances > 1:
            out.append(f"architecture.levels[{i}]: {lv.name} has a mesh; fused schedules support no spatial fanout (this version)")
    if arch.double_buffering:
        out.append("architecture.double_buffering: not supported in fused schedules (this version)")
    inter = set(g.intermediates)
    out.extend(f"{where}: {why}" for where, why in chain_fusion_violations(g))
    users = _users(g)
    for t, es in users.items():
        if t in inter:
            producer = next(e for e in es if g.einsums[e].output.name == t)
            pe = g.einsums[producer]
            for e in es:
                if fs.stages[e].home(t) != f:
                    out.append(f"stages[{e}].homes.{t}: the intermediate {t} must be homed at the fusion level {fname}, "
                               f"got {arch.levels[fs.stages[e].home(t)].name}")
            summed = [d for d in pe.dims if d not in pe.output.dims]
            for d in summed:
                for i in range(1, f + 1):
                    if fs.stages[producer].tile_extents(i)[d] != extent[d]:
                        out.append(f"stages[{producer}].levels[{i}].tile.{d}: einsum {producer} sums over {d} to produce "
                                   f"the intermediate {t}; {d} must be whole at levels <= {fname} so each {t} tile is produced once")
        else:
            for e in es[:1]:
                h = fs.stages[e].home(t)
                if h > f:
                    out.append(f"stages[{e}].homes.{t}: homes must be at or above the fusion level {fname} "
                               f"(levels below it belong to one sub-nest run), got {arch.levels[h].name}")
    return out


def _users(g: WorkloadGraph) -> dict[str, list[int]]:
    """Per tensor, the einsums that use it, once per use (an einsum reading a tensor twice counts twice)."""
    users: dict[str, list[int]] = {}
    for e, ein in enumerate(g.einsums):
        for t in ein.tensors:
            users.setdefault(t.name, []).append(e)
    return users


def chain_fusion_violations(g: WorkloadGraph) -> list[tuple[str, str]]:
    """``(field, why)`` per rule the chain itself breaks for any fused schedule of it (this version): a consumer
    reads each intermediate as its producer writes it, and every other tensor is used by one einsum. The fused
    replay refuses such a schedule (:func:`fused_violations`) and the solver offers none (model/fusion.py)."""
    out = []
    inter = set(g.intermediates)
    for t, es in _users(g).items():
        if t in inter:
            producer = next(e for e in es if g.einsums[e].output.name == t)
            written = g.einsums[producer].output
            for e in es:
                if e != producer:
                    acc = next(a for a in g.einsums[e].inputs if a.name == t)
                    if acc.indices != written.indices:
                        out.append((f"graph.einsums[{e}]", f"einsum {e} reads the intermediate {acc.text()}; a fused "
                                    f"consumer must index it as its producer writes it, {written.text()}"))
        elif len(es) > 1:
            out.append(("graph", f"tensor {t} is used by einsums {', '.join(map(str, es))}; a fused group needs each "
                                 "tensor other than its intermediates in one einsum (this version)"))
    return out


def check_fused(fs: FusedSchedule) -> None:
    """Raise :class:`ScheduleError` naming the first broken rule."""
    v = fused_violations(fs)
    if v:
        raise ScheduleError(v[0])


# --------------------------------------------------------------------------
# Writing.
# --------------------------------------------------------------------------


def fused_to_dict(fs: FusedSchedule) -> dict[str, Any]:
    from mapsearch.spec.graph_load import graph_to_dict

    stages = []
    for st in fs.stages:
        d = schedule_to_dict(st)
        stage = {"levels": d["levels"], "homes": d["homes"]}
        if "predicted" in d:
            stage["predicted"] = d["predicted"]
        stages.append(stage)
    out: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "graph": graph_to_dict(fs.graph),
        "architecture": architecture_to_dict(fs.architecture),
        "fusion_level": fs.architecture.levels[fs.fusion_level].name,
        "stages": stages,
    }
    if fs.predicted is not None:
        out["predicted"] = figures_to_dict(fs.predicted)
    return out


def dumps_fused(fs: FusedSchedule) -> str:
    return _pretty(fused_to_dict(fs)) + "\n"


def save_fused(fs: FusedSchedule, path: str | Path) -> None:
    """Write atomically (:mod:`mapsearch.atomic`): no partial file on error."""
    from mapsearch.atomic import write_text_atomic

    write_text_atomic(path, dumps_fused(fs))


def _prefixed(err: SpecError, source: str, prefix: str) -> SpecError:
    field = f"{prefix}.{err.field}" if err.field else prefix
    text = str(err)
    head = f"{err.source}: {err.field}: " if err.field else f"{err.source}: "
    detail = text[len(head):] if text.startswith(head) else text
    return _note(source, field, detail)


def fused_from_dict(data: object, source: str = "<fused schedule>") -> FusedSchedule:
    """Validate raw data and build a legal :class:`FusedSchedule` (one-line SpecErrors)."""
    from mapsearch.spec.graph_load import graph_from_dict

    if not isinstance(data, Mapping):
        raise _error(source, "", "a fused schedule object", data)
    known = {"format", "version", "graph", "architecture", "fusion_level", "stages", "predicted"}
    for key in data:
        if key not in known:
            raise _note(source, str(key), f"unknown field; expected one of {', '.join(sorted(known))}")
    for key in ("format", "version", "graph", "architecture", "fusion_level", "stages"):
        if key not in data:
            raise _note(source, key, "missing")
    if data["format"] != FORMAT:
        raise _error(source, "format", repr(FORMAT), data["format"])
    if data["version"] != VERSION or isinstance(data["version"], float):  # 1.0 == 1, but not a version
        raise _error(source, "version", str(VERSION), data["version"])
    graph = graph_from_dict(data["graph"], source) if isinstance(data["graph"], Mapping) else None
    if graph is None:
        raise _error(source, "graph", "a chain {name, einsums, extents}", data["graph"])
    if not isinstance(data["architecture"], Mapping):
        raise _error(source, "architecture", "an architecture object", data["architecture"])
    validate_against(data["architecture"], "architecture", source, "architecture")
    arch = _architecture(data["architecture"], source, "architecture")
    refuse_block_roles(arch, source)
    # The chain and the architecture together, once: a stage may lack a dimension the block or a tensor a
    # mesh's may_reuse names, as solve_chain allows (its stages are built below without this check).
    check_problem(graph.extents, graph.tensor_names, arch, source, source, graph.einsums,
                  fields=("graph", "architecture"))
    level = data["fusion_level"]
    if isinstance(level, str) and level in arch.level_names:
        f = arch.index(level)
    elif isinstance(level, int) and not isinstance(level, bool) and 0 <= level < arch.depth:
        f = level
    else:
        raise _error(source, "fusion_level", f"a level of {arch.name} ({', '.join(arch.level_names)})", level)
    raw_stages = data["stages"]
    if not isinstance(raw_stages, list) or len(raw_stages) != len(graph.einsums):
        raise _error(source, "stages", f"a list of {len(graph.einsums)} stages (one per einsum)", raw_stages)
    stages = []
    for e, raw in enumerate(raw_stages):
        if not isinstance(raw, Mapping):
            raise _error(source, f"stages[{e}]", "a stage {levels, homes}", raw)
        for key in raw:
            if key not in {"levels", "homes", "predicted"}:
                raise _note(source, f"stages[{e}].{key}", "unknown field; expected one of homes, levels, predicted")
        workload = graph.stage(e)
        doc = {
            "format": "mapsearch-schedule",
            "version": 1,
            "workload": workload_to_dict(workload),
            "architecture": data["architecture"],
            "levels": raw.get("levels"),
            "homes": raw.get("homes", {}),
        }
        if "predicted" in raw:
            doc["predicted"] = raw["predicted"]
        try:
            validate_against(doc, SCHEMA_PATH, source)  # the stage's levels, homes and figures
            stages.append(schedule_from_parts(doc, workload, arch, source))
        except SpecError as err:
            raise _prefixed(err, source, f"stages[{e}]") from None
    predicted = (figures_from_dict(data["predicted"], source, "predicted", validated=False)
                 if "predicted" in data else None)
    fs = FusedSchedule(graph, arch, f, tuple(stages), predicted)
    found = fused_violations(fs)
    if found:
        _raise_violation(found[0], source)
    return fs


def load_fused(path: str | Path) -> FusedSchedule:
    return fused_from_dict(read_json(path), str(path))
