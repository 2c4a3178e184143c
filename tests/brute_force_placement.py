"""Brute force over the family with buffer placement, scored by the replay.

Independent of the solver (imports nothing from ``mapsearch.model`` or
``mapsearch.solve``): every schedule of ``tests/brute_force.py``'s family
(tiles, orders, keep or bypass), times every legal position of every kept
buffer (the contract's "Buffer placement": a position is the number of loops
of the whole nest outside the buffer; positions of one tensor's buffers do
not decrease going inward), each replayed in count mode with real capacities.

``positions="all"`` enumerates every position of the nest; ``"cuts"`` only
one position per cut of the loops that index the tensor (just inside each
such loop, or 0), which docs/solver.md proves loses nothing; the tests check
both give the same optimum where "all" is affordable.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from fractions import Fraction

import brute_force as bf

from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.errors import CapacityError
from mapsearch.sim.replay import replay
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import Workload


def _candidate_positions(s: Schedule, tensor: str, how: str) -> list[int]:
    J = len(s.levels) - 1
    nest = [d for i in range(1, J + 1) for d in s.levels[i].order]
    if how == "all":
        return list(range(len(nest) + 1))
    dims = s.workload.tensor(tensor).dims
    return [0] + [q + 1 for q, d in enumerate(nest) if d in dims]


def placements(s: Schedule, how: str = "all"):
    """Every assignment of positions to ``s``'s kept buffers that obeys the nesting rule."""
    per_tensor = []
    for t in s.workload.tensor_names:
        kept = [i for i in range(len(s.levels)) if s.keeps(t, i)]
        cands = _candidate_positions(s, t, how)
        per_tensor.append([tuple(zip(kept, seq)) for seq in itertools.combinations_with_replacement(cands, len(kept))])
    D = len(s.workload.dims)
    names = s.workload.tensor_names
    for choice in itertools.product(*per_tensor):
        levels = list(s.levels)
        for i in range(1, len(levels)):
            pos = tuple(sorted((t, p) for t, seq in zip(names, choice) for lv, p in seq if lv == i and p != i * D))
            levels[i] = replace(levels[i], positions=pos)
        yield replace(s, levels=tuple(levels))


def score(s: Schedule) -> tuple[Fraction, int] | None:
    """(time, words) of a schedule by the replay, None when it overflows a level."""
    try:
        f = replay(s, mode="count").figures
    except CapacityError:
        return None
    return f.time, f.words_total


def brute_force_placed(w: Workload, arch: Architecture, how: str = "all") -> tuple[tuple[Fraction, int], Schedule] | None:
    """The fewest (time, words) over tiles x orders x keep x positions, and one schedule reaching it."""
    best = None
    for tiles, orders in bf.nests(w, arch):
        for keeps in bf.keep_choices(w, arch, {}):
            base = bf.make_schedule(w, arch, {}, tiles, orders, keeps)
            for s in placements(base, how):
                v = score(s)
                if v is not None and (best is None or v < best[0]):
                    best = (v, s)
    return best
