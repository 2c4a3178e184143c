"""Split filter windows (issue 15; docs/solver.md, "Split filter windows").

- The coincidence table equals a direct walk of the two dimensions' loops.
- The solver equals tests/brute_force_wide.py (every tile of every dimension,
  order, keep and buffer position, scored by replay) on 1-D and 2-D windows,
  stride 2, dilation 2, 2 and 3 levels, block ops, separate lines, double
  buffering; every returned schedule replays to its prediction.
- The issue's cases as regression tests.
"""

from __future__ import annotations

import itertools
import random
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force_wide as bw  # noqa: E402

from mapsearch.model.chains import enumerate_chains  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.model.window_tables import coincidence_table  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import Architecture, Compute, Level, Link  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402


# --------------------------------------------------------------------------- the table, walked


def walked_coincidences(ep: int, tp: tuple[int, ...], er: int, tr: tuple[int, ...], se: int, so: int, j: int,
                        le: int, lo: int, other_outer: bool) -> int:
    """Walk the loops of the advancing dimension (levels 1..le) and the other's (1..lo) as one nest and sum,
    over the advances of the first's level-j loop that leave the interval ``se*x + so*y`` unchanged, its words."""
    loops = []  # (dim, level), outer -> inner
    for level in range(1, max(le, lo) + 1):
        here = [("e", level)] if level <= le else []
        there = [("o", level)] if level <= lo else []
        loops += (there + here) if (level == j and other_outer) else (here + there)
    tiles = {"e": tp, "o": tr}
    extent = {"e": ep, "o": er}

    def children(dim: str, level: int, start: int, size: int) -> list[tuple[int, int]]:
        t = tiles[dim][level - 1]
        return [(start + x, min(t, size - x)) for x in range(0, size, t)]

    total = 0
    prev = None

    def rec(k: int, where: dict, changed_at: list):
        nonlocal total, prev
        if k == len(loops):
            (ps, px), (rs, ry) = where[("e", le)], where[("o", lo)]
            interval = (se * ps + so * rs, se * (px - 1) + so * (ry - 1) + 1)
            if prev is not None and changed_at and changed_at[0] == ("e", j) and interval == prev:
                total += interval[1]
            prev = interval
            changed_at.clear()
            return
        dim, level = loops[k]
        parent = where.get((dim, level - 1), (0, extent[dim]))
        for n, piece in enumerate(children(dim, level, *parent)):
            where[(dim, level)] = piece
            if n > 0 and not changed_at:
                changed_at.append((dim, level))
            rec(k + 1, where, changed_at)

    rec(0, {("e", 0): (0, ep), ("o", 0): (0, er)}, [])
    return total


def test_coincidence_table_equals_a_walk() -> None:
    rng = random.Random(7)
    for _ in range(40):
        depth = rng.choice([1, 2, 3])
        ep, er = rng.randint(2, 7), rng.randint(2, 5)
        se, so = rng.choice([(1, 1), (2, 1), (1, 2), (2, 3)])
        cp = enumerate_chains(ep, depth, ((1, 0), (0, 1)), window=True)
        cr = enumerate_chains(er, depth, ((1, 0), (0, 1)), window=True)
        le = rng.randint(1, depth)
        lo = rng.choice([x for x in (le - 1, le, le + 1) if 0 <= x <= depth])
        j = rng.randint(1, le)
        outer = rng.random() < 0.5
        table = coincidence_table(cp, cr, se, so, j, le, lo, outer)
        for a in rng.sample(range(len(cp)), min(6, len(cp))):
            for b in rng.sample(range(len(cr)), min(4, len(cr))):
                tp, tr = tuple(int(x) for x in cp.tiles[a]), tuple(int(x) for x in cr.tiles[b])
                want = walked_coincidences(ep, tp, er, tr, se, so, j, le, lo, outer)
                assert table[a, b] == want, (ep, tp, er, tr, se, so, j, le, lo, outer)


def test_coincidences_exist_where_windows_were_held_whole() -> None:
    # p = 4 tiled by 2, r = 3 tiled by 1, s = t = 1, r inner: the p advance 0..1 -> 2..3 while r wraps
    # from its last piece (2) to its first (0) keeps [2, 3] + [0] = [2, 3]: every advance of p coincides.
    assert walked_coincidences(4, (2,), 3, (1,), 1, 1, 1, 1, 1, False) == 2  # one advance, 2 words


# --------------------------------------------------------------------------- against the brute force

EINSUMS = ["O[p] += I[p+r] * W[r]", "O[p] += I[p*2+r] * W[r]", "O[p] += I[p+r*2] * W[r]", "O[p] += I[p*2+r*3] * W[r]",
           "O[k,p] += I[c,p+r] * W[k,c,r]", "O[p,q] += I[p+r,q+s] * W[r,s]"]


def arch(caps, costs=(1, 1), lines="shared", block=(), clocks=1, double=False) -> Architecture:
    names = ("L2", "L1", "L0")[-len(caps):]
    levels = tuple(Level(names[i], caps[i], None if i == 0 else Link(Fraction(costs[0]), Fraction(costs[1]), lines))
                   for i in range(len(caps)))
    return Architecture("a", levels, Compute(block, Fraction(clocks)), double)


def random_case(seed: int):
    rng = random.Random(seed)
    text = rng.choice(EINSUMS)
    dims = sorted(set(ch for ch in text.split("+=")[1] if ch.isalpha() and ch.islower()))
    few = len(dims) <= 2
    extents = {d: rng.randint(2, 4 if few else 2) if d in "pqrs" else rng.randint(1, 2) for d in dims}
    depth = rng.choice([1, 2]) if few else 1
    caps = [None] + sorted((rng.randint(3, 14) for _ in range(depth)), reverse=True)
    block = ((rng.choice(dims), 2),) if rng.random() < 0.2 else ()
    a = arch(caps, (rng.choice([1, 2]), rng.choice([1, 2])), rng.choice(["shared", "separate"]), block,
             rng.choice([1, 2]), rng.random() < 0.2)
    return Workload.from_text("w", text, extents), a


# Seeds whose brute force stays under a few seconds; together they cover every einsum above,
# 2 and 3 levels, block ops, separate lines, double buffering and infeasible cases.
SEEDS = [3, 7, 8, 9, 11, 13, 16, 17, 21, 27, 28, 33, 37, 39, 103, 111, 119, 127, 131, 142]


@pytest.mark.parametrize("seed", SEEDS)
def test_solver_equals_the_whole_family_brute_force(seed: int) -> None:
    w, a = random_case(seed)
    brute = bw.brute_force(w, a)
    if brute is None:
        with pytest.raises(Exception):
            solve(Problem(w, a))
        return
    bw.direct_check(brute)
    result = solve(Problem(w, a))
    assert result.status == "OPTIMAL" and result.family_restrictions == ()
    f = result.schedule.predicted
    assert (f.time, f.words_total) == brute.value, (w.einsum.text(), dict(w.extents), a, result.schedule.levels)
    assert differences(f, replay(result.schedule, mode="count").figures) == []
    assert differences(f, replay(result.schedule, mode="events").figures) == []


# --------------------------------------------------------------------------- the issue's cases


def test_issue_case_p6_r4_beats_the_held_window() -> None:
    # Held whole, r = 4 makes 34 clocks / 34 words; the issue's hand schedule (both tiled by 2) 30 / 30;
    # over the whole family (positions too) the brute force finds 24 / 22.
    w = Workload.from_text("conv", "O[p] += I[p+r] * W[r]", {"p": 6, "r": 4})
    a = arch([None, 9])
    result = solve(Problem(w, a))
    f = result.schedule.predicted
    assert result.status == "OPTIMAL" and (f.time, f.words_total) == (24, 22) == bw.brute_force(w, a).value
    assert any(lm.tile_extent("r") < 4 for lm in result.schedule.levels[1:])
    assert differences(f, replay(result.schedule, mode="data").figures) == []


def test_issue_case_p4_r3_was_called_infeasible() -> None:
    w = Workload.from_text("conv", "O[p] += I[p+r] * W[r]", {"p": 4, "r": 3})
    a = arch([None, 6])
    result = solve(Problem(w, a))
    f = result.schedule.predicted
    assert result.status == "OPTIMAL" and (f.time, f.words_total) == (19, 19) == bw.brute_force(w, a).value
    data = replay(result.schedule, mode="data")
    assert data.data_ok and differences(f, data.figures) == []


def test_three_dimension_axis_is_split() -> None:
    # Held whole (r and u at 2 at every level) the optimum was 20 clocks / 20 words; with every dimension
    # of the axis split (tests/solve/test_windows_joint.py) the whole family's optimum, 18 / 18.
    w = Workload.from_text("c3", "O[p] += I[p+r+u] * W[r,u]", {"p": 4, "r": 2, "u": 2})
    result = solve(Problem(w, arch([None, 8])))
    f = result.schedule.predicted
    assert result.status == "OPTIMAL" and result.family_restrictions == ()
    assert (f.time, f.words_total) == (18, 18) == bw.brute_force(w, arch([None, 8])).value
    assert differences(f, replay(result.schedule, mode="count").figures) == []


def test_a_tile_limit_on_a_held_whole_dimension_is_not_overridden(monkeypatch) -> None:
    """r is held whole (a 3-dim axis whose joint table is over the limit): a user limit r <= 1 at L0 is not met
    by the family, and the error says so; with the axis split, the limit is met."""
    from mapsearch.errors import NoScheduleInFamily
    from mapsearch.model import windows
    from mapsearch.spec.constraints import Constraints, TileLimit

    w = Workload.from_text("c3", "O[p] += I[p+r+u] * W[r,u]", {"p": 4, "r": 2, "u": 2})
    limit = Constraints(tiles=(TileLimit("L0", "r", 1, 1),))
    with monkeypatch.context() as patch:
        patch.setattr(windows, "JOINT_TABLE_LIMIT", 0)
        with pytest.raises(NoScheduleInFamily, match="tile limit on r at L0 .1..1. excludes its extent 2") as e:
            solve(Problem(w, arch([None, 8])), limit)
        assert e.value.restrictions[0].startswith("filter windows held whole: r")
        # A limit the whole extent meets is kept, and the schedule holds r whole at L0.
        result = solve(Problem(w, arch([None, 8])), Constraints(tiles=(TileLimit("L0", "r", 2, 2),)))
        assert result.status == "OPTIMAL_IN_FAMILY"
    result = solve(Problem(w, arch([None, 8])), limit)
    assert result.status == "OPTIMAL" and result.schedule.levels[1].tile_extent("r") == 1


def test_pruned_window_chains_keep_the_optimum() -> None:
    # A larger window than the brute force can take: the solver's optimum with pruned chains equals the
    # optimum over every (p, r) chain pair, enumerated here by fixing each pair's tiles as constraints.
    from mapsearch.spec.constraints import Constraints, TileLimit

    w = Workload.from_text("conv", "O[p] += I[p*2+r] * W[r]", {"p": 7, "r": 3})
    a = arch([None, 40, 8], costs=(2, 1))
    best = solve(Problem(w, a))
    key = lambda r: (r.schedule.predicted.time, r.schedule.predicted.words_total)  # noqa: E731
    values = []
    for t1p, t1r in itertools.product(range(1, 8), range(1, 4)):
        limits = (TileLimit("L1", "p", t1p, t1p), TileLimit("L1", "r", t1r, t1r))
        try:
            values.append(key(solve(Problem(w, a), Constraints("fix", limits))))
        except Exception:
            continue
    assert key(best) == min(values)
    assert np.all(np.array([v[0] for v in values]) >= key(best)[0])
