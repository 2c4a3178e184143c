"""The solver's spatial optimum against an exhaustive search of its family, scored by the replay.

For every case (one meshed level: L0 or the middle level, one axis of 2 or
3 instances or a 2x2 mesh, ``may_reuse`` all/input/output/none): ``solve``
proves an optimum; ``tests/brute_force_spatial.py`` (which shares no code
with the solver) enumerates the solver's spatial family (tile chains, equal
parts that divide every parent piece, splits on axes, orders, keeps) and
scores every schedule by ``replay(mode="count")``. The optima must be equal
phase by phase (time, then words; or words / energy with a utilization
floor), the solver's schedule must replay to exactly what it predicted, and
the brute force's optimum replayed as it is must have the figures it was
scored with. Infeasible cases: the solver raises ``InfeasibleError`` exactly
when the brute force finds nothing.

Run ``python tests/solve/test_spatial_vs_brute_force.py [first_seed] [n_seeds]``
to sweep more seeds than the normal run does.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402
import brute_force_spatial as bfs  # noqa: E402

from mapsearch.errors import InfeasibleError  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import SEPARATE, SHARED, Architecture, Compute, Level, Link, MeshAxis  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402

pytestmark = pytest.mark.usefixtures("meshed_family_only")  # the spatial family against its brute force

HALF = Fraction(1, 2)
SEEDS = range(20)
# Nests (tiles x splits x orders) per case: about a second of brute force each.
NEST_BUDGET = 700
# Schedules per case when every schedule is replayed (a mesh in the middle level).
DIRECT_BUDGET = 1600
REUSE = [("all",), ("input",), ("output",), ("none",)]


def matmul(m: int, n: int, k: int) -> Workload:
    return Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": m, "n": n, "k": k})


def conv1d(k: int, p: int, r: int, stride: int = 1) -> Workload:
    return Workload.from_text("conv1d", f"O[k,p] += I[p*{stride}+r] * W[k,r]", {"k": k, "p": p, "r": r})


def arch(capacities, mesh_at: int, mesh, links=None, block=(), clocks=Fraction(1), double=False) -> Architecture:
    """Levels outermost first (``capacities[0]`` the top); ``mesh`` (a tuple of MeshAxis) at level ``mesh_at``."""
    names = ("L2", "L1", "L0")[-len(capacities):]
    links = links or [Link()] * len(capacities)
    levels = []
    for i, cap in enumerate(capacities):
        m = tuple(mesh) if i == mesh_at else ()
        levels.append(Level(names[i], cap, None if i == 0 else links[i], mesh=m))
    return Architecture("arch", tuple(levels), Compute(tuple(block), Fraction(clocks)), double)


@dataclass(frozen=True)
class Case:
    name: str
    workload: Workload
    architecture: Architecture
    homes: tuple[tuple[str, str], ...] = ()
    objective: bf.Objective = bf.Objective()

    def options(self) -> SolveOptions:
        o = self.objective
        return SolveOptions(objective=o.kind, min_utilization=o.min_utilization, link_energy=o.link_energy,
                            op_energy=o.op_energy, time_limit=60, workers=1, seed=0)

    def describe(self) -> str:
        a = self.architecture
        lv = ", ".join(
            f"{l.name}(cap={l.capacity}"
            + (f", link={l.link.lines} {l.link.input_clocks_per_word}/{l.link.output_clocks_per_word}" if l.link else "")
            + (", mesh=" + "x".join(f"{m.name}:{m.size}{list(m.may_reuse)}" for m in l.mesh) if l.mesh else "") + ")"
            for l in a.levels)
        return (f"{self.workload.einsum.text()} {dict(self.workload.extents)}; {lv}; block={dict(a.compute.block)} "
                f"clocks={a.compute.clocks_per_call} double={a.double_buffering}; homes={dict(self.homes)}; "
                f"objective={self.objective}")


# --------------------------------------------------------------------------- random cases

# (depth, meshed level) and the mesh shape cycle with the seed, so that 20 seeds cover each pair twice.
PLACES = [(2, 1), (3, 2), (3, 1)]
SHAPES = [(2,), (3,), (2, 2)]


def random_case(seed: int) -> Case:
    rng = random.Random(1000 + seed)
    depth, s = PLACES[seed % 3]
    shape = SHAPES[(seed // 3) % 3]
    mesh = tuple(MeshAxis(name, size, rng.choice(REUSE)) for name, size in zip(("x", "y"), shape))
    hi = 6 if depth == 2 else 4
    kind = rng.choice(["mm", "mm", "conv1d"])
    block_dims = []
    double = rng.random() < 0.2
    fake = arch([None] * depth, s, mesh)
    budget_nests = NEST_BUDGET if s == depth - 1 else DIRECT_BUDGET // (2 ** 3 if depth == 3 else 1)
    draws = []
    for _ in range(10):  # the largest of a few draws within the budget (the smallest if none is)
        if kind == "mm":
            w = matmul(rng.randint(2, hi), rng.randint(1, hi), rng.randint(2, hi))
        else:
            w = conv1d(rng.randint(1, 3), rng.randint(2, 6 if depth == 2 else 4), rng.randint(1, 3), rng.choice([1, 1, 2]))
        draws.append((bfs.family_size(w, fake)[0], len(draws), w))
    within = [d for d in draws if d[0] <= budget_nests]
    w = max(within)[2] if within else min(draws)[2]
    pinned = bf.pinned_dims(w)
    names = w.tensor_names
    out = w.einsum.output.name
    homes: dict[str, str] = {}
    if depth == 3 and s == 2 and rng.random() < 0.3:
        homes[rng.choice([t for t in names if t != out] + [out])] = "L1"
    if rng.random() < 0.3:
        free = [d for d, e in w.extents if d not in pinned and e > 1]
        if free:
            block_dims = [(rng.choice(free), 2)]

    def lean(t: str) -> int:
        ext = {d: (e if d in pinned else 1) for d, e in w.extents}
        words = w.tensor(t).words(ext)
        return words * (2 if double and words < w.tensor_words(t) else 1)

    l0 = sum(lean(t) for t in names if t not in homes) + rng.choice([0, 0, 1, 2, 3, 5, 8, 20])
    if depth == 2:
        caps = [None, l0]
    else:
        home_words = sum(w.tensor_words(t) for t in homes)
        l1 = None if rng.random() < 0.3 else home_words + rng.choice([2, 4, 8, 16, 30])
        caps = [None, l1, l0]
    clocks = [Fraction(1), Fraction(1), HALF, Fraction(2), Fraction(1, 4)]
    links = [None] + [Link(rng.choice(clocks), rng.choice(clocks), rng.choice([SHARED, SEPARATE])) for _ in range(depth - 1)]
    a = arch(caps, s, mesh, links, tuple(block_dims), rng.choice([Fraction(1), Fraction(1), HALF, Fraction(2)]), double)
    roll = rng.random()
    if roll < 0.75:
        objective = bf.Objective("time")
    elif roll < 0.9:
        objective = bf.Objective("words", min_utilization=rng.choice([Fraction(1, 4), Fraction(1, 2)]))
    else:
        energy = tuple((a.link_name(i), rng.choice([Fraction(1), Fraction(3), HALF])) for i in range(1, depth))
        objective = bf.Objective("energy", None, energy, rng.choice([Fraction(0), Fraction(1)]))
    return Case(f"seed{seed}", w, a, tuple(sorted(homes.items())), objective)


# --------------------------------------------------------------------------- the check


def check_case(case: Case) -> dict:
    p = Problem(case.workload, case.architecture, case.homes)
    brute = bfs.brute_force_spatial(case.workload, case.architecture, case.homes, case.objective)
    if brute is None:
        with pytest.raises(InfeasibleError) as info:
            solve(p, options=case.options())
        return {"case": case.name, "feasible": False, "solver": str(info.value)}
    result = solve(p, options=case.options())
    assert result.proven, (case.describe(), result.phases)
    got = tuple(ph.value for ph in result.phases)
    assert got == brute.value, (
        f"{case.describe()}\nsolver optimum {got} with {result.schedule.levels}\n"
        f"brute optimum {brute.value} with {brute.schedule.levels}")
    replayed = bf.replay_figures(result.schedule)
    diff = differences(result.schedule.predicted, replayed)
    assert diff == [], f"{case.describe()}\nschedule {result.schedule.levels}\npredicted != replayed: {diff}"
    assert case.objective.key(replayed) == brute.value
    assert differences(brute.figures, bf.replay_figures(brute.schedule)) == []
    return {"case": case.name, "feasible": True, "value": brute.value, "brute_s": brute.seconds,
            "solve_s": result.solve_seconds, "nests": brute.nests, "replays": brute.replays,
            "split": bool(result.schedule.levels[bfs.meshed_level(case.architecture)].spatial)}


@pytest.mark.parametrize("seed", SEEDS)
def test_random_spatial_case_matches_brute_force(seed: int) -> None:
    check_case(random_case(seed))


def test_random_cases_cover_the_features() -> None:
    """The 20 seeds cover: both workloads, 2 and 3 levels, mesh at L0 and in the middle, 1 and 2 axes,
    every may_reuse, tight L0, block ops, both line models."""
    seen: set = set()
    for seed in SEEDS:
        c = random_case(seed)
        a = c.architecture
        s = bfs.meshed_level(a)
        seen.add(("workload", c.workload.name))
        seen.add(("depth", a.depth))
        seen.add(("mesh", "L0" if s == a.depth - 1 else "middle"))
        seen.add(("axes", len(a.levels[s].mesh)))
        seen.update(("reuse", m.may_reuse) for m in a.levels[s].mesh)
        seen.update(("lines", lv.link.lines) for lv in a.levels[1:])
        seen.add(("block", bool(a.compute.block)))
        seen.add(("objective", c.objective.kind))
    need = {("workload", "mm"), ("workload", "conv1d"), ("depth", 2), ("depth", 3), ("mesh", "L0"), ("mesh", "middle"),
            ("axes", 1), ("axes", 2), ("lines", SHARED), ("lines", SEPARATE), ("block", True), ("block", False),
            ("objective", "time")} | {("reuse", r) for r in REUSE}
    assert need <= seen, need - seen


# --------------------------------------------------------------------------- named cases

NAMED = {
    # 6x4x4 on a 2x2 mesh: multicast of A along y needs n (or B along x needs m) split on a reusing axis.
    "mm_2x2_input_output": Case("mm_2x2_input_output", matmul(6, 4, 4),
                                arch([None, 8], 1, (MeshAxis("x", 2, ("input",)), MeshAxis("y", 2, ("output",))),
                                     [None, Link(HALF, HALF, SEPARATE)])),
    # A remainder parent tile: m = 5 tiled by 4 at L1, parts of 2 at L0 (2 divides 4 but not 1: not allowed),
    # so the mesh may split only what divides every piece.
    "remainder_parent_pieces": Case("remainder_parent_pieces", matmul(5, 2, 3),
                                    arch([None, 12, 4], 2, (MeshAxis("x", 2, ("all",)),))),
    # Three instances, no reuse: every instance's words cross the link.
    "three_no_reuse": Case("three_no_reuse", matmul(3, 3, 2), arch([None, 5], 1, (MeshAxis("x", 3, ("none",)),),
                                                                    [None, Link(HALF, HALF)])),
    # Mesh in the middle with a per-instance link below it (time of the busiest copy).
    "middle_mesh_separate": Case("middle_mesh_separate", matmul(4, 2, 2),
                                 arch([None, 10, 3], 1, (MeshAxis("x", 2, ("output",)),),
                                      [None, Link(HALF, Fraction(1)), Link(Fraction(1), HALF, SEPARATE)])),
    # Block op b=2 on k with k split across the mesh: parts of 2 fill the block.
    "block_k_split": Case("block_k_split", matmul(3, 2, 4), arch([None, 9], 1, (MeshAxis("x", 2, ("output",)),),
                                                                 block=(("k", 2),))),
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_spatial_case_matches_brute_force(name: str) -> None:
    info = check_case(NAMED[name])
    assert info["feasible"]


def test_multicast_lowers_words() -> None:
    """The same case with may_reuse none and all: reuse can only help, and here it does."""
    values = {}
    for reuse in (("none",), ("all",)):
        c = Case("mc", matmul(4, 4, 2), arch([None, 6], 1, (MeshAxis("x", 2, reuse),), [None, Link(HALF, HALF)]))
        values[reuse] = check_case(c)["value"]
    assert values[("all",)] < values[("none",)], values


# --------------------------------------------------------------------------- regression: a solver bug found here (fixed)

CONV2D = Workload.from_text("conv2d", "O[k,p,q] += I[p+r,q+s] * W[k,r,s]", {"k": 2, "p": 3, "q": 3, "r": 2, "s": 2})


@pytest.mark.parametrize("mesh", [(MeshAxis("x", 2, ("all",)),), ()], ids=["mesh", "no-mesh"])
def test_constant_occupancy_over_capacity_is_infeasible(mesh) -> None:
    """L0's smallest tiles need W 1 + I 1 + O 1 = 3 words > 2 (windows split down to single words).

    The brute force finds nothing; the solver says infeasible, naming L0. Found when filter
    windows were held whole, by the ResNet-50 3x3 layer on tpu-v4i-like (PE 4 words, tiles
    9 + 9 + 1 = 19): an occupancy that no choice changes must still be checked.
    """
    a = arch([None, 2], 1 if mesh else 2, mesh)
    brute = bfs.brute_force_spatial(CONV2D, a) if mesh else bf.brute_force(CONV2D, a)
    assert brute is None
    with pytest.raises(InfeasibleError, match="capacity of L0") as err:
        solve(Problem(CONV2D, a))
    # The message gives the smallest tiles as they are: W, I and O one word each.
    assert "W 1" in str(err.value) and "I 1" in str(err.value) and "need 3" in str(err.value)


# --------------------------------------------------------------------------- the brute force's shortcuts


def test_per_tensor_keeps_equal_plain_replays() -> None:
    """Keeps scored per tensor (two replays per nest) against a plain replay of each schedule, capacity included."""
    cases = [
        (matmul(2, 2, 2), arch([None, 14, 5], 2, (MeshAxis("x", 2, ("input",)), MeshAxis("y", 2, ("output",))),
                               [None, Link(), Link(HALF, Fraction(1), SEPARATE)], double=True), {}),
        (conv1d(2, 3, 2), arch([None, 12, 6], 2, (MeshAxis("x", 3, ("all",)),)), {"W": "L1"}),
    ]
    checked = 0
    for w, a, homes in cases:
        for sched, fig in bfs.all_scored(w, a, homes):
            direct = bf.evaluate_direct(sched)
            assert (fig is None) == (direct is None), sched.levels
            if fig is not None:
                assert differences(fig, direct) == [], sched.levels
            checked += 1
    assert checked > 300


SHORTCUT_CASES = [
    Case("l0_mesh_3levels", matmul(2, 2, 2), arch([None, 10, 4], 2, (MeshAxis("x", 2, ("input",)), MeshAxis("y", 2, ("output",))),
                                                 [None, Link(HALF, HALF), Link(Fraction(1), HALF, SEPARATE)])),
    Case("conv_2levels", conv1d(2, 4, 2), arch([None, 6], 1, (MeshAxis("x", 2, ("all",)),), [None, Link(HALF, HALF)])),
    NAMED["three_no_reuse"],
]


@pytest.mark.parametrize("case", SHORTCUT_CASES, ids=lambda c: c.name)
def test_shortcuts_change_nothing(case: Case) -> None:
    """Without the compute-time bound and with every schedule replayed as it is: the same optimum."""
    fast = bfs.brute_force_spatial(case.workload, case.architecture, case.homes, case.objective)
    plain = bfs.brute_force_spatial(case.workload, case.architecture, case.homes, case.objective, direct=True, bound=False)
    assert (fast is None) == (plain is None)
    if fast is not None:
        assert fast.value == plain.value
        assert plain.replays == plain.schedules and plain.pruned == 0


# --------------------------------------------------------------------------- sweep

if __name__ == "__main__":
    first = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    import time

    fails = 0
    for seed in range(first, first + count):
        c = random_case(seed)
        t0 = time.perf_counter()
        try:
            info = check_case(c)
            print(f"seed {seed}: ok {time.perf_counter() - t0:.2f}s {info}", flush=True)
        except AssertionError as exc:
            fails += 1
            print(f"seed {seed}: FAIL {c.describe()}\n  {exc}", flush=True)
    print("failures:", fails)
