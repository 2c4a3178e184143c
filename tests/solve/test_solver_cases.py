"""Named solver cases: the contract's worked example, determinism, user constraints.

Every constrained solve is checked three ways: the returned schedule obeys
the constraint (read from the schedule itself, by the contract's semantics),
its objective is no better than the unconstrained optimum, and it equals the
optimum of the brute force restricted to the schedules that obey the
constraint.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402

from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.schedule.schedule import LevelMapping, Schedule  # noqa: E402
from mapsearch.spec.constraints import constraints_from_dict  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import Architecture, Compute, Level, Link  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402


def matmul(m: int, n: int, k: int) -> Workload:
    return Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": m, "n": n, "k": k})


def arch(capacities, double: bool = False) -> Architecture:
    names = ("L2", "L1", "L0")[-len(capacities):]
    levels = tuple(Level(names[i], capacities[i], None if i == 0 else Link()) for i in range(len(capacities)))
    return Architecture("arch", levels, Compute(), double)


def values(result) -> tuple[Fraction, ...]:
    return tuple(p.value for p in result.phases)


def replays_as_predicted(schedule: Schedule) -> None:
    assert differences(schedule.predicted, bf.replay_figures(schedule)) == []


# --------------------------------------------------------------------------- the worked example

EXAMPLE = matmul(4, 4, 4)
EXAMPLE_ARCH = arch([None, 12])  # L1 home of all, unbounded; L0 12 words; shared line, 1 clock/word; scalar MAC


def example_schedule(order: tuple[str, ...]) -> Schedule:
    levels = (LevelMapping("L1", EXAMPLE.extents),
              LevelMapping("L0", (("m", 2), ("n", 2), ("k", 2)), order, frozenset({"A", "B", "Z"})))
    return Schedule(EXAMPLE, EXAMPLE_ARCH, levels, ())


def test_worked_example_figures_as_the_contract_states() -> None:
    f = bf.replay_figures(example_schedule(("m", "n", "k")))
    link = f.link("L1->L0")
    per = {t.tensor: (t.words_down, t.words_up) for t in link.tensors}
    assert per == {"A": (32, 0), "B": (32, 0), "Z": (0, 16)}
    assert link.time == 80 and f.compute_time == 64 and f.utilization == Fraction(4, 5)
    assert dict(f.occupancy)["L0"] == 12
    g = bf.replay_figures(example_schedule(("m", "k", "n")))
    per = {t.tensor: (t.words_down, t.words_up) for t in g.link("L1->L0").tensors}
    assert per == {"A": (16, 0), "B": (32, 0), "Z": (16, 32)}
    assert g.time == 96


EVEN = SolveOptions(placement=False)  # every buffer at its level's default position: tests/brute_force.py's family


def test_worked_example_solver_optimum_with_default_positions() -> None:
    result = solve(Problem(EXAMPLE, EXAMPLE_ARCH), options=EVEN)
    assert result.status == "OPTIMAL_IN_FAMILY" and result.gap == 0
    # Time 80 (utilization 4/5), as the contract's m,n,k schedule; nothing faster fits in 12 words
    # with every buffer holding its level tile, and no 80-clock schedule moves fewer than 80 words.
    assert values(result) == (Fraction(80), Fraction(80))
    assert result.schedule.predicted.utilization == Fraction(4, 5)
    assert values(result) == bf.brute_force(EXAMPLE, EXAMPLE_ARCH).value
    replays_as_predicted(result.schedule)
    assert dict(result.schedule.predicted.occupancy)["L0"] <= 12


# --------------------------------------------------------------------------- determinism

DET_CASES = {
    "example": (EXAMPLE, EXAMPLE_ARCH),
    "mm_13x9x11_3_levels": (matmul(13, 9, 11), arch([None, 300, 40])),
    "mm_24x20x16_double": (matmul(24, 20, 16), arch([None, 1000, 64], double=True)),
    "mm_13x9x11_2_levels": (matmul(13, 9, 11), arch([None, 40])),
}


@pytest.mark.parametrize("name,workers", [(n, 1) for n in sorted(DET_CASES)] + [("example", 4), ("mm_13x9x11_2_levels", 4)])
def test_same_input_same_schedule(name: str, workers: int) -> None:
    w, a = DET_CASES[name]
    options = SolveOptions(workers=workers, seed=0, time_limit=60)
    first = solve(Problem(w, a), options=options)
    second = solve(Problem(w, a), options=options)
    assert first.status == second.status == "OPTIMAL"
    assert first.schedule == second.schedule  # levels, homes and predicted figures
    assert values(first) == values(second)
    replays_as_predicted(first.schedule)


# --------------------------------------------------------------------------- user constraints


def advancing(s: Schedule, level: int) -> list[str]:
    """Dims whose loop at ``level`` has more than one trip somewhere, outer -> inner."""
    parent, tile = s.levels[level - 1].tile_extents, s.levels[level].tile_extents
    return [d for d in s.levels[level].order if tile[d] < parent[d]]


def level_index(s: Schedule, name: str) -> int:
    return len(s.levels) - 1 if name == "innermost" else s.architecture.index(name)


def obeys_tile(level: str, dim: str, lo: int, hi: int):
    return lambda s: lo <= s.levels[level_index(s, level)].tile_extents[dim] <= hi


def obeys_order(level: str, dims: tuple[str, ...]):
    """Listed dims that advance keep the listed relative order (a loop of one trip has no place)."""
    def check(s: Schedule) -> bool:
        adv = [d for d in advancing(s, level_index(s, level)) if d in dims]
        return adv == [d for d in dims if d in adv]
    return check


def obeys_keep(level: str, tensor: str, flag: bool):
    return lambda s: (tensor in s.levels[level_index(s, level)].keep) == flag


def obeys_stationary(level: str, tensor: str):
    """The tensor's tile stays across the level's innermost loop that advances."""
    def check(s: Schedule) -> bool:
        adv = advancing(s, level_index(s, level))
        return not adv or adv[-1] not in s.workload.tensor(tensor).dims
    return check


def both(*preds):
    return lambda s: all(p(s) for p in preds)


def check_constrained(w: Workload, a: Architecture, spec: dict, accept, homes=(), binds: bool | None = None) -> None:
    constraints = constraints_from_dict(spec, "test")
    free = solve(Problem(w, a, homes), options=EVEN)
    result = solve(Problem(w, a, homes), constraints, options=EVEN)
    assert result.proven
    assert accept(result.schedule), f"the schedule breaks {spec}: {result.schedule.levels}"
    replays_as_predicted(result.schedule)
    assert values(result) >= values(free)
    brute = bf.brute_force(w, a, homes, accept=accept)
    assert brute is not None
    assert values(result) == brute.value, (f"{spec}: solver {values(result)} {result.schedule.levels}; "
                                           f"brute {brute.value} {brute.schedule.levels}")
    if binds is not None:
        assert (values(result) > values(free)) == binds


def test_fixed_tile() -> None:
    check_constrained(EXAMPLE, EXAMPLE_ARCH, {"tiles": {"innermost": {"k": 1}}}, obeys_tile("innermost", "k", 1, 1),
                      binds=False)


def test_fixed_tile_that_binds() -> None:
    # A whole row of A at L0 leaves 8 words for B and Z: slower than the optimum.
    check_constrained(EXAMPLE, EXAMPLE_ARCH, {"tiles": {"L0": {"k": 4}}}, obeys_tile("L0", "k", 4, 4), binds=True)


def test_tile_range_three_levels() -> None:
    w, a = matmul(4, 3, 4), arch([None, 20, 8])
    spec = {"tiles": {"L1": {"m": {"max": 2}}, "L0": {"n": {"min": 2}}}}
    check_constrained(w, a, spec, both(obeys_tile("L1", "m", 1, 2), obeys_tile("L0", "n", 2, 3)))


def test_fixed_order() -> None:
    check_constrained(EXAMPLE, EXAMPLE_ARCH, {"orders": {"innermost": ["m", "k", "n"]}},
                      obeys_order("innermost", ("m", "k", "n")))


def test_fixed_order_three_levels() -> None:
    w, a = matmul(4, 3, 4), arch([None, 20, 8])
    spec = {"orders": {"L1": ["k", "n", "m"], "L0": ["n", "m", "k"]}}
    check_constrained(w, a, spec, both(obeys_order("L1", ("k", "n", "m")), obeys_order("L0", ("n", "m", "k"))))


def test_forced_bypass_and_keep() -> None:
    w, a = matmul(4, 3, 4), arch([None, 20, 8])
    spec = {"keep": {"L1": {"A": False, "weights": True}}}
    check_constrained(w, a, spec, both(obeys_keep("L1", "A", False), obeys_keep("L1", "B", True)))


def test_forced_bypass_of_the_output() -> None:
    w, a = matmul(3, 4, 4), arch([None, 30, 7])
    check_constrained(w, a, {"keep": {"L1": {"output": False}}}, obeys_keep("L1", "Z", False))


@pytest.mark.parametrize("tensor,role", [("B", "weights"), ("Z", "output")])
def test_stationary_two_levels(tensor: str, role: str) -> None:
    check_constrained(EXAMPLE, EXAMPLE_ARCH, {"stationary": [{"tensor": role, "level": "innermost"}]},
                      obeys_stationary("innermost", tensor))


@pytest.mark.parametrize("shape,caps", [((3, 4, 4), [None, 30, 8]), ((4, 4, 3), [None, 30, 6])])
def test_stationary_output_three_levels(shape, caps) -> None:
    check_constrained(matmul(*shape), arch(caps), {"stationary": [{"tensor": "output", "level": "innermost"}]},
                      obeys_stationary("innermost", "Z"))


# Regression cases: the solver once read "innermost" off the order literals of every dim some chain
# splits, so a dim with one trip at the level could sit innermost while the loop that really ran
# innermost indexed the "stationary" tensor (fixed in 420c45b: the innermost *advancing* loop).


def test_stationary_minimal() -> None:
    # Z[m,n] += A[m,k]*B[k,n], M=2 N=1 K=3; L1 unbounded, L0 5 words, shared line 1 clock/word;
    # stationary: weights (B) at innermost. Before 420c45b the solver returned L0 tiles m=2 n=1 k=1,
    # order (k, m, n): m is whole at L0 (one trip) and n has extent 1, so k is the only loop that runs,
    # and it indexes B: B's tile changed on every step, for (time 11, words 11). The best schedule whose
    # innermost running loop does not index B is (15, 15) (L0 tiles m=1 n=1 k=2, order k, n, m).
    check_constrained(matmul(2, 1, 3), arch([None, 5]), {"stationary": [{"tensor": "weights", "level": "innermost"}]},
                      obeys_stationary("innermost", "B"))


def test_stationary_worked_example_inputs() -> None:
    # The worked example, A stationary at L0: before 420c45b the solver returned L0 tiles m=1 n=4 k=1,
    # order (m, k, n); n is whole (one trip), so k ran innermost and A[m,k] changed on every step.
    check_constrained(EXAMPLE, EXAMPLE_ARCH, {"stationary": [{"tensor": "inputs", "level": "innermost"}]},
                      obeys_stationary("innermost", "A"))


def test_stationary_three_levels() -> None:
    # M=2 N=1 K=2; L2, L1 unbounded; L0 3 words; B stationary at L0. Before 420c45b the solver returned
    # L1 tiles (1,1,2), L0 tiles (1,1,1) with L0 order (k, m, n): m is split at L1 only (one trip at L0),
    # so k ran innermost at L0 and B reloaded every step: (10, 18) against the true optimum (10, 20).
    check_constrained(matmul(2, 1, 2), arch([None, None, 3]), {"stationary": [{"tensor": "weights", "level": "innermost"}]},
                      obeys_stationary("innermost", "B"))


def test_constraints_together() -> None:
    w, a = matmul(4, 4, 3), arch([None, 30, 8])
    spec = {"tiles": {"L0": {"k": 1}}, "orders": {"L1": ["n", "m", "k"]}, "keep": {"L1": {"B": True}}}
    check_constrained(w, a, spec, both(obeys_tile("L0", "k", 1, 1), obeys_order("L1", ("n", "m", "k")),
                                       obeys_keep("L1", "B", True)))
