"""Replay speed on a 1024^3 matmul: count and data modes against NumPy's own matmul.

Three levels: L2 (home of everything, unbounded), L1 with 256^3 tiles, L0 with
16^3 tiles: 262,144 innermost tiles. Targets, as ratios to ``A @ B`` measured
in the same run (the machine is noisy, so each time is the best of a few
repetitions): count mode <= 2x, data mode <= 10x.

    python benchmarks/replay_speed.py [--repeat 5] [--tile-path]

``--tile-path`` also times data mode's schedule-order path (``method="tiles"``:
per-chunk batched einsum of gathered operands), once, for information.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.data import replay_data
from mapsearch.sim.walk import replay_count
from mapsearch.spec.architecture import Architecture, Level, Link
from mapsearch.spec.workload import Workload

E, T1, T0 = 1024, 256, 16
COUNT_TARGET, DATA_TARGET = 2.0, 10.0


def benchmark_schedule() -> Schedule:
    wl = Workload.from_text("mm1024", "Z[m,n] += A[m,k] * B[k,n]", {"m": E, "n": E, "k": E})
    arch = Architecture(
        "three-level",
        (Level("L2", None), Level("L1", 3 * T1 * T1, Link()), Level("L0", 3 * T0 * T0, Link())),
    )
    tile = lambda t: tuple((d, t) for d in "mnk")  # noqa: E731
    levels = (
        LevelMapping("L2", tile(E)),
        LevelMapping("L1", tile(T1), ("m", "n", "k"), frozenset("ABZ")),
        LevelMapping("L0", tile(T0), ("n", "k", "m"), frozenset("ABZ")),
    )
    return Schedule(wl, arch, levels, ())


def best_of(repeat: int, fn) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tile-path", action="store_true")
    args = ap.parse_args()

    s = benchmark_schedule()
    rng = np.random.default_rng(0)
    a, b = rng.random((E, E)), rng.random((E, E))
    t_mm, _ = best_of(args.repeat, lambda: a @ b)
    t_count, counted = best_of(args.repeat, lambda: replay_count(s))
    t_data, data = best_of(args.repeat, lambda: replay_data(s))
    assert counted.figures == data.figures and data.data_ok, "data mode disagrees"
    tiles = 1024**3 // T0**3
    print(f"1024^3 matmul, 3 levels (L1 {T1}^3, L0 {T0}^3 tiles: {tiles:,} innermost tiles), best of {args.repeat}")
    print(f"numpy matmul : {t_mm:8.4f} s")
    print(f"count mode   : {t_count:8.4f} s  ratio {t_count / t_mm:6.2f}x  target <= {COUNT_TARGET:g}x  {'PASS' if t_count <= COUNT_TARGET * t_mm else 'MISS'}")
    print(f"data mode    : {t_data:8.4f} s  ratio {t_data / t_mm:6.2f}x  target <= {DATA_TARGET:g}x  {'PASS' if t_data <= DATA_TARGET * t_mm else 'MISS'}  (max abs error {data.max_abs_error:.2e})")
    if args.tile_path:
        t_tiles, tiled = best_of(1, lambda: replay_data(s, method="tiles"))
        print(f"data, tiles  : {t_tiles:8.4f} s  ratio {t_tiles / t_mm:6.2f}x  (schedule-order path, information only; ok={tiled.data_ok})")


if __name__ == "__main__":
    main()
