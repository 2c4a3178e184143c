"""The DRAM side of the replay: the address stream of every transfer across the DRAM link (docs/dram.md).

The replay (:mod:`mapsearch.sim.events`) moves tiles; here every tile that
crosses the link out of the DRAM level (loads down into the level below,
stores of outputs up into DRAM) becomes a sequence of byte addresses, in
execution order:

- **Transfers** (:func:`dram_transfers`): the same walk and the same rules as
  the replay. Within one step the stores come first (innermost level first),
  then the loads (outermost level first), tensors in workload order; at the
  end the output tiles still below DRAM are stored, innermost level first.
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
from dataclasses import dataclass
from typing import Iterator, Mapping, NamedTuple, Sequence, Union

import numpy as np

from mapsearch.dram.geometry import DramSpec
from mapsearch.dram.layout import Layouts, LayoutSpec, Placement, layouts_from_dict
from mapsearch.dram.rowbuffer import RowBuffer, RowStats
from mapsearch.schedule.schedule import Schedule

Box = tuple[tuple[int, int], ...]
Region = tuple[tuple[int, int], ...]
LAYOUT = "layout"
NEST = "nest"
ElementOrder = Union[str, Sequence[str], Mapping[str, Union[str, Sequence[str]]]]
CHUNK = 1 << 20
_I64 = np.int64


@dataclass(frozen=True)
class Transfer:
    """One tile crossing the DRAM link: ``tensor``'s ``region`` into (or, ``is_write``, out of) ``level``.

    ``box`` is the tile (start, extent per workload dimension) the region
    belongs to; ``instance`` the receiving instance (the lowest of a multicast group).
    """

    tensor: str
    level: int
    region: Region
    box: Box
    is_write: bool
    instance: int = 0

    @property
    def words(self) -> int:
        return math.prod(b - a + 1 for a, b in self.region)


class AddressChunk(NamedTuple):
    addresses: np.ndarray  # int64 byte addresses, in stream order
    is_write: np.ndarray  # bool
    tensor: np.ndarray  # int8 index into the workload's tensor names
    transfer: np.ndarray  # int64 index of the transfer each address belongs to (in stream order)


# ---------------------------------------------------------------- transfers
def dram_fed(schedule: Schedule, dram_level: int = 0) -> list[tuple[str, int]]:
    """``(tensor, level)`` pairs whose buffer loads from (and stores into) the DRAM level."""
    names = schedule.workload.tensor_names
    depth = schedule.architecture.depth
    return [
        (t, i)
        for i in range(dram_level + 1, depth)
        for t in names
        if schedule.keeps(t, i) and schedule.keeper_above(t, i) == dram_level
    ]


def walk_applies(schedule: Schedule, dram_level: int = 0) -> bool:
    """True when every level fed by DRAM has one instance (then ``method='walk'`` is exact)."""
    from mapsearch.sim.spatial import Layout, has_splits

    if not has_splits(schedule):
        return True
    lay = Layout(schedule)
    return all(lay.count[i] == 1 for _, i in dram_fed(schedule, dram_level))


def dram_transfers(schedule: Schedule, *, dram_level: int = 0, method: str = "auto") -> Iterator[Transfer]:
    """Every transfer across the DRAM link, in execution order (see the module doc)."""
    if method not in ("auto", "walk", "events"):
        raise ValueError(f"method: expected 'auto', 'walk' or 'events', got {method!r}")
    if method == "walk" and not walk_applies(schedule, dram_level):
        raise ValueError("method 'walk' needs one instance at every level that loads from DRAM; use 'events'")
    if method == "events" or (method == "auto" and not walk_applies(schedule, dram_level)):
        return _event_transfers(schedule, dram_level)
    return _walk_transfers(schedule, dram_level)


def _walk_transfers(schedule: Schedule, dram_level: int) -> Iterator[Transfer]:
    from mapsearch.sim.pieces import piece_tables, tile_chunks

    fed = dram_fed(schedule, dram_level)
    if not fed:
        return
    wl = schedule.workload
    dims = wl.dims
    nd = len(dims)
    rank = {t: n for n, t in enumerate(wl.tensor_names)}
    deepest = max(i for _, i in fed)
    tables = piece_tables(schedule)
    parent = {
        i: [np.repeat(np.arange(tables.count(i - 1, k), dtype=_I64), tables.n_children[i - 1][k]) for k in range(nd)]
        for i in range(1, deepest + 1)
    }
    axes = {t: [tuple((dims.index(d), c) for d, c in ix.terms) for ix in wl.tensor(t).indices] for t, _ in fed}
    held: dict[tuple[str, int], tuple[Region, Box]] = {}
    seen: dict[tuple[str, int], set] = {p: set() for p in fed}
    for pid in tile_chunks(schedule, tables, deepest):
        pids = {deepest: pid}
        for i in range(deepest, 1, -1):
            pids[i - 1] = np.stack([parent[i][k][pids[i][k]] for k in range(nd)])
        starts = {i: [tables.start[i][k][pids[i][k]] for k in range(nd)] for i in pids}
        sizes = {i: [tables.size[i][k][pids[i][k]] for k in range(nd)] for i in pids}
        n = pid.shape[1]
        keys = {}
        changed = np.zeros(n, bool)
        for t, i in fed:
            cols = []
            for terms in axes[t]:
                lo = sum(c * starts[i][k] for k, c in terms)
                hi = sum(c * (starts[i][k] + sizes[i][k] - 1) for k, c in terms)
                cols += [lo, hi]
            kk = np.stack(cols)
            ch = np.zeros(n, bool)
            ch[1:] = (kk[:, 1:] != kk[:, :-1]).any(axis=0)
            prev = held.get((t, i))
            ch[0] = prev is None or tuple(int(v) for v in kk[:, 0]) != tuple(x for ab in prev[0] for x in ab)
            keys[(t, i)] = (kk, ch)
            changed |= ch
        for s in np.flatnonzero(changed):
            stores: list[tuple[tuple[int, int], Transfer]] = []
            loads: list[tuple[tuple[int, int], Transfer]] = []
            for t, i in fed:
                kk, ch = keys[(t, i)]
                if not ch[s]:
                    continue
                col = kk[:, s]
                region = tuple((int(col[2 * a]), int(col[2 * a + 1])) for a in range(len(axes[t])))
                box = tuple((int(starts[i][k][s]), int(sizes[i][k][s])) for k in range(nd))
                if wl.is_output(t):
                    old = held.get((t, i))
                    if old is not None:
                        stores.append(((-i, rank[t]), Transfer(t, i, old[0], old[1], True)))
                    if region in seen[(t, i)]:
                        loads.append(((i, rank[t]), Transfer(t, i, region, box, False)))
                    seen[(t, i)].add(region)
                else:
                    loads.append(((i, rank[t]), Transfer(t, i, region, box, False)))
                held[(t, i)] = (region, box)
            for _, tr in sorted(stores, key=lambda x: x[0]):
                yield tr
            for _, tr in sorted(loads, key=lambda x: x[0]):
                yield tr
    final = [((-i, rank[t]), Transfer(t, i, held[(t, i)][0], held[(t, i)][1], True))
             for t, i in fed if wl.is_output(t) and (t, i) in held]
    for _, tr in sorted(final, key=lambda x: x[0]):
        yield tr


def _event_transfers(schedule: Schedule, dram_level: int) -> Iterator[Transfer]:
    """Run the event replay and keep its DRAM-crossing loads and stores (with the tile box of each)."""
    from mapsearch.sim.events import replay_events
    from mapsearch.sim.spatial import Layout, lockstep_nest

    nest = iter(lockstep_nest(schedule, Layout(schedule)))
    # Steps: a step's loads and stores come before its op runs, one run per active L0
    # instance in instance order; instance 0 is always active (docs/spatial.md), so a
    # run of instance 0 after a run, or any other event after a run, opens the next step.
    state = {"levels": next(nest, None), "ran": False}
    entry_box: dict[tuple[str, int, int], Box] = {}
    out: list[Transfer] = []

    def on_event(e) -> None:
        if e.kind == "run":
            if state["ran"] and e.instance == 0:
                state["levels"] = next(nest, None)
            state["ran"] = True
            return
        if state["ran"]:  # the first event of a new step (or of the final stores)
            state["levels"] = next(nest, None)
            state["ran"] = False
        if e.kind in ("load", "zero"):
            box = state["levels"][e.level][e.instance]
            entry_box[(e.tensor, e.level, e.instance)] = box
            if e.kind == "load" and e.source == dram_level and e.words > 0:
                out.append(Transfer(e.tensor, e.level, e.region, box, False, e.instance))
        elif e.kind == "store" and e.source == dram_level and e.words > 0:
            out.append(Transfer(e.tensor, e.level, e.region, entry_box[(e.tensor, e.level, e.instance)], True, e.instance))

    replay_events(schedule, on_event=on_event)
    yield from out


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
    if isinstance(element_order, str) or not isinstance(element_order, Mapping):
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
        o = tuple(o)
        for d in o:
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
