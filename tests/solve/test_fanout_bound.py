"""The time floor of links into instances that share nothing (model/fanout_bound.py), against every schedule.

A floor must hold for every schedule of the contract: each case enumerates
the spatial brute force's whole family with every buffer position
(``tests/brute_force_spatial.py``, ``positions=True``: tiles, every part,
axes, orders, keeps, placements at and below the mesh), scores each
schedule by replays and checks its time against the floor. The cases were
drawn at random (seed 3 of the search in the closing note of this change)
among those where the new floor is above every other floor, so the test
cannot pass for a floor that never binds; on two of them it is the
optimum. Then the pieces: the least elements per instance against
integer distributions of the MACs, and simba-like's 1024^3 matmul.
"""

from __future__ import annotations

import itertools
import math
import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force_spatial as bfs  # noqa: E402

from mapsearch.model.bounds import _link_time, compute_time_floor, contract_floors, link_floors, link_time_floor  # noqa: E402
from mapsearch.model.build import clock_scale  # noqa: E402
from mapsearch.model.fanout_bound import _split_words, elements_floor, fanout_time_floor  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.presets import load_preset  # noqa: E402
from mapsearch.spec.architecture import Link, MeshAxis  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402
from tests.solve.test_spatial_vs_brute_force import arch, conv1d, matmul  # noqa: E402

H, Q = Fraction(1, 2), Fraction(1, 4)
# (workload, instances, L0 words, link (in, out, lines), clocks per call, floor, optimum or None)
CASES = [
    (matmul(2, 4, 1), 3, 8, (H, Q, "shared"), 2, Fraction(8), Fraction(8)),
    (matmul(4, 3, 2), 3, 9, (Q, Q, "shared"), 1, Fraction(17, 2), None),
    (matmul(3, 2, 1), 4, 5, (H, H, "shared"), 3, Fraction(13, 2), None),
    (conv1d(2, 3, 1), 4, 3, (H, H, "shared"), 2, Fraction(6), None),
    (matmul(2, 2, 2), 4, 4, (H, H, "separate"), 2, Fraction(9, 2), None),
    (conv1d(1, 4, 2), 4, 4, (Q, H, "shared"), 1, Fraction(3), None),
    (matmul(2, 4, 1), 4, 7, (H, H, "shared"), 2, Fraction(8), Fraction(8)),
]


def _problem(w, instances, words, link, clocks):
    a = arch([None, words], 1, (MeshAxis("x", instances, ("none",)),), [None, Link(*link)], clocks=Fraction(clocks))
    return Problem(w, a)


def _floors(p: Problem) -> tuple[Fraction, Fraction]:
    """(the other floors' time, the fan-out floor), in clocks."""
    scale = clock_scale(p.architecture)
    floors = link_floors(p)
    other = max(link_time_floor(p, floors, scale), compute_time_floor(p, scale))
    return Fraction(other, scale), Fraction(fanout_time_floor(p, scale, _link_time(p, floors, scale)), scale)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_every_schedule_of_the_contract_takes_at_least_the_floor(case: int) -> None:
    w, instances, words, link, clocks, floor, optimum = CASES[case]
    p = _problem(w, instances, words, link, clocks)
    other, fanout = _floors(p)
    assert fanout == floor > other  # the floor binds here: no other floor gives it
    assert Fraction(contract_floors(p, clock_scale(p.architecture))[0], clock_scale(p.architecture)) == floor
    times = [f.time for _, f in bfs.all_scored(w, p.architecture, positions=True) if f is not None]
    assert len(times) > 5 and min(times) >= floor
    if optimum is not None:
        assert min(times) == optimum == floor


def _least_elements(macs: int, reuse: int) -> int:
    """The fewest whole elements ``macs`` MACs can use: the least ``U`` with ``reuse U^3 >= 27 macs^2``."""
    u = 0
    while reuse * u ** 3 < 27 * macs * macs:
        u += 1
    return u


@pytest.mark.parametrize("reuse", [1, 2, 9])
def test_split_words_is_at_most_every_distribution_of_the_macs(reuse: int) -> None:
    """Over every way to give ``macs`` MACs to ``units`` instances of at most ``cap`` each, the words the
    instances need (each its least whole elements) are at least the floor, and the floor never grows with
    ``cap``; None exactly when no way exists."""
    for macs, units in itertools.product(range(0, 13), range(1, 5)):
        previous = math.inf
        for cap in range(1, 14):
            got = _split_words(macs, cap, units, reuse)
            ways = [ws for ws in itertools.product(range(cap + 1), repeat=units) if sum(ws) == macs]
            if not ways:
                assert got is None
                continue
            assert got is not None and got <= previous
            previous = got
            assert got <= min(sum(_least_elements(x, reuse) for x in ws) for ws in ways)
            assert got >= math.floor(min(sum(elements_floor(x, reuse) for x in ws) for ws in ways)) - 2


def test_simba_1024_cube_time_floor() -> None:
    """36 chiplets that share nothing on one package link (1/64 clock per word), 1,024 MACs a clock each: at
    T clocks a chiplet makes at most 1,024 T MACs and reads at least 3 (1,024 T)^(2/3) elements, so the
    link's time is at least about 3 x 1024^3 / (1,024 T)^(1/3) / 64, which meets T at about 105,551 clocks,
    105,884 with whole chiplets; the other floors give 49,152 (each element once over the link)."""
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 1024, "n": 1024, "k": 1024})
    p = Problem(w, load_preset("simba-like"))
    other, fanout = _floors(p)
    assert other == 49152
    assert 105_800 < fanout < 105_900
    # The continuous answer (every chiplet a fraction of one at full load) is below it: by concavity the
    # last chiplet's share r costs f(r) >= (r / cap) f(cap).
    continuous = (3 * 1024**3 / 64 / 1024 ** (1 / 3)) ** (3 / 4)
    assert continuous <= float(fanout) <= 1.01 * continuous
