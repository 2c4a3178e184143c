"""A replay walk stops from outside (the stop hook of mapsearch/sim/stop.py) between two chunks, and keeps nothing.

The check replay after a solve polls the hook that the solve layer installs
on Ctrl-C (mapsearch/solve/interrupt.py); here the hook is a plain callable:
no solver, no signal.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from fused_helpers import arch as fused_arch, fused
from spatial_helpers import arch, level, matmul, schedule

from mapsearch.schedule.json_io import load_schedule
from mapsearch.sim import stop
from mapsearch.sim.replay import replay
from mapsearch.sim.stop import ReplayInterrupted, stop_when
from mapsearch.sim.walk import count_figures
from mapsearch.sim.walk_spatial import count_spatial
from mapsearch.spec.architecture import MeshAxis
from mapsearch.spec.workload import WorkloadGraph

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _array_schedule(e: int, instances: int = 4):
    """e^3 on an instances x instances array, L0 tiles of one MAC (as tests/sim/test_walk_guard.py)."""
    wl = matmul(e, e, e)
    a = arch(level("DRAM", None), level("L1", 1 << 40),
             level("L0", 3, [MeshAxis("x", instances, ("input",)), MeshAxis("y", instances, ("output",))]))
    return schedule(wl, a, [({"m": e, "n": e, "k": e}, "mnk", "ABZ"),
                            ({"m": 1, "n": 1, "k": 1}, "mnk", "ABZ",
                             [("m", e // instances, "x"), ("k", e // instances, "y")])])


def _fused():
    g = WorkloadGraph.from_texts("mm3", ["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n] * C[n,p]"],
                                 {"m": 4, "n": 2, "k": 3, "p": 2})
    homes = {"T": "L1"}
    s0 = ([{"m": 2}, {"m": 1, "n": 1, "k": 1}], [["m", "n", "k"], ["m", "n", "k"]], [{"A", "B"}, {"A", "B", "T"}], homes)
    s1 = ([{"m": 2}, {"m": 1, "n": 1, "p": 1}], [["m", "n", "p"], ["m", "p", "n"]], [{"C", "Y"}, {"T", "C", "Y"}], homes)
    return fused(g, fused_arch(), 1, [s0, s1])


SCHEDULES = {
    "tile by tile": lambda: load_schedule(EXAMPLES / "matmul-97x193x61.schedule.json"),
    "placed buffers": lambda: load_schedule(EXAMPLES / "placed-8x8x8.schedule.json"),
    "spatial splits": lambda: load_schedule(EXAMPLES / "array-4x4-matmul.schedule.json"),
    "spatial, folded": lambda: _array_schedule(256),
    "fused": _fused,
}


@pytest.mark.parametrize("mode", ["count", "data"])
@pytest.mark.parametrize("kind", sorted(SCHEDULES))
def test_a_stopped_walk_raises_and_keeps_nothing(kind: str, mode: str) -> None:
    s = SCHEDULES[kind]()
    if mode == "data" and kind == "spatial, folded":
        pytest.skip("the data walk of 2^24 MACs is long; the count walk stands for it")
    if mode == "data" and kind == "fused":
        pytest.skip("the fused data walk (sim/fused.py, its explicit caches) polls no hook; a chain's check is count")
    before = replay(s, mode=mode).figures
    with stop_when(lambda: True):
        with pytest.raises(ReplayInterrupted, match="stopped before it ended"):
            replay(s, mode=mode)
    with stop_when(lambda: False):  # a hook that never fires changes nothing
        assert replay(s, mode=mode).figures == before
    assert replay(s, mode=mode).figures == before  # the stopped walk left no state behind


def test_the_walk_polls_at_every_chunk_and_stops_at_the_first_yes() -> None:
    s = load_schedule(EXAMPLES / "matmul-97x193x61.schedule.json")
    calls = []

    def hook() -> bool:
        calls.append(1)
        return len(calls) == 5

    with stop_when(hook):
        with pytest.raises(ReplayInterrupted):
            count_figures(s, chunk=64)
    assert len(calls) == 5  # it walked four chunks, then stopped at the fifth poll


def test_no_hook_outside_the_block() -> None:
    with stop_when(lambda: True):
        with stop_when(None):  # lifted inside
            stop.poll()
        with pytest.raises(ReplayInterrupted):
            stop.poll()
    stop.poll()


def test_a_hook_is_not_seen_by_another_thread() -> None:
    seen = []
    with stop_when(lambda: True):
        t = threading.Thread(target=lambda: seen.append(stop._HOOK.get()))
        t.start()
        t.join()
    assert seen == [None]


def test_a_long_walk_with_spatial_splits_stops_within_about_a_second() -> None:
    # 2^20 lockstep steps of 16 instances walked one by one and unfolded: about 20 s of walking, in chunks of
    # seconds. The hook turns true while a chunk walks; the walk must end at its next buffer, not its next chunk.
    s = _array_schedule(256)
    fire = threading.Event()
    set_at: list[float] = []

    def ctrl_c() -> None:
        set_at.append(time.monotonic())
        fire.set()

    timer = threading.Timer(1.0, ctrl_c)
    start = time.monotonic()
    timer.start()
    try:
        with stop_when(fire.is_set):
            with pytest.raises(ReplayInterrupted):
                count_spatial(s, one_by_one=True, fold=False)
    finally:
        timer.cancel()
    ended = time.monotonic()
    assert set_at and ended - start < 10  # stopped by the hook, long before the walk's end
    # "Within about a second of walking": 3 s leaves room for a machine loaded twice over.
    assert ended - set_at[0] < 3.0, f"{ended - set_at[0]:.2f} s from the stop to the walk's end"
