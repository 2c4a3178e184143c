"""Unfused chain files (``format: mapsearch-unfused-chain``): a chain's einsums run one after another.

``mapsearch solve CHAIN.yaml ARCH -o FILE`` writes one when the best option is
unfused or materialized at a level (:func:`mapsearch.solve.chain_files.unfused_to_dict`)::

    {
      "format": "mapsearch-unfused-chain", "version": 1,
      "graph": {"name": "mm2", "einsums": ["T[m,n] += A[m,k] * B[k,n]", ...], "extents": {...}},
      "time": "320",       # predicted: the sum of the stages' times (exact: an int or "a/b")
      "words": 896,        # predicted: the sum of the stages' words over every link
      "stages": [          # one per einsum, in the graph's order: each a whole schedule file
        {"format": "mapsearch-schedule", "version": 1, "workload": ..., "architecture": ..., ...},
        ...
      ]
    }

Reading checks every stage as a schedule file (:func:`mapsearch.schedule.json_io.schedule_from_dict`,
errors prefixed ``stages[e].``), then that stage ``e`` is einsum ``e`` of the graph at its extents, that
every stage uses one architecture and that an intermediate has one home in every stage that uses it.
The predicted totals are not checked against the stages here: ``mapsearch replay --check`` compares
both with the replay. Every error is one :class:`~mapsearch.errors.SpecError` line naming the file.

A partly fused chain's plan (``format: mapsearch-chain-plan``, written by
:func:`mapsearch.solve.chain_files.plan_to_dict`) is read here too (:func:`plan_from_dict`): its
``groups`` cut the graph's einsums into contiguous runs, each ``{"einsums": [i, ...], "schedule": ...}``
with a one-einsum schedule file (one index) or a fused schedule file (several), run one after another;
``between_level`` is where the intermediates between groups live, ``time`` and ``words`` the predicted
totals (the sums over the groups).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Mapping

from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.fused_json import FORMAT as FUSED_FORMAT, _prefixed, fused_from_dict
from mapsearch.schedule.json_io import read_json, schedule_from_dict
from mapsearch.schedule.schedule import Schedule
from mapsearch.errors import SpecError
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.reading import _error, _note, fraction_from_json
from mapsearch.spec.workload import WorkloadGraph

__all__ = ["FORMAT", "PLAN_FORMAT", "VERSION", "CHAIN_FILE_KINDS", "UnfusedChain", "ChainPlan", "unfused_from_dict",
           "plan_from_dict", "load_schedule_file"]

FORMAT = "mapsearch-unfused-chain"
PLAN_FORMAT = "mapsearch-chain-plan"
VERSION = 1

# What a chain's file is, by its format (for the refusals of commands that take one einsum's schedule).
CHAIN_FILE_KINDS = {FORMAT: "an unfused chain", FUSED_FORMAT: "a fused chain's schedule",
                    PLAN_FORMAT: "a partly fused chain's plan"}


class _Stages:
    """What a chain run part after part has: ``stages`` (each a schedule with its prediction), the predicted
    totals ``time`` and ``words``."""

    stages: tuple
    time: Fraction | None
    words: int | None

    @property
    def architecture(self) -> Architecture:
        return self.stages[0].architecture

    @property
    def predicted_complete(self) -> bool:
        """Every part and both totals carry a prediction (what ``replay --check`` compares)."""
        return self.time is not None and self.words is not None and all(s.predicted is not None for s in self.stages)


@dataclass(frozen=True)
class UnfusedChain(_Stages):
    """A chain run einsum by einsum: ``stages[e]`` schedules einsum ``e`` alone; ``time`` and ``words`` are
    the predicted totals (None when the file gives none)."""

    graph: WorkloadGraph
    stages: tuple[Schedule, ...]
    time: Fraction | None = None
    words: int | None = None
    source: str = field(default="", compare=False, repr=False)


def _header(data: object, source: str, kind: str, what: str,
            fields: tuple[str, ...]) -> tuple[WorkloadGraph, Fraction | None, int | None]:
    """What both chain files share: no unknown key, ``format`` ``kind``, ``version``, the ``graph``, and the
    predicted totals ``time`` and ``words`` (optional); ``fields`` are the file's own required keys."""
    from mapsearch.spec.graph_load import graph_from_dict

    if not isinstance(data, Mapping):
        raise _error(source, "", what, data)
    known = ("format", "version", "graph", "time", "words") + fields
    for key in data:
        if key not in known:
            raise _note(source, str(key), f"unknown field; expected one of {', '.join(known)}")
    for key in ("format", "version", "graph") + fields:
        if key not in data:
            raise _note(source, key, "missing")
    if data["format"] != kind:
        raise _error(source, "format", repr(kind), data["format"])
    if data["version"] != VERSION or isinstance(data["version"], (bool, float)):
        raise _error(source, "version", str(VERSION), data["version"])
    if not isinstance(data["graph"], Mapping):
        raise _error(source, "graph", "a chain {name, einsums, extents}", data["graph"])
    graph = graph_from_dict(data["graph"], source)
    time = fraction_from_json(data["time"], source, "time", nonnegative=True) if "time" in data else None
    words = data.get("words")
    if words is not None and (not isinstance(words, int) or isinstance(words, bool) or words < 0):
        raise _error(source, "words", "int >= 0", words)
    return graph, time, words


def unfused_from_dict(data: object, source: str = "<unfused chain>") -> UnfusedChain:
    """Validate raw data and build an :class:`UnfusedChain` (one-line SpecErrors)."""
    graph, time, words = _header(data, source, FORMAT, "an unfused chain object", ("stages",))
    raw_stages = data["stages"]
    if not isinstance(raw_stages, list) or len(raw_stages) != len(graph.einsums):
        raise _error(source, "stages", f"a list of {len(graph.einsums)} schedules (one per einsum)", raw_stages)
    stages: list[Schedule] = []
    for e, raw in enumerate(raw_stages):
        try:
            stages.append(schedule_from_dict(raw, source))
        except SpecError as err:
            raise _prefixed(err, source, f"stages[{e}]") from None
    _check_stages(graph, stages, source)
    return UnfusedChain(graph, tuple(stages), time, words, source=source)


def _check_stages(graph: WorkloadGraph, stages: list[Schedule], source: str) -> None:
    """Stage ``e`` is einsum ``e`` at the graph's extents, on one architecture; one home per intermediate."""
    homes: dict[str, tuple[int, str]] = {}  # intermediate -> (first stage using it, its home there)
    for e, st in enumerate(stages):
        want = graph.stage(e)
        if st.workload.einsum != want.einsum:
            raise _error(source, f"stages[{e}].workload.einsum", f"einsum {e} of the graph, "
                         f"{want.einsum.text()!r}", st.workload.einsum.text())
        if dict(st.workload.extents) != dict(want.extents):
            raise _error(source, f"stages[{e}].workload.extents", f"the graph's extents {dict(want.extents)}",
                         dict(st.workload.extents))
        if st.architecture != stages[0].architecture:
            raise _note(source, f"stages[{e}].architecture", "differs from stages[0].architecture; every stage "
                        "runs on one architecture")
        for t in graph.intermediates:
            if t not in st.workload.tensor_names:
                continue
            level = st.architecture.levels[st.home(t)].name
            first = homes.setdefault(t, (e, level))
            if first[1] != level:
                raise _error(source, f"stages[{e}].homes.{t}", f"{first[1]}, its home in stages[{first[0]}] "
                             "(an intermediate is read from where it was written)", level)


@dataclass(frozen=True)
class ChainPlan(_Stages):
    """A chain cut into contiguous groups run one after another: ``stages[g]`` schedules the einsums
    ``groups[g]`` (a :class:`Schedule` for one einsum, a :class:`FusedSchedule` for several); the
    intermediates between groups live at ``between_level``. ``time`` and ``words`` are the predicted totals."""

    graph: WorkloadGraph
    groups: tuple[tuple[int, ...], ...]
    stages: tuple[Schedule | FusedSchedule, ...]
    between_level: str
    time: Fraction | None = None
    words: int | None = None
    source: str = field(default="", compare=False, repr=False)


def plan_from_dict(data: object, source: str = "<chain plan>") -> ChainPlan:
    """Validate raw data and build a :class:`ChainPlan` (one-line SpecErrors, group errors prefixed
    ``groups[g].``)."""
    graph, time, words = _header(data, source, PLAN_FORMAT, "a chain plan object", ("between_level", "groups"))
    raw_groups = data["groups"]
    n = len(graph.einsums)
    if not isinstance(raw_groups, list) or not raw_groups:
        raise _error(source, "groups", "a list of {einsums, schedule}, one per group", raw_groups)
    groups: list[tuple[int, ...]] = []
    stages: list[Schedule | FusedSchedule] = []
    for g, raw in enumerate(raw_groups):
        where = f"groups[{g}]"
        if not isinstance(raw, Mapping) or set(raw) != {"einsums", "schedule"}:
            raise _error(source, where, "an object {einsums, schedule}", raw)
        first = groups[-1][-1] + 1 if groups else 0
        indices = raw["einsums"]
        if (not isinstance(indices, list) or not indices or any(type(i) is not int for i in indices)
                or indices != list(range(first, first + len(indices))) or indices[-1] >= n):
            raise _error(source, f"{where}.einsums", f"the next einsums of the graph in order, from {first} "
                         f"(of 0..{n - 1})", indices)
        schedule = _group_schedule(graph, tuple(indices), raw["schedule"], source, f"{where}.schedule")
        if stages and schedule.architecture != stages[0].architecture:
            raise _note(source, f"{where}.schedule.architecture", "differs from groups[0]'s; every group runs "
                        "on one architecture")
        groups.append(tuple(indices))
        stages.append(schedule)
    if groups[-1][-1] != n - 1:
        raise _error(source, "groups", f"groups covering every einsum 0..{n - 1}", [list(g) for g in groups])
    level = data["between_level"]
    names = [lv.name for lv in stages[0].architecture.levels]
    if level not in names:
        raise _error(source, "between_level", f"a level of {stages[0].architecture.name} {names}", level)
    return ChainPlan(graph, tuple(groups), tuple(stages), level, time, words, source=source)


def _group_schedule(graph: WorkloadGraph, indices: tuple[int, ...], raw: object, source: str,
                    where: str) -> Schedule | FusedSchedule:
    """Group ``indices``' schedule: einsum ``i`` alone at the graph's extents, or those einsums fused."""
    try:
        schedule = fused_from_dict(raw, source) if len(indices) > 1 else schedule_from_dict(raw, source)
    except SpecError as err:
        raise _prefixed(err, source, where) from None
    if len(indices) == 1:
        want = graph.stage(indices[0])
        if schedule.workload.einsum != want.einsum or dict(schedule.workload.extents) != dict(want.extents):
            raise _error(source, f"{where}.workload", f"einsum {indices[0]} of the graph, {want.einsum.text()!r} "
                         f"at {dict(want.extents)}", schedule.workload.einsum.text())
        return schedule
    einsums = tuple(graph.einsums[i] for i in indices)
    if schedule.graph.einsums != einsums or any(graph.extent.get(d) != e for d, e in schedule.graph.extents):
        raise _error(source, f"{where}.graph", f"einsums {list(indices)} of the graph at its extents",
                     [e.text() for e in schedule.graph.einsums])
    return schedule


def load_schedule_file(path: str | Path) -> Schedule | FusedSchedule | UnfusedChain | ChainPlan:
    """Any schedule file ``mapsearch replay`` reads, told apart by its ``format``: one einsum's
    (``mapsearch-schedule``), a fused chain's (``mapsearch-fused-schedule``), an unfused chain's
    (``mapsearch-unfused-chain``) or a partly fused chain's plan (``mapsearch-chain-plan``)."""
    data = read_json(path)
    kind = data.get("format") if isinstance(data, dict) else None
    if kind == FORMAT:
        return unfused_from_dict(data, str(path))
    if kind == PLAN_FORMAT:
        return plan_from_dict(data, str(path))
    if kind == FUSED_FORMAT:
        return fused_from_dict(data, str(path))
    return schedule_from_dict(data, str(path))
