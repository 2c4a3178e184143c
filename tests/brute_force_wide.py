"""Brute force over the contract's whole family of one einsum without spatial fanout.

An oracle for the solver that shares nothing with it (imports nothing from
``mapsearch.model`` or ``mapsearch.solve``), written from the contract
(``shared/spec/cost-model.md``) alone:

- every tile chain ``E >= T_1 >= ... >= T_J >= 1`` of **every** dimension,
  filter windows of convolution axes included (``tests/brute_force.py``
  holds them whole, as the solver once did);
- every loop order per level (loops that make one trip everywhere at that
  level placed innermost in workload order: permuting them changes no step);
- every keep/bypass choice between a tensor's home and L0;
- every buffer position of the nest (cost-model.md, "Buffer placement"):
  ``0 .. J*D`` per kept buffer, non-decreasing going inward.

Scoring. By the contract a buffer's traffic is the sequence of its own
regions: it loads (or stores and reloads) on each change, whatever the other
buffers do; keep/bypass only decides which links those words cross (every
link between the buffer and the nearest holder above) and positions only
which regions it holds. So per (tiles, orders) nest, every candidate buffer
(tensor, level, position) is measured once by a replay of a schedule in
which it is the tensor's only buffer above L0 (capacities lifted): its
words on its own link and, from the replay's events, the largest region it
holds and whether it moves. Each (keep, positions) choice is then scored
from those measurements: words routed over links, occupancy = homes + each
kept buffer's largest region (twice when double-buffered and moving). Per
tensor the choices are reduced to those not beaten on every link's words and
every level's occupancy (both only ever add up), then combined.
``direct_check`` replays a scored schedule as a whole, for the tests to
confirm the measurements add up.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Iterator, Mapping, Sequence

from brute_force import Objective, _fast_key

from mapsearch.schedule.figures import Figures
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.events import Event
from mapsearch.sim.replay import replay
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import Workload


def chains(extent: int, depth: int) -> list[tuple[int, ...]]:
    """Every ``(T_1, ..., T_depth)`` with ``extent >= T_1 >= ... >= T_depth >= 1``."""
    if depth == 0:
        return [()]
    return [(t,) + rest for t in range(1, extent + 1) for rest in chains(t, depth - 1)]


def orders(w: Workload, tiles: Mapping[str, tuple[int, ...]], level: int) -> list[tuple[str, ...]]:
    parent = {d: w.extent[d] if level == 1 else tiles[d][level - 2] for d in w.dims}
    moving = [d for d in w.dims if tiles[d][level - 1] < parent[d]]
    still = tuple(d for d in w.dims if d not in moving)
    return [p + still for p in itertools.permutations(moving)]


def nests(w: Workload, depth: int, held: frozenset[str] = frozenset()
          ) -> Iterator[tuple[dict[str, tuple[int, ...]], tuple[tuple[str, ...], ...]]]:
    """Every (tiles, orders); the dims in ``held`` keep their whole extent at every level."""
    per_dim = [[(e,) * depth] if d in held else chains(e, depth) for d, e in w.extents]
    for combo in itertools.product(*per_dim):
        tiles = dict(zip(w.dims, combo))
        for per_level in itertools.product(*(orders(w, tiles, i) for i in range(1, depth + 1))):
            yield tiles, per_level


def schedule_of(w: Workload, arch: Architecture, homes: Mapping[str, str], tiles, level_orders,
                keeps: Mapping[str, Sequence[int]], positions: Mapping[tuple[str, int], int]) -> Schedule:
    D = len(w.dims)
    levels = [LevelMapping(arch.levels[0].name, tuple(w.extents))]
    for i in range(1, arch.depth):
        placed = tuple(sorted((t, p) for (t, lv), p in positions.items() if lv == i and p != i * D))
        levels.append(LevelMapping(arch.levels[i].name, tuple((d, tiles[d][i - 1]) for d in w.dims),
                                   tuple(level_orders[i - 1]), frozenset(t for t in w.tensor_names if i in keeps[t]),
                                   positions=placed))
    return Schedule(w, arch, tuple(levels), tuple((t, homes.get(t, arch.levels[0].name)) for t in w.tensor_names))


@dataclass(frozen=True)
class Buffer:
    """What one (tensor, level, position) buffer does on its own: words it takes in and gives up, room."""

    down: int
    up: int
    largest: int
    moves: bool


@dataclass(frozen=True)
class Best:
    value: tuple  # the objective's key: (time, words) for the default objective
    schedule: Schedule
    nests: int
    choices: int


def _region_words(region) -> int:
    return math.prod(b - a + 1 for a, b in region)


def _measure(w: Workload, free: Architecture, homes: Mapping[str, str], home_of, tiles, level_orders,
             tensor: str, level: int, position: int) -> tuple[Buffer, int]:
    """The buffer alone (the tensor's only one above L0), replayed event by event; and the op calls."""
    J = free.depth - 1
    keeps = {t: [J] if home_of[t] < J else [] for t in w.tensor_names}
    keeps[tensor] = sorted({level, J})
    s = schedule_of(w, free, homes, tiles, level_orders, keeps, {(tensor, level): position})
    largest, entries = 0, 0

    def on_event(e: Event) -> None:
        nonlocal largest, entries
        if e.tensor == tensor and e.level == level and e.kind in ("load", "zero"):
            largest = max(largest, _region_words(e.region))
            entries += 1

    f = replay(s, mode="events", on_event=on_event).figures
    traffic = {x.tensor: (x.words_down, x.words_up) for x in f.links[level - 1].tensors}
    down, up = traffic[tensor]
    return Buffer(down, up, largest, entries > 1), f.op_calls


def _tensor_options(w, arch, tensor, home, buffers: Mapping[tuple[int, int], Buffer]):
    """Per keep set and non-decreasing positions: (down per link, up per link, room per level, positions)."""
    J, D = arch.depth - 1, len(w.dims)
    if home >= J:
        return [((0,) * (J + 1), (0,) * (J + 1), (0,) * (J + 1), {})]
    free = list(range(home + 1, J))
    out = []
    for n in range(len(free) + 1):
        for sub in itertools.combinations(free, n):
            kept = list(sub) + [J]
            for spots in itertools.combinations_with_replacement(range(J * D + 1), len(kept)):
                down, up, room = [0] * (J + 1), [0] * (J + 1), [0] * (J + 1)
                source = home
                for i, p in zip(kept, spots):
                    b = buffers[(i, p)]
                    for a in range(source + 1, i + 1):
                        down[a] += b.down
                        up[a] += b.up
                    room[i] += b.largest * (2 if arch.double_buffering and b.moves else 1)
                    source = i
                out.append((tuple(down), tuple(up), tuple(room), dict(zip(kept, spots))))
    return _undominated(out)


def _undominated(options):
    keys = [o[0] + o[1] + o[2] for o in options]
    keep = []
    for a, ka in enumerate(keys):
        beaten = any(all(x <= y for x, y in zip(kb, ka)) and (kb != ka or b < a) for b, kb in enumerate(keys) if b != a)
        if not beaten:
            keep.append(options[a])
    return keep


def brute_force(w: Workload, arch: Architecture, homes: Mapping[str, str] | Sequence[tuple[str, str]] = (),
                objective: Objective = Objective(), held: frozenset[str] = frozenset()) -> Best | None:
    """The least ``objective`` (default: (time, words)) over the whole family, and one schedule reaching it;
    None when nothing fits (or nothing passes the objective's utilization floor).

    ``held``: dimensions kept whole at every level (a solver family's restriction, to check it on its own
    terms). Every objective adds words per link up, so the per-tensor pruning below stays exact for each.
    """
    homes = dict(homes)
    names = w.tensor_names
    home_of = {t: arch.index(homes.get(t, arch.levels[0].name)) for t in names}
    J, D = arch.depth - 1, len(w.dims)
    free = replace(arch, levels=tuple(replace(lv, capacity=None) for lv in arch.levels), double_buffering=False)
    home_words = [sum(w.tensor_words(t) for t in names if home_of[t] == i) for i in range(arch.depth)]
    caps = [lv.capacity for lv in arch.levels]
    clocks = Fraction(arch.compute.clocks_per_call)
    best = None
    n_nests = n_choices = 0
    for tiles, level_orders in nests(w, J, frozenset(held)):
        n_nests += 1
        calls = None
        per_tensor = []
        for t in names:
            buffers = {}
            for i in range(home_of[t] + 1, J + 1):
                for p in range(J * D + 1):
                    buffers[(i, p)], calls = _measure(w, free, homes, home_of, tiles, level_orders, t, i, p)
            per_tensor.append(_tensor_options(w, arch, t, home_of[t], buffers))
        if calls is None:  # every tensor homed at L0
            calls = replay(schedule_of(w, free, homes, tiles, level_orders, {t: [] for t in names}, {}),
                           mode="count").figures.op_calls
        compute = calls * clocks
        for combo in itertools.product(*per_tensor):
            n_choices += 1
            room = [home_words[i] + sum(o[2][i] for o in combo) for i in range(J + 1)]
            if any(c is not None and r > c for c, r in zip(caps, room)):
                continue
            down = [sum(o[0][a] for o in combo) for a in range(J + 1)]
            up = [sum(o[1][a] for o in combo) for a in range(J + 1)]
            key = _fast_key(objective, arch, down, up, calls, compute)
            if key is not None and objective.kind == "time":
                key = (key[0], int(key[1]))
            if key is not None and (best is None or key < best[0]):
                keeps = {t: sorted(o[3]) for t, o in zip(names, combo)}
                positions = {(t, i): p for t, o in zip(names, combo) for i, p in o[3].items()}
                best = (key, schedule_of(w, arch, homes, tiles, level_orders, keeps, positions))
    if best is None:
        return None
    return Best(best[0], best[1], n_nests, n_choices)


def direct_check(best: Best) -> Figures:
    """Replay the optimum as a whole (real capacities): its figures must give ``best.value``."""
    f = replay(best.schedule, mode="count").figures
    if len(best.value) == 2:
        assert (f.time, f.words_total) == best.value, ((f.time, f.words_total), best.value)
    return f
