"""Seeded searches on large arrays (mapsearch/solve/spatial_seed.py).

Where the coarse model is the whole model of a phase on a path with at
least 64 instances, its time phase first searches the model with the mesh
axes' factors fixed to a few assignments (the shortest estimated time, links
counted; the most shared splits), and hints the search with the best schedule found. Checked here:
the assignments are legal (each axis's factors fit it, each factor is one
the chains have) and, on ResNet-50 layers on ``tpu-v4i-like``, the ones an
engineer would pick, at the compute floor; a seeded search is a schedule of
the family that the replay confirms; the seeding changes no proven optimum
(solved with and without it; the search without it is checked against the
brute forces elsewhere).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mapsearch.model.build import build  # noqa: E402
from mapsearch.model.decode import decode  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.solve import spatial_seed  # noqa: E402
from mapsearch.solve.run import _floor, _objectives, solve  # noqa: E402
from mapsearch.spec.architecture import Link, MeshAxis  # noqa: E402
from mapsearch.spec.load import load_preset  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402
from tests.solve.test_spatial_levels import arch  # noqa: E402

OPTIONS = dataclasses.replace(SolveOptions(time_limit=60, workers=1, seed=0), placement=False)
CONV3X3 = "O[n,k,p,q] += I[n,c,p+r,q+s] * W[k,c,r,s]"
CONV3X3_S2 = "O[n,k,p,q] += I[n,c,p*2+r,q*2+s] * W[k,c,r,s]"


def _coarse(text: str, preset: str = "tpu-v4i-like", **extents: int):
    """The coarse model of a layer on ``preset``, its time objective set; and the objective's scale."""
    p = Problem(Workload.from_text("layer", text, extents), load_preset(preset))
    enc = build(p, options=OPTIONS, coarse_only=True)
    for guard in enc.guards.values():
        enc.model.add(guard == 1)
    name, expr, scale = _objectives(enc, OPTIONS)[0]
    assert name == "time"
    enc.model.minimize(expr)
    return enc, scale


def _named(enc, splits) -> list[tuple[str, str, int]]:
    """``(dim, axis, factor)`` per split."""
    return [(s.dim, spatial_seed.axes(enc, s.lv)[s.axis].name, s.factor) for s in splits]


def test_assignments_on_a_3x3_layer_fill_the_array_at_its_compute_floor() -> None:
    """conv3_x's 3x3 layer (128 -> 128 channels, 28x28): output channels across the rows of PEs, input channels
    down the columns (whose partial sums add up on the way), output rows over the four cores: every one of the
    65,536 PEs busy, 1,764 calls each = the MACs / 65,536."""
    enc, _ = _coarse(CONV3X3, n=1, k=128, c=128, p=28, q=28, r=3, s=3)
    found = spatial_seed.assignments(enc)
    assert _named(enc, found[0]) == [("k", "x", 128), ("c", "y", 128), ("p", "z", 4)]
    macs = 128 * 128 * 28 * 28 * 9
    assert spatial_seed._calls(enc, found[0]) == 1764 == macs // 65536
    # The second has the most splits that share a crossing within twice the shortest estimated time.
    assert spatial_seed._shared(enc, found[1]) > spatial_seed._shared(enc, found[0])
    assert spatial_seed._score(enc, found[1])[0] <= spatial_seed.TIME_SLACK * spatial_seed._score(enc, found[0])[0]
    assert spatial_seed._calls(enc, found[1]) <= spatial_seed.TIME_SLACK * 1764
    for splits in found:
        for s in splits:  # a factor the chains have, splitting the dimension's remaining extent into that many parts
            assert s.factor in set(enc.chains[s.dim].factors[:, s.lv].tolist())
        for lv, level in enumerate(enc.spatial_levels):
            for a, axis in enumerate(spatial_seed.axes(enc, lv)):
                assert math.prod(s.factor for s in splits if (s.lv, s.axis) == (lv, a)) <= axis.size
            on_level = [s.dim for s in splits if s.lv == lv]
            assert len(on_level) == len(set(on_level))  # a dimension on one axis of a level at most


def test_assignments_count_the_links_where_chiplets_share_nothing() -> None:
    """conv4_x's 1x1 256 -> 1024 layer (14x14) on ``simba-like``: 36 chiplets that share nothing over one
    package link. The fewest calls spread the pixels over every chiplet, each of which then reads the whole
    1024x256 weights over that link: link-bound at 89,757/4 clocks for 1,694 calls. The first assignment
    counts the links: output channels over six chiplets (parts of ceil(1024/6) = 171, model/part_families.py's
    mesh parts), no pixel split there: 8,624 calls, link-bound at 95,601/8 clocks, half the other's time.
    (With parts that divide only, k went over four chiplets: 12,544 clocks, compute-bound.)"""
    enc, _ = _coarse("O[n,k,p,q] += I[n,c,p,q] * W[k,c]", "simba-like", n=1, k=1024, c=256, p=14, q=14)
    fewest_calls = spatial_seed._beam(enc, lambda est, calls, shared: (calls, -shared))[0]
    first = spatial_seed.assignments(enc)[0]
    chiplets = [(s.dim, s.factor) for s in first if enc.spatial_levels[s.lv] == 1]
    assert chiplets == [("k", 6)]
    estimated, calls, _ = spatial_seed._score(enc, first)
    assert (estimated, calls) == (Fraction(95601, 8), 8624)
    assert spatial_seed._link_time(enc, fewest_calls) == Fraction(89757, 4) > estimated
    assert spatial_seed._calls(enc, fewest_calls) == 1694 < calls


def test_a_seeded_search_reaches_the_floor_and_replays() -> None:
    """conv3_x's 3x3 stride-2 layer: the seeded search finds the phase's proven floor (the search then ends at
    once, OPTIMAL), and its schedule replays to its predicted figures."""
    enc, scale = _coarse(CONV3X3_S2, n=1, k=128, c=128, p=28, q=28, r=3, s=3)
    floor = _floor(enc, "time")
    found = spatial_seed.seeded_solution(enc, enc.model, OPTIONS, 60, floor)
    assert found is not None and found[0] == floor
    schedule = decode(enc, found[1])
    assert schedule.predicted.time == Fraction(floor, scale)
    assert differences(schedule.predicted, replay(schedule, mode="count").figures) == []
    busy = {sp.dim for lm in schedule.levels for sp in lm.spatial}
    assert {"k", "c"} <= busy


def _solved(w: Workload, a, seeded: bool, monkeypatch, caplog):
    monkeypatch.setattr(spatial_seed, "SEED_INSTANCES", 64 if seeded else 10**9)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="mapsearch.solve.spatial_seed"):
        result = solve(Problem(w, a), options=SolveOptions(time_limit=120, workers=1, seed=0))
    ran = any("seeded search" in r.getMessage() for r in caplog.records)
    return result, ran


CASES = {
    # name: (workload, 64 instances or more)
    "matmul on an 8x8 array": (
        Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 8, "n": 8, "k": 4}),
        arch([None, 24, 3], {2: [MeshAxis("x", 8, ("input",)), MeshAxis("y", 8, ("output",))]},
             [None, Link(Fraction(1, 8), Fraction(1, 8)), Link(Fraction(1, 4), Fraction(1, 4))])),
    "1-D conv on 4 cores of 16 PEs": (
        Workload.from_text("conv", "O[k,p] += I[p+r] * W[k,r]", {"k": 4, "p": 6, "r": 3}),
        arch([None, 20, 4], {1: [MeshAxis("z", 4, ("none",))], 2: [MeshAxis("x", 16, ("all",))]},
             [None, Link(Fraction(1, 2), Fraction(1, 2)), Link(Fraction(1, 8), Fraction(1, 8))])),
}


def _random_case(seed: int):
    """A matmul, batched matmul or 1-D conv with a channel (extents 2-12) on 2 or 3 levels whose innermost or
    middle level is an 8x8, 4x16 or 64-instance mesh (random may_reuse, capacities and link rates)."""
    rng = random.Random(seed)
    name, text, dims = rng.choice([("mm", "Z[m,n] += A[m,k] * B[k,n]", "mnk"),
                                   ("conv", "O[k,p] += I[c,p+r] * W[k,c,r]", "kpcr"),
                                   ("bmm", "Z[b,m,n] += A[b,m,k] * B[b,k,n]", "bmnk")])
    extents = {d: rng.choice([2, 3, 4, 5, 6, 8, 12]) for d in dims}
    if name == "conv":
        extents["r"] = rng.choice([2, 3])
    depth = rng.choice([2, 3])
    at = 1 if depth == 2 else rng.choice([1, 2])
    sizes = rng.choice([(8, 8), (4, 16), (64,)])
    mesh = [MeshAxis(n, size, rng.choice([("input",), ("output",), ("all",), ("none",)])) for n, size in zip("xy", sizes)]
    caps = [None] + ([rng.choice([32, 64, None])] if depth == 3 else []) + [rng.choice([3, 4, 6, 8])]
    clocks = [Fraction(1), Fraction(1, 2), Fraction(1, 4), Fraction(1, 16)]
    links = [None] + [Link(rng.choice(clocks), rng.choice(clocks)) for _ in range(len(caps) - 1)]
    return Workload.from_text(name, text, extents), arch(caps, {at: mesh}, links)


CASES.update({f"random {seed}": _random_case(seed) for seed in range(12)})


@pytest.mark.parametrize("name", list(CASES))
def test_seeding_changes_no_optimum(name: str, monkeypatch, caplog) -> None:
    """Solved with and without the seeded searches: the same status and proven optimum (time, then words), and
    the seeded solve's schedule replays to its prediction. Random cases: seeds 0-24 swept by hand the same way."""
    w, a = CASES[name]
    seeded, ran = _solved(w, a, True, monkeypatch, caplog)
    plain, ran_plain = _solved(w, a, False, monkeypatch, caplog)
    assert ran and not ran_plain
    assert seeded.status == plain.status and seeded.status in ("OPTIMAL", "OPTIMAL_IN_FAMILY")
    assert [(p.name, p.value) for p in seeded.phases] == [(p.name, p.value) for p in plain.phases]
    assert differences(seeded.figures, replay(seeded.schedule, mode="count").figures) == []
