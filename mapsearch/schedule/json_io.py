"""Schedule files: a versioned, self-contained JSON format, read in steps.

A schedule file embeds everything needed to replay it::

    {
      "format": "mapsearch-schedule", "version": 1,
      "workload": {"name": ..., "einsum": "Z[m,n] += A[m,k] * B[k,n]", "extents": {"m": 4, ...}},
      "architecture": {... as in the architecture YAML ...},
      "levels": [                                  # outermost first, one per level
        {"name": "L1", "tile": {"m": 4, "n": 4, "k": 4}, "order": [], "keep": []},
        {"name": "L0", "tile": {"m": 2, "n": 2, "k": 2}, "order": ["m", "n", "k"], "keep": ["A", "B", "Z"]}
      ],                                           # a meshed level may add "spatial":
                                                   # [{"dim": "m", "part": 2, "axis": "x"}] (docs/spatial.md)
      "homes": {"A": "L1", "B": "L1", "Z": "L1"},
      "predicted": {                               # optional: the solver's figures
        "links": [{"name": "L1->L0", "words_down": 64, "words_up": 16, "time": 80,
                   "tensors": {"A": {"words_down": 32, "words_up": 0}, ...}}],
        "op_calls": 64, "compute_time": 64, "macs": 64, "block_macs": 1,
        "occupancy": {"L1": 48, "L0": 12}
        # with a mesh also "compute_instances" and "busiest_calls"
      }
    }

Exact numbers (times, clocks per word) are ints when integral, else ``"a/b"``.
Reading validates the raw JSON against ``schedule.schema.json``, builds the
objects, then checks the rules of :mod:`mapsearch.schedule.legality`; every
error is one :class:`~mapsearch.errors.SpecError` line naming the JSON path,
e.g. ``s.json: levels[1].tile.m: expected 1 <= tile <= 4 (the parent tile), got 9``.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from mapsearch.atomic import write_text_atomic
from mapsearch.dram.layout import layout_spec_to_dict, layout_specs
from mapsearch.errors import SpecError, UsageError
from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.schedule.legality import violations
from mapsearch.schedule.schedule import DramPlan, LevelMapping, Schedule, SpatialSplit
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import Workload
from mapsearch.spec.load import _architecture, _workload, architecture_to_dict, check_problem, workload_to_dict
from mapsearch.spec.reading import _error, _note, fraction_from_json, fraction_to_json, join_path, read_text
from mapsearch.spec.schema import validate_against

__all__ = [
    "FORMAT",
    "VERSION",
    "SCHEMA_PATH",
    "schedule_to_dict",
    "schedule_from_dict",
    "figures_to_dict",
    "figures_from_dict",
    "dumps_schedule",
    "save_schedule",
    "load_schedule",
]

FORMAT = "mapsearch-schedule"
VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parent / "schedule.schema.json"


# --------------------------------------------------------------------------
# Writing.
# --------------------------------------------------------------------------


def figures_to_dict(figures: Figures) -> dict[str, Any]:
    """Figures in the ``predicted`` format (exact numbers, order kept)."""
    return {
        "links": [
            {
                "name": link.name,
                "words_down": link.words_down,
                "words_up": link.words_up,
                "time": fraction_to_json(link.time),
                "tensors": {t.tensor: {"words_down": t.words_down, "words_up": t.words_up} for t in link.tensors},
            }
            for link in figures.links
        ],
        "op_calls": figures.op_calls,
        "compute_time": fraction_to_json(figures.compute_time),
        "macs": figures.macs,
        "block_macs": figures.block_macs,
        "occupancy": {level: words for level, words in figures.occupancy},
        **_spatial_figures(figures),
    }


def _spatial_figures(figures: Figures) -> dict[str, Any]:
    """``compute_instances`` (when not 1) and ``busiest_calls`` (when set), so that reading gives the same figures."""
    out: dict[str, Any] = {}
    if figures.compute_instances != 1:
        out["compute_instances"] = figures.compute_instances
    if figures.busiest_calls is not None:
        out["busiest_calls"] = figures.busiest_calls
    return out


def _mapping_to_dict(lm: LevelMapping) -> dict[str, Any]:
    out: dict[str, Any] = {"name": lm.level, "tile": {d: t for d, t in lm.tile}, "order": list(lm.order), "keep": sorted(lm.keep)}
    if lm.spatial:
        out["spatial"] = [{"dim": s.dim, "part": s.part, "axis": s.axis} for s in lm.spatial]
    if lm.positions:
        out["positions"] = {t: p for t, p in lm.positions}
    return out


def _check_writable(schedule: Schedule) -> None:
    """Refuse an architecture that the file format cannot hold, rather than write a file no loader reads back.

    The Python API builds levels that files do not allow (an unbounded or
    zero-word level below the top); a schedule file must load again
    (:func:`schedule_from_dict`), so writing one says what to change.
    In-memory dicts (reports) still carry such levels.
    """
    for i, level in enumerate(schedule.architecture.levels[1:], start=1):
        if level.capacity is None or level.capacity < 1:
            raise UsageError(f"architecture.levels[{i}].capacity ({level.name})",
                             "int > 0 in a schedule file (only the top level may be unbounded)", level.capacity)


def schedule_to_dict(schedule: Schedule) -> dict[str, Any]:
    """The schedule as a JSON-ready dict in the version-1 format."""
    out: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "workload": workload_to_dict(schedule.workload),
        "architecture": architecture_to_dict(schedule.architecture),
        "levels": [_mapping_to_dict(lm) for lm in schedule.levels],
        "homes": {t: level for t, level in schedule.homes},
    }
    if schedule.predicted is not None:
        out["predicted"] = figures_to_dict(schedule.predicted)
    if schedule.dram is not None:
        out["dram"] = dram_plan_to_dict(schedule)
    return out


def dram_plan_to_dict(schedule: Schedule) -> dict[str, Any]:
    plan = schedule.dram
    out: dict[str, Any] = {"layouts": {t: layout_spec_to_dict(schedule.workload, t, spec) for t, spec in plan.layouts},
                           "element_order": plan.element_order}
    if plan.row_openings is not None:
        out["predicted"] = {"row_openings": dict(plan.row_openings)}
    return out


def dram_plan_from_dict(data: Mapping[str, Any], workload, source: str) -> DramPlan:
    layouts = tuple(layout_specs(workload, data.get("layouts"), source, "dram.layouts").items())
    openings = (data.get("predicted") or {}).get("row_openings")
    if openings is not None:
        for t in openings:
            if t not in workload.tensor_names:
                raise SpecError(source, f"dram.predicted.row_openings.{t}", "", None,
                                detail=f"unknown tensor; expected one of {', '.join(workload.tensor_names)}")
        openings = tuple((t, int(n)) for t, n in openings.items())
    return DramPlan(tuple(layouts), data.get("element_order", "layout"), openings)


def _pretty(value: Any, indent: int = 0, width: int = 100) -> str:
    """Indented JSON whose small flat objects and lists stay on one line."""
    flat = json.dumps(value, separators=(", ", ": "))
    nested = isinstance(value, (dict, list)) and any(
        isinstance(v, (dict, list)) and v for v in (value.values() if isinstance(value, dict) else value)
    )
    if not isinstance(value, (dict, list)) or (not nested and indent + len(flat) <= width):
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k)}: {_pretty(v, indent + 2, width)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [f"{pad}{_pretty(v, indent + 2, width)}" for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def dumps_schedule(schedule: Schedule) -> str:
    """The schedule file's text: indented JSON, small parts on one line, final newline."""
    _check_writable(schedule)
    return _pretty(schedule_to_dict(schedule)) + "\n"


def save_schedule(schedule: Schedule, path: str | Path) -> None:
    """Write the schedule to ``path`` atomically (:mod:`mapsearch.atomic`): no partial file on error."""

    write_text_atomic(path, dumps_schedule(schedule))


def figures_from_dict(data: object, source: str, prefix: str = "predicted", validated: bool = True) -> Figures:
    """Build :class:`Figures` from data valid against the schema's ``figures`` (checked here unless
    ``validated``: figures read outside a schedule document, a fused schedule's whole-run ``predicted``).

    Counts beyond 2^62 (the solver's integers) are refused: no solve predicts them.
    """
    from mapsearch.spec import limits

    if not validated:
        validate_against(data, SCHEMA_PATH, source, prefix, definition="figures")
    assert isinstance(data, Mapping)

    def count(value: Any, *path: object) -> int:
        if value > limits.MODEL_LIMIT:
            raise _error(source, join_path(path, prefix), "int >= 0, at most 2^62 (the solver's integers)", value)
        return int(value)

    def exact(value: Any, *path: object) -> Fraction:
        return fraction_from_json(value, source, join_path(path, prefix), nonnegative=True)

    links = []
    for i, raw in enumerate(data["links"]):
        tensors = tuple(
            TensorTraffic(name, count(t["words_down"], "links", i, "tensors", name, "words_down"),
                          count(t["words_up"], "links", i, "tensors", name, "words_up"))
            for name, t in (raw.get("tensors") or {}).items()
        )
        time = exact(raw["time"], "links", i, "time")
        links.append(LinkFigures(raw["name"], count(raw["words_down"], "links", i, "words_down"),
                                 count(raw["words_up"], "links", i, "words_up"), time, tensors))
    return Figures(
        links=tuple(links),
        op_calls=count(data["op_calls"], "op_calls"),
        compute_time=exact(data["compute_time"], "compute_time"),
        macs=count(data["macs"], "macs"),
        block_macs=count(data["block_macs"], "block_macs"),
        occupancy=tuple((level, count(words, "occupancy", level)) for level, words in data["occupancy"].items()),
        compute_instances=count(data.get("compute_instances", 1), "compute_instances"),
        busiest_calls=count(data["busiest_calls"], "busiest_calls") if "busiest_calls" in data else None,
    )


def _raise_violation(text: str, source: str) -> None:
    """A legality message ``'levels[1].tile.m: expected ...'`` as a SpecError on ``source``."""
    field, sep, detail = text.partition(": ")
    if not sep or " " in field:
        raise _note(source, "", text)
    raise _note(source, field, detail)


def _check_names(data: Mapping[str, Any], schedule: Schedule, source: str) -> None:
    """Unknown dimensions and tensors named at their exact JSON path."""
    from mapsearch.spec import limits

    dims = schedule.workload.dims
    tensors = schedule.workload.tensor_names
    for i, raw in enumerate(data["levels"]):
        for d in raw["tile"]:
            if d not in dims:
                raise _note(source, join_path(["levels", i, "tile", d]), f"unknown dimension; expected one of {', '.join(dims)}")
        for j, d in enumerate(raw["order"]):
            if d not in dims:
                raise _note(source, f"levels[{i}].order[{j}]", f"unknown dimension {limits.describe(d)}; expected one of {', '.join(dims)}")
        if len(set(raw["order"])) != len(raw["order"]):
            raise _note(source, f"levels[{i}].order", f"a dimension appears twice in {limits.describe(raw['order'], 200)}")
        for j, t in enumerate(raw["keep"]):
            if t not in tensors:
                raise _note(source, f"levels[{i}].keep[{j}]", f"unknown tensor {limits.describe(t)}; expected one of {', '.join(tensors)}")
        for t in raw.get("positions") or {}:
            if t not in tensors:
                raise _note(source, join_path(["levels", i, "positions", t]), f"unknown tensor; expected one of {', '.join(tensors)}")


def schedule_from_dict(data: object, source: str = "<schedule>") -> Schedule:
    """Validate raw data (as read from JSON) and build a legal :class:`Schedule`.

    Raises a one-line SpecError naming ``source`` and the JSON path of the
    first problem: schema violations, bad specs, unknown names, then the
    legality rules (tiles within their parent tile, orders that are
    permutations, residency below the home, one mapping per level).
    """
    validate_against(data, SCHEMA_PATH, source)
    assert isinstance(data, Mapping)
    workload = _workload(data["workload"], source, "workload")
    architecture = _architecture(data["architecture"], source, "architecture")
    refuse_block_roles(architecture, source)
    check_problem(workload.extents, workload.tensor_names, architecture, source, source, (workload.einsum,),
                  fields=("workload", "architecture"))
    return schedule_from_parts(data, workload, architecture, source)


def refuse_block_roles(architecture: Architecture, source: str) -> None:
    """A schedule's op is bound to dimensions: the replay counts calls from a block by dimension only."""
    if architecture.compute.block_roles:
        raise _note(source, "architecture.compute.block_roles", "a schedule's op is bound to dimensions: give "
                    "compute.block (the solver writes the binding it chose there)")


def schedule_from_parts(data: Mapping[str, Any], workload: Workload, architecture: Architecture,
                        source: str) -> Schedule:
    """The :class:`Schedule` of schema-valid ``data`` whose workload and architecture are built and checked
    together already (by :func:`schedule_from_dict`, or for a fused stage by the chain's check: a stage may
    lack a dimension the chain's block or a tensor its mesh's ``may_reuse`` names). Names and legality here."""
    levels = tuple(
        LevelMapping(
            level=raw["name"],
            tile=tuple((d, int(t)) for d, t in raw["tile"].items()),
            order=tuple(raw["order"]),
            keep=frozenset(raw["keep"]),
            spatial=tuple(SpatialSplit(sp["dim"], int(sp["part"]), sp["axis"]) for sp in raw.get("spatial") or ()),
            positions=tuple(sorted((t, int(p)) for t, p in (raw.get("positions") or {}).items())),
        )
        for raw in data["levels"]
    )
    homes = tuple((t, level) for t, level in data["homes"].items())
    predicted = figures_from_dict(data["predicted"], source) if "predicted" in data else None
    plan = dram_plan_from_dict(data["dram"], workload, source) if "dram" in data else None
    schedule = Schedule(workload, architecture, levels, homes, predicted, plan, source=source)
    found = violations(schedule)
    if not found or not found[0].startswith("levels:"):
        # Shape first (one mapping per level); then names, which give exact paths.
        _check_names(data, schedule, source)
    if found:
        _raise_violation(found[0], source)
    if predicted is not None:
        _check_predicted_names(predicted, schedule, source)
    return schedule


def _check_predicted_names(predicted: Figures, schedule: Schedule, source: str) -> None:
    from mapsearch.spec import limits

    arch = schedule.architecture
    link_names = arch.link_names
    for i, link in enumerate(predicted.links):
        if link.name not in link_names:
            raise _note(source, f"predicted.links[{i}].name", f"unknown link {limits.describe(link.name)}; expected one of {', '.join(link_names)}")
        for t in link.tensors:
            if t.tensor not in schedule.workload.tensor_names:
                raise _note(source, join_path(["predicted", "links", i, "tensors", t.tensor]), "unknown tensor")
    for level, _ in predicted.occupancy:
        if level not in arch.level_names:
            raise _note(source, join_path(["predicted", "occupancy", level]), f"unknown level; expected one of {', '.join(arch.level_names)}")


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(f"key {key!r} is given twice in one object")
        out[key] = value
    return out


def read_json(path: str | Path) -> Any:
    """The parsed JSON of ``path``; unreadable, malformed, ambiguous or too deep files are one SpecError line.

    A key given twice in one object is an error (JSON leaves it undefined;
    Python would keep the last silently), as in the YAML specs.
    """
    from mapsearch.spec import limits

    source = str(path)
    try:
        data = json.loads(read_text(path), object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise _note(source, f"line {e.lineno} column {e.colno}", f"malformed JSON: {e.msg}") from None
    except RecursionError:
        raise _note(source, "", f"nested deeper than {limits.MAX_DEPTH} levels; the specs nest a few") from None
    except ValueError as e:  # a key given twice, an int beyond Python's digit limit
        raise _note(source, "", f"malformed JSON: {' '.join(str(e).split())}") from None
    deep = limits.depth_error(data)
    if deep is not None:
        raise _note(source, "", deep)
    from mapsearch.spec.reading import check_text

    check_text(data, source)  # a lone surrogate would fail only when printed, after the work
    return data


def load_schedule(path: str | Path) -> Schedule:
    """Read and check a schedule file written by :func:`save_schedule`."""
    return schedule_from_dict(read_json(path), str(path))

