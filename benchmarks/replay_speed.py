"""Replay speed on a 1024^3 matmul: count and data modes against NumPy's own matmul.

Three levels: L2 (home of everything, unbounded), L1 with 256^3 tiles, L0 with
16^3 tiles: 262,144 innermost tiles. Targets, as ratios to ``A @ B`` measured
in the same run (the machine is noisy, so each time is the best of a few
repetitions): count mode <= 2x, data mode <= 10x.

The folded walk (``mapsearch/sim/walk_folded.py``, what count mode runs above
``EXPLICIT_TILES`` innermost tiles) is timed on the same schedule beside the
tile-by-tile walk (their figures must be equal), and on a 65536^3 matmul of
2^39 innermost tiles, which no tile-by-tile walk visits: target, the folded
count of 2^39 tiles within 1x the 1024^3 NumPy matmul.

    python benchmarks/replay_speed.py [--repeat 5] [--tile-path]

Array schedules (``mapsearch/sim/spatial_fold.py``): a 256^3 matmul on a
16x16 array with one-MAC tiles, folded against the full lockstep walk
(figures must be equal), and 4096^3 on a 4x4 array (4.3e9 cells unfolded).
Target: the folded 4096^3 walk within 60 s, the check's share of a
one-minute solve.

``--tile-path`` also times data mode's schedule-order path (``method="tiles"``:
per-chunk batched einsum of gathered operands), once, for information.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mapsearch.schedule.figures import differences
from mapsearch.schedule.schedule import LevelMapping, Schedule, SpatialSplit
from mapsearch.sim.data import replay_data
from mapsearch.sim.walk import replay_count, walk_figures
from mapsearch.sim.spatial_fold import walk_folded
from mapsearch.sim.walk_folded import fold_figures, innermost_tiles
from mapsearch.sim.walk_spatial import WALK_CELLS_PER_SECOND, SpatialWalk, count_spatial
from mapsearch.spec.architecture import Architecture, Level, Link, MeshAxis
from mapsearch.spec.workload import Workload

E, T1, T0 = 1024, 256, 16
COUNT_TARGET, DATA_TARGET, FOLD_TARGET = 2.0, 10.0, 1.0
ARRAY_TARGET_S = 60.0


def array_schedule(e: int, mesh: int, part_m: int, part_k: int, l1: dict | None = None) -> Schedule:
    """e^3 on a mesh x mesh array under one L1 (m over x multicasts inputs, k over y reduces outputs),
    L0 tiles of one MAC."""
    wl = Workload.from_text(f"mm{e}", "Z[m,n] += A[m,k] * B[k,n]", {"m": e, "n": e, "k": e})
    axes = (MeshAxis("x", mesh, ("input",)), MeshAxis("y", mesh, ("output",)))
    arch = Architecture("array", (Level("L2", None), Level("L1", None, Link()),
                                  Level("L0", None, Link(), mesh * mesh, axes)))
    l1 = l1 or {"m": e, "n": e, "k": e}
    levels = (
        LevelMapping("L2", tuple((d, e) for d in "mnk")),
        LevelMapping("L1", tuple((d, l1[d]) for d in "mnk"), ("m", "n", "k"), frozenset("ABZ")),
        LevelMapping("L0", (("m", 1), ("n", 1), ("k", 1)), ("n", "m", "k"), frozenset("ABZ"), (
            SpatialSplit("m", part_m, "x"), SpatialSplit("k", part_k, "y"))),
    )
    return Schedule(wl, arch, levels, ())


def array_walks(repeat: int) -> None:
    s = array_schedule(256, 16, 8, 16, {"m": 128, "n": 128, "k": 256})
    t_full, full = best_of(1, lambda: count_spatial(s, fold=False))
    t_fold, folded = best_of(repeat, lambda: count_spatial(s))
    assert differences(full, folded) == [], "the folded array walk disagrees with the full walk"
    print(f"array 256^3 on 16x16: full walk {t_full:8.4f} s, folded {t_fold:8.4f} s, ratio {t_fold / t_full:7.4f}x "
          "(figures equal)")
    big = array_schedule(4096, 4, 1024, 1024)
    walk = SpatialWalk(big, False, None)
    t0 = time.perf_counter()
    walk_folded(walk)
    walk.figures()
    t_big = time.perf_counter() - t0
    print(f"array 4096^3 on 4x4: {walk.total_cells:,} cells unfolded (about {walk.total_cells / WALK_CELLS_PER_SECOND / 3600:,.1f} "
          f"hours), folded {walk.cells:,} in {t_big:6.2f} s  target <= {ARRAY_TARGET_S:g} s  "
          f"{'PASS' if t_big <= ARRAY_TARGET_S else 'MISS'}")


def huge_schedule() -> Schedule:
    """65536^3 on three levels (L1 16x256x512, L0 16x16x2): 2^39 innermost tiles."""
    e = 65536
    wl = Workload.from_text("mm65536", "Z[m,n] += A[m,k] * B[k,n]", {"m": e, "n": e, "k": e})
    arch = Architecture("three-level", (Level("L2", None), Level("L1", 1 << 18, Link()), Level("L0", 512, Link())))
    levels = (
        LevelMapping("L2", tuple((d, e) for d in "mnk")),
        LevelMapping("L1", (("m", 16), ("n", 256), ("k", 512)), ("k", "n", "m"), frozenset("ABZ")),
        LevelMapping("L0", (("m", 16), ("n", 16), ("k", 2)), ("m", "n", "k"), frozenset("ABZ")),
    )
    return Schedule(wl, arch, levels, ())


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
    t_walk, walked = best_of(args.repeat, lambda: walk_figures(s))
    t_fold, folded = best_of(args.repeat, lambda: fold_figures(s))
    assert walked == folded, "the folded walk disagrees with the tile-by-tile walk"
    print(f"walk, tiles  : {t_walk:8.4f} s  ({tiles / t_walk:,.0f} innermost tiles/s)")
    print(f"walk, folded : {t_fold:8.4f} s  ratio to the tile-by-tile walk {t_fold / t_walk:8.5f}x  (figures equal)")
    big = huge_schedule()
    n_big = innermost_tiles(big)
    t_big, _ = best_of(args.repeat, lambda: fold_figures(big))
    print(f"65536^3, {n_big:,} innermost tiles: folded {t_big:8.4f} s  ratio {t_big / t_mm:6.3f}x the 1024^3 matmul  "
          f"target <= {FOLD_TARGET:g}x  {'PASS' if t_big <= FOLD_TARGET * t_mm else 'MISS'}  "
          f"(tile by tile at the rate above: about {n_big / (tiles / t_walk) / 3600:,.0f} hours)")
    array_walks(args.repeat)
    if args.tile_path:
        t_tiles, tiled = best_of(1, lambda: replay_data(s, method="tiles"))
        print(f"data, tiles  : {t_tiles:8.4f} s  ratio {t_tiles / t_mm:6.2f}x  (schedule-order path, information only; ok={tiled.data_ok})")


if __name__ == "__main__":
    main()
