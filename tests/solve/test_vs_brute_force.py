"""The solver's optimum against an exhaustive search scored by the replay.

For every case: ``solve`` proves an optimum; the brute force
(``tests/brute_force.py``, which shares no code with the solver) enumerates
the solver's whole family (all integer tile chains, orders, keep/bypass)
and scores every schedule from the replay's counts. The two optima must be
equal, phase by phase (time, then words), and the schedule the solver
returns must replay to exactly the figures it predicted. Infeasible cases:
the solver raises ``InfeasibleError`` exactly when the brute force finds no
schedule that fits, and names the level whose capacity conflicts.

Run ``python tests/solve/test_vs_brute_force.py [first_seed] [n_seeds]`` to
sweep more seeds than the normal run does.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402

from mapsearch.errors import InfeasibleError  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.spec.architecture import SEPARATE, SHARED, Architecture, Compute, Level, Link  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402

HALF = Fraction(1, 2)
NORMAL_SEEDS = range(40)
# Nests (tiles x orders) the brute force replays per case: keeps a case to about a second.
NEST_BUDGET = {2: 1500, 3: 800}

# --------------------------------------------------------------------------- building cases


def matmul(m: int, n: int, k: int) -> Workload:
    return Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": m, "n": n, "k": k})


def conv1d(p: int, r: int, stride: int = 1, dil: int = 1) -> Workload:
    return Workload.from_text("conv1d", f"O[p] += I[p*{stride}+r*{dil}] * W[r]", {"p": p, "r": r})


def conv2d(k: int, c: int, p: int, r: int, stride: int = 1, dil: int = 1) -> Workload:
    text = f"O[k,p] += I[c,p*{stride}+r*{dil}] * W[k,c,r]"
    return Workload.from_text("conv2d", text, {"k": k, "c": c, "p": p, "r": r})


def arch(capacities, links=None, block=(), clocks=Fraction(1), double=False) -> Architecture:
    """Levels outermost first: ``capacities[0]`` is the top (None = unbounded)."""
    names = ("L2", "L1", "L0")[-len(capacities):]
    links = links or [Link()] * len(capacities)
    levels = tuple(Level(names[i], capacities[i], None if i == 0 else links[i]) for i in range(len(capacities)))
    return Architecture("arch", levels, Compute(tuple(block), Fraction(clocks)), double)


@dataclass(frozen=True)
class Case:
    name: str
    workload: Workload
    architecture: Architecture
    homes: tuple[tuple[str, str], ...] = ()
    objective: bf.Objective = bf.Objective()

    def options(self) -> SolveOptions:
        o = self.objective
        # The brute force here enumerates default buffer positions: compare the same family
        # (placed buffers are checked against tests/brute_force_placement.py).
        return SolveOptions(objective=o.kind, min_utilization=o.min_utilization, link_energy=o.link_energy,
                            op_energy=o.op_energy, time_limit=60.0, workers=1, seed=0, placement=False)

    def describe(self) -> str:
        a = self.architecture
        lv = ", ".join(f"{l.name}(cap={l.capacity}" + (f", link={l.link.lines} {l.link.input_clocks_per_word}/"
                                                         f"{l.link.output_clocks_per_word}" if l.link else "") + ")"
                       for l in a.levels)
        return (f"{self.workload.einsum.text()} {dict(self.workload.extents)}; {lv}; block={dict(a.compute.block)} "
                f"clocks={a.compute.clocks_per_call} double={a.double_buffering}; homes={dict(self.homes)}; "
                f"objective={self.objective}")


def _min_tile_words(w: Workload, t: str, pinned: frozenset[str]) -> int:
    """Words of a tensor's smallest tile in the family (every free dim 1, pinned dims whole)."""
    ext = {d: (e if d in pinned else 1) for d, e in w.extents}
    return w.tensor(t).words(ext)


def random_case(seed: int) -> Case:
    rng = random.Random(seed)
    depth = rng.choice([2, 2, 3, 3, 3])
    kind = rng.choice(["mm", "mm", "conv1d", "conv2d"])
    hi = 6 if depth == 2 else 4
    fake = arch([None] * depth)
    best, best_size = None, -1
    for _ in range(8):  # the largest of a few draws that fits the budget
        if kind == "mm":
            w = matmul(rng.randint(2, hi), rng.randint(1, hi), rng.randint(2, hi))
        elif kind == "conv1d":
            w = conv1d(rng.randint(2, 6), rng.randint(1, 3), rng.choice([1, 1, 2]), rng.choice([1, 2]))
        else:
            w = conv2d(rng.randint(1, 3), rng.randint(1, 3), rng.randint(2, hi), rng.randint(1, 3),
                       rng.choice([1, 2]), rng.choice([1, 1, 2]))
        size = bf.family_size(w, fake)[0]
        if best_size < size <= NEST_BUDGET[depth] or best is None:
            best, best_size = w, size
    w = best
    names = w.tensor_names
    out = w.einsum.output.name
    ins = [t for t in names if t != out]
    homes: dict[str, str] = {}
    if depth == 3:
        if rng.random() < 0.3:
            homes[rng.choice(ins)] = "L1"
        if rng.random() < 0.3:
            homes[out] = "L1"
    double = rng.random() < 0.25
    pinned = bf.pinned_dims(w)

    def lean(t: str) -> int:
        words = _min_tile_words(w, t, pinned)
        return words * (2 if double and words < w.tensor_words(t) else 1)

    # L0 holds every tensor (none is homed there): from "just the smallest tiles" to roomy.
    l0_need = sum(lean(t) for t in names)
    l0 = l0_need + rng.choice([0, 0, 1, 2, 3, 5, 8, 13, 40])
    caps: list[int | None]
    if depth == 2:
        caps = [None, l0]
    else:
        home_words = sum(w.tensor_words(t) for t in homes)
        l1 = None if rng.random() < 0.3 else home_words + rng.choice([0, 2, 4, 8, 16, 30])
        caps = [None, l1, l0]
    clocks = [Fraction(1), Fraction(1), HALF, Fraction(2)]
    links = [None] + [Link(rng.choice(clocks), rng.choice(clocks), rng.choice([SHARED, SEPARATE]))
                      for _ in range(depth - 1)]
    block = tuple((d, 2) for d, e in w.extents if d not in pinned and e > 1 and rng.random() < 0.25)
    a = arch(caps, links, block, rng.choice([Fraction(1), Fraction(1), HALF, Fraction(2)]), double)
    roll = rng.random()
    if roll < 0.7:
        objective = bf.Objective("time")
    elif roll < 0.85:
        objective = bf.Objective("words", min_utilization=rng.choice([Fraction(1, 4), Fraction(1, 2), Fraction(4, 5)]))
    else:
        energy = tuple((a.link_name(i), rng.choice([Fraction(1), Fraction(3), HALF, Fraction(10)])) for i in range(1, depth))
        objective = bf.Objective("energy", rng.choice([None, Fraction(1, 3)]), energy, rng.choice([Fraction(0), Fraction(1), Fraction(2)]))
    return Case(f"seed{seed}", w, a, tuple(sorted(homes.items())), objective)


# --------------------------------------------------------------------------- the check


def solver_values(result, objective: bf.Objective) -> tuple[Fraction, ...]:
    return tuple(p.value for p in result.phases)


def check_case(case: Case) -> dict:
    """Solve and brute-force one case; assert they agree. Returns what was compared (for the sweep)."""
    p = Problem(case.workload, case.architecture, case.homes)
    brute = bf.brute_force(case.workload, case.architecture, case.homes, case.objective)
    if brute is None:
        with pytest.raises(InfeasibleError) as info:
            solve(p, options=case.options())
        msg = str(info.value)
        if case.objective.min_utilization is None or not _fits_somewhere(case):
            # Nothing fits at all: the message names a level whose capacity conflicts.
            assert any(lv.name in msg for lv in case.architecture.levels if lv.capacity is not None), msg
            assert "capacity" in msg, msg
        else:
            assert "utilization" in msg, msg
        return {"case": case.name, "feasible": False, "brute": None, "solver": msg}
    result = solve(p, options=case.options())
    assert result.proven, (case.describe(), result.phases)
    got = solver_values(result, case.objective)
    assert got == brute.value, (
        f"{case.describe()}\nsolver optimum {got} with {result.schedule.levels}\n"
        f"brute optimum {brute.value} with {brute.schedule.levels}")
    # The solver's own schedule: what it predicted is what the replay counts.
    replayed = bf.replay_figures(result.schedule)
    diff = differences(result.schedule.predicted, replayed)
    assert diff == [], f"{case.describe()}\nschedule {result.schedule.levels}\npredicted != replayed: {diff}"
    assert case.objective.key(replayed) == brute.value
    # The brute force's optimum, replayed as it is (real capacities), has the figures it was scored with.
    assert differences(brute.figures, bf.replay_figures(brute.schedule)) == []
    return {"case": case.name, "feasible": True, "brute": brute.value, "solver": got,
            "seconds": (result.solve_seconds, brute.seconds), "schedules": brute.schedules}


def _fits_somewhere(case: Case) -> bool:
    """Is there a schedule that fits, ignoring the utilization floor?"""
    plain = bf.Objective("words")
    return bf.brute_force(case.workload, case.architecture, case.homes, plain) is not None


@pytest.mark.parametrize("seed", NORMAL_SEEDS)
def test_random_case_matches_brute_force(seed: int) -> None:
    check_case(random_case(seed))


@settings(max_examples=6, deadline=None, derandomize=True)
@given(st.integers(min_value=10_000, max_value=10**9))
def test_random_case_matches_brute_force_hypothesis(seed: int) -> None:
    """More seeds, drawn by hypothesis (derandomized, so the run is repeatable)."""
    check_case(random_case(seed))


# --------------------------------------------------------------------------- named cases


def _non_divisor(s) -> bool:
    """Some level's tile extent does not divide its parent's: a remainder tile runs."""
    for i in range(1, len(s.levels)):
        parent = s.levels[i - 1].tile_extents
        if any(parent[d] % t for d, t in s.levels[i].tile):
            return True
    return False


# Found by brute force: in each, every optimal schedule of the family has a
# tile that does not divide its parent, so a divisors-only search misses the optimum.
NON_DIVISOR = {
    # 5x5x5 on 5 words of L0: every optimum tiles m or n by 2 (of 5).
    "mm_5x5x5_L0_5": Case("mm_5x5x5_L0_5", matmul(5, 5, 5), arch([None, 5])),
    # 7x3x2 on 8 words: the one optimum splits n = 3 into 2 + 1.
    "mm_7x3x2_L0_8": Case("mm_7x3x2_L0_8", matmul(7, 3, 2), arch([None, 8])),
    # 7x2x7 on 7 words: m by 3 (of 7).
    "mm_7x2x7_L0_7": Case("mm_7x2x7_L0_7", matmul(7, 2, 7), arch([None, 7])),
    # 1-D conv P=7, R=3 on 9 words: p by 2 (of 7), r pinned whole.
    "conv1d_p7r3_L0_9": Case("conv1d_p7r3_L0_9", conv1d(7, 3), arch([None, 9])),
    # 2-D conv K=2 C=2 P=5 R=3 on 9 words: p by 2 (of 5).
    "conv2d_k2c2p5r3_L0_9": Case("conv2d_k2c2p5r3_L0_9", conv2d(2, 2, 5, 3), arch([None, 9])),
    # Three levels, 5x3x3, L1 12 words, L0 5: the one optimum takes m = 3 of 5 at L1 and 2 of 3 at L0.
    "mm3_5x3x3_L1_12_L0_5": Case("mm3_5x3x3_L1_12_L0_5", matmul(5, 3, 3), arch([None, 12, 5])),
}


@pytest.mark.parametrize("name", sorted(NON_DIVISOR))
def test_only_a_non_divisor_tile_is_optimal(name: str) -> None:
    case = NON_DIVISOR[name]
    brute = bf.brute_force(case.workload, case.architecture, case.homes, case.objective, keep_all_optima=True)
    assert brute is not None and brute.all_optimal
    assert all(_non_divisor(s) for s in brute.all_optimal), [s.levels for s in brute.all_optimal if not _non_divisor(s)]
    divisors_only = bf.brute_force(case.workload, case.architecture, case.homes, case.objective,
                                   accept=lambda s: not _non_divisor(s))
    assert divisors_only is None or divisors_only.value > brute.value
    result = solve(Problem(case.workload, case.architecture, case.homes), options=case.options())
    assert result.proven
    assert tuple(p.value for p in result.phases) == brute.value
    assert _non_divisor(result.schedule), result.schedule.levels
    assert differences(result.schedule.predicted, bf.replay_figures(result.schedule)) == []


# One of each feature, named, on top of the random sweep.
FEATURES = {
    "input_homed_at_L1": Case("input_homed_at_L1", matmul(4, 3, 4), arch([None, 24, 8]), (("B", "L1"),)),
    "output_homed_at_L1": Case("output_homed_at_L1", matmul(3, 4, 4), arch([None, 20, 7]), (("Z", "L1"),)),
    "both_homed_at_L1": Case("both_homed_at_L1", matmul(3, 3, 4), arch([None, 30, 6]), (("A", "L1"), ("Z", "L1"))),
    "block_op_2x2": Case("block_op_2x2", matmul(5, 3, 4), arch([None, 14], block=(("m", 2), ("n", 2)))),
    "separate_lines": Case("separate_lines", matmul(4, 4, 3),
                           arch([None, 30, 8], [None, Link(Fraction(1), Fraction(2), SEPARATE), Link(HALF, HALF, SEPARATE)])),
    "half_clock_per_word": Case("half_clock_per_word", matmul(6, 5, 4), arch([None, 16], [None, Link(HALF, HALF)])),
    "half_clock_per_call": Case("half_clock_per_call", matmul(4, 5, 6), arch([None, 10], clocks=HALF)),
    "double_buffering": Case("double_buffering", matmul(4, 4, 4), arch([None, 40, 14], double=True)),
    "conv1d_stride2_dil2": Case("conv1d_stride2_dil2", conv1d(6, 3, 2, 2), arch([None, 30, 9])),
    "conv2d_stride2": Case("conv2d_stride2", conv2d(2, 3, 4, 2, 2, 1), arch([None, 40, 12], double=True)),
    "conv2d_dil2_homes": Case("conv2d_dil2_homes", conv2d(2, 2, 4, 2, 1, 2), arch([None, 60, 12]), (("W", "L1"),)),
    "words_at_half_utilization": Case("words_at_half_utilization", matmul(4, 4, 5), arch([None, 40, 9]),
                                      objective=bf.Objective("words", Fraction(1, 2))),
    "energy": Case("energy", matmul(5, 4, 3), arch([None, 24, 8]),
                   objective=bf.Objective("energy", None, (("L2->L1", Fraction(10)), ("L1->L0", Fraction(1))), Fraction(1))),
    "energy_with_utilization": Case("energy_with_utilization", conv2d(2, 2, 4, 3), arch([None, 40, 14]),
                                    objective=bf.Objective("energy", Fraction(1, 3), (("L2->L1", Fraction(5)), ("L1->L0", HALF)), Fraction(2))),
}


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_feature_case_matches_brute_force(name: str) -> None:
    info = check_case(FEATURES[name])
    assert info["feasible"]


INFEASIBLE = {
    # The smallest tiles of A, B and Z need 3 words.
    "L0_below_smallest_tiles": (Case("L0_below_smallest_tiles", matmul(3, 3, 3), arch([None, 2])), "L0"),
    # A 1-D conv's smallest L0 tiles, its window split down to one word: W 1 + I 1 + O 1 = 3 words.
    "conv_filter_overflows_L0": (Case("conv_filter_overflows_L0", conv1d(5, 3), arch([None, 2])), "L0"),
    # Z (9 words) homed at L1, which holds 8.
    "home_overflows_L1": (Case("home_overflows_L1", matmul(3, 3, 2), arch([None, 8, 10]), (("Z", "L1"),)), "L1"),
    # Single buffers fit in 3 words; double buffering needs 6.
    "double_buffering_overflows_L0": (Case("double_buffering_overflows_L0", matmul(3, 3, 3), arch([None, 5], double=True)), "L0"),
    # Three levels: L1 could bypass everything, but L0 (2 words) holds less than the three 1-word tiles.
    "three_levels_L0": (Case("three_levels_L0", matmul(2, 2, 2), arch([None, 50, 2])), "L0"),
}


@pytest.mark.parametrize("name", sorted(INFEASIBLE))
def test_infeasible_iff_brute_force_finds_nothing(name: str) -> None:
    case, level = INFEASIBLE[name]
    assert bf.brute_force(case.workload, case.architecture, case.homes, case.objective) is None
    with pytest.raises(InfeasibleError) as info:
        solve(Problem(case.workload, case.architecture, case.homes), options=case.options())
    msg = str(info.value)
    assert "capacity" in msg and level in msg, msg


def test_utilization_floor_infeasible_names_it() -> None:
    # Slow links (2 clocks/word): no schedule reaches full utilization, but many fit.
    case = Case("utilization_floor", matmul(3, 3, 3), arch([None, 12], [None, Link(Fraction(2), Fraction(2))]),
                objective=bf.Objective("words", Fraction(1)))
    assert bf.brute_force(case.workload, case.architecture, objective=case.objective) is None
    assert bf.brute_force(case.workload, case.architecture, objective=bf.Objective("words")) is not None
    with pytest.raises(InfeasibleError) as info:
        solve(Problem(case.workload, case.architecture), options=case.options())
    assert "utilization" in str(info.value)


def test_routed_scoring_equals_one_replay_per_schedule() -> None:
    """The brute force's shortcut (one replay per nest, keep choices routed) against a plain replay of each schedule."""
    cases = [
        (conv2d(2, 2, 3, 2, 2, 1), arch([None, 30, 16], [None, Link(), Link(HALF, Fraction(1), SEPARATE)],
                                        (("k", 2),), HALF, True), {"W": "L1"}),
        (matmul(3, 2, 3), arch([None, 14, 7]), {"Z": "L1"}),
        (conv1d(4, 2, 1, 2), arch([None, 12, 8]), {}),
    ]
    checked = 0
    for w, a, homes in cases:
        for sched, fig in bf.all_scored(w, a, homes):
            direct = bf.evaluate_direct(sched)
            assert (fig is None) == (direct is None), sched.levels
            if fig is not None:
                assert differences(fig, direct) == [], sched.levels
            checked += 1
    assert checked > 1000


# --------------------------------------------------------------------------- sweep

if __name__ == "__main__":
    first = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    import time

    fails = 0
    for s in range(first, first + count):
        c = random_case(s)
        t0 = time.perf_counter()
        try:
            info = check_case(c)
            print(f"seed {s}: ok {time.perf_counter() - t0:.2f}s {info.get('seconds')} {info.get('brute')} {info.get('schedules')}", flush=True)
        except AssertionError as exc:
            fails += 1
            print(f"seed {s}: FAIL {c.describe()}\n  {exc}", flush=True)
    print("failures:", fails)
