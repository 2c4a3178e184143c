"""2:4 structured weights: the schedule that is best for the structure, found exactly and checked on data.

    python examples/sparse/structured_sparsity.py [M N K]

``Z[m,n] += A[m,k] * W[n,k]`` on edge-3level, with W's rows holding 2 of
every 4 k (``NofM((1, 2), (1, 4))``: coordinates with ``k mod 4 < 2``) in
CSR (one pointer per row plus a coordinate and a value per nonzero). Three
schedules are compared on that data:

- the dense optimum (``solve``: the schedule for W dense);
- the optimum searched with ``Uniform`` of W's mean density (what a density-only
  model can do with the structure);
- the structure-aware optimum (``solve_sparse`` with the ``NofM`` itself): its
  words are exact, so they must equal the replay's count on the data.

"its model said" is each solve's own prediction: dense words, the Uniform
expectation, the exact count. On this layer the Uniform search happens to pick
the same schedule; on small buffers it sometimes does not (docs/sparse-solver.md).

The replay (``replay_sparse``) walks W's actual nonzeros and checks Z against
NumPy. Printed: words per link (predicted vs replayed), solve times.
"""

from __future__ import annotations

import sys
import time

from mapsearch.model.problem import Problem
from mapsearch.presets import load_preset
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.sparse import Dense, NofM, Uniform, csr, replay_sparse
from mapsearch.sparse.model import expected
from mapsearch.sparse.solve import solve_sparse
from mapsearch.spec.workload import Workload


def main(m: int = 512, n: int = 512, k: int = 1024) -> None:
    arch = load_preset("edge-3level")
    w = Workload.from_text("ffn", "Z[m,n] += A[m,k] * W[n,k]", {"m": m, "n": n, "k": k})
    problem = Problem(w, arch)
    structure = NofM((1, 2), (1, 4))
    fmts = {"W": csr(2)}
    opts = SolveOptions(time_limit=60)
    runs = []
    t = time.perf_counter()
    dense = solve(problem, options=opts).schedule
    runs.append(("dense optimum", dense, time.perf_counter() - t, dense.predicted.words_total))
    t = time.perf_counter()
    mean = solve_sparse(problem, {"W": Uniform((1.0, 0.5))}, fmts, options=opts)
    runs.append(("Uniform(1, 0.5) optimum", mean.schedule, time.perf_counter() - t, mean.words_total))
    t = time.perf_counter()
    exact = solve_sparse(problem, {"W": structure}, fmts, options=opts)
    runs.append(("2:4-aware optimum", exact.schedule, time.perf_counter() - t, exact.words_total))

    data = {"A": Dense().sample((m, k), 0, "A"), "W": structure.sample((n, k), 1, "W")}
    print(f"{w.einsum.text() if hasattr(w.einsum, 'text') else w.name}  M={m} N={n} K={k}, W 2:4 along k in CSR, "
          f"{arch.name}")
    print(f"{'schedule':26s} {'solve s':>8s} {'its model said':>15s} {'exact on 2:4':>13s} {'replayed':>12s}  per link (replayed)")
    for name, schedule, seconds, said in runs:
        model = expected(schedule, {"W": structure}, fmts)  # exact for NofM
        replayed = replay_sparse(schedule, data, fmts)
        assert replayed.data_ok, "Z differs from NumPy"
        assert all(a.words == b.words for a, b in zip(model.links, replayed.links))
        if schedule is exact.schedule:  # the solver's own prediction is exact
            assert [l.words for l in exact.links] == [l.words for l in replayed.links]
        per_link = ", ".join(f"{l.name} {l.words:,}" for l in replayed.links)
        print(f"{name:26s} {seconds:8.1f} {said:15,.0f} {model.words_total:13,.0f} "
              f"{sum(l.words for l in replayed.links):12,}  {per_link}")
    base = expected(runs[0][1], {"W": structure}, fmts).words_total
    print(f"2:4-aware optimum vs dense optimum: {exact.words_total / base - 1:+.1%} words "
          f"(status {exact.status}; solver prediction = replay, exactly)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
