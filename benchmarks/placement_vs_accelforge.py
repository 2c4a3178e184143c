"""Buffer placement (issue 14): mapsearch's optimum with and without placed buffers, next to AccelForge's figures.

    python benchmarks/placement_vs_accelforge.py [--time-limit S]

The AccelForge figures are those reported in issue 14: AccelForge 1.0.467's
mappings (LoopTree storage nodes; imperfect factorization on where marked),
counted under mapsearch's own contract by a LoopTree counter that
reproduces ``mapsearch replay`` exactly. AccelForge itself is not run here
(its mapper needs islpy-barvinok and the hwcomponents plugins); the table
reprints its figures as the issue gives them, as ratios to the even
optimum. Architectures: three levels, an unbounded top, L1 and L0 with the
capacities shown, scalar MAC, one clock per call; link costs as listed
(the issue gives them for the first and the ResNet case; the others use
``examples/arch-three-level.yaml``'s costs).

For each case: the even optimum (every buffer at its level's default
position, ``placement=False``), the optimum over the whole family
(placement searched), both replayed by the simulator (predicted == replayed
is checked), and the solve times as a ratio (placement / even).
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import Architecture, Compute, Level, Link  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402

MATMUL = "Z[m,n] += A[m,k] * B[k,n]"
CONV1X1 = "O[p,q,m] += I[p,q,c] * W[c,m]"


def arch(l1: int, l0: int, l1_cost: Fraction, l0_cost: Fraction, l0_lines: str) -> Architecture:
    return Architecture("af", (Level("L2", None, None), Level("L1", l1, Link(l1_cost, l1_cost, "shared")),
                               Level("L0", l0, Link(l0_cost, l0_cost, l0_lines))), Compute(), False)


# name, einsum, extents, architecture, AccelForge's figure as the issue states it
CASES = [
    ("8x8x8, L1 48, L0 12, 1 clk/word", MATMUL, {"m": 8, "n": 8, "k": 8}, arch(48, 12, 1, 1, "shared"), "704 words, same time"),
    ("12x12x12, L1 64, L0 12", MATMUL, {"m": 12, "n": 12, "k": 12}, arch(64, 12, 1, 1, "shared"), "0.88x the words"),
    ("ResNet-50 1x1 64->64 on 56x56, L1 4096 (4 clk/word), L0 128", CONV1X1, {"p": 56, "q": 56, "c": 64, "m": 64},
     arch(4096, 128, 4, 1, "shared"), "0.975x the words"),
    ("7x11x13, L1 40, L0 10 (imperfect on)", MATMUL, {"m": 7, "n": 11, "k": 13}, arch(40, 10, 1, 1, "shared"),
     "utilization 0.988, 0.85x the time, 0.83x the words"),
    ("64^3, L1 4096, L0 64 (imperfect on)", MATMUL, {"m": 64, "n": 64, "k": 64}, arch(4096, 64, 4, 1, "separate"),
     "0.96x the words"),
    ("97x193x61, L1 4096, L0 64 (imperfect on)", MATMUL, {"m": 97, "n": 193, "k": 61},
     arch(4096, 64, 4, 1, "separate"), "0.97x the words"),
]


def run(time_limit: float) -> None:
    print(f"{'case':<62} {'even (time/words)':>24} {'placed (time/words)':>24} {'words':>7} {'time':>6} "
          f"{'status':>9} {'solve x':>8}  AccelForge (issue 14)")
    for name, einsum, extents, architecture, theirs in CASES:
        w = Workload.from_text(name, einsum, extents)
        out = []
        for placement in (False, True):
            t0 = time.perf_counter()
            result = solve(Problem(w, architecture), options=SolveOptions(placement=placement, time_limit=time_limit))
            seconds = time.perf_counter() - t0
            s = result.schedule
            assert differences(s.predicted, replay(s, mode="count").figures) == [], name
            out.append((result, seconds))
        (even, t_even), (placed, t_placed) = out
        fe, fp = even.schedule.predicted, placed.schedule.predicted
        print(f"{name:<62} {f'{fe.time}/{fe.words_total:,}':>24} {f'{fp.time}/{fp.words_total:,}':>24} "
              f"{fp.words_total / fe.words_total:>7.3f} {float(fp.time / fe.time):>6.3f} {placed.status:>9} "
              f"{t_placed / t_even:>8.1f}  {theirs}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=300.0)
    run(parser.parse_args().time_limit)


if __name__ == "__main__":
    main()
