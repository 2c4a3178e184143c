"""The check replay against the solve it checks (issue 16: "the check takes at most the solve's time").

Every ``mapsearch solve`` replays its schedule in count mode. Two cases where
that check used to dwarf the solve:

1. The 2024 Timeloop tutorial's layer (8.6 G MACs on 8 PEs,
   ``tests/data/peers/timeloop/tutorial_2024``): its output has 67 M possible
   (instance, region) keys, which the fold's box queries scanned whole (45 s
   of check after a 2.5 s solve; ``mapsearch/sim/key_set.py`` now reads only
   the occupied cells). Printed: the solve's seconds, the check's, their ratio.
2. A fused attention chain (``S[i,j] += Q[i,d]*K[j,d]``, ``O[i,e] +=
   S[i,j]*V[j,e]``, i = j = 4000, d = e = 128, fused at L2 over i), 21 M
   innermost tiles per stage: the fused count replay folded
   (``mapsearch/sim/fused_count.py``) against the tile-by-tile walk it
   replaces; the figures must be equal.

    python benchmarks/check_speed.py [--skip-tutorial] [--skip-fused]
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction
from pathlib import Path

from mapsearch import api
from mapsearch.schedule.figures import differences
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.fused_count import count_fused
from mapsearch.sim.replay import replay
from mapsearch.sim.walk_folded import innermost_tiles
from mapsearch.spec.architecture import Architecture, Level, Link
from mapsearch.spec.workload import WorkloadGraph

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "tests" / "data" / "peers" / "timeloop" / "tutorial_2024"


def tutorial() -> None:
    loaded = api.load_problem(TUTORIAL / "problem.yaml", TUTORIAL / "arch.yaml", TUTORIAL / "variables.yaml")
    start = time.perf_counter()
    result = api.solve(loaded.workload, loaded.architecture, loaded.constraints, time_limit=10, workers=1,
                       replay_mode=None)
    solve_s = time.perf_counter() - start
    start = time.perf_counter()
    replayed = replay(result.schedule, "count")
    check_s = time.perf_counter() - start
    same = differences(result.figures, replayed.figures) == []
    print(f"tutorial 2024 layer: {result.status}, solve {solve_s:.1f} s, check {check_s:.1f} s, "
          f"check/solve {check_s / solve_s:.2f} (target <= 1); replay == prediction: {same}")


def attention(n: int) -> FusedSchedule:
    texts = ["S[i,j] += Q[i,d] * K[j,d]", "O[i,e] += S[i,j] * V[j,e]"]
    g = WorkloadGraph.from_texts("attention", texts, {"i": n, "j": n, "d": 128, "e": 128})
    a = Architecture("four", (Level("DRAM", None), Level("L2", None, Link(Fraction(1))),
                              Level("L1", None, Link(Fraction(1, 2))), Level("L0", None, Link(Fraction(1, 4)))))
    stages = []
    for e in range(2):
        w = g.stage(e)
        full = {d: w.extent[d] for d in w.dims}
        t2 = {d: {"i": 16, "j": 250, "d": 32, "e": 32}[d] for d in w.dims}
        t3 = {d: {"i": 4, "j": 3, "d": 8, "e": 8}[d] for d in w.dims}
        levels = (LevelMapping("DRAM", tuple(full.items())),
                  LevelMapping("L2", tuple({**full, "i": 64}.items()), w.dims,
                               frozenset(t for t in w.tensor_names if t != "S")),
                  LevelMapping("L1", tuple(t2.items()), tuple(reversed(w.dims)), frozenset(w.tensor_names)),
                  LevelMapping("L0", tuple(t3.items()), w.dims, frozenset(w.tensor_names)))
        stages.append(Schedule(w, a, levels, (("S", "L2"),)))
    return FusedSchedule(g, a, 1, tuple(stages))


def fused(n: int = 4000) -> None:
    fs = attention(n)
    tiles = sum(innermost_tiles(st) for st in fs.stages)
    start = time.perf_counter()
    folded = count_fused(fs)
    folded_s = time.perf_counter() - start
    start = time.perf_counter()
    walked = count_fused(fs, explicit_tiles=tiles + 1)  # every stage walked tile by tile
    walked_s = time.perf_counter() - start
    print(f"fused attention i=j={n} ({tiles:,} innermost tiles): folded {folded_s:.3f} s, tile walk "
          f"{walked_s:.1f} s ({walked_s / max(folded_s, 1e-3):,.0f}x); figures equal: "
          f"{differences(walked, folded) == []}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-tutorial", action="store_true")
    ap.add_argument("--skip-fused", action="store_true")
    args = ap.parse_args()
    if not args.skip_tutorial:
        tutorial()
    if not args.skip_fused:
        fused()


if __name__ == "__main__":
    main()
