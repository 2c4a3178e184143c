"""Warm starts along capacity sweeps: each point hinted with the previous point's schedule, or not.

    python benchmarks/warm_start.py [--work-limit 5] [--time-limit 300] [--sweeps four,conv]

Sweeps (capacities ascending: a schedule that fits a buffer fits a larger one):

- ``four``: the 4-level architecture of ``solve_speed.py --targets``
  (``DRAM -> L2 16 Ki -> L1 1 Ki -> L0 64`` words, 4/2/1 clocks per word),
  its first level below DRAM at 16, 20, 24 and 32 Ki words; matmuls 1024^3
  and 1000x999x1001;
- ``conv``: the ResNet-50 3x3 conv (N=1, K=C=64, P=Q=56) on the 3-level
  architecture of ``solve_speed.py`` (L1 at 32, 48 and 64 Ki words, L0 512).

Each point is solved twice under the same deterministic ``--work-limit`` per
phase (one worker, seed 0: the figures do not depend on the machine's
load): cold, and warm, hinted with the warm run's schedule of the previous
point (mapsearch/solve/warm_start.py; a sweep with ``warm_start: true``
does the same; ``warm0``: the first point, which has no start). Per point:
status, time, words, the words phase's bound and gap, and the wall seconds
of each run.
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

from solve_speed import CONV, FOUR, RESNET_3X3, matmul, three_levels  # noqa: E402

from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402

KI = 1024


def four_levels(capacity: int):
    levels = list(FOUR.levels)
    levels[1] = replace(levels[1], capacity=capacity)
    return replace(FOUR, levels=tuple(levels))


SWEEPS = {
    "four": [(f"mm {m}x{n}x{k}, 4L", matmul(m, n, k), "L2", four_levels, [16 * KI, 20 * KI, 24 * KI, 32 * KI])
             for m, n, k in ((1024, 1024, 1024), (1000, 999, 1001))],
    "conv": [("resnet50 3x3, 3L", Workload.from_text("resnet3x3", CONV, RESNET_3X3), "L1",
              lambda c: three_levels(l1=c), [32 * KI, 48 * KI, 64 * KI])],
}


def row(label: str, result, seconds: float) -> str:
    words = {p.name: p for p in result.phases}.get("words")
    gap = f"{words.bound}/{words.gap:.1%}" if words else "-"
    return f"{label:5} {result.status:9} {str(result.time):>12} {result.words:>12,} {gap:>22} {seconds:8.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-limit", type=float, default=5.0, help="CP-SAT deterministic seconds per phase")
    parser.add_argument("--time-limit", type=float, default=300.0, help="wall seconds per solve (a safety net)")
    parser.add_argument("--sweeps", default="four,conv", help="which sweeps: " + ", ".join(SWEEPS))
    args = parser.parse_args()
    options = SolveOptions(time_limit=args.time_limit, work_limit=args.work_limit, workers=1, seed=0)
    print(f"work limit {args.work_limit:g} deterministic s per phase, one worker, seed 0")
    header = f"{'case':34} {'run':5} {'status':9} {'time':>12} {'words':>12} {'words bound/gap':>22} {'solve s':>8}"
    print(header)
    print("-" * len(header))
    for name in args.sweeps.split(","):
        for label, workload, level, architecture, capacities in SWEEPS[name]:
            previous = None
            for capacity in capacities:
                problem = Problem(workload, architecture(capacity))
                t0 = time.perf_counter()
                cold = solve(problem, options=options)
                cold_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                warm = solve(problem, options=replace(options, start=previous))
                warm_s = time.perf_counter() - t0
                print(f"{f'{label}, {level} {capacity // KI} Ki':34} {row('cold', cold, cold_s)}")
                print(f"{'':34} {row('warm' if previous is not None else 'warm0', warm, warm_s)}", flush=True)
                previous = warm.schedule


if __name__ == "__main__":
    main()
