"""Dense-optimal vs sparse-optimal schedule of SpMM, and both replayed on a random sparse matrix.

Z[m,n] = A[m,k] B[k,n] with A uniform random (row density 0.9, then 4% of
each row's columns: about 3.6% nonzeros) in CSR, B and Z dense, on
edge-3level with a 16 Ki-word GLB (the preset's 256 Ki words hold every
tensor whole, so DRAM traffic could not differ). ``mapsearch.solve`` picks
the schedule for dense data; ``solve_sparse`` picks it for the expected
words of A's nonzeros and metadata. Both are priced by the density model
(``sparse.model.expected``) and replayed on one matrix drawn with the same
densities (``replay_sparse``).

Run: python examples/sparse/sparse_vs_dense.py
"""

from __future__ import annotations

import time
from dataclasses import replace

from mapsearch.model.problem import Problem
from mapsearch.presets import load_preset
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.sparse import Dense, Uniform, csr, replay_sparse
from mapsearch.sparse.model import expected
from mapsearch.sparse.solve import solve_sparse
from mapsearch.spec.workload import Workload

EXTENTS = {"m": 256, "k": 256, "n": 64}
DENSITY = Uniform((0.9, 0.04))
FORMATS = {"A": csr(2)}
SEED = 7


def architecture():
    arch = load_preset("edge-3level")
    levels = list(arch.levels)
    levels[1] = replace(levels[1], capacity=16384)
    return replace(arch, name="edge-3level, 16 Ki-word GLB", levels=tuple(levels))


def describe(schedule) -> str:
    parts = []
    for lv in schedule.levels[1:]:
        tiles = ",".join(f"{d}{t}" for d, t in lv.tile)
        parts.append(f"{lv.level}: [{tiles}] order {''.join(lv.order)} keeps {','.join(sorted(lv.keep))}")
    return "; ".join(parts)


def main() -> None:
    w = Workload.from_text("spmm", "Z[m,n] += A[m,k] * B[k,n]", EXTENTS)
    arch = architecture()
    p = Problem(w, arch)
    dens = {"A": DENSITY}
    opts = SolveOptions(time_limit=120)
    t0 = time.perf_counter()
    dense_opt = solve(p, options=opts).schedule
    t1 = time.perf_counter()
    sparse_opt = solve_sparse(p, dens, FORMATS, options=opts)
    t2 = time.perf_counter()
    print(f"SpMM {EXTENTS}, A ~ Uniform{DENSITY.densities} in CSR, on {arch.name}")
    print(f"dense solve {t1 - t0:.1f} s; sparse solve {t2 - t1:.1f} s ({sparse_opt.status}, "
          f"check tolerance {sparse_opt.tolerance:.1e})")
    print(f"  dense-optimal : {describe(dense_opt)}")
    print(f"  sparse-optimal: {describe(sparse_opt.schedule)}")
    A = DENSITY.sample((EXTENTS["m"], EXTENTS["k"]), SEED, "A")
    B = Dense().sample((EXTENTS["k"], EXTENTS["n"]), SEED + 1, "B")
    print(f"A drawn with seed {SEED}: {A.nnz} nonzeros ({A.nnz / (EXTENTS['m'] * EXTENTS['k']):.2%})")
    rows = []
    for name, sched in (("dense-optimal", dense_opt), ("sparse-optimal", sparse_opt.schedule)):
        model = expected(sched, dens, FORMATS)
        rep = replay_sparse(sched, {"A": A, "B": B}, FORMATS)
        assert rep.data_ok
        print(f"{name}: dense words {sched.predicted.words_total}, expected time {model.time:.0f} clocks, "
              f"replayed time {float(rep.time):.0f}")
        for lm, lr in zip(model.links, rep.links):
            err = (lr.words - lm.words) / lm.words if lm.words else 0.0
            print(f"  {lm.name:9s} expected {lm.words:10.1f} words (metadata {lm.metadata:8.1f})  "
                  f"replayed {lr.words:8d} (metadata {lr.metadata:6d})  error {100 * err:+.2f}%")
        rows.append((name, model, rep))
    (_, md, rd), (_, ms, rs) = rows
    print(f"expected words: dense-optimal {md.words_total:.1f}, sparse-optimal {ms.words_total:.1f} "
          f"({100 * (ms.words_total / md.words_total - 1):+.1f}%); replayed {rd.words_total} vs {rs.words_total} "
          f"({100 * (rs.words_total / rd.words_total - 1):+.1f}%)")
    print(f"effectual ops: expected {sparse_opt.effectual_ops:.1f}, replayed {rs.effectual_ops} "
          f"({100 * (rs.effectual_ops / sparse_opt.effectual_ops - 1):+.2f}%) of {w.macs} MACs")


if __name__ == "__main__":
    main()
