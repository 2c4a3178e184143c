"""The floors of mapsearch/model/bounds.py against every schedule of small cases, replayed.

A floor must hold for every schedule the contract allows, not only at the
optimum: each case enumerates the brute force's whole family
(``tests/brute_force.py``: tiles, orders, keep/bypass, homes below the top,
block ops, separate lines, double buffering, convolutions with strides and
dilations) and, on the smallest ones, every buffer placement
(``tests/brute_force_placement.py``), replays each fitting schedule and
checks its words per link and tensor, per link, in total, and its time
against the floors. The solver with the floors posted must still reach the
brute-force optimum (tests/solve/test_vs_brute_force.py runs the same
check on more seeds).
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import brute_force as bf  # noqa: E402
import brute_force_placement as bfp  # noqa: E402
from test_vs_brute_force import Case, check_case, conv1d, matmul, random_case  # noqa: E402

from mapsearch.model.bounds import link_floors, tensor_floors, time_floor, words_floor  # noqa: E402
from mapsearch.model.build import build  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.sim.errors import CapacityError  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.spec.architecture import SEPARATE, Architecture, Compute, Level, Link  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402


def deep(capacities, links=None) -> Architecture:
    names = ("L3", "L2", "L1", "L0")[-len(capacities):]
    links = links or [Link()] * len(capacities)
    return Architecture("deep", tuple(Level(names[i], capacities[i], None if i == 0 else links[i])
                                      for i in range(len(capacities))), Compute((), Fraction(1)), False)


def _check(p: Problem, figures, floors, per_tensor, time_lo: Fraction, words_lo: int, what: str) -> bool:
    """Assert the floors on one schedule's figures; True when the link floor is tight there."""
    tight = False
    for a, link in enumerate(figures.links, start=1):
        for tt in link.tensors:
            down, up = per_tensor.get((tt.tensor, a), (0, 0))
            assert tt.words_down >= down and tt.words_up >= up, (what, a, tt, down, up)
        f = floors[a]
        assert link.words_down >= f.down and link.words_up >= f.up, (what, a, link, f)
        assert link.words_down + link.words_up >= f.total, (what, a, link, f)
        tight |= link.words_down + link.words_up == f.total and f.io > f.down + f.up
    assert figures.words_total >= words_lo, (what, figures.words_total, words_lo)
    assert figures.time >= time_lo, (what, figures.time, time_lo)
    return tight


def _floors(case: Case):
    p = Problem(case.workload, case.architecture, case.homes)
    enc = build(p)
    return p, link_floors(p), tensor_floors(p), Fraction(time_floor(enc), enc.scale), words_floor(enc)


@pytest.mark.parametrize("seed", range(0, 40, 8))
def test_every_schedule_of_random_cases_is_above_the_floors(seed: int) -> None:
    case = random_case(seed)
    p, floors, per_tensor, time_lo, words_lo = _floors(case)
    seen = 0
    for schedule, figures in bf.all_scored(case.workload, case.architecture, case.homes):
        if figures is not None:
            _check(p, figures, floors, per_tensor, time_lo, words_lo, f"{case.describe()} {schedule.levels}")
            seen += 1
    assert seen > 0 or bf.brute_force(case.workload, case.architecture, case.homes) is None


SMALL_IO = [
    # (workload, capacities): small last levels, so the Smith et al. floor exceeds the compulsory words
    (matmul(4, 4, 4), [None, 4]),
    (matmul(5, 3, 6), [None, 3]),
    (matmul(4, 4, 4), [None, 8, 3]),
    (matmul(6, 4, 4), [None, 12, 4]),
]


@pytest.mark.parametrize("w,caps", SMALL_IO)
def test_io_floor_holds_on_every_schedule(w, caps) -> None:
    links = [None] + [Link(Fraction(1), Fraction(2), SEPARATE)] * (len(caps) - 1)
    case = Case("io", w, deep(caps, links))
    p, floors, per_tensor, time_lo, words_lo = _floors(case)
    assert any(f.io > f.down + f.up for f in floors.values()), floors  # the case exercises the I/O floor
    n = 0
    for schedule, figures in bf.all_scored(case.workload, case.architecture):
        if figures is not None:
            _check(p, figures, floors, per_tensor, time_lo, words_lo, str(schedule.levels))
            n += 1
    assert n > 0


@pytest.mark.parametrize("w,caps", [(matmul(3, 2, 2), [None, 3]), (matmul(2, 1, 2), [None, 5, 3]),
                                    (conv1d(3, 2, 2, 1), [None, 5]), (conv1d(2, 2, 1, 2), [None, 12, 6])])
def test_floors_hold_with_buffer_placement(w, caps) -> None:
    """Placements of kept buffers (all on 2 levels, every 11th on 3), replayed: the floors do not assume default positions."""
    case = Case("placed", w, deep(caps))
    p, floors, per_tensor, time_lo, words_lo = _floors(case)
    n = seen = 0
    stride = 1 if len(caps) == 2 else 11  # 3 levels: every 11th placed schedule keeps the test to seconds
    for tiles, orders in bf.nests(case.workload, case.architecture):
        for keeps in bf.keep_choices(case.workload, case.architecture, {}):
            base = bf.make_schedule(case.workload, case.architecture, {}, tiles, orders, keeps)
            for s in bfp.placements(base, "cuts"):
                seen += 1
                if seen % stride:
                    continue
                try:
                    figures = replay(s, mode="count").figures
                except CapacityError:
                    continue
                _check(p, figures, floors, per_tensor, time_lo, words_lo, str(s.levels))
                n += 1
    assert n > 0


@pytest.mark.parametrize("w,meshes,links", [
    # multicast over the clusters, reduction within them; the link below the clusters is slow (4 clocks a word)
    (matmul(3, 2, 2), {1: (("c", 2, ("input",)),), 2: (("x", 2, ("output",)),)}, (Link(Fraction(1, 4)), Link(Fraction(4)))),
    # no reuse anywhere, three instances at the outer level, separate lines below it
    (matmul(2, 3, 2), {1: (("c", 3, ("none",)),), 2: (("x", 2, ("all",)),)},
     (Link(Fraction(1, 2)), Link(Fraction(4), Fraction(8), SEPARATE))),
])
def test_floors_hold_on_every_schedule_of_two_meshed_levels(w, meshes, links) -> None:
    """Two meshed levels: the link below the outer one has a copy per instance, its time the busiest copy's.

    Every schedule of the brute force's family (tiles, parts at both levels, axes, orders, keeps), replayed,
    is above every floor; the time floor here comes from that link (its words over its copies).
    """
    import brute_force_spatial as bfs
    from mapsearch.spec.architecture import MeshAxis

    levels = (Level("L2", None),) + tuple(
        Level(name, cap, link, mesh=tuple(MeshAxis(*ax) for ax in meshes[i]))
        for i, (name, cap, link) in enumerate((("L1", 12, links[0]), ("L0", 4, links[1])), start=1))
    a = Architecture("two-meshes", levels, Compute((), Fraction(1 , 8)), False)
    case = Case("two meshes", w, a)
    p, floors, per_tensor, time_lo, words_lo = _floors(case)
    top = floors[1].total * a.levels[1].link.input_clocks_per_word
    assert time_lo > top  # the floor of the link below the clusters: F_2 * clocks / copies
    n = 0
    for tiles, splits, orders in bfs.family(w, a):
        for keeps in bf.keep_choices(w, a, {}):
            try:
                figures = replay(bfs.make_schedule(w, a, {}, tiles, splits, orders, keeps), mode="count").figures
            except CapacityError:
                continue
            _check(p, figures, floors, per_tensor, time_lo, words_lo, f"{tiles} {splits} {orders} {keeps}")
            n += 1
    assert n > 100


def test_strided_convolution_counts_touched_inputs_only() -> None:
    """I[p*3 + r] with p < 3, r < 2 touches 6 of the 8 elements of its span: the floor is 6."""
    w = conv1d(3, 2, 3, 1)
    p = Problem(w, deep([None, 6]))
    assert tensor_floors(p)[("I", 1)] == (6, 0)
    assert tensor_floors(p)[("O", 1)] == (0, 3)


def test_homes_below_the_top_have_no_floor_above_them() -> None:
    p = Problem(matmul(4, 4, 4), deep([None, 64, 8]), (("A", "L1"),))
    per = tensor_floors(p)
    assert ("A", 1) not in per and per[("A", 2)] == (16, 0) and per[("B", 1)] == (16, 0)
    assert link_floors(p)[2].io == 30  # every home above link 2: ceil(2 * 64 / sqrt(8)) - 2 * 8
    assert link_floors(p)[1].io == 0  # a tensor homed below link 1: no Smith et al. floor there


@pytest.mark.parametrize("seed", [1, 4, 9, 16, 25])
def test_solver_with_floors_still_reaches_the_brute_force_optimum(seed: int) -> None:
    check_case(random_case(seed))


@pytest.mark.parametrize("w,caps", SMALL_IO[:3])
def test_solver_with_io_floor_reaches_the_brute_force_optimum(w, caps) -> None:
    check_case(Case("io", w, deep(caps, [None] + [Link(Fraction(1), Fraction(2), SEPARATE)] * (len(caps) - 1))))


def test_phases_report_the_floor_at_start_and_clamped_bounds(caplog) -> None:
    """The words phase starts from the posted floor; bounds lie in [floor, value], so gaps are at most 100 %."""
    import logging

    from mapsearch.model.options import SolveOptions
    from mapsearch.solve.run import solve

    w, caps = SMALL_IO[3]
    p = Problem(w, deep(caps))
    with caplog.at_level(logging.INFO, logger="mapsearch.solve.phases"):
        result = solve(p, options=SolveOptions(workers=1, seed=0, time_limit=30.0))
    words = {ph.name: ph for ph in result.phases}["words"]
    assert words.start_bound == sum(f.total for f in link_floors(p).values())
    for ph in result.phases:
        assert 0 <= ph.bound <= ph.value and 0.0 <= ph.gap <= 1.0
        assert ph.start_gap is None or 0.0 <= ph.start_gap <= 1.0
    assert any("phase words ends" in r.getMessage() for r in caplog.records)


def test_axes_sharing_a_dimension_count_distinct_elements() -> None:
    """``A[m, m]`` touches its 5 diagonal elements, not 25; ``I[p + r, p]`` 12 of its 24 positions."""
    from mapsearch.model.bounds import touched
    from mapsearch.spec.workload import Workload

    w = Workload.from_text("diag", "Z[m] += A[m,m] * B[m,k]", {"m": 5, "k": 3})
    assert (touched(w, "A"), touched(w, "B"), touched(w, "Z")) == (5, 15, 5)
    w = Workload.from_text("skew", "O[p] += I[p+r,p] * W[r]", {"p": 4, "r": 3})
    assert touched(w, "I") == 12


def _mesh(caps, mesh, links=None) -> Architecture:
    names = ("L2", "L1", "L0")[-len(caps):]
    links = links or [Link()] * len(caps)
    return Architecture("mesh", tuple(Level(names[i], c, None if i == 0 else links[i],
                                            mesh=mesh if i == len(caps) - 1 else ()) for i, c in enumerate(caps)))


@pytest.mark.parametrize("w,caps,axes,links", [
    (matmul(4, 3, 4), [None, 6], (("x", 2, ("input",)), ("y", 2, ("output",))), None),
    (matmul(3, 2, 3), [None, 20, 4], (("x", 2, ("all",)),), [None, Link(Fraction(2), Fraction(1), SEPARATE), Link()]),
    (conv1d(4, 2, 1, 1), [None, 20, 5], (("x", 2, ("none",)),), None),
    # the I/O floor of the link into the meshed L0 binds (67 > 64 compulsory) with partial sums reduced in-network
    (matmul(4, 4, 6), [None, 3], (("x", 2, ("output",)),), None),
])
def test_floors_hold_on_every_schedule_of_a_mesh(w, caps, axes, links) -> None:
    """Spatial fanout (multicast, in-network reduction, per-copy links): every schedule's words and time.

    The I/O floor of a meshed subtree (model/bounds.py, ``copy_union``) counts an output element once while
    any copy of it is in the subtree, so reduced partial sums do not break it."""
    import brute_force_spatial as bfs
    from mapsearch.spec.architecture import MeshAxis

    a = _mesh(caps, tuple(MeshAxis(*ax) for ax in axes), links)
    case = Case("mesh", w, a)
    p, floors, per_tensor, time_lo, words_lo = _floors(case)
    if w.extent == {"m": 4, "n": 4, "k": 6}:
        assert floors[1].io == 67 > floors[1].down + floors[1].up == 64
    n = 0
    for schedule, figures in bfs.all_scored(w, a):
        if figures is not None:
            _check(p, figures, floors, per_tensor, time_lo, words_lo, str(schedule.levels))
            n += 1
    assert n > 0 and time_lo > 0


WINDOWED = [
    ("O[n,k,p,q] += I[n,c,p+r,q+s] * W[k,c,r,s]", {"n": 2, "k": 2, "c": 2, "p": 3, "q": 2, "r": 2, "s": 2}, 4),
    ("O[k,p] += I[c,p*2+r*2] * W[k,c,r]", {"k": 2, "c": 3, "p": 3, "r": 3}, 3),
    ("O[c,p] += I[c,p+r] * W[c,r]", {"c": 3, "p": 4, "r": 3}, 3),
    ("O[k,p] += I[p+r] * W[k,r]", {"k": 2, "p": 4, "r": 3}, 3),
    ("Z[m,n] += A[m,k] * B[k,n]", {"m": 3, "n": 3, "k": 3}, 1),
]


@pytest.mark.parametrize("text,extents,reuse", WINDOWED)
def test_windowed_segment_bound_holds_on_random_sets_of_macs(text, extents, reuse) -> None:
    """The heart of lower_bound.py's proof of (3): any set V of MACs uses elements with |V|^2 <= K |O| |I| |W|."""
    import itertools
    import random

    from mapsearch.model.lower_bound import segment_reuse

    w = Workload.from_text("w", text, extents)
    assert segment_reuse(w) == reuse
    dims = list(w.dims)
    points = list(itertools.product(*(range(w.extent[d]) for d in dims)))
    rng = random.Random(7)

    def used(t, subset):
        return {tuple(sum(c * pt[dims.index(d)] for d, c in ix.terms) for ix in w.tensor(t).indices) for pt in subset}

    for n in [1, 2, 3, 5, 8, len(points) // 2, len(points)] + [rng.randint(1, len(points)) for _ in range(40)]:
        for subset in ([rng.sample(points, n)] + ([points[:n]] if n < len(points) else [])):
            sizes = [len(used(t, subset)) for t in w.tensor_names]
            assert len(subset) ** 2 <= reuse * sizes[0] * sizes[1] * sizes[2], (text, n, sizes)


def test_windowed_floor_holds_on_every_schedule_of_a_small_convolution() -> None:
    """Every tiling (split windows included) and order of a 1-D conv with channels on a 3-word L0, replayed:
    the link's words are at least the windowed floor, which here exceeds the compulsory words."""
    import brute_force_wide as bw

    w = Workload.from_text("conv", "O[k,p] += I[c,p+r] * W[k,c,r]", {"k": 3, "p": 4, "c": 3, "r": 2})
    a = deep([None, 3])
    p = Problem(w, a)
    floor = link_floors(p)[1]
    assert floor.io == 53 > floor.down + floor.up == 45  # the windowed bound is the one that binds
    least, n = None, 0
    for tiles, orders in bw.nests(w, 1):
        s = bw.schedule_of(w, a, {}, tiles, orders, {t: (1,) for t in w.tensor_names}, {})
        try:
            figures = replay(s, mode="count").figures
        except CapacityError:
            continue
        words = figures.links[0].words_down + figures.links[0].words_up
        assert words >= floor.total, (tiles, orders, words)
        least = words if least is None else min(least, words)
        n += 1
    assert n > 0 and least >= 53
