"""Solve the 16x16-array examples and (re)write their schedule JSONs (docs/arrays.md).

    python examples/array/regenerate.py          # writes the *.schedule.json files
    python examples/array/regenerate.py --check  # only compares with the shipped files

- ``matmul-128x96x64``: fills the array (utilization 1, array utilization 1);
- ``matmul-100x37x61``: cannot fill it (primes; the solver uses unequal parts: 988 clocks);
- ``matmul-100x37x61-unequal.schedule.json``: a hand-written schedule with
  unequal parts (m in parts of 7, k in parts of 4, 1,036 clocks, beaten by
  the solver), shipped without a prediction; ``mapsearch replay`` counts it;
- ``matmul-100x37x61-glb16.schedule.json``: hand-written: GLB tiles of 16
  in m and k, parts of 1, so the busiest PE does only 1,036
  calls, but B crosses DRAM->GLB 7 times and that link binds (1,600 clocks).

Solves use the default options (objective time then words, one worker,
seed 0: deterministic); a solved schedule is written only when its replay
equals its prediction.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import differences
from mapsearch.schedule.json_io import dumps_schedule, load_schedule, save_schedule
from mapsearch.schedule.schedule import LevelMapping, Schedule, SpatialSplit
from mapsearch.sim.replay import replay
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.spec.load import load_architecture, load_workload

HERE = Path(__file__).resolve().parent
ARCH = HERE / "arch-16x16.yaml"
SOLVED = ("matmul-128x96x64", "matmul-100x37x61")
UNEQUAL = "matmul-100x37x61-unequal"
GLB16 = "matmul-100x37x61-glb16"


def solve_example(name: str):
    w = load_workload(HERE / f"{name}.yaml")
    return solve(Problem(w, load_architecture(ARCH)), options=SolveOptions(time_limit=120))


def unequal_schedule() -> Schedule:
    """100x37x61 with unequal parts: m = 100 in parts of 7 on x (15 PEs; the last part 2),
    k = 61 in parts of 4 on y (16 PEs; the last part 1). The busiest PE does 7 x 37 x 4 = 1036 calls."""
    w = load_workload(HERE / "matmul-100x37x61.yaml")
    a = load_architecture(ARCH)
    levels = (
        LevelMapping("DRAM", (("m", 100), ("n", 37), ("k", 61))),
        LevelMapping("GLB", (("m", 100), ("n", 37), ("k", 61)), ("m", "n", "k"), frozenset("ABZ")),
        LevelMapping("PE", (("m", 2), ("n", 1), ("k", 2)), ("m", "k", "n"), frozenset("ABZ"),
                     (SpatialSplit("m", 7, "x"), SpatialSplit("k", 4, "y"))),
    )
    return Schedule(w, a, levels, ())


def glb16_schedule() -> Schedule:
    """100x37x61 with equal parts of 1: GLB tiles m16 n37 k16 (m: 7 pieces, k: 4), 16 x 16 parts.

    The best nest of this GLB tile (every GLB order, PE n-tile 1..3 and PE order, replayed)."""
    w = load_workload(HERE / "matmul-100x37x61.yaml")
    a = load_architecture(ARCH)
    levels = (
        LevelMapping("DRAM", (("m", 100), ("n", 37), ("k", 61))),
        LevelMapping("GLB", (("m", 16), ("n", 37), ("k", 16)), ("m", "n", "k"), frozenset("ABZ")),
        LevelMapping("PE", (("m", 1), ("n", 1), ("k", 1)), ("m", "n", "k"), frozenset("ABZ"),
                     (SpatialSplit("m", 1, "x"), SpatialSplit("k", 1, "y"))),
    )
    return Schedule(w, a, levels, ())


def describe(name: str, f) -> str:
    return (f"{name}: time {f.time}, compute time {f.compute_time}, utilization {f.utilization}, "
            f"array utilization {f.array_utilization} ({float(f.array_utilization):.4f}), words {f.words_total}, "
            f"links " + ", ".join(f"{l.name} {l.time}" for l in f.links))


def main(check: bool) -> int:
    bad = 0
    for name in SOLVED:
        result = solve_example(name)
        s = result.schedule
        replayed = replay(s, mode="count").figures
        assert differences(s.predicted, replayed) == [], differences(s.predicted, replayed)
        print(f"{result.status} in {result.solve_seconds:.1f} s; " + describe(name, replayed))
        path = HERE / f"{name}.schedule.json"
        if check:
            shipped = load_schedule(path)
            if shipped.levels != s.levels or differences(shipped.predicted, s.predicted):
                print(f"  {path.name} differs from the solve")
                bad += 1
        else:
            save_schedule(s, path)
    for name, s in ((UNEQUAL, unequal_schedule()), (GLB16, glb16_schedule())):
        print(describe(name, replay(s, mode="count").figures))
        path = HERE / f"{name}.schedule.json"
        if check:
            if path.read_text() != dumps_schedule(s):
                print(f"  {path.name} differs")
                bad += 1
        else:
            save_schedule(s, path)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))
