"""The solver searches buffer placement exactly (issue 14; docs/solver.md, "Buffer placement").

Checked against an independent brute force over tiles x orders x keep x
positions scored by the replay (tests/brute_force_placement.py), on small
2- and 3-level cases, and the returned schedule is replayed: predicted ==
replayed in count and data modes.
"""

from __future__ import annotations

import random
import re
import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force_placement as bp  # noqa: E402
import brute_force_wide as bw  # noqa: E402

from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.schedule.json_io import schedule_from_dict, schedule_to_dict  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import Architecture, Compute, Level, Link  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402


def arch(caps, costs=None, lines="shared", block=None) -> Architecture:
    names = ("L2", "L1", "L0")[-len(caps):]
    costs = costs or [1] * len(caps)
    levels = tuple(Level(names[i], caps[i], None if i == 0 else Link(Fraction(costs[i]), Fraction(costs[i]), lines))
                   for i in range(len(caps)))
    return Architecture("a", levels, Compute(tuple((block or {}).items())), False)


def replays_as_predicted(result) -> None:
    s = result.schedule
    assert differences(s.predicted, replay(s, mode="count").figures) == []
    data = replay(s, mode="data")
    assert data.data_ok and differences(s.predicted, data.figures) == []
    # The file format carries the positions: the reloaded schedule replays the same.
    again = schedule_from_dict(schedule_to_dict(s))
    assert again == s


def test_worked_example_reaches_full_utilization() -> None:
    # The contract's example (4^3, L0 12 words, shared line, 1 clock/word): with default
    # positions the best is 80 clocks. Placing B's buffer outside the m and k loops
    # (L0 tiles m=1, n=2, k=1, order n, m, k) holds a k x n strip of B (8 words):
    # A 1 word reloaded on every (m, k) step of each n: 2 x 16 = 32 words; B 8 words per n: 16;
    # Z 2 words stored per (n, m): 16. 64 words = 64 clocks = the compute time; L0 holds 1 + 8 + 2.
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})
    result = solve(Problem(w, arch([None, 12])))
    assert result.status == "OPTIMAL" and result.family_restrictions == ()
    f = result.schedule.predicted
    assert (f.time, f.words_total, f.utilization) == (64, 64, 1)
    replays_as_predicted(result)


def test_accelforge_case_8_cubed() -> None:
    # Issue 14's first case: AccelForge's placed mapping moves 704 words at the even optimum's time.
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 8, "n": 8, "k": 8})
    even = solve(Problem(w, arch([None, 48, 12])), options=SolveOptions(placement=False))
    placed = solve(Problem(w, arch([None, 48, 12])))
    assert (even.schedule.predicted.time, even.schedule.predicted.words_total) == (512, 832)
    assert (placed.schedule.predicted.time, placed.schedule.predicted.words_total) == (512, 704)
    replays_as_predicted(placed)


EINSUMS = {
    "matmul": "Z[m,n] += A[m,k] * B[k,n]",
    "matvec": "Z[m] += A[m,k] * B[k]",
    "batched": "Z[b,m,n] += A[b,m,k] * B[b,k,n]",
    "conv1d": "O[p] += I[p+r] * W[r]",
}


def _case(seed: int, depth: int):
    rng = random.Random(seed)
    name = rng.choice(sorted(EINSUMS) if depth == 1 else ["matmul", "matvec", "conv1d"])
    dims = tuple(dict.fromkeys(re.findall(r"[a-z]", EINSUMS[name].split("+=")[1])))
    hi = 3 if depth == 1 else 2
    extents = {d: rng.randint(2, 3 if name == "conv1d" else hi) for d in dims}
    if name == "batched":
        extents = {d: 2 for d in dims}
    w = Workload.from_text(name, EINSUMS[name], extents)
    caps = [None] + ([rng.randint(4, 12)] if depth == 1 else [rng.randint(5, 12), rng.randint(3, 6)])
    costs = [1] + [rng.choice([1, 2]) for _ in caps[1:]]
    block = {dims[0]: 2} if rng.random() < 0.2 else None
    return w, arch(caps, costs, rng.choice(["shared", "separate"]), block)


def _oracle(w, a):
    """The brute force of the family the solver searches for ``w``: the whole contract (positions
    included), except that convolution windows are held whole by the solver today (a named family
    restriction), so conv cases are checked against tests/brute_force_placement.py's family."""
    if any(not ix.is_plain for t in w.tensors for ix in t.indices):
        brute = bp.brute_force_placed(w, a, "cuts")
        return None if brute is None else brute[0]
    brute = bw.brute_force(w, a)
    if brute is not None:
        bw.direct_check(brute)
    return None if brute is None else brute.value


@pytest.mark.parametrize("seed", range(4))
def test_positions_between_indexing_loops_are_equivalent(seed: int) -> None:
    # docs/solver.md, "Buffer placement", step 1: only cuts of the loops that index a tensor matter.
    w, a = _case(seed, 1)
    brute = bp.brute_force_placed(w, a, "all")
    assert (brute is None) == (bp.brute_force_placed(w, a, "cuts") is None)
    assert brute is None or bp.brute_force_placed(w, a, "cuts")[0] == brute[0]


@pytest.mark.parametrize("seed", range(12))
def test_two_levels_equal_brute_force_over_every_position(seed: int) -> None:
    w, a = _case(seed, 1)
    best = _oracle(w, a)
    if best is None:
        with pytest.raises(Exception):
            solve(Problem(w, a))
        return
    result = solve(Problem(w, a))
    assert result.proven
    assert (result.schedule.predicted.time, result.schedule.predicted.words_total) == best, (w, a)
    replays_as_predicted(result)


@pytest.mark.parametrize("seed", range(6))
def test_three_levels_equal_brute_force(seed: int) -> None:
    w, a = _case(100 + seed, 2)
    best = _oracle(w, a)
    if best is None:
        with pytest.raises(Exception):
            solve(Problem(w, a))
        return
    result = solve(Problem(w, a))
    assert result.proven
    assert (result.schedule.predicted.time, result.schedule.predicted.words_total) == best, (w, a)
    replays_as_predicted(result)


def test_placement_off_is_the_even_family() -> None:
    # The even optimum is never better than the placed one, and never below the brute force of its family.
    w, a = _case(3, 1)
    even = solve(Problem(w, a), options=SolveOptions(placement=False))
    placed = solve(Problem(w, a))
    key = lambda r: (r.schedule.predicted.time, r.schedule.predicted.words_total)  # noqa: E731
    assert key(placed) <= key(even)
    assert not even.schedule.placed
