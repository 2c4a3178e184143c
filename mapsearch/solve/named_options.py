"""Solve options by name: a :class:`~mapsearch.model.options.SolveOptions` from plain values, each one checked.

:func:`solve_options` is how :mod:`mapsearch.api`, the CLI and the sweep's
cases give options (re-exported by :mod:`mapsearch.solve.entry`): numbers as
ints, decimals or ``'a/b'`` (:data:`Number`), a block binding as text or a
mapping, a warm start as a schedule or its file, DRAM layouts as specs, dicts
or a trace options file. A bad value is a
:class:`~mapsearch.errors.UsageError` naming the parameter (or, through
``names``, the command-line flag that gave it).
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Union

from mapsearch.dram.layout import LayoutSpec, layout_specs, placed_layouts
from mapsearch.errors import SpecError, UsageError
from mapsearch.model.options import DRAM_ROWS, OBJECTIVES, SolveOptions
from mapsearch.schedule.json_io import FORMAT as SCHEDULE_FORMAT, read_json, schedule_from_dict
from mapsearch.schedule.schedule import Schedule
from mapsearch.schedule.unfused_json import CHAIN_FILE_KINDS
from mapsearch.spec import limits
from mapsearch.spec.architecture import Architecture, as_fraction
from mapsearch.spec.block_roles import fixed_bindings, parse_binding
from mapsearch.spec.reading import read_yaml
from mapsearch.spec.tree_nodes import Tree
from mapsearch.spec.tree_paths import flatten
from mapsearch.spec.workload import Workload

__all__ = ["Number", "MAX_WORKERS", "MAX_SEED", "MAX_SECONDS", "check_seconds", "solve_options"]

Number = Union[int, float, Fraction, str]  # an exact number: 2, 0.25, Fraction(1, 3) or '1/3'


MAX_WORKERS = 4096  # CP-SAT workers; more is a typo
MAX_SEED = 2**31 - 1  # CP-SAT's random_seed is a 32-bit int


def _exact(name: str, value: Number, expected: str) -> Fraction:
    try:
        x = as_fraction(value)
    except (TypeError, ValueError, ZeroDivisionError):
        raise UsageError(name, expected, value) from None
    if limits.exact_error(x) is not None:  # the model scales by its denominator: keep it within its integers
        raise UsageError(name, f"{expected}, numerator and denominator at most 2^62", value)
    return x


MAX_SECONDS = 10**7  # about 116 days: a limit beyond it is a typo, and 1e308 overflowed the walk's cell limit


def check_seconds(name: str, value: float, expected: str = "seconds > 0") -> float:
    """``value`` as seconds, finite, > 0 and at most :data:`MAX_SECONDS`; else a UsageError naming ``name``."""
    if not (math.isfinite(value) and value > 0):
        raise UsageError(name, expected, value)
    if value > MAX_SECONDS:
        raise UsageError(name, f"at most {MAX_SECONDS:,} seconds", value)
    return float(value)


def _link_names(architecture: Architecture | Tree | None) -> tuple[str, ...] | None:
    if isinstance(architecture, Tree):
        return flatten(architecture)[0].architecture.link_names
    return None if architecture is None else architecture.link_names


def solve_options(*, objective: str | None = None, time_limit: float | None = None, work_limit: float | None = None,
                  min_utilization: Number | None = None, workers: int | None = None, seed: int | None = None,
                  link_energy: Mapping[str, Number] | None = None, op_energy: Number | None = None,
                  dram_rows: str | None = None, max_dram_rows: int | None = None,
                  dram_layouts: Mapping[str, Any] | str | Path | None = None, placement: bool | None = None,
                  block_binding: Mapping[str, str] | str | None = None,
                  start: Schedule | str | Path | None = None,
                  architecture: Architecture | Tree | None = None, workload: Workload | None = None,
                  base: SolveOptions | None = None, names: Mapping[str, str] | None = None) -> SolveOptions:
    """``base`` (default :class:`SolveOptions()`) with every value given here, each checked.

    ``link_energy`` names links of ``architecture`` (checked when it is given);
    ``dram_layouts`` is a ``{tensor: layout}`` mapping as in a trace options
    file's ``layouts:`` (or the path of such a file), read against
    ``workload``; fixing layouts turns the DRAM row model on (``tiebreak``)
    unless ``dram_rows`` says otherwise. ``block_binding`` fixes roles of an
    op given in GEMM roles, ``"m=q,k=c"`` or ``{"m": "q", "k": "c"}``
    (checked against ``architecture`` and ``workload`` when both are given;
    the result names the restriction). ``start`` is a warm start: a
    :class:`Schedule` or a schedule file (``mapsearch solve -o``) that hints
    the first phase where the model has it (mapsearch/solve/warm_start.py).
    A bad value is a
    :class:`~mapsearch.errors.UsageError` naming the parameter, or
    ``names[parameter]`` (the CLI passes its flags).
    """
    def name(field: str) -> str:
        return (names or {}).get(field, field)

    given: dict[str, Any] = {}
    if objective is not None:
        if objective not in OBJECTIVES:
            raise UsageError(name("objective"), "one of " + ", ".join(OBJECTIVES), objective)
        given["objective"] = objective
    if time_limit is not None:
        given["time_limit"] = check_seconds(name("time_limit"), time_limit, "seconds > 0")
    if work_limit is not None:
        given["work_limit"] = check_seconds(name("work_limit"), work_limit, "deterministic seconds > 0")
    if min_utilization is not None:
        u = _exact(name("min_utilization"), min_utilization, "a number in (0, 1]")
        if not 0 < u <= 1:
            raise UsageError(name("min_utilization"), "a number in (0, 1]", min_utilization)
        given["min_utilization"] = u
    if workers is not None:
        if workers < 1:
            raise UsageError(name("workers"), "an int >= 1", workers)
        if workers > MAX_WORKERS:
            raise UsageError(name("workers"), f"an int between 1 and {MAX_WORKERS:,}", workers)
        given["workers"] = int(workers)
    if seed is not None:
        if not 0 <= seed <= MAX_SEED:
            raise UsageError(name("seed"), f"an int between 0 and {MAX_SEED:,}", seed)
        given["seed"] = int(seed)
    if link_energy is not None:
        links = _link_names(architecture)
        costs: dict[str, Fraction] = {}
        for link, cost in dict(link_energy).items():
            if links is not None and link not in links:
                arch_name = architecture.name if architecture is not None else ""
                raise UsageError(name("link_energy"), f"a link of {arch_name} {list(links)}", link)
            value = _exact(name("link_energy"), cost, "a cost >= 0 (int, decimal or 'a/b')")
            if value < 0:
                raise UsageError(name("link_energy"), "a cost >= 0 (int, decimal or 'a/b')", cost)
            costs[link] = value
        given["link_energy"] = tuple(costs.items())
    if op_energy is not None:
        x = _exact(name("op_energy"), op_energy, "a number >= 0 (int, decimal or 'a/b')")
        if x < 0:
            raise UsageError(name("op_energy"), "a number >= 0 (int, decimal or 'a/b')", op_energy)
        given["op_energy"] = x
    if dram_rows is not None:
        if dram_rows not in DRAM_ROWS:
            raise UsageError(name("dram_rows"), "one of " + ", ".join(DRAM_ROWS), dram_rows)
        given["dram_rows"] = dram_rows
    if max_dram_rows is not None:
        if max_dram_rows < 0:
            raise UsageError(name("max_dram_rows"), "an int >= 0", max_dram_rows)
        given["max_dram_rows"] = int(max_dram_rows)
    if placement is not None:
        given["placement"] = bool(placement)
    if block_binding is not None:
        given["block_binding"] = _block_binding(block_binding, architecture, workload, name("block_binding"))
    if start is not None:
        given["start"] = _start_schedule(start, name("start"))
    options = replace(base or SolveOptions(), **given)
    if dram_layouts is not None:
        options = _with_dram_layouts(options, dram_layouts, workload, architecture, name("dram_layouts"))
    return options


def _block_binding(value: Mapping[str, str] | str, architecture: Architecture | Tree | None, workload: Workload | None,
                   option: str) -> tuple[tuple[str, str], ...]:
    """``(role, dim)`` pairs; checked against the op and the einsum when both are known (else at the solve)."""
    try:
        pairs = parse_binding(value)
    except ValueError as e:
        raise UsageError(option, str(e).split(" (got ")[0], value) from None
    if isinstance(architecture, Architecture) and workload is not None:
        _, why = fixed_bindings(workload.einsum, architecture.compute, pairs)
        if why is not None:
            raise UsageError(option, *why)
    return pairs


def _start_schedule(start: Schedule | str | Path, option: str) -> Schedule:
    """A warm start's schedule: as it is, or read from a one-einsum schedule file (a bad file is one SpecError line;
    a chain's file, told by its ``format`` before anything else is read, is refused as such)."""
    if isinstance(start, Schedule):
        return start
    if not isinstance(start, (str, Path)) or not str(start).strip():
        raise UsageError(option, "a Schedule or a schedule file (written by mapsearch solve -o)", start)
    data = read_json(start)
    kind = data.get("format") if isinstance(data, dict) else None
    if isinstance(kind, str) and kind in CHAIN_FILE_KINDS:
        raise SpecError(str(start), "", "", None, detail=f"{option} takes one einsum's schedule (format "
                        f"{SCHEDULE_FORMAT}); this is {CHAIN_FILE_KINDS[kind]} ({kind})")
    return schedule_from_dict(data, str(start))


def _with_dram_layouts(options: SolveOptions, layouts: Mapping[str, Any] | str | Path, workload: Workload | None,
                       architecture: Architecture | Tree | None, option: str) -> SolveOptions:
    """Fixed DRAM layouts: LayoutSpecs as they are, layout dicts read against ``workload``; placed in the
    architecture's DRAM where both are known, so that bases that overlap are refused before any solve, in the
    words ``mapsearch trace --layouts`` uses (``dram/layout.placed_layouts``)."""
    source = "dram_layouts"
    raw: Any = layouts
    if isinstance(layouts, (str, Path)):
        if not str(layouts).strip():  # '' would read the working directory ("is a directory")
            raise UsageError(option, "a trace options file or a {tensor: layout} mapping", layouts)
        source = str(layouts)
        data = read_yaml(layouts)
        raw = data.get("layouts") if isinstance(data, dict) else data
    specs: Any = dict(raw) if isinstance(raw, Mapping) else raw  # not a mapping: layout_specs says so in one line
    if specs and (not isinstance(specs, Mapping) or not all(isinstance(v, LayoutSpec) for v in specs.values())):
        if workload is None:
            raise UsageError(option, "layout specs, or a workload to read layout dicts against", specs)
        specs = layout_specs(workload, specs, source)  # a bad entry: one line naming the file and field
    dram = getattr(architecture, "dram", None)
    if specs and dram is not None and workload is not None:
        placed_layouts(workload, dram, dict(specs), source)
    if options.dram_rows == "off" and options.max_dram_rows is None:
        options = replace(options, dram_rows="tiebreak")  # layouts only matter to the row model
    return replace(options, dram_layouts=tuple(dict(specs or {}).items()))
