"""Filter windows split over mesh axes (issue 15): the solver against a brute force of the same family.

A convolution axis ``s*p + t*r`` over two dimensions of extent > 1 is a
window (model/windows.py). Its dimensions may be split over mesh axes in
any part, at L0 and above it (docs/spatial.md, "Split windows over mesh
axes"; above L0 within the limits of model/spatial_chains.py, else in
*equal parts*, which give every instance the same part of every parent
piece, a named restriction). What is checked here:

1. The model's prediction of random legal schedules with window splits
   (1-D convolutions with stride and dilation, a 2-D one; one and two
   meshed levels of one or two axes; unequal parts at L0, and above it on
   their own seeds; every ``may_reuse``; homes, double buffering) equals
   the replay's count: the formulas themselves.
2. ``solve`` proves the optimum that ``tests/brute_force_spatial.py``
   (which shares no code with the solver) finds over every part
   (``WINDOW_PARTS = "all"``): 1-D convolutions plain, strided and
   dilated, a 2-D one with a channel, on one meshed level of 2, 3 and 4
   instances (one axis and two, reusing inputs, outputs or nothing), on
   paths of two and three levels, with two meshed levels, and on random
   cases; the status and the family restrictions are the right ones, and
   the solver's schedule replays to its prediction in count (instances
   walked once per class, and one by one) and events modes.
3. An Eyeriss-like row-stationary case (filter rows over PE rows, output
   rows over PE columns) that no schedule of the old family (window
   dimensions never split spatially) comes near, with its figures.
4. Unequal parts above L0, and why each class of link copies is timed on
   its own: with a window, an instance with a smaller part can move more
   words than instance 0 (docs/spatial.md, fact 3 does not carry over),
   and below a split above L0 a link's time is its busiest copy's.

Run ``python tests/solve/test_spatial_windows.py [first_seed] [n_seeds]`` to
sweep more seeds of the model test (1) than the normal run does."""

from __future__ import annotations

import random
import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402
import brute_force_spatial as bfs  # noqa: E402

from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import SEPARATE, SHARED, Link, MeshAxis  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402
from tests.sim.spatial_helpers import arch as sim_arch, level, schedule  # noqa: E402
from tests.solve.test_spatial_levels import arch, check, model_prediction  # noqa: E402

pytestmark = pytest.mark.usefixtures("meshed_family_only")  # the spatial family against its brute force

HALF = Fraction(1, 2)
FAST = Link(Fraction(1, 16), Fraction(1, 16))  # links that never bind: the time is the busiest PE's calls
def placement(w, a) -> str:
    """The named restriction of buffer placement: at and below the mesh (docs/spatial.md, "Buffer placement
    above the mesh")."""
    return "buffer placement: default positions only at and below the meshed levels (spatial fanout)"


def conv(text: str, **extents: int) -> Workload:
    return Workload.from_text("conv", text, extents)


def window_restriction(dims: tuple[str, ...], at: str) -> str:
    return (f"spatial splits: window dimensions ({', '.join(dims)}) split over mesh axes in equal parts only at {at} "
            "(every instance the same part of every parent piece)")


def brute(w: Workload, a, parts: str):
    """The brute force's optimum with window dimensions split as ``parts`` says (``bfs.WINDOW_PARTS``)."""
    bfs.WINDOW_PARTS = parts
    try:
        return bfs.brute_force_spatial(w, a)
    finally:
        bfs.WINDOW_PARTS = "all"


# --------------------------------------------------------------------------- 1. the model on given schedules

REUSE = [("all",), ("none",), ("input",), ("output",), ("I", "O"), ("W",), ("O",)]
CLOCKS = [Fraction(1), HALF, Fraction(2)]


def _instance_pieces(extent: int, history, level: int) -> list[int]:
    """Instance 0's level-``level`` pieces of a dimension with ``history`` = (part or None, tile) per level."""
    return bfs.instance_pieces(extent, [t for _, t in history], {k + 1: p for k, (p, _) in enumerate(history) if p},
                               {k + 1: 0 for k, (p, _) in enumerate(history) if p}, level)


def random_window_schedule(seed: int, unequal_above: bool = False):
    """A legal schedule on 2-4 levels with one or two meshed levels whose window dims are split in any part at
    L0 and above it in equal parts (``unequal_above``: in any part)."""
    rng = random.Random(seed)
    if rng.random() < 0.7:
        stride, dilation = rng.randint(1, 2), rng.randint(1, 2)
        w = conv(f"O[k,p] += I[c,p*{stride}+r*{dilation}] * W[k,c,r]",
                 k=rng.randint(1, 2), c=rng.randint(1, 2), p=rng.randint(2, 6), r=rng.randint(2, 4))
    else:
        w = conv("O[k,p,q] += I[p+r,q+s] * W[k,r,s]", k=rng.randint(1, 2), p=rng.randint(2, 4), q=rng.randint(1, 3),
                 r=rng.randint(2, 3), s=rng.randint(1, 2))
    windowed = bfs.window_dims(w)
    depth = rng.randint(3, 4) if unequal_above else rng.randint(2, 4)
    meshed = set(rng.sample(range(1, depth), k=rng.randint(1, min(2, depth - 1))))
    if unequal_above:
        meshed.add(rng.randint(1, depth - 2))  # a meshed level above L0
    names = ["DRAM", "L2", "L1", "L0"][-depth:]
    levels = []
    for i in range(depth):
        mesh = ()
        if i in meshed:
            mesh = tuple(MeshAxis(n, rng.randint(2, 4), rng.choice(REUSE)) for n in ("x", "y")[:rng.randint(1, 2)])
        link = None if i == 0 else Link(rng.choice(CLOCKS), rng.choice(CLOCKS[:2] + [Fraction(2)]), rng.choice([SHARED, SEPARATE]))
        levels.append(level(names[i], None if i == 0 else 10**6, mesh, link))
    a = sim_arch(*levels, clocks=rng.choice([Fraction(1), HALF]), double=rng.random() < 0.3)
    parent, history, below = dict(w.extent), {d: [] for d in w.dims}, []
    for i in range(1, depth):
        splits, cap = [], dict(parent)
        if i in meshed:
            used = {ax.name: 1 for ax in a.levels[i].mesh}
            for d in rng.sample(w.dims, len(w.dims)):
                if rng.random() < 0.35 or parent[d] == 1:
                    continue
                if d in windowed and i < depth - 1 and not unequal_above:  # equal parts: whole parent tiles, divided
                    if any(x != parent[d] for x in _instance_pieces(w.extent[d], history[d], i - 1)):
                        continue
                    divisors = [p for p in range(1, parent[d]) if parent[d] % p == 0]
                    if not divisors:
                        continue
                    part = rng.choice(divisors)
                else:
                    part = rng.randint(1, parent[d] - 1)
                factor = -(-parent[d] // part)
                options = [ax.name for ax in a.levels[i].mesh if used[ax.name] * factor <= ax.size]
                if not options:
                    continue
                axis = rng.choice(options)
                used[axis] *= factor
                splits.append((d, part, axis))
                cap[d] = part
        tile = {d: rng.randint(1, cap[d]) for d in w.dims}
        for d in w.dims:
            history[d].append((cap[d] if cap[d] < parent[d] else None, tile[d]))
        below.append([tile, rng.sample(w.dims, len(w.dims)), set(), splits])
        parent = tile
    homes = []
    for t in w.tensor_names:
        home = rng.randint(0, min(meshed) - 1)
        if home:
            homes.append((t, a.levels[home].name))
        for i in range(home + 1, depth):
            if i == depth - 1 or rng.random() < 0.5:
                below[i - 1][2].add(t)
    return schedule(w, a, below, homes)


MODEL_SEEDS = range(30)


@pytest.mark.parametrize("seed", MODEL_SEEDS)
def test_model_predicts_random_window_splits(monkeypatch, seed: int) -> None:
    s = random_window_schedule(seed)
    assert differences(model_prediction(s, monkeypatch), bf.replay_figures(s)) == [], s.levels


UNEQUAL_SEEDS = range(100, 160)


@pytest.mark.parametrize("seed", UNEQUAL_SEEDS)
def test_model_predicts_random_unequal_window_splits_above_l0(monkeypatch, seed: int) -> None:
    """Unequal parts of window dimensions above L0: every link copy below such a split is timed on its own
    class of digits (model/spatial.copy_classes), the words summed over every class. The limits on those
    classes are lifted: the formulas are checked, not which problems get them."""
    import mapsearch.model.build as build_module
    import mapsearch.model.spatial_chains as spatial_chains

    monkeypatch.setattr(build_module, "WINDOW_COPIES_LIMIT", 10**6)
    monkeypatch.setattr(spatial_chains, "WINDOW_CLASSES_LIMIT", 10**6)
    s = random_window_schedule(seed, unequal_above=True)
    assert differences(model_prediction(s, monkeypatch), bf.replay_figures(s)) == [], s.levels


def test_random_unequal_window_schedules_split_unequally_above_l0() -> None:
    """Most of those seeds split a window dimension unequally above L0 (some part smaller than another)."""
    def unequal(s) -> bool:
        for i, lm in enumerate(s.levels[:-1]):
            for sp in lm.spatial:
                parent = s.workload.extent[sp.dim] if i == 0 else s.levels[i - 1].tile_extent(sp.dim)
                if sp.dim in bfs.window_dims(s.workload) and parent % sp.part:
                    return True
        return False

    assert sum(unequal(random_window_schedule(seed, unequal_above=True)) for seed in UNEQUAL_SEEDS) >= 15


def test_random_window_schedules_split_windows() -> None:
    """The seeds split a window dimension on most schedules, both of a 2-D window on some, at two levels on some."""
    split_dims = [{sp.dim for lm in s.levels for sp in lm.spatial} & bfs.window_dims(s.workload)
                  for s in map(random_window_schedule, MODEL_SEEDS)]
    levels = [sum(any(sp.dim in bfs.window_dims(s.workload) for sp in lm.spatial) for lm in s.levels)
              for s in map(random_window_schedule, MODEL_SEEDS)]
    assert sum(bool(d) for d in split_dims) >= 20
    assert any(len(d) >= 2 for d in split_dims) and max(levels) == 2


# --------------------------------------------------------------------------- 2. the solver against the brute force

CONV1D = "O[p] += I[p+r] * W[r]"
CASES = {
    # name: (workload, architecture, (window dims with an unequal part left out, at which level) or () where
    # every part is searched (at L0 any part is); None: the optimum meets the contract's floors, so nothing
    # outside the family beats it and the status is OPTIMAL)
    "1-D, 3 instances reusing inputs": (
        conv(CONV1D, p=4, r=3), arch([None, 6], {1: [MeshAxis("x", 3, ("input",))]}, [None, Link(HALF, HALF)]), ()),
    "1-D, 2 instances, every part equal": (
        conv(CONV1D, p=2, r=2), arch([None, 4], {1: [MeshAxis("x", 2, ("all",))]}, [None, FAST], Fraction(4)), ()),
    "strided, 2x2 reusing outputs and nothing": (
        conv("O[p] += I[p*2+r] * W[r]", p=4, r=2),
        arch([None, 6], {1: [MeshAxis("x", 2, ("output",)), MeshAxis("y", 2, ("none",))]}, [None, Link(HALF, HALF)]),
        None),
    "dilated, 4 instances reusing nothing": (
        conv("O[p] += I[p+r*2] * W[r]", p=4, r=2), arch([None, 5], {1: [MeshAxis("x", 4, ("none",))]}, [None, FAST],
                                                       Fraction(4)), ()),
    "2-D with a channel, 2x2 reusing inputs and outputs": (
        conv("O[p,q] += I[c,p+r,q+s] * W[c,r,s]", c=2, p=2, q=2, r=2, s=2),
        arch([None, 12], {1: [MeshAxis("x", 2, ("input",)), MeshAxis("y", 2, ("output",))]},
             [None, Link(Fraction(1, 4), Fraction(1, 4), SEPARATE)]), ()),
    "three levels, the mesh at L0": (
        conv(CONV1D, p=4, r=2), arch([None, 8, 3], {2: [MeshAxis("x", 2, ("input",))]},
                                     [None, Link(HALF, HALF), Link(Fraction(1, 4), Fraction(1, 4))]), ()),
    "three levels, the mesh in the middle": (
        conv("O[p] += I[p*2+r] * W[r]", p=4, r=2), arch([None, 12, 4], {1: [MeshAxis("x", 2, ("output",))]},
                                                        [None, Link(HALF, HALF), Link(HALF, HALF, SEPARATE)]),
        ()),
    "two meshed levels": (
        conv(CONV1D, p=4, r=2), arch([None, 10, 3], {1: [MeshAxis("x", 2, ("input",))], 2: [MeshAxis("y", 2, ("output",))]},
                                     [None, FAST, FAST], Fraction(4)), ()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_solver_matches_brute_force(name: str) -> None:
    """The solver's optimum is the brute force's over its family, which here is the optimum over every part
    too; with window dimensions never split over the mesh (the family before) every case is worse."""
    w, a, unequal = CASES[name]
    info = check(w, a)
    if unequal is None:
        assert (info["status"], info["restrictions"]) == ("OPTIMAL", ())
    else:
        assert info["status"] == "OPTIMAL_IN_FAMILY"
        assert info["restrictions"] == ((window_restriction(*unequal),) if unequal else ()) + (placement(w, a),)
    assert any(sp.dim in bfs.window_dims(w) for splits in info["splits"].values() for sp in splits)
    assert brute(w, a, "all").value == info["value"]
    assert brute(w, a, "none").value > info["value"]


def random_case(seed: int):
    """A 1-D convolution (stride, dilation 1-2, a channel k on some) on 2 or 3 levels meshed at L0, in the
    middle or both (2, 3, 4 or 2x2 instances, random may_reuse), the largest of a few draws within a budget."""
    rng = random.Random(3000 + seed)
    depth = 2 if seed % 3 == 0 else 3
    meshed = [1] if depth == 2 else [[2], [1], [1, 2]][seed % 3 - 1 + (seed // 3) % 2]
    meshes = {i: [MeshAxis(n, size, rng.choice([("all",), ("input",), ("output",), ("none",)]))
                  for n, size in zip(("x", "y"), rng.choice([(2,), (3,), (4,), (2, 2)]))] for i in meshed}
    draws = []
    for _ in range(10):
        stride, dilation = rng.choice([1, 1, 2]), rng.choice([1, 1, 2])
        if rng.random() < 0.8:
            w = conv(f"O[p] += I[p*{stride}+r*{dilation}] * W[r]", p=rng.randint(2, 5), r=rng.randint(2, 4))
        else:
            w = conv(f"O[k,p] += I[p*{stride}+r*{dilation}] * W[k,r]", k=2, p=rng.randint(2, 4), r=rng.randint(2, 3))
        draws.append((bfs.family_size(w, arch([None] * depth, meshes))[0], len(draws), w))
    within = [d for d in draws if d[0] <= (600 if depth == 2 else 800)]
    w = max(within)[2] if within else min(draws)[2]
    l0 = 3 + rng.choice([0, 1, 2, 4, 8])
    caps = [None] + ([None if rng.random() < 0.3 else l0 + rng.choice([4, 8, 16])] if depth == 3 else []) + [l0]
    clocks = [Fraction(1), HALF, Fraction(2), Fraction(1, 4), Fraction(1, 16)]
    links = [None] + [Link(rng.choice(clocks), rng.choice(clocks), rng.choice([SHARED, SEPARATE])) for _ in range(depth - 1)]
    return w, arch(caps, meshes, links, rng.choice([Fraction(1), Fraction(4)]))


RANDOM_SEEDS = range(14)


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_window_case_matches_brute_force(seed: int) -> None:
    w, a = random_case(seed)
    check(w, a)


def test_random_window_cases_cover_unequal_parts_at_l0() -> None:
    """The meshes sit at L0, in the middle and at both; on seeds 3 and 13 unequal parts of a window dimension
    at L0 beat every schedule with equal parts only (13 vs 17 and 16 vs 24 clocks)."""
    places = {tuple(i for i, lv in enumerate(random_case(seed)[1].levels) if lv.instances > 1) for seed in RANDOM_SEEDS}
    assert {(1,), (2,), (1, 2)} <= places
    for seed, (unequal, equal) in ((3, (13, 17)), (13, (16, 24))):
        w, a = random_case(seed)
        assert (brute(w, a, "all").value[0], brute(w, a, "equal").value[0]) == (unequal, equal)


# --------------------------------------------------------------------------- 3. row stationary

ROW_STATIONARY = conv("O[k,p] += I[p+r] * W[k,r]", k=2, p=4, r=3)
# A 3 x 4 PE array as eyeriss-like's: inputs multicast along a PE row (x) and a column (y), partial sums
# added up a column (y); input buses 1/12 clock per word, the psum bus 1/4.
PE_ARRAY = arch([None, 8], {1: [MeshAxis("x", 4, ("input",)), MeshAxis("y", 3, ("input", "output"))]},
                [None, Link(Fraction(1, 12), Fraction(1, 4), SEPARATE)])


def test_row_stationary_beats_every_schedule_of_the_old_family() -> None:
    """Filter rows r over the PE rows (y, 3) and output rows p over the columns (x, 4): 24 MACs in 2 clocks on
    12 PEs, W[k, r] multicast along x, partial sums of O reduced up y. With window dimensions held off the
    mesh (the family before) only k can spread, over 2 PEs: 12 clocks."""
    old = brute(ROW_STATIONARY, PE_ARRAY, "none")
    assert old.value == (12, 26)
    info = check(ROW_STATIONARY, PE_ARRAY)
    assert info["value"] == (2, 26)
    splits = {sp.dim: (sp.axis, sp.part) for sp in info["splits"]["L0"]}
    assert splits["r"] == ("y", 1) and splits["p"][0] == "x"  # the only 12-way splits: r 3 ways on y, p on x


# --------------------------------------------------------------------------- 4. what is left out, and why

@pytest.mark.parametrize("mesh_at", [1, 2], ids=["mesh above L0", "mesh at L0"])
def test_unequal_window_parts_are_searched_above_l0_too(mesh_at: int) -> None:
    """3x3 on 2 compute-bound instances: 3 splits only unequally (2 + 1), so p = 2 + 1 takes 6 calls of 4 clocks
    where no split takes 9. Equal parts only above L0 (the family before) split nothing there: 36 clocks."""
    w = conv(CONV1D, p=3, r=3)
    a = arch([None, 12, 6], {mesh_at: [MeshAxis("x", 2, ("all",))]}, [None, FAST, FAST], Fraction(4))
    info = check(w, a)
    assert brute(w, a, "all").value[0] == info["value"][0] == 24
    assert info["restrictions"] == (placement(w, a),)
    if mesh_at == 1:
        assert brute(w, a, "equal_above").value[0] == 36


def test_past_the_copy_limit_window_parts_above_l0_are_equal_and_named(monkeypatch) -> None:
    """Where the classes of link copies would pass WINDOW_COPIES_LIMIT (here lowered to 1: the 3x3 case has 2
    classes of p and of r), the window dimensions keep equal parts above L0, the result names that, and the
    optimum is the brute force's over that family: 36 clocks where every part gives 24."""
    import mapsearch.model.build as build_module

    monkeypatch.setattr(build_module, "WINDOW_COPIES_LIMIT", 1)
    build_module._chains_cached.cache_clear()
    w = conv(CONV1D, p=3, r=3)
    a = arch([None, 12, 6], {1: [MeshAxis("x", 2, ("all",))]}, [None, FAST, FAST], Fraction(4))
    result = solve(Problem(w, a), options=SolveOptions(time_limit=60, workers=1, seed=0))
    build_module._chains_cached.cache_clear()
    assert result.status == "OPTIMAL_IN_FAMILY"
    assert window_restriction(("p", "r"), "L1") in result.family_restrictions
    assert result.phases[0].value == brute(w, a, "equal_above").value[0] == 36


def test_a_smaller_part_can_move_more_words() -> None:
    """Why unequal window parts are not searched: the views read instance 0 as the busiest instance
    (docs/spatial.md, fact 3), and with a window that fails. ``I[2p + r]``, p = 4, r = 7 split 4 + 3 over two
    instances, each tiling p by 1 and r by 2 (p outer): instance 0's r pieces [0, 2), [2, 4) read [2p, 2p+1],
    [2p+2, 2p+3], and the next p reads [2p+2, 2p+3] again (a coincidence): 5 loads of 2 words. Instance 1's
    pieces [4, 6), [6, 7) read 2 and 1 words and never coincide (the lengths differ): 4 x 3 = 12 words.
    An instance's words are those of its own tree, so each is replayed alone on its part."""
    a = sim_arch(level("DRAM", None), level("L1", 100))

    def alone(r: int) -> int:
        s = schedule(conv("O[p] += I[p*2+r] * W[r]", p=4, r=r), a, [({"p": 1, "r": 2}, "pr", {"I", "W", "O"})])
        return next(t.words_down for t in bf.replay_figures(s).links[0].tensors if t.tensor == "I")

    assert (alone(4), alone(3)) == (10, 12)
    meshed = sim_arch(level("DRAM", None), level("L2", 100, [MeshAxis("y", 2, ("none",))]), level("L1", 100))
    w = conv("O[p] += I[p*2+r] * W[r]", p=4, r=7)
    s = schedule(w, meshed, [({"p": 4, "r": 4}, "rp", {"W", "O"}, [("r", 4, "y")]), ({"p": 1, "r": 2}, "pr", {"I", "W", "O"})])
    assert next(t.words_down for t in bf.replay_figures(s).links[1].tensors if t.tensor == "I") == 10 + 12


if __name__ == "__main__":  # sweep more seeds of the model test: python tests/solve/test_spatial_windows.py 30 500
    first = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    patch = pytest.MonkeyPatch()
    failures = 0
    for seed in range(first, first + count):
        s = random_window_schedule(seed)
        try:
            diff = differences(model_prediction(s, patch), bf.replay_figures(s))
        finally:
            patch.undo()
        if diff:
            failures += 1
            print(f"seed {seed}: {diff[:3]} {s.levels}", flush=True)
    print("failures:", failures, "of", count)
