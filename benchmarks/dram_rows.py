"""DRAM rows as a solver term: what it buys and what it costs.

Per case, the same layer is solved three ways (``SolveOptions.dram_rows``):

- ``off``: time then words (the default); its transfers are then priced with
  row-major layouts and with the seed's one-row-per-channel layout;
- ``tiebreak``: time, words, then the fewest row openings, layouts chosen;
- ``before-words``: time, then row openings, then words.

For each it prints the solve seconds (and the ratio to ``off``), the words,
the row openings (rows each DRAM transfer touches, predicted = replayed) and
the row activations the replay's row buffer counts with each transfer in
address order. Ratios, not absolute times, are the figures to compare.

    python benchmarks/dram_rows.py [--quick]

Cases: the seed's layer (examples/dram/row-thrashing, one bank, 1 KiB rows,
1-byte words) and ResNet-50 conv2_x 3x3 on DRAM (DDR4-3200, 8 KiB rows,
2-byte words) / 64 Ki-word global buffer / 1 Ki-word L0.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from mapsearch.dram.geometry import preset
from mapsearch.dram.layout import LayoutSpec
from mapsearch.model.problem import Problem
from mapsearch.report.dram_rows import dram_rows_check
from mapsearch.sim.dram_trace import row_activations, row_openings
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.spec.architecture import Architecture, Level, Link
from mapsearch.spec.load import load_problem, load_workload

ROOT = Path(__file__).resolve().parents[1]


def cases(quick: bool):
    seed = ROOT / "examples" / "dram" / "row-thrashing"
    w, arch, homes = load_problem(seed / "workload.yaml", seed / "arch.yaml")
    yield "seed layer (PE mesh 16x16)", Problem(w, arch, tuple(homes.items()))
    if quick:
        return
    wl = load_workload(ROOT / "examples" / "conv-resnet50-3x3.yaml")
    arch = Architecture("dram-glb-l0", (Level("DRAM", None), Level("GLB", 1 << 16, Link()), Level("L0", 1 << 10, Link())),
                        dram=preset("ddr4-3200"))
    yield "ResNet-50 conv2_x 3x3", Problem(wl, arch)


def per_channel(problem: Problem) -> dict[str, LayoutSpec]:
    """The seed's layout for every tensor: one row per (first two axes), e.g. (n, c) of the input."""
    return {t: LayoutSpec("row_aligned", (), (), 2) for t in problem.workload.tensor_names}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the seed's layer only")
    ap.add_argument("--time-limit", type=float, default=300)
    args = ap.parse_args()
    for name, problem in cases(args.quick):
        print(f"== {name}")
        base = None
        for mode in ("off", "tiebreak", "before-words"):
            t0 = time.perf_counter()
            r = solve(problem, options=SolveOptions(time_limit=args.time_limit, dram_rows=mode))
            secs = time.perf_counter() - t0
            base = base or secs
            s = r.schedule
            words = s.predicted.words_total
            head = f"  {mode:13s} {r.status:8s} {secs:7.2f} s ({secs / base:4.1f}x)  words {words:>10,}"
            if mode == "off":
                dram = problem.architecture.dram
                rm = row_activations(s, dram, None).activations
                pc = per_channel(problem)
                print(f"{head}  row-major: {rm:,} activations; one row per channel: "
                      f"{sum(row_openings(s, dram, pc).values()):,} openings, "
                      f"{row_activations(s, dram, pc).activations:,} activations")
                continue
            check = dram_rows_check(s)
            assert not check.mismatches, check.mismatches
            acts = sum(n for _, n in check.activations)
            print(f"{head}  chosen layouts: {s.dram.total_row_openings:,} openings (replayed equal), {acts:,} activations")
            for t, desc in check.layouts:
                print(f"      {t}: {desc}")


if __name__ == "__main__":
    main()
