"""Rank-0 tensors (``Z[] += A[k] * B[k]``, a scalar operand ``s[]``): every replay mode, the solver, hand-derived figures.

A rank-0 tensor has one region (the scalar), so a buffer of it enters once
and, for an output, stores once at the end: the words below are counted by
hand from that rule, the contract's split-with-remainder and docs/spatial.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from spatial_helpers import arch, level, schedule

from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import differences
from mapsearch.sim.replay import replay
from mapsearch.solve.run import solve
from mapsearch.spec.architecture import MeshAxis
from mapsearch.spec.workload import Workload

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from brute_force import brute_force  # noqa: E402

MODES = ("count", "events", "data")
TWO = arch(level("L1", None), level("L0", 100))


def per_link(figures) -> list[tuple[int, int]]:
    return [(link.words_down, link.words_up) for link in figures.links]


def tensor_words(figures, link: int) -> dict[str, tuple[int, int]]:
    return {t.tensor: (t.words_down, t.words_up) for t in figures.links[link].tensors}


def replay_all(s) -> dict:
    """The three modes' results; they must agree figure by figure, and data mode must match numpy."""
    results = {mode: replay(s, mode=mode) for mode in MODES}
    for mode in ("events", "data"):
        assert differences(results["count"].figures, results[mode].figures) == [], mode
    assert results["data"].data_ok
    return results


@pytest.mark.parametrize("op", ["+=", "="])
def test_dot_product_in_every_mode(op):
    # k = 7 in tiles of 3 (3, 3, 1): A and B cross once each (7 + 7 words),
    # the scalar Z is entered once at L0 and stored once at the end (1 word), no reload.
    w = Workload.from_text("dot", f"Z[] {op} A[k] * B[k]", {"k": 7})
    s = schedule(w, TWO, [({"k": 3}, "k", {"A", "B", "Z"})])
    f = replay_all(s)["count"].figures
    assert tensor_words(f, 0) == {"A": (7, 0), "B": (7, 0), "Z": (0, 1)}
    assert f.words_total == 15 and f.op_calls == 7 and f.time == 15
    assert dict(f.occupancy) == {"L1": 15, "L0": 3 + 3 + 1}


def test_scalar_operand_is_loaded_once():
    # Z[m] += A[m,k] * s[]: m = 4 in tiles of 2, k whole. A: 12 words; s: one region, 1 word;
    # Z: two regions [0,2) and [2,4), each entered once and stored once: 4 words up.
    w = Workload.from_text("scale", "Z[m] += A[m,k] * s[]", {"m": 4, "k": 3})
    s = schedule(w, TWO, [({"m": 2, "k": 3}, "mk", {"A", "s", "Z"})])
    f = replay_all(s)["count"].figures
    assert tensor_words(f, 0) == {"A": (12, 0), "s": (1, 0), "Z": (0, 4)}
    assert f.words_total == 17 and f.op_calls == 12


def test_three_levels_store_the_scalar_once_per_link():
    w = Workload.from_text("dot", "Z[] += A[k] * B[k]", {"k": 6})
    a = arch(level("L2", None), level("L1", 100), level("L0", 100))
    s = schedule(w, a, [({"k": 4}, "k", {"A", "Z"}), ({"k": 1}, "k", {"A", "B", "Z"})])
    f = replay_all(s)["count"].figures
    # L2->L1: A 6 (tiles 4, 2), B bypasses L1 and crosses here too (6), Z stored once.
    # L1->L0: A 6, B 6 (from L2 through L1), Z 1.
    assert tensor_words(f, 0) == {"A": (6, 0), "B": (6, 0), "Z": (0, 1)}
    assert tensor_words(f, 1) == {"A": (6, 0), "B": (6, 0), "Z": (0, 1)}


def test_reduction_over_a_mesh_is_reduced_in_the_network():
    # k = 7 split in parts of 4 over 2 instances (parts 4 and 3); each L1 tile k = 3.
    # Instance 0 walks [0,3), [3,4); instance 1 walks [4,7) then idles.
    # L2->L1: A, B 7 words each; the two partial scalars of Z differ only in k on an
    # axis that may reuse Z: one word up (in-network reduction).
    # L1->L0 (one copy per L1 instance): A, B 4 + 3 each; Z one word up per copy.
    w = Workload.from_text("dot", "Z[] += A[k] * B[k]", {"k": 7})
    a = arch(level("L2", None), level("L1", 50, mesh=(MeshAxis("x", 2, ("all",)),)), level("L0", 10))
    s = schedule(w, a, [({"k": 3}, "k", {"A", "B", "Z"}, [("k", 4, "x")]), ({"k": 1}, "k", {"A", "B", "Z"})])
    f = replay_all(s)["count"].figures
    assert per_link(f) == [(14, 1), (14, 2)]
    assert f.op_calls == 7 and f.busiest_calls == 4
    # Busiest L1->L0 copy: instance 0, 4 + 4 down and 1 up; L2->L1 15 words.
    assert f.links[1].time == 9 and f.links[0].time == 15 and f.time == 15


def test_solver_proves_the_dot_product_and_the_replay_agrees():
    # Compulsory words: A 7, B 7, Z 1 = 15 on a 1-clock link: time 15 (compute is 7).
    w = Workload.from_text("dot", "Z[] += A[k] * B[k]", {"k": 7})
    a = arch(level("L1", None), level("L0", 3))
    result = solve(Problem(w, a))
    assert result.status == "OPTIMAL"
    predicted = result.schedule.predicted
    assert predicted.time == 15 and predicted.words_total == 15
    for mode in MODES:
        assert differences(predicted, replay(result.schedule, mode=mode).figures) == [], mode
    best = brute_force(w, a)
    assert (best.figures.time, best.figures.words_total) == (15, 15)
