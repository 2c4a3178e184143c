"""The Tensaurus kernels on sparse data: solve (dense, TeAAL mapping), replay on the nonzeros, check, compare.

    python examples/sparse/tensaurus.py

The partitions here are built by hand; examples/sparse/partitioning.py writes
them in the YAML (``I: [uniform_slice(8)]``) and lets the spec build them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mapsearch.model.problem import Problem
from mapsearch.presets import load_preset
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.sparse import Dense, Uniform, ciss, replay_sparse, uniform_slice
from mapsearch.sparse.density import power_law
from mapsearch.sparse.model import compare, expected
from mapsearch.sparse.partition import uniform_shape_parts
from mapsearch.spec.teaal import load_teaal

TEAAL = Path(__file__).resolve().parents[1] / "chains/teaal"


def main() -> None:
    arch = load_preset("edge-3level")
    spec = load_teaal(TEAAL / "mttkrp.yaml", extents={"I": 64, "J": 32, "K": 32, "F": 32})
    g = spec.graph
    scheds = [solve(Problem(g.stage(i), arch, ()), c, SolveOptions(time_limit=20)).schedule
              for i, c in enumerate(spec.constraints(arch))]
    A = Uniform((0.8, 0.8, 0.9)).sample((64, 32, 32), seed=0, name="A")  # the notebook's densities
    data = {"A": A, "B": Dense().sample((32, 32), 0, "B"), "C": Dense().sample((32, 32), 1, "C")}
    for i, s in enumerate(scheds):
        driver = data[g.einsums[i].inputs[0].name]
        r = replay_sparse(s, data, {"A": ciss(3), "T": ciss(3)}, partition=uniform_slice(driver, 8))
        data[g.einsums[i].output.name] = r.result
        print(f"{g.einsums[i].text()}: data_ok {r.data_ok}, effectual {r.effectual_ops}/{s.workload.macs}, "
              f"intersection steps {r.intersection_steps}, utilization {r.utilization:.3f}")
        for l in r.links:
            print(f"  {l.name}: {l.words} words ({l.metadata} metadata)")
    ref = np.einsum("ijk,kf,jf->if", A.to_dense(), data["C"].to_dense(), data["B"].to_dense())
    print("check_MTTKRP:", np.allclose(data["Y"].to_dense(), ref))
    # Dense schedule vs its sparse expectation (stage 0).
    m = expected(scheds[0], {"A": Uniform((0.8, 0.8, 0.9))}, {"A": ciss(3)})
    for k, (dw, sw) in compare(scheds[0], m).items():
        print(f"  {k}: dense {dw:.0f}, sparse expected {sw:.0f}")
    # Skew: power-law slices over 16 instances.
    S = power_law((256, 32, 32), 40000, alpha=1.1, seed=5, name="A")
    skew = _skew_schedule(arch)
    for p in (uniform_shape_parts(S, 16), uniform_slice(S, 16)):
        r = replay_sparse(skew, {"A": S, "C": Dense().sample((32, 16), 1)},
                          {"A": ciss(3)}, partition=p, data=False)
        print(f"skewed A, {p.method}: utilization {r.utilization:.3f} (nnz per part max/mean {p.imbalance:.2f})")


def _skew_schedule(arch):
    spec = load_teaal(TEAAL / "mttkrp.yaml", extents={"I": 256, "J": 32, "K": 32, "F": 16})
    c = spec.constraints(arch)[0]
    return solve(Problem(spec.graph.stage(0), arch, ()), c, SolveOptions(time_limit=20)).schedule


if __name__ == "__main__":
    main()
