"""Unequal spatial parts in the solver (issue 15): regression cases and brute force on primes over 2, 3, 4 instances.

The parts follow the contract's split with remainder (a parent piece ``x``
is cut into ``min(P, x - x0)``), so an extent that no instance count
divides still fills the array: 7x7x7 on 4 instances splits k (or m, n)
2+2+2+1 and runs in 2 x 49 calls instead of 343; 3x3x3 on 2 instances
splits 2+1. The brute force (``tests/brute_force_spatial.py``, which shares
nothing with the model) enumerates every part of the contract and scores
each schedule by the replay; ``EVEN_ONLY`` gives the family the solver had
before, to show what it missed.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402
import brute_force_spatial as bfs  # noqa: E402

from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import MeshAxis, Link  # noqa: E402
from tests.solve.test_spatial_vs_brute_force import arch, conv1d, matmul  # noqa: E402

FAST = Link(Fraction(1, 16), Fraction(1, 16))


def compute_bound(n: int, instances: int, clocks: int):
    """n^3 matmul, L1 -> L0 (3 words per instance, links 1/16 clock per word), ``clocks`` per MAC."""
    return matmul(n, n, n), arch([None, 3], 1, (MeshAxis("x", instances, ("all",)),), [None, FAST], clocks=Fraction(clocks))


def solved(w, a, objective=bf.Objective()):
    o = objective
    result = solve(Problem(w, a), options=SolveOptions(objective=o.kind, min_utilization=o.min_utilization,
                                                         time_limit=60, workers=1, seed=0))
    replayed = bf.replay_figures(result.schedule)
    assert differences(result.schedule.predicted, replayed) == []
    return result, replayed


def brute(w, a, even_only=False, objective=bf.Objective()):
    bfs.EVEN_ONLY = even_only
    try:
        return bfs.brute_force_spatial(w, a, (), objective)
    finally:
        bfs.EVEN_ONLY = False


@pytest.mark.parametrize("n, instances, clocks, before, after", [(7, 4, 4, 1372, 392), (3, 2, 2, 54, 36)])
def test_issue_cases(n, instances, clocks, before, after) -> None:
    w, a = compute_bound(n, instances, clocks)
    result, f = solved(w, a)
    assert result.proven and result.phases[0].value == after
    # The busiest instance: one dimension cut ceil(n / instances) wide, the others whole.
    assert f.busiest_calls == -(-n // instances) * n * n and f.compute_time == after
    (split,) = result.schedule.levels[1].spatial
    assert split.part == -(-n // instances)
    # Parts that divide the extent (the solver's family before) cannot split a prime at all.
    assert brute(w, a, even_only=True).value[0] == before == n**3 * clocks
    assert brute(w, a).value == tuple(p.value for p in result.phases)


CASES = [
    # (workload, capacities, mesh sizes, reuse): primes over 2, 3 and 4 instances, one or two axes.
    (matmul(5, 2, 3), [None, 6], (2,), ("all",)),
    (matmul(3, 5, 2), [None, 5], (3,), ("input",)),
    (matmul(7, 1, 5), [None, 4], (4,), ("output",)),
    (matmul(5, 3, 2), [None, 6], (2, 2), ("none",)),
    (matmul(2, 5, 3), [None, 30, 6], (3,), ("all",)),
    (conv1d(2, 5, 2), [None, 6], (3,), ("all",)),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("objective", [bf.Objective("time"), bf.Objective("words", min_utilization=Fraction(1, 2))])
def test_unequal_parts_match_brute_force(case, objective) -> None:
    w, caps, sizes, reuse = CASES[case]
    mesh = tuple(MeshAxis(name, size, reuse) for name, size in zip(("x", "y"), sizes))
    links = [None] + [Link(Fraction(1, 8), Fraction(1, 4))] * (len(caps) - 1)
    a = arch(caps, len(caps) - 1, mesh, links)
    result, f = solved(w, a, objective)
    b = brute(w, a, objective=objective)
    assert result.proven
    assert tuple(p.value for p in result.phases) == b.value, (result.schedule.levels, b.schedule.levels)
    assert objective.key(f) == b.value


@pytest.mark.parametrize("limit, family, clocks", [
    (2, "balanced parts ceil(T/m) only", 150),
    (1, "even divisions and balanced parts ceil(T/m) with m dividing a mesh axis only", 150),
    (0, "even divisions of the parent tile only", 375)])
def test_a_reduced_part_family_is_named(monkeypatch, limit, family, clocks) -> None:
    """Beyond the row limit fewer parts are cut, and the result says so (OPTIMAL_IN_FAMILY, never OPTIMAL).

    5^3 on 3 instances (L0 holds 1x1x1 tiles): per dimension 3 split (chain, part) rows in all (parts
    4, 3 and 2 of 5), 2 balanced ones (parts 3 and 2), 1 mesh part (2 = ceil(5/3), 3 dividing the axis).
    Balanced and mesh parts still reach ceil(5/3) = 2 (2 x 25 calls x 3 clocks); parts dividing 5 split nothing.
    """
    import mapsearch.model.build as build
    import mapsearch.model.part_families as pf

    monkeypatch.setattr(pf, "SPATIAL_ROWS_LIMIT", limit)
    monkeypatch.setattr(pf, "BALANCED_ROWS_LIMIT", limit)
    build._chains_cached.cache_clear()  # chains are cached per extent and bounds, not per limit
    try:
        w, a = compute_bound(5, 3, 3)
        result, f = solved(w, a)
    finally:
        build._chains_cached.cache_clear()
    assert result.status == "OPTIMAL_IN_FAMILY"
    assert f"spatial parts: m {family}; n {family}; k {family}" in result.family_restrictions
    assert result.phases[0].value == clocks == f.compute_time


def test_the_time_floor_spreads_the_calls_over_every_instance():
    # 8^3 on 16 instances: every dimension alone fits the array (1 call per instance for each),
    # but the 512 calls cannot: the busiest instance makes at least 512 / 16 = 32.
    from mapsearch.model.build import build
    from mapsearch.model.bounds import compute_time_floor
    from mapsearch.solve.run import _floor

    w, a = compute_bound(8, 16, 1)
    enc = build(Problem(w, a), options=SolveOptions())
    assert compute_time_floor(Problem(w, a), enc.scale) == 32 * enc.scale
    assert _floor(enc, "time") >= 32 * enc.scale
    result, replayed = solved(w, a)
    assert result.proven and replayed.time == 32  # the floor is met: 16 instances busy on every step
