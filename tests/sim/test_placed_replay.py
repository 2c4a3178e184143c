"""Placed buffers (cost-model.md, "Buffer placement") replay alike in every mode.

The event walk (``events``, ``events-data``) and the vectorised count walk
(``count``, ``data``, :mod:`mapsearch.sim.placed`) are written separately;
on random small schedules with random legal positions they must agree on
every figure (words per link and tensor, time, occupancy, capacity errors),
and the data modes must compute the einsum.
"""

from __future__ import annotations

import itertools
import random
import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402
import brute_force_placement as bp  # noqa: E402

from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.sim.errors import CapacityError  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.spec.architecture import Architecture, Compute, Level, Link  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402

EINSUMS = ["Z[m,n] += A[m,k] * B[k,n]", "Z[m] += A[m,k] * B[k]", "O[p] += I[p*2+r] * W[r]",
           "Z[b,m] += A[b,m,k] * B[k]"]


def _arch(caps, lines: str, double: bool) -> Architecture:
    names = ("L2", "L1", "L0")[-len(caps):]
    levels = tuple(Level(names[i], caps[i], None if i == 0 else Link(Fraction(1), Fraction(2), lines))
                   for i in range(len(caps)))
    return Architecture("a", levels, Compute(()), double)


def _random_placed(seed: int):
    rng = random.Random(seed)
    text = rng.choice(EINSUMS)
    w = Workload.from_text("w", text, {d: rng.randint(2, 4) for d in "bmnkpr" if f"{d}" in text.split("+=")[1]})
    depth = rng.choice([1, 2])
    caps = [None] + [rng.randint(6, 40) for _ in range(depth)]
    caps[1:] = sorted(caps[1:], reverse=True)
    a = _arch(caps, rng.choice(["shared", "separate"]), rng.random() < 0.3)
    nests = list(bf.nests(w, a))
    tiles, orders = rng.choice(nests)
    keeps = rng.choice(bf.keep_choices(w, a, {}))
    base = bf.make_schedule(w, a, {}, tiles, orders, keeps)
    placed = list(itertools.islice(bp.placements(base, "all"), 400))
    return rng.choice(placed)


def _figures(schedule, mode):
    try:
        return replay(schedule, mode=mode)
    except CapacityError as e:
        return str(e)


@pytest.mark.parametrize("seed", range(60))
def test_event_and_count_walks_agree_on_placed_buffers(seed: int) -> None:
    s = _random_placed(seed)
    count, events = _figures(s, "count"), _figures(s, "events")
    if isinstance(count, str) or isinstance(events, str):
        assert isinstance(count, str) and isinstance(events, str), (count, events)
        return
    assert differences(count.figures, events.figures) == []
    data, events_data = replay(s, mode="data"), replay(s, mode="events-data")
    assert data.data_ok and events_data.data_ok
    assert differences(count.figures, data.figures) == [] and differences(count.figures, events_data.figures) == []


def test_a_strip_held_across_loops_moves_once_per_strip() -> None:
    # The contract's worked example with B's L0 buffer placed outside the m and k loops of
    # the order n, m, k (tiles m=1, n=2, k=1): it holds a 4 x 2 strip of B, loaded once per n.
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})
    a = _arch([None, 12], "shared", False)
    a = Architecture("a", (a.levels[0], Level("L0", 12, Link(Fraction(1), Fraction(1), "shared"))), a.compute, False)
    base = bf.make_schedule(w, a, {}, {"m": (1,), "n": (2,), "k": (1,)}, (("n", "m", "k"),), {t: frozenset({1}) for t in "ABZ"})
    from dataclasses import replace

    s = replace(base, levels=(base.levels[0], replace(base.levels[1], positions=(("B", 1),))))
    for mode in ("events", "count"):
        f = replay(s, mode=mode).figures
        per = {x.tensor: (x.words_down, x.words_up) for x in f.links[0].tensors}
        assert per == {"A": (32, 0), "B": (16, 0), "Z": (0, 16)}, mode
        assert dict(f.occupancy)["L0"] == 1 + 8 + 2
        assert f.time == 64
