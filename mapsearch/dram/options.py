"""The trace options file of ``mapsearch trace --layouts FILE`` (docs/dram.md).

    dram: {preset: ddr4-3200, element_bytes: 1}   # optional: replaces the architecture's dram entry
    dram_level: 0                                 # optional: the level that is DRAM (default the top)
    layouts:
      I: {kind: row_aligned, order: [n, c, q+s, p+r], slice: c}
      W: {kind: tiled, tile: {k: 4, c: 2}}
    element_order:                                # optional: 'layout' (default), 'nest', or per tensor
      I: [n, c, q, s, p, r]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from mapsearch.dram.geometry import DramSpec
from mapsearch.dram.layout import Layouts, layout_specs, placed_layouts
from mapsearch.dram.spec import dram_from_dict
from mapsearch.errors import SpecError
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.dram_trace import _normalise_order
from mapsearch.spec.reading import read_yaml


def _err(source: str, field: str, detail: str) -> SpecError:
    return SpecError(source, field, "", None, detail=" ".join(detail.split()))


@dataclass
class TraceOptions:
    dram: DramSpec
    layouts: Layouts
    element_order: Any
    dram_level: int = 0


def trace_options(schedule: Schedule, data: Mapping[str, Any] | None, source: str = "<options>",
                  dram_override: DramSpec | None = None) -> TraceOptions:
    data_given = data is not None
    data = dict(data or {})
    for key in data:
        if key not in ("dram", "layouts", "element_order", "dram_level"):
            raise _err(source, str(key), "unknown field; expected one of dram, layouts, element_order, dram_level")
    own = dram_from_dict(data.get("dram"), source, "dram")  # checked even where --dram overrides it
    dram = dram_override or own or getattr(schedule.architecture, "dram", None)
    if dram is None:
        here = "a dram: entry here" if data_given else "an options file (--layouts) with a dram: entry"
        raise _err(source, "dram", f"no DRAM: give the architecture a dram: entry, {here}, or --dram PRESET")
    level = data.get("dram_level", 0)
    if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level < schedule.architecture.depth - 1:
        raise _err(source, "dram_level", f"expected a level index 0..{schedule.architecture.depth - 2}, got {level!r}")
    if "layouts" not in data and schedule.dram is not None:
        specs = dict(schedule.dram.layouts)  # the solver's choice
    else:
        specs = layout_specs(schedule.workload, data.get("layouts"), source)
    layouts = placed_layouts(schedule.workload, dram, specs, source)  # overlapping bases: one line, as solve says it
    order = data.get("element_order")
    if order is None:
        order = "layout"  # as with layouts: null and dram: null, an empty entry is the default
    try:
        _normalise_order(schedule, order)
    except ValueError as e:
        field, _, detail = str(e).partition(": ")
        raise _err(source, field, detail) from None
    return TraceOptions(dram, layouts, order, level)


def load_trace_options(schedule: Schedule, path: str | Path | None, dram_override: DramSpec | None = None,
                       schedule_source: str | Path | None = None) -> TraceOptions:
    """The options of ``path`` (a YAML file), or the defaults when ``path`` is None.

    Without an options file an error names ``schedule_source`` (the schedule's
    file), or says plainly that no options file was given.
    """
    if path is None:
        source = f"{schedule_source} (no options file)" if schedule_source is not None else "no options file given"
        return trace_options(schedule, None, source, dram_override)
    data = read_yaml(path)
    if data is not None and not isinstance(data, Mapping):
        raise _err(str(path), "", "expected a mapping with layouts, element_order, dram")
    return trace_options(schedule, {} if data is None else data, str(path), dram_override)  # an empty file: defaults
