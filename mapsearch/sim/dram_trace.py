"""The DRAM side of the replay: the address stream of every transfer across the DRAM link (docs/dram.md).

The replay (:mod:`mapsearch.sim.events`) moves tiles; here every tile that
crosses the link out of the DRAM level (loads down into the level below,
stores of outputs up into DRAM) becomes a sequence of byte addresses, in
execution order:

- **Transfers** (:func:`dram_transfers`, in :mod:`mapsearch.sim.dram_tiles`):
  the same walk and the same rules as the replay. Within one step the stores
  come first (innermost level first), then the loads (outermost level first),
  tensors in workload order; at the end the output tiles still below DRAM are
  stored, innermost level first.
  A multicast or an in-network reduction crosses the DRAM link once.
  When every level that loads from DRAM has one instance (no mesh at or
  above it, the usual case), the walk goes only as deep as those levels, in
  chunks of tiles (``method="walk"``). Otherwise the event replay is run and
  its DRAM-crossing events are collected (``method="events"``; the transfer
  list is held, not the addresses).
- **Element order inside a transfer** (part of the schedule): ``"layout"``
  (default: ascending address, i.e. the tensor's layout order within the
  tile), or a dimension order outer -> inner (the order of the loops that
  visit the tile: the tile's iteration box is enumerated in that order, each
  point mapped to the tensor element it touches, each element taken at its
  first touch; elements never touched, the holes of a strided access, follow
  in layout order). ``"nest"`` derives the order from the schedule's loops
  below the receiving level (:func:`nest_order`). A mapping gives one order per tensor.
- **Addresses** (:func:`address_chunks`): numpy chunks of about ``chunk``
  addresses with ``is_write`` and the tensor index; a large layer's trace is
  never built whole (one transfer, bounded by its level's buffer, is).

:func:`row_activations` feeds the stream to the row-buffer machine
(:mod:`mapsearch.dram.rowbuffer`) and returns its :class:`RowStats`.
"""

from __future__ import annotations

import math
from typing import Iterator, Mapping, NamedTuple, Sequence, Union

import numpy as np

from mapsearch.dram.geometry import DramSpec
from mapsearch.dram.layout import Layouts, LayoutSpec, Placement, layouts_from_dict
from mapsearch.dram.rowbuffer import RowBuffer, RowStats
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.dram_tiles import Box, Region, Transfer, dram_fed, dram_transfers, walk_applies

LAYOUT = "layout"
NEST = "nest"
ElementOrder = Union[str, Sequence[str], Mapping[str, Union[str, Sequence[str]]]]
CHUNK = 1 << 20
_I64 = np.int64


class AddressChunk(NamedTuple):
    addresses: np.ndarray  # int64 byte addresses, in stream order
    is_write: np.ndarray  # bool
    tensor: np.ndarray  # int8 index into the workload's tensor names
    transfer: np.ndarray  # int64 index of the transfer each address belongs to (in stream order)



# ---------------------------------------------------------------- element order
def nest_order(schedule: Schedule, level: int) -> tuple[str, ...]:
    """The dims in the order the loops below ``level`` visit them, outer -> inner.

    Each dim sits at its innermost loop: levels from the innermost up, each
    level's temporal loops (its ``order``) inside its spatial splits.
    """
    seq: list[str] = []
    for i in range(len(schedule.levels) - 1, level, -1):
        lm = schedule.levels[i]
        for d in reversed(lm.order):
            if d not in seq:
                seq.append(d)
        for sp in reversed(lm.spatial):
            if sp.dim not in seq:
                seq.append(sp.dim)
    rest = [d for d in schedule.workload.dims if d not in seq]
    return tuple(rest) + tuple(reversed(seq))


def _normalise_order(schedule: Schedule, element_order: ElementOrder) -> dict[str, Union[str, tuple[str, ...]]]:
    wl = schedule.workload
    if not isinstance(element_order, (str, list, tuple, Mapping)):
        raise ValueError("element_order: expected 'layout', 'nest', a list of dimensions, or a mapping tensor -> one "
                         f"of those, got {element_order!r}")
    whole = not isinstance(element_order, Mapping)  # one order for every tensor: errors name element_order itself
    if whole:
        per = {t: element_order for t in wl.tensor_names}
    else:
        for t in element_order:
            if t not in wl.tensor_names:
                raise ValueError(f"element_order.{t}: unknown tensor; expected one of {', '.join(wl.tensor_names)}")
        per = {t: element_order.get(t, LAYOUT) for t in wl.tensor_names}
    out: dict[str, Union[str, tuple[str, ...]]] = {}
    for t, o in per.items():
        if isinstance(o, str):
            if o not in (LAYOUT, NEST):
                raise ValueError(f"element_order.{t}: expected 'layout', 'nest' or a list of dimensions, got {o!r}")
            out[t] = o
            continue
        field = "element_order" if whole else f"element_order.{t}"
        if not isinstance(o, (list, tuple)):
            raise ValueError(f"{field}: expected 'layout', 'nest' or a list of dimensions, got {o!r}")
        o = tuple(o)
        for i, d in enumerate(o):
            if not isinstance(d, str):
                raise ValueError(f"{field}[{i}]: expected a dimension name, got {d!r}")
            if d not in wl.dims:
                raise ValueError(f"element_order.{t}: unknown dimension {d!r}; expected some of {', '.join(wl.dims)}")
        if len(set(o)) != len(o):
            raise ValueError(f"element_order.{t}: a dimension appears twice in {list(o)}")
        mine = wl.tensor(t).dims
        listed = [d for d in o if d in mine]
        out[t] = tuple(d for d in wl.dims if d in mine and d not in listed) + tuple(listed)
    return out


class _Orders:
    """The local element order of a transfer, per (tensor, tile shape), cached."""

    def __init__(self, schedule: Schedule, layouts: Layouts, element_order: ElementOrder):
        self.s = schedule
        self.wl = schedule.workload
        self.layouts = layouts
        self.order = _normalise_order(schedule, element_order)
        self.cache: dict[tuple, np.ndarray] = {}
        self.dim_index = {d: k for k, d in enumerate(self.wl.dims)}

    def key(self, tr: Transfer) -> tuple:
        o = self.order[tr.tensor]
        shape = tuple(b - a + 1 for a, b in tr.region)
        if o == LAYOUT:
            return (tr.tensor, LAYOUT, shape)
        dims = nest_order(self.s, tr.level) if o == NEST else o
        if o == NEST:
            mine = self.wl.tensor(tr.tensor).dims
            dims = tuple(d for d in dims if d in mine)
        ext = tuple(tr.box[self.dim_index[d]][1] for d in dims)
        return (tr.tensor, dims, ext, shape)

    def local(self, key: tuple) -> np.ndarray:
        """``(axes, words)`` offsets from the region's first corner, in transfer order (layout: C order, sorted later)."""
        got = self.cache.get(key)
        if got is not None:
            return got
        tensor = key[0]
        shape = key[-1]
        if key[1] == LAYOUT:
            local = np.indices(shape, dtype=_I64).reshape(len(shape), -1)
        else:
            dims, ext = key[1], key[2]
            grid = np.indices(ext, dtype=_I64).reshape(len(ext), -1)
            pos = {d: g for d, g in zip(dims, grid)}
            coords = [sum(c * pos[d] for d, c in ix.terms) for ix in self.wl.tensor(tensor).indices]
            lin = np.ravel_multi_index(tuple(np.asarray(c, _I64) for c in coords), shape)
            _, first = np.unique(lin, return_index=True)
            touched = lin[np.sort(first)]
            holes = np.setdiff1d(np.arange(math.prod(shape), dtype=_I64), touched, assume_unique=True)
            local = np.stack(np.unravel_index(np.concatenate([touched, holes]), shape)).astype(_I64)
        if len(self.cache) > 4096:
            self.cache.clear()
        self.cache[key] = local
        return local


def _addresses_of(batch: list[Transfer], orders: _Orders, layouts: Layouts, rank: dict[str, int],
                  first: int = 0) -> AddressChunk:
    sizes = np.array([tr.words for tr in batch], _I64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    total = int(offsets[-1])
    addr = np.empty(total, _I64)
    write = np.repeat(np.array([tr.is_write for tr in batch], bool), sizes)
    tens = np.repeat(np.array([rank[tr.tensor] for tr in batch], np.int8), sizes)
    groups: dict[tuple, list[int]] = {}
    for j, tr in enumerate(batch):
        groups.setdefault(orders.key(tr), []).append(j)
    for key, idx in groups.items():
        local = orders.local(key)
        placement: Placement = layouts[key[0]]
        lo = np.array([[a for a, _ in batch[j].region] for j in idx], _I64).T  # (axes, ntr)
        coords = lo[:, :, None] + local[:, None, :]  # (axes, ntr, words)
        a = placement.addresses(coords)
        if key[1] == LAYOUT:
            a = np.sort(a, axis=1)
        pos = offsets[np.array(idx)][:, None] + np.arange(local.shape[1], dtype=_I64)[None, :]
        addr[pos] = a
    return AddressChunk(addr, write, tens, np.repeat(np.arange(first, first + len(batch), dtype=_I64), sizes))


def _layouts(schedule: Schedule, dram: DramSpec | None, layouts: object) -> tuple[DramSpec, Layouts]:
    if dram is None:
        dram = getattr(schedule.architecture, "dram", None)
    if isinstance(layouts, Layouts):
        return layouts.dram if dram is None else dram, layouts
    if dram is None:
        raise ValueError("no DRAM spec: pass dram= or give the architecture a dram: entry")
    if layouts is None:
        return dram, Layouts(schedule.workload, dram)
    if all(isinstance(v, LayoutSpec) for v in dict(layouts).values()):  # type: ignore[arg-type]
        return dram, Layouts(schedule.workload, dram, layouts)  # type: ignore[arg-type]
    return dram, layouts_from_dict(schedule.workload, dram, layouts)  # type: ignore[arg-type]


def address_chunks(
    schedule: Schedule,
    layouts: object = None,
    element_order: ElementOrder = LAYOUT,
    *,
    dram: DramSpec | None = None,
    dram_level: int = 0,
    method: str = "auto",
    chunk: int = CHUNK,
) -> Iterator[AddressChunk]:
    """The address stream across the DRAM link in chunks of about ``chunk`` addresses.

    ``layouts``: a :class:`Layouts`, a mapping tensor -> :class:`LayoutSpec`
    or layout dict, or None (every tensor row-major). ``dram`` defaults to
    the architecture's ``dram`` entry.
    """
    _, lay = _layouts(schedule, dram, layouts)
    orders = _Orders(schedule, lay, element_order)
    rank = {t: n for n, t in enumerate(schedule.workload.tensor_names)}
    batch: list[Transfer] = []
    words = 0
    done = 0  # transfers already yielded: a chunk always ends at a transfer's end
    for tr in dram_transfers(schedule, dram_level=dram_level, method=method):
        batch.append(tr)
        words += tr.words
        if words >= chunk:
            yield _addresses_of(batch, orders, lay, rank, done)
            done += len(batch)
            batch, words = [], 0
    if batch:
        yield _addresses_of(batch, orders, lay, rank, done)


def address_stream(schedule: Schedule, layouts: object = None, element_order: ElementOrder = LAYOUT, **kw) -> Iterator[tuple[int, bool]]:
    """``(address, is_write)`` one by one (for small cases and tests)."""
    for ch in address_chunks(schedule, layouts, element_order, **kw):
        yield from zip(ch.addresses.tolist(), ch.is_write.tolist())


def row_activations(
    schedule: Schedule,
    dram: DramSpec | None = None,
    layouts: object = None,
    element_order: ElementOrder = LAYOUT,
    *,
    dram_level: int = 0,
    method: str = "auto",
    chunk: int = CHUNK,
) -> RowStats:
    """Row hits, misses, conflicts and activations (per bank and tensor) and the DRAM time of the schedule's stream."""
    dram, lay = _layouts(schedule, dram, layouts)
    rb = RowBuffer(dram, schedule.workload.tensor_names)
    for ch in address_chunks(schedule, lay, element_order, dram=dram, dram_level=dram_level, method=method, chunk=chunk):
        rb.feed(ch.addresses, ch.is_write, ch.tensor)
    return rb.stats()


def row_openings(
    schedule: Schedule,
    dram: DramSpec | None = None,
    layouts: object = None,
    *,
    dram_level: int = 0,
    method: str = "auto",
    chunk: int = CHUNK,
) -> dict[str, int]:
    """Per tensor: the distinct DRAM rows (bank and row) each transfer touches, summed over its transfers.

    Counted on the address stream itself (every address decoded to its bank
    and row), independent of the element order inside a transfer. With
    transfers in address order it bounds the row activations from above
    (docs/dram.md); the solver's ``row_openings`` prediction must equal it.
    """
    dram, lay = _layouts(schedule, dram, layouts)
    names = schedule.workload.tensor_names
    out = dict.fromkeys(names, 0)
    for ch in address_chunks(schedule, lay, LAYOUT, dram=dram, dram_level=dram_level, method=method, chunk=chunk):
        if not len(ch.addresses):
            continue
        bank, row = dram.bank_and_row(ch.addresses)
        local = ch.transfer - ch.transfer[0]
        key = (local * dram.n_banks + bank) * (int(row.max()) + 1) + row
        _, first = np.unique(key, return_index=True)
        per = np.bincount(ch.tensor[first].astype(_I64), minlength=len(names))
        for n, t in enumerate(names):
            out[t] += int(per[n])
    return out


__all__ = [
    "Box",
    "Region",
    "row_openings",
    "Transfer",
    "AddressChunk",
    "dram_fed",
    "dram_transfers",
    "walk_applies",
    "nest_order",
    "address_chunks",
    "address_stream",
    "row_activations",
    "LAYOUT",
    "NEST",
]
