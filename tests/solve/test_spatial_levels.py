"""Several meshed levels in one path: the per-instance tables, and the solver against an exhaustive search.

1. The view tables of ``model/spatial_views.py`` (per meshed level, digit 0
   or the sum over digits, computed per piece) equal the sums over explicit
   instance trees built here one instance at a time, for random chains and
   parts at 2 and 3 meshed levels.
2. The model's prediction of random legal spatial schedules (one or two
   meshed levels, unequal parts, idle instances, homes, block ops, double
   buffering; every chain kept, the schedule's rows, orders, keeps and axes
   fixed) equals the replay's count: the formulas, not only their optima.
3. Random and named cases with two and three meshed levels (1 to 3 levels
   between; 2, 3 and 2x2 instances per level, primes over them; every
   ``may_reuse``; ``must_reuse``; both line models): ``solve`` proves the
   optimum that ``tests/brute_force_spatial.py`` (which shares no code with
   the solver) finds over every tile chain, part per meshed level and axis,
   order and keep, phase by phase; the solver's schedule replays to exactly
   its prediction in count mode (instances walked once per class and one by
   one) and in events mode.

Run ``python tests/solve/test_spatial_levels.py [first_seed] [n_seeds]`` to
sweep more seeds than the normal run does.
"""

from __future__ import annotations

import itertools
import random
import sys
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402
import brute_force_spatial as bfs  # noqa: E402

from mapsearch.errors import InfeasibleError  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.model.spatial_views import view_tables  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.sim.walk_spatial import count_spatial  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import SEPARATE, SHARED, Architecture, Compute, Level, Link, MeshAxis  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402
from tests.sim.spatial_helpers import spatial_schedules  # noqa: E402

pytestmark = pytest.mark.usefixtures("meshed_family_only")  # the spatial family against its brute force

HALF = Fraction(1, 2)
REUSE = [("all",), ("input",), ("output",), ("none",)]
SHAPES = [(2,), (3,), (2, 2)]


# --------------------------------------------------------------------------- 1. view tables vs explicit instances

def _tree(x: int, level: int, tiles, parts, digits, depth: int):
    """The instance's own subtree of a piece of extent ``x`` at ``level``: (extent, children), or None if empty."""
    if x <= 0:
        return None
    if level == depth:
        return (x, [])
    k = level + 1
    y = x
    if k in parts:
        q, p = digits[k], parts[k]
        y = min(max(x - q * p, 0), p)
    children = []
    for x0 in range(0, y, tiles[k - 1]):
        child = _tree(min(tiles[k - 1], y - x0), k, tiles, parts, digits, depth)
        if child is not None:
            children.append(child)
    return (x, children) if children else None


def _nodes(tree, level: int, out: dict) -> None:
    out.setdefault(level, []).append(tree)
    for child in tree[1]:
        _nodes(child, level + 1, out)


def _descendants(tree, steps: int) -> list:
    frontier = [tree]
    for _ in range(steps):
        frontier = [c for t in frontier for c in t[1]]
    return frontier


def _reach(x: int, level: int, tiles, parts, digits, depth: int) -> int:
    """The deepest level at which the instance has a part below a level-``level`` piece of extent ``x``."""
    if level == depth:
        return level
    k = level + 1
    y = min(max(x - digits[k] * parts[k], 0), parts[k]) if k in parts else x
    return max((_reach(min(tiles[k - 1], y - x0), k, tiles, parts, digits, depth) for x0 in range(0, y, tiles[k - 1])),
               default=level)


def _idle_mask(x: int, k: int, i: int, tiles, parts, digits, depth: int) -> int:
    """Along the one path from a level-``k`` piece to its single level-``i`` piece: the bits ``m .. l-1`` of every
    level-``m`` tile the instance idles in (it has parts down to level ``l-1`` only) while it still holds its region."""
    mask = 0
    for m in range(k + 1, i + 1):
        y = min(max(x - digits[m] * parts[m], 0), parts[m]) if m in parts else x
        pieces = [min(tiles[m - 1], y - x0) for x0 in range(0, y, tiles[m - 1])]
        for rest in pieces[1:]:
            mask |= (1 << min(_reach(rest, m, tiles, parts, digits, depth) + 1, i)) - (1 << m)
        x = pieces[0]
    return mask


def explicit_tables(extent, tiles, parts, view, footprints, block):
    """Sums over the view's instances (digit 0 at ``rep`` levels, every digit at ``sum`` levels) of their own trees.

    The still sums of pieces an instance idles through are keyed ``(k, i, levels)`` as in ``view_tables``."""
    depth = len(tiles)
    ranges = []
    for s in sorted(parts):
        parent = extent if s == 1 else tiles[s - 2]
        factor = -(-parent // parts[s])
        ranges.append(range(factor) if view[s] == "sum" else range(1))
    counts = [0] * (depth + 1)
    sums = {f: [0] * (depth + 1) for f in footprints}
    small = {f: {(k, i): 0 for i in range(1, depth + 1) for k in range(i)} for f in footprints}
    calls = 0
    for combo in itertools.product(*ranges):
        digits = dict(zip(sorted(parts), combo))
        tree = _tree(extent, 0, tiles, parts, digits, depth)
        if tree is None:
            continue
        nodes: dict = {}
        _nodes(tree, 0, nodes)
        for k in range(depth + 1):
            for node in nodes.get(k, []):
                counts[k] += 1
                for f in footprints:
                    sums[f][k] += f[0] * node[0] + f[1]
                    for i in range(k + 1, depth + 1):
                        below = _descendants(node, i - k)
                        if len(below) == 1:
                            key = (k, i, _idle_mask(node[0], k, i, tiles, parts, digits, depth))
                            key = key if key[2] else key[:2]
                            small[f][key] = small[f].get(key, 0) + f[0] * below[0][0] + f[1]
        calls += sum(-(-leaf[0] // block) for leaf in nodes[depth])
    return counts, sums, small, calls


def _random_chain(rng: random.Random, extent: int, depth: int, meshed: list[int], max_factor: int):
    tiles, parts, parent = [], {}, extent
    for k in range(1, depth + 1):
        if k in meshed:
            lo = max(1, -(-parent // max_factor))
            parts[k] = rng.randint(lo, parent)
            parent = parts[k]
        tiles.append(rng.randint(1, parent))
        parent = tiles[-1]
    return tiles, parts


@pytest.mark.parametrize("seed", range(40))
def test_view_tables_equal_explicit_instance_trees(seed: int) -> None:
    rng = random.Random(seed)
    depth = rng.choice([2, 3, 4])
    meshed = sorted(rng.sample(range(1, depth + 1), k=min(depth, rng.choice([2, 2, 3]))))
    extent = rng.randint(5, 23)
    footprints = ((1, 0), (2, 1))
    block = rng.choice([1, 2, 3])
    rows = [_random_chain(rng, extent, depth, meshed, rng.choice([2, 3, 5])) for _ in range(6)]
    tiles = np.array([t for t, _ in rows], dtype=np.int64)
    parts = {s: np.array([p[s] for _, p in rows], dtype=np.int64) for s in meshed}
    for view in itertools.product(("rep", "sum"), repeat=len(meshed)):
        by_level = dict(zip(meshed, view))
        got = view_tables(tiles, extent, parts, by_level, footprints, block)
        for r, (t, p) in enumerate(rows):
            counts, sums, small, calls = explicit_tables(extent, t, p, by_level, footprints, block)
            where = f"extent {extent} tiles {t} parts {p} view {by_level}"
            assert got["counts"][r].tolist() == counts, where
            assert int(got["calls"][r]) == calls, where
            for f in footprints:
                assert got["sums"][f][r].tolist() == sums[f], where
                assert {key: int(v[r]) for key, v in got["small"][f].items() if len(key) == 2 or v[r]} == small[f], where


# --------------------------------------------------------------------------- 2. the model on given schedules

def model_prediction(schedule, monkeypatch):
    """The figures the model predicts for ``schedule``: every chain row kept, the schedule's choices fixed
    (positions too: buffers above the mesh, docs/spatial.md "Buffer placement above the mesh")."""
    return model_schedule(schedule, monkeypatch).predicted


def model_schedule(schedule, monkeypatch):
    """The model's schedule with ``schedule``'s tiles, parts, axes, orders, keeps and the positions of its
    buffers above the mesh (every chain row kept), as decoded."""
    import mapsearch.model.build as build_module
    import mapsearch.model.chains as chains_module
    from ortools.sat.python import cp_model

    from mapsearch.model.build import build
    from mapsearch.model.decode import decode
    from mapsearch.model.placement import placed_dims
    from mapsearch.solve.warm_start import _cut

    monkeypatch.setattr(chains_module, "_survivors", lambda q: np.arange(q["tiles"].shape[0]))
    monkeypatch.setattr(build_module, "prune_window_chains", lambda chains, windows, depth: chains)
    build_module._chains_cached.cache_clear()
    try:
        p = Problem(schedule.workload, schedule.architecture, schedule.homes)
        enc = build(p)
    finally:
        build_module._chains_cached.cache_clear()
    m, w = enc.model, schedule.workload
    chosen: dict[str, int] = {}
    for d in w.dims:
        ch = enc.chains[d]
        ok = np.all(ch.tiles == [schedule.levels[j].tile_extent(d) for j in range(1, p.depth + 1)], axis=1)
        for lv, level in enumerate(enc.spatial_levels):
            split = [sp for sp in schedule.levels[level].spatial if sp.dim == d]
            parent = w.extent[d] if level == 1 else schedule.levels[level - 1].tile_extent(d)
            part = min(split[0].part, parent) if split else parent
            if ch.parts is not None:
                ok &= ch.parts[:, lv] == part
            if split and part < parent and (d, lv, 0) in enc.on_axis:
                names = [ax.name for ax in schedule.architecture.levels[level].mesh]
                lit = enc.on_axis[(d, lv, names.index(split[0].axis))]
                if not isinstance(lit, bool):
                    m.add_bool_and([lit])
        rows = np.flatnonzero(ok)
        assert rows.size == 1, (d, rows)
        chosen[d] = int(rows[0])
        if not isinstance(enc.choice[d], int):
            m.add(enc.choice[d] == int(rows[0]))

    def moving(x, j):
        split = [sp for sp in schedule.levels[j].spatial if sp.dim == x]
        parent = w.extent[x] if j == 1 else schedule.levels[j - 1].tile_extent(x)
        return schedule.levels[j].tile_extent(x) < (min(split[0].part, parent) if split else parent)

    for (j, d, e), lit in enc.before.items():
        order = schedule.levels[j].order
        if not isinstance(lit, bool) and moving(d, j) and moving(e, j):
            m.add(lit == int(order.index(d) < order.index(e)))
    for (t, i), lit in enc.kept.items():
        if not isinstance(lit, bool):
            m.add(lit == int(t in schedule.levels[i].keep))
    cuts: dict[tuple[str, int], int] = {}
    for (t, i), lits in enc.at.items():  # buffers above the mesh: the schedule's cut (model/placement.py)
        cuts[(t, i)] = _cut(enc, schedule, t, i, placed_dims(enc, t), chosen, frozenset()) if schedule.keeps(t, i) \
            else i * len(placed_dims(enc, t))
        if any(c == cuts[(t, i)] for (x, k), c in cuts.items() if x == t and k != i and schedule.keeps(t, k)) \
                and schedule.keeps(t, i):
            pytest.skip(f"two buffers of {t} at one cut: the model keeps only the lower one (model/placement.py)")
        m.add_bool_and([lits[cuts[(t, i)]]])
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(m) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    return decode(enc, solver)


def test_a_remainder_parent_piece_idles_an_instance(monkeypatch) -> None:
    """5x2x1, L1 tiles m by 3 (pieces 3 and 2), L0 splits m in parts of 1 over 3 instances, n outer at L1.

    Instance 2 has a part in the piece of 3 only: its A region never changes
    (the piece of 2 idles it), so it loads A once, not once per n (9 words of
    A in all, not 10). A bug of the one-level model, found by the explicit
    instance trees above.
    """
    from tests.sim.spatial_helpers import arch as sim_arch, level, schedule

    w = matmul(5, 2, 1)
    a = sim_arch(level("L2", None), level("L1", 100), level("L0", 10, [MeshAxis("x", 3, ("all",))]))
    s = schedule(w, a, [({"m": 3, "n": 1, "k": 1}, "nmk", {"A", "B", "Z"}),
                        ({"m": 1, "n": 1, "k": 1}, "mnk", {"A", "B", "Z"}, [("m", 1, "x")])])
    predicted = model_prediction(s, monkeypatch)
    assert dict((t.tensor, t.words_down) for t in predicted.links[1].tensors)["A"] == 9
    assert differences(predicted, bf.replay_figures(s)) == []


def _in_family(s) -> bool:
    """The solver's spatial family: a meshed level; pinned dims whole; a filter window's dims split in equal
    parts above the innermost level (tests/brute_force_spatial.py, ``WINDOW_PARTS = "solver"``)."""
    w = s.workload
    pinned = bf.pinned_dims(w)
    return (any(lv.instances > 1 for lv in s.architecture.levels)
            and all(lm.tile_extent(d) == w.extent[d] for lm in s.levels[1:] for d in pinned)
            and not any(sp.dim in pinned for lm in s.levels for sp in lm.spatial)
            and all(_equal_window_parts(s, d) for d in bfs.window_dims(w)))


def _equal_window_parts(s, d: str) -> bool:
    """``d``'s splits in ``s`` above the innermost level give every instance the same part of every parent piece."""
    w = s.workload
    chain = tuple(lm.tile_extent(d) for lm in s.levels[1:])
    parts, factors = {}, {}
    for i, lm in enumerate(s.levels[1:-1], start=1):
        split = [sp for sp in lm.spatial if sp.dim == d]
        if split:
            parent = w.extent[d] if i == 1 else chain[i - 2]
            parts[i], factors[i] = min(split[0].part, parent), -(-parent // min(split[0].part, parent))
    return bfs.equal_parts(w.extent[d], chain, parts, factors)


# derandomize: a fixed sequence of examples in CI; random runs (--hypothesis-seed) look for new counterexamples,
# such as the one kept below.
@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(spatial_schedules())
def test_model_predicts_random_spatial_schedules(monkeypatch, s) -> None:
    assume(_in_family(s))
    assert differences(model_prediction(s, monkeypatch), bf.replay_figures(s)) == [], s.levels


def test_idle_instance_under_a_changing_keeper(monkeypatch) -> None:
    """m=4 tiled 3 at L1 (pieces 3, 1) with Z kept there, split in parts of 2 over 2 L0 instances: instance 1
    idles in the remainder piece while L1's Z buffer moves on, so its partial sum of m=2 is flushed there and
    reloaded at k=1 (found by a random run of the test above). Replay: Z 4 down, 8 up on L1->L0; with Z
    bypassed at L1 (stored into its home) the instance keeps it across the idle piece: 3 down, 7 up."""
    from mapsearch.schedule.schedule import LevelMapping, Schedule, SpatialSplit

    a = arch([None, 1_000_000, 1_000_000], {2: [MeshAxis("x", 2, ("all",))]})
    levels = (LevelMapping("L2", (("m", 4), ("n", 1), ("k", 2)), (), frozenset(), (), ()),
              LevelMapping("L1", (("m", 3), ("n", 1), ("k", 1)), ("n", "k", "m"), frozenset({"Z"}), (), ()),
              LevelMapping("L0", (("m", 1), ("n", 1), ("k", 1)), ("m", "n", "k"), frozenset({"A", "B", "Z"}),
                           (SpatialSplit("m", 2, "x"),), ()))
    s = Schedule(matmul(4, 1, 2), a, levels, homes=(("B", "L1"),))
    assert _in_family(s)
    replayed = bf.replay_figures(s)
    assert {t.tensor: (t.words_down, t.words_up) for t in replayed.links[1].tensors}["Z"] == (4, 8)
    assert differences(model_prediction(s, monkeypatch), replayed) == []
    bypassed = replace(s, levels=(levels[0], replace(levels[1], keep=frozenset()), levels[2]))
    replayed = bf.replay_figures(bypassed)
    assert {t.tensor: (t.words_down, t.words_up) for t in replayed.links[1].tensors}["Z"] == (3, 7)
    assert differences(model_prediction(bypassed, monkeypatch), replayed) == []


# --------------------------------------------------------------------------- 3. the solver against the brute force

def matmul(m: int, n: int, k: int) -> Workload:
    return Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": m, "n": n, "k": k})


def conv1d(k: int, p: int, r: int) -> Workload:
    return Workload.from_text("conv1d", "O[k,p] += I[p+r] * W[k,r]", {"k": k, "p": p, "r": r})


def arch(capacities, meshes: dict, links=None, clocks=Fraction(1)) -> Architecture:
    """Levels outermost first (``capacities[0]`` the top); ``meshes[i]`` the mesh of level ``i``."""
    names = [f"L{len(capacities) - 1 - i}" for i in range(len(capacities))]
    links = links or [Link()] * len(capacities)
    levels = tuple(Level(names[i], c, None if i == 0 else links[i], mesh=tuple(meshes.get(i, ())))
                   for i, c in enumerate(capacities))
    return Architecture("levels", levels, Compute((), Fraction(clocks)))


def check(w: Workload, a: Architecture, objective: bf.Objective = bf.Objective()) -> dict:
    """Solver optimum == brute-force optimum; predicted == replayed in count (collapsed, one by one) and events."""
    brute = bfs.brute_force_spatial(w, a, (), objective)
    options = SolveOptions(objective=objective.kind, min_utilization=objective.min_utilization, time_limit=60,
                           workers=1, seed=0)
    if brute is None:
        with pytest.raises(InfeasibleError):
            solve(Problem(w, a), options=options)
        return {"feasible": False}
    result = solve(Problem(w, a), options=options)
    got = tuple(p.value for p in result.phases)
    where = f"{dict(w.extents)} {[(lv.name, lv.capacity, lv.mesh) for lv in a.levels]}"
    assert result.proven, where
    assert got == brute.value, f"{where}\nsolver {got} {result.schedule.levels}\nbrute {brute.value} {brute.schedule.levels}"
    s = result.schedule
    for replayed in (bf.replay_figures(s), count_spatial(s, one_by_one=True), replay(s, mode="events").figures):
        assert differences(s.predicted, replayed) == [], where
    return {"feasible": True, "value": got, "splits": {lm.level: lm.spatial for lm in s.levels if lm.spatial},
            "brute_s": brute.seconds, "status": result.status, "restrictions": result.family_restrictions}


def random_case(seed: int):
    """Two meshed levels (3 or 4 levels deep) or three (4 deep), small extents within a brute-force budget."""
    rng = random.Random(7000 + seed)
    kind = seed % 3  # 0: 3 levels, L1 and L0 meshed; 1: 4 levels, L2 and L0 meshed; 2: 4 levels, all three meshed
    depth = 3 if kind == 0 else 4
    meshed = {0: [1, 2], 1: [1, 3], 2: [1, 2, 3]}[kind]
    meshes = {}
    for i in meshed:
        shape = rng.choice(SHAPES) if kind != 2 else rng.choice([(2,), (3,)])
        meshes[i] = [MeshAxis(n, size, rng.choice(REUSE), ("output",) if rng.random() < 0.1 else ())
                     for n, size in zip(("x", "y"), shape)]
    budget = 260 if kind != 2 else 40
    draws = []
    for _ in range(12):
        if rng.random() < 0.75:
            w = matmul(rng.randint(2, 4), rng.randint(1, 3), rng.randint(2, 4) if kind != 2 else rng.randint(1, 3))
        else:
            w = conv1d(rng.randint(1, 2), rng.randint(2, 4), rng.randint(1, 2))
        fake = arch([None] * depth, meshes)
        draws.append((bfs.family_size(w, fake)[0], len(draws), w))
    within = [d for d in draws if d[0] <= budget]
    w = max(within)[2] if within else min(draws)[2]
    l0 = sum(w.tensor(t).words({d: (e if d in bf.pinned_dims(w) else 1) for d, e in w.extents}) for t in w.tensor_names)
    caps = [None] + [None if rng.random() < 0.4 else l0 + rng.choice([4, 8, 16]) for _ in range(depth - 2)]
    caps.append(l0 + rng.choice([0, 1, 2, 4]))
    clocks = [Fraction(1), HALF, Fraction(2), Fraction(1, 4)]
    links = [None] + [Link(rng.choice(clocks), rng.choice(clocks), rng.choice([SHARED, SEPARATE])) for _ in range(depth - 1)]
    objective = bf.Objective("time") if rng.random() < 0.8 else bf.Objective("words", min_utilization=HALF)
    return w, arch(caps, meshes, links, rng.choice([Fraction(1), Fraction(2)])), objective


SEEDS = range(9)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_case_with_several_meshed_levels_matches_brute_force(seed: int) -> None:
    w, a, objective = random_case(seed)
    check(w, a, objective)


def test_random_cases_cover_the_features() -> None:
    seen = set()
    for seed in SEEDS:
        w, a, objective = random_case(seed)
        meshed = [lv for lv in a.levels if lv.instances > 1]
        seen.add(("meshed levels", len(meshed)))
        seen.add(("depth", a.depth))
        seen.update(("instances", lv.instances) for lv in meshed)
        seen.update(("reuse", ax.may_reuse) for lv in meshed for ax in lv.mesh)
        seen.update(("lines", lv.link.lines) for lv in a.levels[1:])
        seen.add(("objective", objective.kind))
    need = ({("meshed levels", 2), ("meshed levels", 3), ("depth", 3), ("depth", 4), ("lines", SHARED),
             ("lines", SEPARATE), ("objective", "time")} | {("instances", n) for n in (2, 3, 4)}
            | {("reuse", r) for r in REUSE})
    assert need <= seen, need - seen


# Compute-bound cases (4 clocks per MAC, fast links): the best time needs the work spread over both levels.
FAST = Link(Fraction(1, 16), Fraction(1, 16))


def test_prime_extent_split_at_both_levels() -> None:
    """5x1x1 (m prime) on 2 x 3 instances: 5 = 3 + 2 at L1, then 1 + 1 + 1 and 1 + 1 at L0: one call each, not 5."""
    a = arch([None, 8, 3], {1: [MeshAxis("x", 2, ("all",))], 2: [MeshAxis("y", 3, ("all",))]},
             [None, FAST, FAST], clocks=Fraction(4))
    info = check(matmul(5, 1, 1), a)
    assert info["value"][0] == 4  # the busiest PE makes 1 call of 4 clocks
    assert set(info["splits"]) == {"L1", "L0"}


@pytest.mark.parametrize("reuse", [("none",), ("input",)])
def test_multicast_at_the_outer_level(reuse) -> None:
    """3x2x2 with n split over the outer level: A (not indexed by n) crosses once when the axis may reuse inputs."""
    a = arch([None, 12, 4], {1: [MeshAxis("x", 2, reuse)], 2: [MeshAxis("y", 2, ("output",))]},
             [None, Link(HALF, HALF), Link(Fraction(1, 4), Fraction(1, 4), SEPARATE)])
    check(matmul(3, 2, 2), a)


def test_multicast_pays_off() -> None:
    """The same case with no reuse and with reuse everywhere: reuse can only help, and here it does."""
    values = {}
    for reuse in (("none",), ("all",)):
        a = arch([None, 10, 4], {1: [MeshAxis("x", 2, reuse)], 2: [MeshAxis("y", 2, reuse)]}, [None, Link(HALF, HALF), Link()])
        values[reuse] = check(matmul(3, 2, 2), a)["value"]
    assert values[("all",)] < values[("none",)], values


def test_must_reuse_at_each_level() -> None:
    """must_reuse output at L0: k (which does not index Z) is the only dim split there."""
    a = arch([None, 10, 3], {1: [MeshAxis("x", 2, ("all",))], 2: [MeshAxis("y", 3, ("all",), ("output",))]},
             [None, FAST, FAST], clocks=Fraction(4))
    info = check(matmul(3, 2, 3), a)
    assert all(sp.dim == "k" for sp in info["splits"].get("L0", ()))


def test_three_meshed_levels_of_two() -> None:
    """2x2x2 on 2 x 2 x 2 instances (a 4-level path meshed at every level below the top)."""
    meshes = {i: [MeshAxis("x", 2, ("input",) if i % 2 else ("output",))] for i in (1, 2, 3)}
    a = arch([None, 12, 8, 3], meshes, [None, FAST, FAST, FAST], clocks=Fraction(4))
    info = check(matmul(2, 2, 2), a)
    assert info["value"][0] == 4  # 8 MACs over 8 instances, one call each, 4 clocks


def test_model_building_counts_against_the_time_limit() -> None:
    """A time limit shorter than the model's build stops with SolverTimeout naming the building step it reached."""
    from mapsearch.errors import SolverTimeout
    from mapsearch.presets import load_preset

    w = Workload.from_text("conv1x1", "O[n,k,p,q] += I[n,c,p,q] * W[k,c]", {"n": 1, "k": 256, "c": 64, "p": 56, "q": 56})
    with pytest.raises(SolverTimeout, match="ran out while (enumerating|splitting|counting|summing|building)"):
        solve(Problem(w, load_preset("tpu-v4i-like")), options=SolveOptions(time_limit=0.01))


if __name__ == "__main__":
    first = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    for seed in range(first, first + count):
        w, a, objective = random_case(seed)
        print(seed, dict(w.extents), [lv.instances for lv in a.levels], check(w, a, objective), flush=True)
