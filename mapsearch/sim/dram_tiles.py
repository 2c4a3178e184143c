"""The tiles that cross the DRAM link, in execution order: the transfers of the address stream (docs/dram.md).

:func:`dram_transfers` lists every tile that crosses the link out of the DRAM
level (loads down into the level below, stores of outputs up into DRAM) as a
:class:`Transfer`, by the same walk and the same rules as the replay. Within
one step the stores come first (innermost level first), then the loads
(outermost level first), tensors in workload order; at the end the output
tiles still below DRAM are stored, innermost level first. A multicast or an
in-network reduction crosses the DRAM link once. When every level that loads
from DRAM has one instance (:func:`walk_applies`) the walk goes only as deep
as those levels, in chunks of tiles (``method="walk"``); otherwise the event
replay is run and its DRAM-crossing events are collected
(``method="events"``). :mod:`mapsearch.sim.dram_trace` turns the transfers
into addresses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from mapsearch.schedule.schedule import Schedule

Box = tuple[tuple[int, int], ...]
Region = tuple[tuple[int, int], ...]
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
