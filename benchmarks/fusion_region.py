"""Where does fusing the triple matmul pay off? Fused at L1 vs unfused over shapes and L1 capacities.

``T[m,n] += A[m,k] * B[k,n]; Y[m,p] += T[m,n] * C[n,p]`` with ``m = n`` and
``k = p`` on ``examples/chains/fusion-arch.yaml`` (DRAM -> L1 -> L0 32 words),
L1 capacity swept. For every point: the proven-optimal fused schedule at L1
(``solve_fused``) and the unfused baseline (``solve_unfused``), both replayed
(count mode; a mismatch aborts), and the ratios unfused / fused of time and
words (> 1: fusion wins).

    python benchmarks/fusion_region.py                      # default grid, ~3 minutes on 2 cores
    python benchmarks/fusion_region.py --mn 16 64 --kp 4 64 --l1 512 --out region.png
    python benchmarks/fusion_region.py --json region.json

The plot (``--out``, needs matplotlib) has one panel per L1 capacity: the
(m=n, k=p) grid coloured by the time ratio, each cell labelled with it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MM3 = ["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n] * C[n,p]"]
DEFAULT_ARCH = str(ROOT / "examples" / "chains" / "fusion-arch.yaml")


def point(args: tuple[int, int, int, str, float]) -> dict:
    mn, kp, l1, arch_path, limit = args
    from mapsearch.presets import resolve_architecture
    from mapsearch.schedule.figures import differences
    from mapsearch.sim.replay import replay_unfused
    from mapsearch.sim.replay import replay
    from mapsearch.solve.chain import solve_fused, solve_unfused
    from mapsearch.model.options import SolveOptions
    from mapsearch.spec.workload import WorkloadGraph

    arch, _ = resolve_architecture(arch_path)
    levels = list(arch.levels)
    levels[1] = replace(levels[1], capacity=l1)
    arch = replace(arch, levels=tuple(levels))
    g = WorkloadGraph.from_texts("mm3", MM3, {"m": mn, "n": mn, "k": kp, "p": kp})
    opts = SolveOptions(time_limit=limit)
    start = time.perf_counter()
    fused = solve_fused(g, arch, {}, 1, opts)
    unfused = solve_unfused(g, arch, {}, opts)
    row = {"mn": mn, "kp": kp, "l1": l1, "fused_status": fused.status, "unfused_status": unfused.status}
    if fused.schedule is not None:
        p = fused.schedule.predicted
        r = replay(fused.schedule, mode="count").figures
        if differences(p, r):
            raise SystemExit(f"REPLAY MISMATCH (fused) at m=n={mn} k=p={kp} L1={l1}: {differences(p, r)}")
        row.update(fused_time=Fraction(p.time), fused_words=p.words_total)
    stages = [s.schedule for s in unfused.stages]
    run = replay_unfused(g, stages, "count")
    for st, rr in zip(stages, run.stages):
        if differences(st.predicted, rr.figures):
            raise SystemExit(f"REPLAY MISMATCH (unfused) at m=n={mn} k=p={kp} L1={l1}")
    row.update(unfused_time=Fraction(unfused.time), unfused_words=unfused.words, seconds=time.perf_counter() - start)
    if "fused_time" in row:
        row["time_ratio"] = float(row["unfused_time"] / row["fused_time"])
        row["words_ratio"] = row["unfused_words"] / row["fused_words"]
    return row


def table(rows: list[dict]) -> str:
    head = ["L1", "m=n", "k=p", "fused time", "fused words", "unfused time", "unfused words", "time x", "words x", "winner"]
    lines = [head]
    for r in rows:
        ft = "-" if "fused_time" not in r else str(r["fused_time"])
        fw = "-" if "fused_words" not in r else f"{r['fused_words']:,}"
        tr = "-" if "time_ratio" not in r else f"{r['time_ratio']:.2f}"
        wr = "-" if "words_ratio" not in r else f"{r['words_ratio']:.2f}"
        win = "unfused" if "time_ratio" not in r or r["time_ratio"] < 1 else ("tie" if r["time_ratio"] == 1 else "fused")
        flag = "" if r["fused_status"] in ("OPTIMAL", "INFEASIBLE") and r["unfused_status"] == "OPTIMAL" else " (not proven)"
        lines.append([str(r["l1"]), str(r["mn"]), str(r["kp"]), ft, fw, str(r["unfused_time"]), f"{r['unfused_words']:,}",
                      tr, wr, win + flag])
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(l, widths)) for l in lines)


def plot(rows: list[dict], out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    caps = sorted({r["l1"] for r in rows})
    mns = sorted({r["mn"] for r in rows})
    kps = sorted({r["kp"] for r in rows})
    fig, axes = plt.subplots(1, len(caps), figsize=(4.2 * len(caps), 3.8), squeeze=False)
    for ax, cap in zip(axes[0], caps):
        grid = np.full((len(kps), len(mns)), np.nan)
        for r in rows:
            if r["l1"] == cap and "time_ratio" in r:
                grid[kps.index(r["kp"]), mns.index(r["mn"])] = np.log2(r["time_ratio"])
        im = ax.imshow(grid, origin="lower", cmap="RdBu", vmin=-2, vmax=2)
        for i in range(len(kps)):
            for j in range(len(mns)):
                if not np.isnan(grid[i, j]):
                    ax.text(j, i, f"{2 ** grid[i, j]:.2f}", ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(mns)), [str(v) for v in mns])
        ax.set_yticks(range(len(kps)), [str(v) for v in kps])
        ax.set_xlabel("m = n (intermediate T is m x n)")
        ax.set_ylabel("k = p")
        ax.set_title(f"L1 = {cap} words: unfused / fused time")
    fig.colorbar(im, ax=axes[0].tolist(), label="log2(unfused time / fused time); blue: fusion wins")
    fig.savefig(out, dpi=120, bbox_inches="tight")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mn", type=int, nargs="+", default=[16, 32, 64, 128], help="m = n values")
    ap.add_argument("--kp", type=int, nargs="+", default=[2, 8, 32, 64], help="k = p values")
    ap.add_argument("--l1", type=int, nargs="+", default=[256, 1024], help="L1 capacities (words)")
    ap.add_argument("--arch", default=DEFAULT_ARCH, help="architecture file (3 levels; L1 capacity is swept)")
    ap.add_argument("--time-limit", type=float, default=30.0, help="per solve (s)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", help="PNG of the region (matplotlib)")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    points = [(mn, kp, l1, args.arch, args.time_limit) for l1 in args.l1 for mn in args.mn for kp in args.kp]
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as ex:
        rows = list(ex.map(point, points))
    print(table(rows))
    fused_wins = sum(1 for r in rows if r.get("time_ratio", 0) > 1)
    print(f"\n{len(rows)} points in {time.perf_counter() - start:.0f} s: fusion faster at {fused_wins}, "
          f"not faster at {len(rows) - fused_wins}; every schedule replayed == predicted (count mode)")
    if args.json:
        Path(args.json).write_text(json.dumps([{k: (str(v) if isinstance(v, Fraction) else v) for k, v in r.items()}
                                               for r in rows], indent=1))
    if args.out:
        try:
            plot(rows, args.out)
            print(f"wrote {args.out}")
        except ImportError:
            print("matplotlib is not installed; no plot", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
