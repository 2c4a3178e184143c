"""A schedule's DRAM trace in one call: stream its addresses, count the row buffer, write the trace file.

:func:`trace` is what ``mapsearch trace`` and :func:`mapsearch.api.trace`
run (docs/dram.md): the transfers across the DRAM link of a replayed
schedule become byte addresses (the tensors' layouts and the element order
inside each tile from the options), the row-buffer machine counts hits,
misses, conflicts, activations and time, and the stream is written, without
holding it in memory, for Ramulator 2, Ramulator 1 or DRAMsim3.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import numpy as np

from mapsearch.atomic import check_writable
from mapsearch.dram.geometry import PRESETS, DramSpec
from mapsearch.dram.layout import LayoutError, Layouts
from mapsearch.dram.options import load_trace_options
from mapsearch.dram.rowbuffer import RowBuffer, RowStats
from mapsearch.dram.trace import FORMATS, coalesce, write_trace
from mapsearch.errors import MapsearchError, SpecError, UsageError
from mapsearch.schedule.json_io import load_schedule
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.dram_trace import address_chunks

__all__ = ["TraceResult", "trace"]

METHODS = ("auto", "walk", "events")


@dataclass(frozen=True)
class TraceResult:
    dram: DramSpec
    addresses: int  # element accesses across the DRAM link
    requests: int  # after merging into request_bytes-sized requests (= addresses without)
    seconds: float
    rows: RowStats  # hits, misses, conflicts, activations, time
    output: str | None = None  # the trace file written, if any


# Sanity caps on trace options, not overflow limits (addresses past 2^62 are refused by dram/layout.py):
MAX_REQUEST_BYTES = 2**30  # a request wider than any DRAM row is a typo
MAX_CYCLES_PER_REQUEST = 2**20  # about a million clocks between requests is a typo


def trace(schedule: Schedule | str | Path, output: str | Path | None = None, *, format: str = "ramulator2",
          options: str | Path | None = None, dram: str | None = None, element_bytes: int | None = None,
          element_order: str | tuple[str, ...] | None = None, request_bytes: int | None = None,
          cycles_per_request: int = 1, method: str = "auto", names: Mapping[str, str] | None = None) -> TraceResult:
    """Trace ``schedule`` (or a schedule file; module docstring); ``options`` is a trace options file (layouts, element order, dram:).

    ``dram`` names a DRAM preset replacing the architecture's ``dram:`` entry;
    ``element_order`` is ``'layout'``, ``'nest'`` or dims outer -> inner;
    ``request_bytes`` merges consecutive accesses into aligned requests. A bad
    value is a :class:`~mapsearch.errors.UsageError` naming the parameter, or
    ``names[parameter]`` (the CLI passes its flags).
    """
    def name(field: str) -> str:
        return (names or {}).get(field, field)

    if format not in FORMATS:
        raise UsageError(name("format"), "one of " + ", ".join(FORMATS), format)
    if method not in METHODS:
        raise UsageError(name("method"), "auto, walk or events", method)
    if request_bytes is not None and not 1 <= request_bytes <= MAX_REQUEST_BYTES:
        raise UsageError(name("request_bytes"), f"an int in 1..{MAX_REQUEST_BYTES:,} (2^30)", request_bytes)
    if not 1 <= cycles_per_request <= MAX_CYCLES_PER_REQUEST:
        raise UsageError(name("cycles_per_request"), f"an int in 1..{MAX_CYCLES_PER_REQUEST:,} (2^20)",
                         cycles_per_request)
    if element_bytes is not None and not (1 <= element_bytes <= MAX_REQUEST_BYTES
                                          and not element_bytes & (element_bytes - 1)):
        raise UsageError(name("element_bytes"), f"a power of two in 1..{MAX_REQUEST_BYTES:,} (2^30)", element_bytes)
    if output is not None:
        check_writable(output)  # before the trace is computed, not after
    schedule_source = None
    if not isinstance(schedule, Schedule):
        schedule_source = str(schedule)
        schedule = load_schedule(schedule)
    override = None
    if dram is not None:
        if dram.lower() not in PRESETS:
            raise UsageError(name("dram"), "one of " + ", ".join(sorted(PRESETS)), dram)
        override = PRESETS[dram.lower()]
    opts = load_trace_options(schedule, options, override, schedule_source)
    spec = opts.dram
    layouts = opts.layouts
    if element_bytes is not None:
        spec = spec.with_(element_bytes=element_bytes)
        try:
            layouts = Layouts(schedule.workload, spec, {t: p.spec for t, p in layouts.placements.items()})
        except LayoutError as e:  # given bases that the wider elements push into each other (or past 2^62)
            where = str(options) if options is not None else (schedule_source or "the schedule's layouts")
            raise SpecError(where, e.field, "", None,
                            detail=f"{e.detail} (with {name('element_bytes')} {element_bytes})") from None
    order = opts.element_order if element_order is None else element_order
    rb = RowBuffer(spec, schedule.workload.tensor_names)
    counted = {"addresses": 0}
    start = time.perf_counter()

    def stream() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        try:
            for ch in address_chunks(schedule, layouts, order, dram=spec, dram_level=opts.dram_level, method=method):
                counted["addresses"] += len(ch.addresses)
                if request_bytes is None:
                    rb.feed(ch.addresses, ch.is_write, ch.tensor)
                yield ch.addresses, ch.is_write, ch.tensor
        except ValueError as e:
            raise MapsearchError(str(e)) from None

    source: Iterable = stream()
    if request_bytes is not None:
        source = _counted(coalesce(source, request_bytes), rb)
    requests = 0
    if output is not None:
        try:
            requests = write_trace(source, output, format, cycles_per_request=cycles_per_request)
        except OSError as e:
            raise MapsearchError(f"{output}: cannot write: {e.strerror or e}") from None
    else:
        for a, *_ in source:
            requests += len(a)
    return TraceResult(spec, counted["addresses"], requests, time.perf_counter() - start, rb.stats(),
                       None if output is None else str(output))


def _counted(chunks: Iterable, rb: RowBuffer) -> Iterator:
    """Feed each merged request to the row buffer under its own tensor (coalesce keeps the tensor index)."""
    for a, w, t in chunks:
        rb.feed(a, w, t)
        yield a, w, t
