"""Sparse replay speed: nonzeros per second on a tensor with a million nonzeros.

SpMM (the Tensaurus GEMM kernel, examples/chains/teaal/gemm.yaml) with
A: 4096 x 4096 at fromRandom densities (0.9, 0.068) (about 1.0 M nonzeros,
CSR) and B: 4096 x 32 dense, on edge-3level, the schedule from
mapsearch.solve under the TeAAL mapping. Counts mode (words, effectual ops,
intersections, uniform_slice work over 64 instances) and data mode (plus the
result and the dense NumPy check).

    python benchmarks/sparse_replay.py
"""

from __future__ import annotations

import time
from pathlib import Path

from mapsearch.model.problem import Problem
from mapsearch.presets import load_preset
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.sparse import Dense, Uniform, csr, replay_sparse, uniform_slice
from mapsearch.spec.teaal import load_teaal

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    arch = load_preset("edge-3level")
    spec = load_teaal(ROOT / "examples/chains/teaal/gemm.yaml", extents={"I": 4096, "J": 4096, "K": 32})
    (cons,) = spec.constraints(arch)
    t0 = time.perf_counter()
    sched = solve(Problem(spec.graph.stage(0), arch, ()), cons, SolveOptions(time_limit=30)).schedule
    t1 = time.perf_counter()
    A = Uniform((0.9, 0.068)).sample((4096, 4096), seed=0, name="A")
    B = Dense().sample((4096, 32), seed=1, name="B")
    t2 = time.perf_counter()
    print(f"solve {t1 - t0:.2f} s; A: {A.nnz} nonzeros made in {t2 - t1:.2f} s")
    for data in (False, True):
        best = None
        for _ in range(2):
            s = time.perf_counter()
            r = replay_sparse(sched, {"A": A, "B": B}, {"A": csr(2)}, partition=uniform_slice(A, 64), data=data)
            dt = time.perf_counter() - s
            best = dt if best is None else min(best, dt)
        mode = "data " if data else "count"
        print(f"{mode}: {best:.2f} s, {A.nnz / best / 1e6:.2f} M nonzeros/s; effectual ops {r.effectual_ops}, "
              f"words {r.words_total} (metadata {sum(l.metadata for l in r.links)}), "
              f"intersection steps {r.intersection_steps}, utilization {r.utilization:.3f}, data_ok {r.data_ok}")


if __name__ == "__main__":
    main()
