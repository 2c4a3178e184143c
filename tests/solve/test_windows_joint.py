"""Filter windows on input axes over three or more dimensions (issue 15; docs/solver.md, "Split filter windows").

An axis ``I[p + r + u]`` (or ``I[2p + r + 2u]``) is split along every
dimension, like a two-dimension window, counted exactly with a joint
coincidence table (model/window_tables.joint_table). What is checked:

1. The joint table equals a direct walk of the dimensions' loops, for random
   chains, coefficients, orders and buffer levels.
2. The model's prediction of random schedules (every chain kept; tiles,
   orders and keeps fixed; positions the model's) equals the replay's.
3. ``solve`` equals tests/brute_force_wide.py (every tile of every dimension,
   order, keep and buffer position, scored by replay; it shares no code with
   the model) on ``I[p+r+u]``, strides and dilations, three operands, a 2-D
   input with one such axis, 2 and 3 levels, a block op, separate lines and
   double buffering; every returned schedule replays to its prediction.
4. The fuzz case that found the defect, as a regression; the pruning keeps
   the optimum; above the table limit, and under a spatial fanout, the axis
   is held whole and the result names why (and equals its family's oracle).
"""

from __future__ import annotations

import random
import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402
import brute_force_spatial as bfs  # noqa: E402
import brute_force_wide as bw  # noqa: E402

from mapsearch.model import windows  # noqa: E402
from mapsearch.model.chains import enumerate_chains  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.model.window_tables import joint_table  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.solve import unsplit  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import Architecture, Compute, Level, Link, MeshAxis  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402
from tests.sim.spatial_helpers import schedule  # noqa: E402
from tests.solve.test_spatial_levels import model_schedule  # noqa: E402

AXIS3 = "O[p] += I[p+r+u] * W[r,u]"


def arch(caps, costs=(1, 1), lines="shared", block=(), clocks=1, double=False) -> Architecture:
    names = ("L3", "L2", "L1", "L0")[-len(caps):]
    levels = tuple(Level(names[i], caps[i], None if i == 0 else Link(Fraction(costs[0]), Fraction(costs[1]), lines))
                   for i in range(len(caps)))
    return Architecture("a", levels, Compute(block, Fraction(clocks)), double)


def replays_to_its_prediction(s) -> None:
    assert differences(s.predicted, replay(s, mode="count").figures) == [], s.levels
    assert differences(s.predicted, replay(s, mode="events").figures) == [], s.levels


# --------------------------------------------------------------------------- 1. the joint table, walked

def walked_joint(extent: dict[str, int], tiles: dict[str, tuple[int, ...]], coeff: dict[str, int], e: str, j: int,
                 levels: dict[str, int], outer: dict[str, bool]) -> int:
    """Walk the loops of every dimension (``d``'s levels 1..``levels[d]``; at level ``j`` the dims with ``outer``
    before ``e``) as one nest and sum, over the advances of ``e``'s level-``j`` loop that leave the interval
    ``sum_d coeff[d] * d`` (the pieces at ``levels[d]``) unchanged, its words."""
    loops = []  # (dim, level), outer -> inner
    for level in range(1, max(levels.values()) + 1):
        here = [d for d in extent if level <= levels[d]]
        if level == j:
            here = [d for d in here if d != e and outer[d]] + [e] + [d for d in here if d != e and not outer[d]]
        loops += [(d, level) for d in here]
    total, prev = 0, None

    def rec(k: int, where: dict, changed_at: list) -> None:
        nonlocal total, prev
        if k == len(loops):
            pieces = [where[(d, levels[d])] for d in extent]
            interval = (sum(coeff[d] * s for d, (s, _) in zip(extent, pieces)),
                        sum(coeff[d] * (x - 1) for d, (_, x) in zip(extent, pieces)) + 1)
            if prev is not None and changed_at and changed_at[0] == (e, j) and interval == prev:
                total += interval[1]
            prev = interval
            changed_at.clear()
            return
        dim, level = loops[k]
        start, size = where[(dim, level - 1)]
        t = tiles[dim][level - 1]
        for n, x in enumerate(range(0, size, t)):
            where[(dim, level)] = (start + x, min(t, size - x))
            if n > 0 and not changed_at:
                changed_at.append((dim, level))
            rec(k + 1, where, changed_at)

    rec(0, {(d, 0): (0, extent[d]) for d in extent}, [])
    return total


def test_joint_table_equals_a_walk() -> None:
    rng = random.Random(11)
    for _ in range(40):
        depth = rng.choice([1, 2, 2, 3])
        dims = ["p", "r", "u"] + (["v"] if rng.random() < 0.2 and depth == 1 else [])
        extent = {d: rng.randint(2, 5 if depth < 3 else 3) for d in dims}
        coeff = {d: rng.choice([1, 1, 2, 3]) for d in dims}
        chains = {d: enumerate_chains(extent[d], depth, ((1, 0), (0, 1)), window=True) for d in dims}
        e = rng.choice(dims)
        rest = [d for d in dims if d != e]
        i = rng.randint(1, depth)  # the buffer's level: every dimension's pieces at i or i - 1
        j = rng.randint(1, i)
        levels = {e: i if j == i else rng.choice([i, i - 1])} | {g: rng.choice([i, i - 1]) for g in rest}
        outer = {g: rng.random() < 0.5 for g in rest}
        others = [(chains[g], coeff[g], min(j if outer[g] else j - 1, levels[g]), levels[g]) for g in rest]
        table = joint_table(chains[e], coeff[e], j, levels[e], others)
        assert table.shape == tuple(len(chains[d]) for d in [e] + rest)
        for _ in range(12):
            rows = [rng.randrange(len(chains[d])) for d in [e] + rest]
            tiles = {d: tuple(int(x) for x in chains[d].tiles[row]) for d, row in zip([e] + rest, rows)}
            want = walked_joint(extent, tiles, coeff, e, j, levels, outer)
            assert table[tuple(rows)] == want, (extent, tiles, coeff, e, j, levels, outer)


def test_a_coincidence_of_three_dimensions() -> None:
    # I[p+r+u], p = 2 whole, r = 3 and u = 2 tiled by 1, u inner to r: the interval starts at r + u and holds
    # (2-1) + 0 + 0 + 1 = 2 words. Its starts run 0 1 | 1 2 | 2 3: both advances of r (u wrapping from 1 to 0)
    # keep the interval, 2 words each. With r tiled by 2 (pieces 2, 1) the advance goes from start 1, 3 words
    # to start 2, 2 words: none.
    extent, coeff = {"p": 2, "r": 3, "u": 2}, {"p": 1, "r": 1, "u": 1}
    tiles, levels, outer = {"p": (2,), "r": (1,), "u": (1,)}, {"p": 1, "r": 1, "u": 1}, {"p": True, "u": False}
    assert walked_joint(extent, tiles, coeff, "r", 1, levels, outer) == 2 * 2
    assert walked_joint(extent, tiles | {"r": (2,)}, coeff, "r", 1, levels, outer) == 0
    rows = {d: enumerate_chains(extent[d], 1, ((1, 0), (0, 1)), window=True) for d in extent}
    at = {d: [int(t) for t in rows[d].tiles[:, 0]] for d in extent}
    table = joint_table(rows["r"], 1, 1, 1, [(rows["p"], 1, 1, 1), (rows["u"], 1, 0, 1)])
    assert table[at["r"].index(1), at["p"].index(2), at["u"].index(1)] == 4
    assert table[at["r"].index(2), at["p"].index(2), at["u"].index(1)] == 0


# --------------------------------------------------------------------------- 2. the model, schedule by schedule

RANDOM_EINSUMS = [AXIS3, "O[p] += I[p*2+r+u*2] * W[r,u]", "O[p] += I[p+r*2+u*3] * W[r] * V[u]",
                  "O[p,q] += I[p+r+u,q] * W[r,u]"]


def _chain(rng: random.Random, extent: int, depth: int) -> list[int]:
    out, parent = [], extent
    for _ in range(depth):
        parent = rng.randint(1, parent)
        out.append(parent)
    return out


@pytest.mark.parametrize("seed", range(24))
def test_model_prediction_equals_the_replay(seed: int, monkeypatch) -> None:
    rng = random.Random(seed)
    text = rng.choice(RANDOM_EINSUMS)
    depth = rng.choice([1, 2, 2, 3])
    w = Workload.from_text("w", text, {d: rng.randint(2, 4 if depth < 3 else 3) if d != "q" else 2
                                       for d in ("p", "q", "r", "u") if d in text})
    a = arch([None] + [10_000] * depth, (rng.choice([1, 2]), 1), rng.choice(["shared", "separate"]),
             double=rng.random() < 0.2)
    chains = {d: _chain(rng, e, depth) for d, e in w.extents}
    below = []
    for lv in range(depth):
        order = list(w.dims)
        rng.shuffle(order)
        keep = {t for t in w.tensor_names if lv == depth - 1 or rng.random() < 0.5}
        below.append(({d: chains[d][lv] for d in w.dims}, order, keep))
    s = schedule(w, a, below)
    got = model_schedule(s, monkeypatch)
    for lv in range(1, depth + 1):
        assert got.levels[lv].tile == s.levels[lv].tile and got.levels[lv].keep == s.levels[lv].keep
    replays_to_its_prediction(got)


# --------------------------------------------------------------------------- 3. the solver against the brute force

CASES = {  # name: (einsum, extents, architecture)
    "fuzz case, L0 7": (AXIS3, {"p": 2, "r": 2, "u": 2}, arch([None, 7])),
    "p4 r3 u3, L0 6": (AXIS3, {"p": 4, "r": 3, "u": 3}, arch([None, 6])),
    "separate lines": (AXIS3, {"p": 5, "r": 2, "u": 3}, arch([None, 9], (1, 2), "separate")),
    "stride 2, dilation 2": ("O[p] += I[p*2+r+u*2] * W[r,u]", {"p": 3, "r": 2, "u": 3}, arch([None, 9])),
    "dilations 2 and 3, double": ("O[p] += I[p+r*2+u*3] * W[r,u]", {"p": 2, "r": 3, "u": 3},
                                  arch([None, 8], double=True)),
    "three operands, block op": ("O[p] += I[p+r+u] * W[r] * V[u]", {"p": 3, "r": 3, "u": 2},
                                 arch([None, 8], block=(("p", 2),))),
    "2-D input": ("O[p,q] += I[p+r+u,q] * W[r,u]", {"p": 2, "q": 2, "r": 2, "u": 2}, arch([None, 9])),
    "3 levels": (AXIS3, {"p": 2, "r": 2, "u": 2}, arch([None, 11, 8])),
    "3 levels, stride and dilation": ("O[p] += I[p*2+r+u*2] * W[r,u]", {"p": 2, "r": 2, "u": 2},
                                      arch([None, 9, 6], (2, 1))),
    "3 levels, p3": (AXIS3, {"p": 3, "r": 2, "u": 2}, arch([None, 12, 6])),
}
# (time, words) of the whole family (tests/brute_force_wide.py), written down as a second witness.
EXPECTED = {"fuzz case, L0 7": (10, 10), "p4 r3 u3, L0 6": (49, 49), "separate lines": (30, 29),
            "stride 2, dilation 2": (27, 27), "dilations 2 and 3, double": (29, 29),
            "three operands, block op": (20, 20), "2-D input": (16, 16), "3 levels": (10, 20),
            "3 levels, stride and dilation": (24, 24), "3 levels, p3": (15, 27)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_solver_equals_the_whole_family_brute_force(name: str) -> None:
    text, extents, a = CASES[name]
    w = Workload.from_text("w", text, extents)
    brute = bw.brute_force(w, a)
    bw.direct_check(brute)
    result = solve(Problem(w, a))
    f = result.schedule.predicted
    assert result.status == "OPTIMAL" and result.family_restrictions == ()
    assert (f.time, f.words_total) == brute.value == EXPECTED[name], (name, result.schedule.levels)
    replays_to_its_prediction(result.schedule)


def test_the_fuzz_case_is_no_longer_an_empty_family() -> None:
    """benchmarks/fuzz_vs_brute.py: I[p+r+u], p = r = u = 2, L0 7 words. Held whole (r, u at 2), W alone took 4
    words and the solver said "no schedule in the searched family"; the whole family's optimum is 10 / 10."""
    w = Workload.from_text("w", AXIS3, {"p": 2, "r": 2, "u": 2})
    result = solve(Problem(w, arch([None, 7])))
    f = result.schedule.predicted
    assert result.status == "OPTIMAL" and (f.time, f.words_total) == (10, 10)
    assert any(result.schedule.levels[1].tile_extent(d) < 2 for d in ("r", "u"))
    data = replay(result.schedule, mode="data")
    assert data.data_ok and differences(f, data.figures) == []


# --------------------------------------------------------------------------- 4. pruning, the limit, a mesh

def test_pruning_keeps_the_optimum(monkeypatch) -> None:
    # Larger than the brute force takes: the optimum with the joint pruning (p's 33 chains cut to 25)
    # equals the one over every chain.
    import mapsearch.model.build as build_module

    w = Workload.from_text("w", AXIS3, {"p": 12, "r": 2, "u": 2})
    a = arch([None, 20, 8], (2, 1))
    assert len(build_module.build(Problem(w, a)).chains["p"]) == 25
    pruned = solve(Problem(w, a))
    monkeypatch.setattr(build_module, "prune_window_chains", lambda chains, wins, depth: chains)
    assert len(build_module.build(Problem(w, a)).chains["p"]) == 33
    full = solve(Problem(w, a))
    key = lambda r: (r.status, r.schedule.predicted.time, r.schedule.predicted.words_total)  # noqa: E731
    assert key(pruned) == key(full) == ("OPTIMAL", 84, 72)
    replays_to_its_prediction(pruned.schedule)


def test_above_the_table_limit_the_axis_is_held_whole_and_named(monkeypatch) -> None:
    """p = 4, r = u = 2 over one level below the top: 4 x 2 x 2 = 16 chain combinations."""
    w = Workload.from_text("w", AXIS3, {"p": 4, "r": 2, "u": 2})
    a = arch([None, 8])
    monkeypatch.setattr(windows, "JOINT_TABLE_LIMIT", 15)
    held = solve(Problem(w, a))
    assert held.status == "OPTIMAL_IN_FAMILY"
    assert held.family_restrictions == (
        "filter windows held whole: r, u (the joint table of (p, r, u) would have 16 entries, over the limit of 15; "
        "such an axis is split only along its largest dimension)",)
    f = held.schedule.predicted
    assert (f.time, f.words_total) == bw.brute_force(w, a, held=frozenset({"r", "u"})).value == (20, 20)
    monkeypatch.setattr(windows, "JOINT_TABLE_LIMIT", 16)
    split = solve(Problem(w, a))
    assert split.status == "OPTIMAL" and (split.schedule.predicted.time, split.schedule.predicted.words_total) == (18, 18)


def test_under_a_spatial_fanout_the_axis_is_held_whole_and_named(monkeypatch) -> None:
    mesh = (MeshAxis("x", 2, ("all",)),)
    a = Architecture("m", (Level("L1", None, None), Level("L0", 8, Link(), mesh=mesh)), Compute(), False)
    w = Workload.from_text("w", AXIS3, {"p": 4, "r": 2, "u": 2})
    with monkeypatch.context() as m:  # the meshed family alone (solve/unsplit.py adds the unsplit schedules)
        m.setattr(unsplit, "applies", lambda *_: False)
        result = solve(Problem(w, a))
    assert result.status == "OPTIMAL_IN_FAMILY"
    assert ("filter windows held whole: r, u (an axis over three or more dimensions under a spatial fanout; such an "
            "axis is split only along its largest dimension)") in result.family_restrictions
    brute = bfs.brute_force_spatial(w, a, (), bf.Objective())  # the spatial family, r and u held whole
    assert tuple(p.value for p in result.phases) == brute.value == (20, 20)
    replays_to_its_prediction(result.schedule)
    # With the unsplit schedules, where the axis is split along every dimension: the mesh-free optimum.
    union = solve(Problem(w, a))
    whole = bw.brute_force(w, unsplit.unsplit_problem(Problem(w, a)).architecture)
    assert tuple(p.value for p in union.phases) == tuple(whole.value) == (18, 18)
    replays_to_its_prediction(union.schedule)
