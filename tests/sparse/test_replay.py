"""The sparse replay: dense equivalence, effectual ops, intersections, the four Tensaurus kernels, skew."""

from __future__ import annotations

import numpy as np
import pytest

from mapsearch.sim.walk import count_figures
from mapsearch.sparse import Dense, Uniform, ciss, csf, csr, dense, replay_sparse, uniform_slice
from mapsearch.sparse.density import power_law
from mapsearch.sparse.partition import uniform_shape_parts

from .conftest import kernel_schedules

GEMM = (("I", 64), ("J", 64), ("K", 64))


def test_dense_data_replays_the_dense_counts():
    """All-dense data in dense formats: every link's words per tensor equal the dense count replay's."""
    spec, (s,) = kernel_schedules("gemm", GEMM)
    r = replay_sparse(s, {"A": Dense().sample((64, 64), 0), "B": Dense().sample((64, 64), 1)})
    f = count_figures(s)
    assert r.data_ok and r.effectual_ops == s.workload.macs
    for lf, lw in zip(f.links, r.links):
        for tt in lf.tensors:
            w = lw.tensor(tt.tensor)
            assert (w.payload_down, w.payload_up) == (tt.words_down, tt.words_up) and w.meta_down == w.meta_up == 0
        assert lw.time == lf.time


def _merge_steps(a, s):
    i = j = steps = 0
    while i < len(a) and j < len(s):
        steps += 1
        if a[i] == s[j]:
            i += 1
            j += 1
        elif a[i] < s[j]:
            i += 1
        else:
            j += 1
    return steps


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_effectual_ops_and_intersections_brute_force(seed):
    spec, (s,) = kernel_schedules("gemm", (("I", 12), ("J", 20), ("K", 6)))
    A = Uniform((0.8, 0.3)).sample((12, 20), seed)
    B = Uniform((0.5, 0.6)).sample((20, 6), seed + 10)
    tensors = {"A": A, "B": B}
    for fb, per_fiber in ((csf(2), "merge"), (dense(2), "probe")):
        r = replay_sparse(s, tensors, {"A": csr(2), "B": fb})
        ma, mb = A.to_dense() != 0, B.to_dense() != 0
        assert r.effectual_ops == int(np.einsum("ij,jk->", ma.astype(int), mb.astype(int))) and r.data_ok
        brows = sorted(set(np.flatnonzero(mb.any(axis=1)).tolist()))
        want = 0
        for i in range(12):
            a = np.flatnonzero(ma[i]).tolist()
            if a:
                want += _merge_steps(a, brows) if per_fiber == "merge" else len(a)
        assert r.intersection_steps == want


def test_skip_empty_tiles():
    spec, (s,) = kernel_schedules("gemm", GEMM)
    A = Uniform((0.1, 0.05)).sample((64, 64), 3)
    B = Dense().sample((64, 64), 4)
    full = replay_sparse(s, {"A": A, "B": B}, {"A": csr(2)}, data=False)
    skip = replay_sparse(s, {"A": A, "B": B}, {"A": csr(2)}, data=False, skip_empty=True)
    assert skip.links[-1].tensor("B").payload_down < full.links[-1].tensor("B").payload_down
    assert skip.effectual_ops == full.effectual_ops


# The notebook's densities (A sparse, factor matrices dense), larger shapes than its video-sized ones.
KERNELS = {
    "mttkrp": ((("I", 48), ("J", 24), ("K", 24), ("F", 32)), (0.8, 0.8, 0.9)),
    "ttmc": ((("I", 48), ("J", 16), ("K", 16), ("U", 32), ("V", 8)), (0.8, 0.8, 0.9)),
    "gemm": ((("I", 64), ("J", 64), ("K", 64)), (0.8, 0.8)),
    "gemv": ((("I", 64), ("J", 64)), (0.9, 0.9)),
}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_tensaurus_kernels(name):
    """Solve each einsum (TeAAL mapping as constraints), replay on fromRandom data, check as the notebook does."""
    ext, dens = KERNELS[name]
    spec, scheds = kernel_schedules(name, ext)
    g = spec.graph
    e = g.extent
    data = {}
    for k, t in enumerate(sorted({a.name for ein in g.einsums for a in ein.inputs} - set(g.intermediates))):
        dims = [d for ein in g.einsums for a in ein.inputs if a.name == t for d in a.dims_in_order()][: len(spec.rank_order[t])]
        shape = tuple(e[d] for d in dims)
        density = Uniform(dens) if t == "A" else Dense()
        data[t] = density.sample(shape, seed=k, name=t)
    fmt = {"A": ciss(len(data["A"].shape)), "T": ciss(3)}
    for i, s in enumerate(scheds):
        out = g.einsums[i].output.name
        parts = max(1, e["i"] // 8)  # the notebook's I1 space loop: uniform_shape(8) instances
        driver = data[g.einsums[i].inputs[0].name]
        r = replay_sparse(s, data, fmt, partition=uniform_slice(driver, parts))
        assert r.data_ok, (name, i, r.max_abs_error)
        assert r.effectual_ops <= s.workload.macs and r.links[0].metadata > 0
        data[out] = r.result
        print(f"{name}[{i}] {g.einsums[i].text()}: effectual {r.effectual_ops}/{s.workload.macs}, "
              f"words {r.words_total} (meta {sum(l.metadata for l in r.links)}), utilization {r.utilization:.3f}")
    # The notebook's check: the chain's final output against a dense computation from the inputs.
    A = data["A"].to_dense()
    ref = {
        "mttkrp": lambda: np.einsum("ijk,kf,jf->if", A, data["C"].to_dense(), data["B"].to_dense()),
        "ttmc": lambda: np.einsum("ijk,ku,jv->ivu", A, data["C"].to_dense(), data["B"].to_dense()),
        "gemm": lambda: A @ data["B"].to_dense(),
        "gemv": lambda: A @ data["B"].to_dense(),
    }[name]()
    assert np.allclose(data["Y"].to_dense(), ref)


def test_skewed_tensor_utilization():
    """Power-law slices: uniform_slice balances the instances far better than uniform_shape (replayed work)."""
    spec, scheds = kernel_schedules("mttkrp", (("I", 256), ("J", 32), ("K", 32), ("F", 16)))
    A = power_law((256, 32, 32), 40000, alpha=1.1, seed=5, name="A")
    C = Dense().sample((32, 16), 1, "C")
    s = scheds[0]
    res = {}
    for p in (uniform_shape_parts(A, 16), uniform_slice(A, 16)):
        r = replay_sparse(s, {"A": A, "C": C}, {"A": ciss(3)}, partition=p, data=False)
        res[p.method] = r.utilization
        assert r.part_work.sum() == r.effectual_ops
    print("utilization over 16 instances:", res)
    shape_u, slice_u = res["uniform_shape(16)"], res["uniform_slice(16)"]
    assert slice_u > 0.9 and shape_u < 0.5
