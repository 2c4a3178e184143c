"""Fused chains with convolution stages (issue 15; docs/solver.md, "Split windows in a fused stage").

- Pruning a shared dimension's chains keeps every outer tiling (the stages' outer nests are tied).
- The fused solver equals ``tests/brute_force_fused.py`` (every outer tiling and order, every
  sub-nest of every stage with every tile of both window dimensions, every keep; scored by the
  fused replay, sharing no code with the model) on chains with a 1-D convolution stage: plain,
  stride 2, dilation 2, a convolution feeding a convolution (the intermediate is the second
  one's filter), a window over two shared dimensions, 2 and 3 levels, every fusion level; and
  on random such chains. Every returned schedule replays to its prediction, its status is
  OPTIMAL_IN_FAMILY naming only the restriction every fused search has (default buffer
  positions), never a window held whole; INFEASIBLE exactly when the brute force finds nothing.
- Axes over three dimensions are split in a fused stage too, and equal the brute force (its own
  filter, the intermediate as one of its filters, a shared dimension in it). Held whole (over their
  joint table's limit) they are named, and an empty family is NO_SCHEDULE_IN_FAMILY, not
  INFEASIBLE: the brute force finds a schedule there.

Run ``python tests/solve/test_fused_windows.py [first_seed] [n_seeds]`` to sweep more seeds.
"""

from __future__ import annotations

import random
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force_fused as bff  # noqa: E402

import mapsearch.model.chains as chains_module  # noqa: E402
from mapsearch.model.chains import enumerate_chains  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.solve.chain import FusedOutcome, solve_fused  # noqa: E402
from mapsearch.spec.architecture import SEPARATE, SHARED, Architecture, Compute, Level, Link  # noqa: E402
from mapsearch.spec.workload import WorkloadGraph  # noqa: E402

POSITIONS = "buffer placement: default positions only (fused chain stage)"  # every fused search's restriction
CONV_POINTWISE = ["T[p] += I[{s}*p+{t}*r] * W[r]", "Y[p] += T[p] * V[p]"]
CONV_CHANNELS = ["T[k,p] += I[{s}*p+{t}*r] * W[k,r]", "Y[j,p] += T[k,p] * V[j,k]"]
CONV_CONV = ["T[p] += I[{s}*p+{t}*r] * W[r]", "Y[q] += J[{s}*q+{t}*p] * T[p]"]  # T is the second filter
SHARED_WINDOW = ["T[p,r] += I[{s}*p+{t}*r] * W[r]", "Y[p] += T[p,r] * V[r]"]  # p and r both shared
MATMUL_CONV = ["T[p] += A[p,k] * B[k]", "Y[q] += J[{s}*q+{t}*p] * T[p]"]
FORMS = [CONV_POINTWISE, CONV_POINTWISE, CONV_CHANNELS, CONV_CONV, CONV_CONV, SHARED_WINDOW, MATMUL_CONV]
NORMAL_SEEDS = range(20)
REPLAY_BUDGET = 300  # replays of the brute force per random case, all levels together


def arch(caps, links=None, clocks=Fraction(1)) -> Architecture:
    names = ("DRAM", "L1", "L0")[-len(caps):]
    links = links or [None] + [Link()] * (len(caps) - 1)
    return Architecture("a", tuple(Level(names[i], caps[i], links[i]) for i in range(len(caps))),
                        Compute((), Fraction(clocks)))


def options() -> SolveOptions:
    return SolveOptions(time_limit=60.0, workers=1, seed=0)


def check_level(g: WorkloadGraph, a: Architecture, f: int,
                what: str = "") -> tuple[FusedOutcome, bff.FusedBrute | None]:
    """Solver == brute force at level ``f``; prediction == replay; the status names no window held whole."""
    brute = bff.brute_force_fused(g, a, f)
    o = solve_fused(g, a, {}, f, options())
    where = f"{what} {[e.text() for e in g.einsums]} {dict(g.extents)} caps {[lv.capacity for lv in a.levels]} f={f}"
    if brute is None:
        assert o.status == "INFEASIBLE" and o.schedule is None, (where, o.status, o.reason)
        return o, None
    assert o.schedule is not None, (where, o.status, o.reason, brute.value)
    assert bff.key_of(o.schedule.predicted) == brute.value, (where, bff.key_of(o.schedule.predicted), brute.value)
    assert differences(o.schedule.predicted, replay(o.schedule, mode="count").figures) == [], where
    assert o.status == "OPTIMAL_IN_FAMILY" and o.family_restrictions == (POSITIONS,), (where, o.status,
                                                                                         o.family_restrictions)
    return o, brute


# --------------------------------------------------------------------------- tied outer tiles


def _classes(ch, tied: int) -> set:
    """What a pruning compares for equality, with the outer tiles: every class must keep a chain."""
    return {(tuple(ch.tiles[i, :tied]), tuple(ch.counts[i]), tuple(ch.sums[(1, 0)][i]), int(ch.calls[i]))
            for i in range(len(ch))}


@pytest.mark.parametrize("extent, depth", [(5, 2), (7, 2), (9, 3)])
def test_tied_chains_are_pruned_only_among_equal_outer_tiles(monkeypatch, extent: int, depth: int) -> None:
    """Untied, (3, 3) drops (4, 4) on extent 5 (equal counts and sums, smaller tiles); tied at level 1,
    every outer tile keeps each of its classes of counts and sums."""
    with monkeypatch.context() as m:
        m.setattr(chains_module, "_survivors", lambda q: np.arange(q["tiles"].shape[0]))
        raw = enumerate_chains(extent, depth, ((1, 0),))
    untied = enumerate_chains(extent, depth, ((1, 0),))
    assert _classes(untied, 1) < _classes(raw, 1)  # pruning one stage alone loses outer tilings
    for tied in range(1, depth + 1):
        kept = enumerate_chains(extent, depth, ((1, 0),), tied=tied)
        assert kept.tied == tied
        assert _classes(kept, tied) == _classes(raw, tied)
        assert len(untied) < len(kept) <= len(raw)


def test_shared_window_dimension_keeps_every_outer_tile() -> None:
    """A window over a shared dimension: its chains in the fused stage keep every level-1 tile."""
    from mapsearch.model.build import dimension_chains
    from mapsearch.model.fusion import stage_problems
    from mapsearch.spec.constraints import Constraints

    g = WorkloadGraph.from_texts("cc", [x.format(s=1, t=1) for x in CONV_CONV], {"p": 7, "r": 3, "q": 5})
    for stage in stage_problems(g, arch([None, None, None]), {}, 1):
        chains, _ = dimension_chains(stage, Constraints())
        assert chains["p"].tied == 1
        assert set(chains["p"].tiles[:, 0].tolist()) == set(range(1, 8))


# --------------------------------------------------------------------------- named cases


def _graph(form, ext, s=1, t=1) -> WorkloadGraph:
    return WorkloadGraph.from_texts("conv", [x.format(s=s, t=t) for x in form], ext)


# (form, stride, dilation, extents, capacities, the optimum per fusion level: None where nothing fits).
# With the windows of fused stages held whole (before this search), the same cases gave: "plain" INFEASIBLE
# at L1 (a whole 3-word window needs 3 words of I and 3 of W at L0 besides T), "plain, faster split"
# (52, 77), "stride 2", "dilation 2", "conv feeding conv", "window over shared dims" and "fused at L0 of
# two levels" INFEASIBLE at every level.
NAMED = {
    "plain": (CONV_POINTWISE, 1, 1, {"p": 4, "r": 3}, [None, 20, 6], [(32, 49), None]),
    "plain, faster split": (CONV_POINTWISE, 1, 1, {"p": 6, "r": 4}, [None, None, 9], [(48, 73), None]),
    "stride 2": (CONV_POINTWISE, 2, 1, {"p": 4, "r": 3}, [None, 24, 6], [(37, 57), None]),
    "dilation 2": (CONV_POINTWISE, 1, 2, {"p": 4, "r": 3}, [None, 24, 7], [(34, 53), None]),
    "conv feeding conv": (CONV_CONV, 1, 1, {"p": 3, "r": 3, "q": 3}, [None, 30, 6], [(36, 52), None]),
    "window over shared dims": (SHARED_WINDOW, 1, 1, {"p": 3, "r": 3}, [None, 30, 7], [(36, 50), (30, 44)]),
    "fused at L0 of two levels": (SHARED_WINDOW, 1, 1, {"p": 4, "r": 3}, [None, 6], [(38, 38)]),
}


@pytest.mark.parametrize("name", NAMED)
def test_named_case_matches_brute_force(name: str) -> None:
    form, s, t, ext, caps, optimum = NAMED[name]
    g, a = _graph(form, ext, s, t), arch(caps)
    for f, want in zip(range(1, a.depth), optimum):
        _, brute = check_level(g, a, f, name)
        assert (brute and brute.value) == want


def test_whole_window_not_fitting_l0_is_split() -> None:
    """The brute force's and the solver's optimum both split the filter dimension r at L0."""
    form, s, t, ext, caps, _ = NAMED["plain"]
    o, brute = check_level(_graph(form, ext, s, t), arch(caps), 1)
    for fs in (o.schedule, brute.schedule):
        assert fs.stages[0].tile_extents(2)["r"] < 3
    at_l0 = solve_fused(_graph(form, ext, s, t), arch(caps), {}, 2, options())  # r must be whole there
    assert at_l0.status == "INFEASIBLE" and "r is whole (3) at L0, the fusion level" in at_l0.reason


def test_conv_chain_data_replay_matches_numpy() -> None:
    """The fused conv-feeding-conv schedule computes the chain's values (numpy, einsum by einsum)."""
    form, s, t, ext, caps, _ = NAMED["conv feeding conv"]
    o = solve_fused(_graph(form, ext, s, t), arch(caps), {}, 1, options())
    r = replay(o.schedule, mode="data")
    assert r.data_ok is True
    assert differences(o.schedule.predicted, r.figures) == []


def test_fast_brute_force_equals_direct_enumeration_on_conv() -> None:
    """The routed/combined brute force against replaying every schedule of the family, with windows."""
    for g, a in [(_graph(CONV_POINTWISE, {"p": 2, "r": 2}), arch([None, 12, 6])),
                 (_graph(SHARED_WINDOW, {"p": 4, "r": 3}), arch([None, 8])),
                 (_graph(CONV_CONV, {"p": 3, "r": 2, "q": 2}), arch([None, 14]))]:
        for f in range(1, a.depth):
            fast, direct = bff.brute_force_fused(g, a, f), bff.brute_force_fused(g, a, f, direct=True)
            assert (fast and fast.value) == (direct and direct.value)


# --------------------------------------------------------------------------- held whole, named


def test_three_dimension_axis_held_whole_is_named_and_not_infeasible(monkeypatch) -> None:
    """``I[p+r+u]`` over its joint table's limit (here 0 entries; 6 chains each over two levels): r and u are
    held whole (named); W (9 words) cannot fit L0's 8 whole, so the searched family is empty, which is NO_SCHEDULE_IN_FAMILY: the brute force
    finds a schedule with them split, and so does the solver within the limit."""
    from mapsearch.model import windows

    g = WorkloadGraph.from_texts("c3", ["T[p] += I[p+r+u] * W[r,u]", "Y[p] += T[p] * V[p]"], {"p": 3, "r": 3, "u": 3})
    held = ("filter windows held whole: r, u (the joint table of (p, r, u) would have 216 entries, over the limit of "
            "0; such an axis is split only along its largest dimension)")
    tight = arch([None, None, 8])
    with monkeypatch.context() as patch:
        patch.setattr(windows, "JOINT_TABLE_LIMIT", 0)
        o = solve_fused(g, tight, {}, 1, options())
        assert o.status == "NO_SCHEDULE_IN_FAMILY" and o.schedule is None
        assert o.family_restrictions == (held,) and "a legal schedule outside it may exist" in o.reason
        roomy = solve_fused(g, arch([None, None, 20]), {}, 1, options())
        assert roomy.status == "OPTIMAL_IN_FAMILY" and roomy.family_restrictions == (held, POSITIONS)
    o, brute = check_level(g, tight, 1, "split")
    assert brute.value == (48, 70)


# Chains with an axis over three dimensions, split in the stage like any window (tests/solve/test_windows_joint.py
# for one einsum): its own filter, the intermediate as one of its filters, a shared dimension in it.
AXIS3_FORMS = [["T[p] += I[{s}*p+{t}*r+u] * W[r,u]", "Y[p] += T[p] * V[p]"],
               ["T[p] += A[p,k] * B[k]", "Y[q] += J[{s}*q+{t}*p+u] * T[p] * V[u]"],
               ["T[p,u] += I[{s}*p+{t}*r+u] * W[r]", "Y[p] += T[p,u] * V[u]"]]
AXIS3_CASES = [  # (form, stride, dilation, extents, capacities), each checked at every fusion level
    (0, 1, 1, {"p": 4, "r": 3, "u": 2}, [None, 20, 7]),
    (0, 2, 1, {"p": 2, "r": 4, "u": 5}, [None, 8, 6]),
    (1, 2, 1, {"p": 4, "k": 1, "q": 2, "u": 5}, [None, 5, 20]),
    (1, 1, 2, {"p": 5, "k": 2, "q": 2, "u": 3}, [None, 7, None]),
    (2, 1, 1, {"p": 2, "u": 4, "r": 2}, [None, 7, 7]),
    (2, 1, 2, {"p": 3, "u": 2, "r": 3}, [None, 5, 14]),
]


@pytest.mark.parametrize("case", range(len(AXIS3_CASES)))
def test_three_dimension_axis_in_a_fused_stage_matches_brute_force(case: int) -> None:
    form, s, t, ext, caps = AXIS3_CASES[case]
    g, a = _graph(AXIS3_FORMS[form], ext, s, t), arch(caps)
    found = [check_level(g, a, f, f"axis3 case {case}")[1] for f in range(1, a.depth)]
    assert found[0] is not None  # a schedule at L1 at least: the check compared figures


# --------------------------------------------------------------------------- random chains


def random_case(seed: int) -> tuple[WorkloadGraph, Architecture]:
    """A conv chain (extents <= 5) on 2 or 3 levels, links and capacities drawn; the largest of a few
    draws of extents that fits the replay budget."""
    rng = random.Random(seed)
    form = rng.choice(FORMS)
    s, t = rng.choice([(1, 1), (1, 1), (2, 1), (1, 2)])
    depth = rng.choice([2, 3, 3])
    clocks = [Fraction(1), Fraction(1), Fraction(1, 2), Fraction(2)]
    links = [None] + [Link(rng.choice(clocks), rng.choice(clocks), rng.choice([SHARED, SEPARATE]))
                      for _ in range(depth - 1)]
    best = None
    for _ in range(10):
        dims = sorted({c for x in form for c in x.format(s=s, t=t) if c.islower() and c.isalpha()})
        ext = {d: rng.randint(1, 5) for d in dims}
        ext.update({d: max(ext[d], 2) for d in ("p", "r") if d in ext})
        g = _graph(form, ext, s, t)
        size = sum(bff.family_size(g, arch([None] * depth, links), f)[0] for f in range(1, depth))
        if size <= REPLAY_BUDGET and (best is None or size > best[1]):
            best = (g, size)
    caps = [None] + [rng.choice([None, 4, 5, 6, 7, 8, 10, 14, 20]) for _ in range(depth - 1)]
    g = best[0] if best else _graph(CONV_POINTWISE, {"p": 2, "r": 2}, s, t)
    return g, arch(caps, links, rng.choice(clocks))


@pytest.mark.parametrize("seed", NORMAL_SEEDS)
def test_random_conv_chain_matches_brute_force(seed: int) -> None:
    g, a = random_case(seed)
    for f in range(1, a.depth):
        check_level(g, a, f, f"seed {seed}")


if __name__ == "__main__":
    first = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    for seed in range(first, first + n):
        g, a = random_case(seed)
        for f in range(1, a.depth):
            o, brute = check_level(g, a, f, f"seed {seed}")
            print(seed, [e.text() for e in g.einsums], dict(g.extents), [lv.capacity for lv in a.levels], f,
                  brute and brute.value, o.status, flush=True)
