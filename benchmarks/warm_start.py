"""Warm starts along a capacity sweep: each point hinted with the previous point's schedule, or not.

    python benchmarks/warm_start.py [--work-limit 5] [--time-limit 120] [--shapes 1024,1000x999x1001]
                                    [--capacities 16384,20480,24576,32768]

The 4-level architecture of ``solve_speed.py --targets`` (``DRAM -> L2 16 Ki
-> L1 1 Ki -> L0 64`` words, 4/2/1 clocks per word), its first level below
DRAM swept over ``--capacities`` (ascending: a schedule that fits a level fits
a larger one). Each point is solved twice under the same deterministic
``--work-limit`` per phase (one worker, seed 0, so the figures do not depend
on the machine's load): cold, and warm, hinted with the warm run's schedule
of the previous point (mapsearch/solve/warm_start.py; a sweep with
``warm_start: true`` does the same). Per point: status, time, words, the
words phase's bound and gap, and the wall seconds of each run.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from solve_speed import FOUR, matmul  # noqa: E402

from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402


def shape_of(text: str) -> tuple[int, int, int]:
    parts = [int(x) for x in text.split("x")]
    return tuple(parts * 3 if len(parts) == 1 else parts)  # type: ignore[return-value]


def with_capacity(capacity: int):
    levels = list(FOUR.levels)
    levels[1] = replace(levels[1], capacity=capacity)
    return replace(FOUR, levels=tuple(levels))


def row(label: str, result, seconds: float) -> str:
    words = {p.name: p for p in result.phases}.get("words")
    gap = f"{words.bound}/{words.gap:.1%}" if words else "-"
    return (f"{label:6} {result.status:9} {str(result.time):>12} {result.words:>12,} {gap:>22} {seconds:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-limit", type=float, default=5.0, help="CP-SAT deterministic seconds per phase")
    parser.add_argument("--time-limit", type=float, default=120.0, help="wall seconds per solve (a safety net)")
    parser.add_argument("--shapes", default="1024,1000x999x1001", help="matmul shapes, comma-separated (M or MxNxK)")
    parser.add_argument("--capacities", default="16384,20480,24576,32768", help="capacities of L2 (words), ascending")
    args = parser.parse_args()
    capacities = [int(c) for c in args.capacities.split(",")]
    options = SolveOptions(time_limit=args.time_limit, work_limit=args.work_limit, workers=1, seed=0)
    print(f"4 levels (DRAM -> L2 -> 1 Ki -> 64 words), work limit {args.work_limit:g} deterministic s per phase")
    header = f"{'case':28} {'run':6} {'status':9} {'time':>12} {'words':>12} {'words bound/gap':>22} {'solve s':>8}"
    print(header)
    print("-" * len(header))
    for text in args.shapes.split(","):
        m, n, k = shape_of(text)
        previous = None
        for capacity in capacities:
            problem = Problem(matmul(m, n, k), with_capacity(capacity))
            name = f"mm {m}x{n}x{k}, L2 {capacity // 1024} Ki"
            t0 = time.perf_counter()
            cold = solve(problem, options=options)
            cold_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            warm = solve(problem, options=replace(options, start=previous))
            warm_s = time.perf_counter() - t0
            print(f"{name:28} {row('cold', cold, cold_s)}")
            print(f"{'':28} {row('warm' if previous is not None else 'warm-', warm, warm_s)}", flush=True)
            previous = warm.schedule


if __name__ == "__main__":
    main()
