"""TeAAL ``partitioning:`` operators replayed on sparse data: uniform_shape vs uniform_occupancy vs uniform_slice.

    python examples/sparse/partitioning.py

``spmttkrp_slice.yaml`` is the notebook's SpMTTKRP with ``I: [uniform_slice(8)]``
(its uniform-slice cells, written in the YAML). Each einsum is solved (dense,
the TeAAL mapping as constraints) and replayed on the nonzeros with the
partition the YAML gives (:func:`mapsearch.sparse.teaal_partition.teaal_partition`);
then rank ``I`` is re-partitioned over 16 instances three ways on a skewed
tensor (power-law slices) to show what each operator does to utilization.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

from mapsearch.model.problem import Problem
from mapsearch.presets import load_preset
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.sparse import Dense, Uniform, ciss, replay_sparse
from mapsearch.sparse.density import power_law
from mapsearch.sparse.teaal_partition import teaal_partition
from mapsearch.spec.load import read_yaml
from mapsearch.spec.teaal import teaal_from_dict

YAML = Path(__file__).resolve().parent / "spmttkrp_slice.yaml"
FORMATS = {"A": ciss(3), "T": ciss(3)}


def with_rank_i(doc: dict, op_t: str, op_y: str) -> dict:
    """The YAML with rank I of T's and Y's einsums partitioned by ``op_t`` / ``op_y``."""
    out = copy.deepcopy(doc)
    out["mapping"]["partitioning"]["T"]["I"] = [op_t]
    out["mapping"]["partitioning"]["Y"]["I"] = [op_y]
    return out


def run_chain(spec, arch, data: dict) -> list:
    """Solve and replay every einsum in order (each output feeds the next); the replays."""
    out = []
    for i, c in enumerate(spec.constraints(arch)):
        s = solve(Problem(spec.graph.stage(i), arch, ()), c, SolveOptions(time_limit=20)).schedule
        name = spec.graph.einsums[i].output.name
        p = teaal_partition(spec, name, data, FORMATS)
        r = replay_sparse(s, data, FORMATS, partition=p)
        data[name] = r.result
        out.append((name, p, r))
    return out


def main() -> None:
    arch = load_preset("edge-3level")
    doc = read_yaml(YAML)
    # 1. The YAML as written, on the notebook's densities (A 80/80/90 %, B and C dense).
    ext = {"I": 64, "J": 32, "K": 32, "F": 32}
    spec = teaal_from_dict(doc, str(YAML), ext)
    A = Uniform((0.8, 0.8, 0.9)).sample((64, 32, 32), seed=0, name="A")
    data = {"A": A, "B": Dense().sample((32, 32), 0, "B"), "C": Dense().sample((32, 32), 1, "C")}
    for name, p, r in run_chain(spec, arch, data):
        print(f"{name}: partition {p.method} ({p.parts} instances), data_ok {r.data_ok}, "
              f"effectual {r.effectual_ops}, utilization {r.utilization:.3f}")
    ref = np.einsum("ijk,kf,jf->if", A.to_dense(), data["C"].to_dense(), data["B"].to_dense())
    print("check_MTTKRP:", np.allclose(data["Y"].to_dense(), ref))
    # 2. Skewed A (256 power-law slices): rank I over 16 instances, three operators.
    ext = {"I": 256, "J": 32, "K": 32, "F": 16}
    S = power_law((256, 32, 32), 40000, alpha=1.1, seed=5, name="A")
    for op_t, op_y in (("uniform_shape(16)", "uniform_shape(16)"),
                       ("uniform_occupancy(A.16)", "uniform_occupancy(T.16)"),
                       ("uniform_slice(16)", "uniform_slice(16)")):
        spec = teaal_from_dict(with_rank_i(doc, op_t, op_y), str(YAML), ext)
        data = {"A": S, "B": Dense().sample((32, 16), 0, "B"), "C": Dense().sample((32, 16), 1, "C")}
        res = run_chain(spec, arch, data)
        print(f"skewed A, I: [{op_t}]: " + "; ".join(
            f"{name} utilization {r.utilization:.3f} over {p.parts} instances (nnz max/mean {p.imbalance:.2f})"
            for name, p, r in res))


if __name__ == "__main__":
    main()
