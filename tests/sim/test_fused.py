"""Fused replay (docs/fusion.md): hand-derived figures, f = top versus unfused, modes agreeing, errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fused_helpers import arch, fused  # noqa: E402

from mapsearch.errors import ScheduleError
from mapsearch.schedule.figures import differences
from mapsearch.sim.errors import CapacityError
from mapsearch.sim.fused import replay_fused
from mapsearch.sim.replay import replay_unfused
from mapsearch.sim.replay import replay
from mapsearch.spec.workload import WorkloadGraph

MM3 = ["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n] * C[n,p]"]


def mm3_at_l1(caps=(None, None, None)):
    """M=4, N=2, K=3, P=2 on DRAM -> L1 -> L0, fused at L1; L1 tiles m=2 (n, k, p whole), L0 tiles 1."""
    g = WorkloadGraph.from_texts("mm3", MM3, {"m": 4, "n": 2, "k": 3, "p": 2})
    a = arch(caps=caps)
    homes = {"T": "L1"}
    s0 = ([{"m": 2}, {"m": 1, "n": 1, "k": 1}], [["m", "n", "k"], ["m", "n", "k"]], [{"A", "B"}, {"A", "B", "T"}], homes)
    s1 = ([{"m": 2}, {"m": 1, "n": 1, "p": 1}], [["m", "n", "p"], ["m", "p", "n"]], [{"C", "Y"}, {"T", "C", "Y"}], homes)
    return fused(g, a, 1, [s0, s1])


def words(fig, link):
    return {t.tensor: (t.words_down, t.words_up) for t in fig.link(link).tensors}


@pytest.mark.parametrize("mode", ["events", "count", "data"])
def test_triple_matmul_fused_at_l1_hand_derived(mode):
    r = replay_fused(mm3_at_l1(), mode)
    f = r.figures
    # Two outer steps (m = 0..1, 2..3). DRAM->L1, tensors held at L1 as in one einsum:
    #   A[m-tile, all k] = 2*3 = 6 words per step -> 12; B[k,n] (whole, never moves) 6;
    #   C[n,p] 4; Y[m-tile, all p] = 4 words created as zeros, stored per step -> 8 up.
    #   T never crosses this link (not even listed).
    assert words(f, "DRAM->L1") == {"A": (12, 0), "B": (6, 0), "C": (4, 0), "Y": (0, 8)}
    # L1->L0, per outer step: einsum 0 runs m,n,k (2*2*3 = 12 steps, k innermost): A and B change
    #   every step -> 12 + 12 words; T[m,n] entered 4 times, each once -> 4 up, no reload.
    #   Einsum 1 runs m,p,n (2*2*2 = 8 steps, n innermost): T and C change every step -> 8 + 8;
    #   Y[m,p] entered 4 times -> 4 up. Two outer steps double everything.
    assert words(f, "L1->L0") == {"A": (24, 0), "B": (24, 0), "T": (16, 8), "C": (16, 0), "Y": (0, 8)}
    assert (f.link("DRAM->L1").words_down, f.link("DRAM->L1").words_up) == (22, 8)
    assert (f.link("L1->L0").words_down, f.link("L1->L0").words_up) == (80, 16)
    # Op calls: 4*2*3 + 4*2*2 = 24 + 16; time = max(40, 30, 96) = 96 (shared lines, 1 clock/word).
    assert f.op_calls == 40 and f.compute_time == 40 and f.macs == 40
    assert f.time == 96
    # DRAM: homes A 12 + B 6 + C 4 + Y 8 = 30; L1: A 6 + B 6 + C 4 + Y 4 + the T tile 2*2 = 24;
    # L0: each sub-nest holds three scalars, and they never overlap -> 3.
    assert f.occupancy == (("DRAM", 30), ("L1", 24), ("L0", 3))
    if mode == "data":
        assert r.data_ok is True and r.max_abs_error < 1e-12


def test_capacity_rule_at_the_fusion_level():
    with pytest.raises(CapacityError):
        replay_fused(mm3_at_l1(caps=(None, 23, None)), "events")
    with pytest.raises(CapacityError):
        replay_fused(mm3_at_l1(caps=(None, 23, None)), "count")
    assert replay_fused(mm3_at_l1(caps=(None, 24, 3)), "events").figures.occupancy[1:] == (("L1", 24), ("L0", 3))
    with pytest.raises(CapacityError):
        replay_fused(mm3_at_l1(caps=(None, 24, 2)), "count")


def mm3_two_levels(f: int):
    """M=4, N=2, K=3, P=2 on DRAM -> L0 (2 levels)."""
    g = WorkloadGraph.from_texts("mm3", MM3, {"m": 4, "n": 2, "k": 3, "p": 2})
    a = arch(names=("DRAM", "L0"), caps=(None, None), cost=(None, 1))
    if f == 0:
        homes = {"T": "DRAM"}
        s0 = ([{"m": 2, "n": 1, "k": 3}], [["m", "n", "k"]], [{"A", "B", "T"}], homes)
        s1 = ([{"m": 2, "n": 2, "p": 1}], [["p", "m", "n"]], [{"T", "C", "Y"}], homes)
    else:  # fused at L0: the L0 tile of the shared dims is the outer step, k and p whole
        homes = {"T": "L0"}
        s0 = ([{"m": 2, "n": 1, "k": 3}], [["m", "n", "k"]], [{"A", "B"}], homes)
        s1 = ([{"m": 2, "n": 1, "p": 2}], [["m", "n", "p"]], [{"C", "Y"}], homes)
    return fused(g, a, f, [s0, s1])


def test_fused_at_the_top_equals_unfused_words_but_overlaps_time():
    fs = mm3_two_levels(0)
    r = replay_fused(fs, "events").figures
    u = replay_unfused(fs.graph, fs.stages, "events")
    # Einsum 0: L0 tile m=2, n=1, k=3, order m,n,k: 4 steps; A's region (m-tile, all k) changes
    #   with m only: 2 loads * 6 = 12; B[all k, n] changes every step: 4 * 3 = 12;
    #   T[2x1] entered 4 times -> 8 up.  Einsum 1: tiles m=2, n=2, p=1, order p,m,n: 4 steps;
    #   T[2x2] changes with m: 4 loads * 4 = 16; C[all n, p] changes with p: 2 * 2 = 4; Y[2x1] 4 entries -> 8 up.
    assert words(r, "DRAM->L0") == {"A": (12, 0), "B": (12, 0), "T": (16, 8), "C": (4, 0), "Y": (0, 8)}
    assert words(u.figures, "DRAM->L0") == words(r, "DRAM->L0")
    # Unfused time: max(24, 32) + max(16, 28) = 60; fused at the top: max(24 + 16, 60) = 60 too here.
    assert u.time == 60 and r.time == 60
    assert u.figures.op_calls == r.op_calls == 40


def test_fused_at_the_innermost_level():
    fs = mm3_two_levels(1)
    r = replay_fused(fs, "data")
    f = r.figures
    # Outer steps: m in 2 tiles, n in 2 tiles (order m, n): 4 steps. A[2x3] changes with m: 2*6 = 12;
    # B[3x1] changes with n: 4*3 = 12; C[1x2] changes with n: 4*2 = 8; Y[2x2] depends on m only
    # (m outer, n inner): 2 entries, created as zeros, each stored once -> 8 up.
    # T lives at L0 (a 2x1 tile per step) and never crosses the link.
    # L0: A 6 + B 3 + C 2 + Y 4 + the T tile 2.
    assert words(f, "DRAM->L0") == {"A": (12, 0), "B": (12, 0), "C": (8, 0), "Y": (0, 8)}
    assert f.occupancy == (("DRAM", 30), ("L0", 6 + 3 + 2 + 4 + 2))
    assert r.data_ok
    assert not differences(f, replay_fused(fs, "count").figures)


def test_replay_dispatches_fused_schedules():
    fs = mm3_at_l1()
    assert replay(fs, "count").figures == replay_fused(fs, "count").figures


def test_illegal_fused_schedules_are_named():
    fs = mm3_at_l1()
    from dataclasses import replace

    bad = replace(fs, stages=(fs.stages[0], fs.stages[1].__class__(fs.stages[1].workload, fs.stages[1].architecture,
                                                                     fs.stages[1].levels, (("T", "DRAM"),))))
    with pytest.raises(ScheduleError, match=r"stages\[1\]\.homes\.T: the intermediate T must be homed at the fusion level L1"):
        replay_fused(bad, "events")
    with pytest.raises(ScheduleError, match="stages: expected one stage per einsum"):
        replay_fused(replace(fs, stages=fs.stages[:1]), "count")


def test_a_fused_stage_with_a_placed_buffer_is_refused():
    """The fused replays hold each buffer's own level's tile: a stage whose buffer sits elsewhere (a schedule
    file may say so) is refused by name, not replayed as if at its default position."""
    from dataclasses import replace

    fs = mm3_at_l1()
    st = fs.stages[1]
    i = next(i for i in range(1, len(st.levels)) if st.levels[i].keep)
    t = sorted(st.levels[i].keep)[0]
    D = len(st.workload.dims)
    levels = list(st.levels)
    levels[i] = replace(levels[i], positions=((t, i * D - 1),))
    bad = replace(fs, stages=(fs.stages[0], replace(st, levels=tuple(levels))) + fs.stages[2:])
    for mode in ("count", "events"):
        with pytest.raises(ScheduleError, match=rf"stages\[1\]\.levels\[{i}\]\.positions\.{t}: buffers of fused stages "
                                                rf"sit at their level's default position {i * D} \(this version\), got {i * D - 1}"):
            replay_fused(bad, mode)
