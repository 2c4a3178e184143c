"""Sparse solve cost: time of the density-model search against the dense search of the same problem.

Ratios measured in one run (these machines are noisy), per case:

- SpMM 256x256x64, A ``Uniform((0.9, 0.04))`` in CSR, edge-3level with a
  16 Ki-word GLB (examples/sparse/sparse_vs_dense.py): table footprints;
- ``Z[m,n] += A[m,k] * W[n,k]`` 512x512x1024, W 2:4 along k in CSR, edge-3level
  (examples/sparse/structured_sparsity.py): positional footprints;
- the chain enumeration of K = 1024 over two levels with and without the
  2:4 positional footprint.

Each line: dense seconds, sparse seconds, ratio, the sparse status, and
the words the sparse optimum saves on its own model against the dense optimum.

    python benchmarks/sparse_solve.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from mapsearch.model.chains import enumerate_chains
from mapsearch.model.footprints import positional_footprint
from mapsearch.model.problem import Problem
from mapsearch.presets import load_preset
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.sparse import NofM, csr
from mapsearch.sparse.model import expected
from mapsearch.sparse.solve import solve_sparse
from mapsearch.spec.workload import Workload

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples/sparse"))
import sparse_vs_dense  # noqa: E402  (its architecture and data)


def _case(name: str, problem: Problem, densities, formats) -> None:
    opts = SolveOptions(time_limit=120)
    t0 = time.perf_counter()
    dense = solve(problem, options=opts).schedule
    t1 = time.perf_counter()
    sparse = solve_sparse(problem, densities, formats, options=opts)
    t2 = time.perf_counter()
    on_dense = expected(dense, densities, formats).words_total
    print(f"{name:44s} dense {t1 - t0:6.2f} s  sparse {t2 - t1:6.2f} s  ratio {(t2 - t1) / (t1 - t0):5.2f}  "
          f"{sparse.status:8s} words {sparse.words_total:,.0f} vs {on_dense:,.0f} ({sparse.words_total / on_dense - 1:+.1%})")


def main() -> None:
    w = Workload.from_text("spmm", "Z[m,n] += A[m,k] * B[k,n]", sparse_vs_dense.EXTENTS)
    _case("SpMM 256x256x64, A Uniform 3.5% CSR", Problem(w, sparse_vs_dense.architecture()),
          {"A": sparse_vs_dense.DENSITY}, sparse_vs_dense.FORMATS)
    two_of_four = NofM((1, 2), (1, 4))
    w = Workload.from_text("ffn", "Z[m,n] += A[m,k] * W[n,k]", {"m": 512, "n": 512, "k": 1024})
    _case("512x512x1024, W 2:4 along k CSR (exact)", Problem(w, load_preset("edge-3level")),
          {"W": two_of_four}, {"W": csr(2)})
    g = two_of_four.box_factors(1, (512, 1024))[1]
    t0 = time.perf_counter()
    plain = enumerate_chains(1024, 2, ((1, 0), (0, 1)))
    t1 = time.perf_counter()
    with_positions = enumerate_chains(1024, 2, ((1, 0), (0, 1), positional_footprint("bench-2:4", g)))
    t2 = time.perf_counter()
    print(f"{'chains K=1024, 2 levels, +2:4 positional':44s} plain {t1 - t0:6.2f} s  positional {t2 - t1:6.2f} s  "
          f"ratio {(t2 - t1) / (t1 - t0):5.2f}  ({plain.raw_count:,} chains, {len(plain):,} / {len(with_positions):,} survive)")


if __name__ == "__main__":
    main()
