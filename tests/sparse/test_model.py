"""The density model against the replay: exact for fixed structures, in expectation for uniform random."""

from __future__ import annotations

import numpy as np
import pytest

from mapsearch.sparse import Banded, Dense, NofM, Uniform, ciss, coo, csf, csr, dense, replay_sparse
from mapsearch.sparse.model import compare, expected

from .conftest import kernel_schedules

GEMM = (("I", 64), ("J", 48), ("K", 40))


def _same(model, rep):
    for lm, lr in zip(model.links, rep.links):
        for tm in lm.tensors:
            tr = lr.tensor(tm.tensor)
            assert (tm.payload_down, tm.meta_down, tm.payload_up, tm.meta_up) == \
                   (tr.payload_down, tr.meta_down, tr.payload_up, tr.meta_up), (lm.name, tm, tr)


@pytest.mark.parametrize("density, fmt", [
    (NofM((3, 2), (8, 5)), csr(2)),
    (NofM((1, 7), (3, 48), offset=(1, 2)), csf(2)),
    (Banded(2, 5), csr(2)),
    (Banded(0, 0), coo(2)),
    (Dense(), dense(2)),
])
def test_fixed_structure_model_is_exact(density, fmt):
    spec, (s,) = kernel_schedules("gemm", GEMM)
    A = density.sample((64, 48), 0)
    bd = NofM((2, 40), (3, 40))  # every third row of B, dense rows
    B = bd.sample((48, 40), 1)
    fmts = {"A": fmt, "B": csf(2)}
    model = expected(s, {"A": density, "B": bd}, fmts)
    rep = replay_sparse(s, {"A": A, "B": B}, fmts)
    assert model.exact and rep.data_ok
    _same(model, rep)
    assert model.effectual_ops == rep.effectual_ops


def test_fixed_structure_3d_mttkrp():
    spec, (s, _) = kernel_schedules("mttkrp", (("I", 32), ("J", 16), ("K", 24), ("F", 16)))
    d = NofM((5, 1, 3), (8, 4, 6))
    model = expected(s, {"A": d}, {"A": ciss(3)})
    rep = replay_sparse(s, {"A": d.sample((32, 16, 24)), "C": Dense().sample((24, 16))}, {"A": ciss(3)})
    _same(model, rep)
    assert model.effectual_ops == rep.effectual_ops


SEEDS = 16
TOL = 0.05  # relative error of the expectation vs the mean over SEEDS replays; also within 4 standard errors


@pytest.mark.parametrize("name, ext, dens, fmt", [
    ("gemm", GEMM, (0.8, 0.3), csr(2)),
    ("mttkrp", (("I", 256), ("J", 16), ("K", 24), ("F", 16)), (0.8, 0.8, 0.4), ciss(3)),
    ("mttkrp", (("I", 256), ("J", 16), ("K", 24), ("F", 16)), (0.5, 0.3, 0.2), csf(3)),
])
def test_uniform_model_expectation(name, ext, dens, fmt):
    spec, scheds = kernel_schedules(name, ext)
    s = scheds[0]
    e = spec.graph.extent
    shapeA = tuple(e[d] for d in s.workload.tensor("A").dims_in_order())
    other = s.workload.einsum.inputs[1]
    shapeB = tuple(e[d] for d in other.dims_in_order())
    model = expected(s, {"A": Uniform(dens)}, {"A": fmt})
    reps = [replay_sparse(s, {"A": Uniform(dens).sample(shapeA, seed), other.name: Dense().sample(shapeB, 99)},
                          {"A": fmt}, data=False) for seed in range(SEEDS)]
    for k, lm in enumerate(model.links):
        w = np.array([r.links[k].words for r in reps], float)
        got, se = w.mean(), w.std(ddof=1) / np.sqrt(SEEDS)
        meta = np.mean([r.links[k].metadata for r in reps])
        err = abs(lm.words - got) / got
        print(f"{name} {fmt.text()} d={dens} {lm.name}: model {lm.words:.1f} (meta {lm.metadata:.1f}) "
              f"replay mean {got:.1f} (meta {meta:.1f}) error {100 * err:.2f}% ({abs(lm.words - got) / max(se, 1e-9):.1f} s.e.)")
        assert err < TOL and abs(lm.words - got) <= 4 * se + 1e-9
    o = np.array([r.effectual_ops for r in reps], float)
    ops, se = o.mean(), o.std(ddof=1) / np.sqrt(SEEDS)
    print(f"  effectual ops: model {model.effectual_ops:.1f} replay mean {ops:.1f} "
          f"error {100 * abs(model.effectual_ops - ops) / ops:.2f}% ({abs(model.effectual_ops - ops) / se:.1f} s.e.)")
    assert abs(model.effectual_ops - ops) / ops < TOL and abs(model.effectual_ops - ops) <= 4 * se
    assert not model.exact
    cmp = compare(s, model)
    assert cmp["ops"][1] < cmp["ops"][0]  # sparse does fewer ops than the dense schedule's MACs
