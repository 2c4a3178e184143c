"""Coincidence tables read through the chains' types (model/windows._factored) are the same tables.

The model reads a window's coincidences either by one element over every
pair of chains, or, where the chains share types, by an element per
dimension (chain -> type) and one over the types' table. Both give every
pair of chains the same value, so the optimum, and every figure of the
schedule, must not depend on which is used.
"""

from __future__ import annotations

import pytest

from mapsearch.model import windows
from mapsearch.model.build import build
from mapsearch.model.problem import Problem
from mapsearch.model.options import SolveOptions
from mapsearch.schedule.figures import differences
from mapsearch.sim.replay import replay
from mapsearch.solve.run import solve
from mapsearch.spec.architecture import Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.workload import Workload


def _arch(mesh: int = 1) -> Architecture:
    axes = (MeshAxis("x", mesh, ("all",)),) if mesh > 1 else ()
    return Architecture("t", (Level("DRAM", None), Level("L1", 64, Link()),
                              Level("L0", 12, Link(), mesh, axes)), Compute((), 1))


CASES = [
    ("1-D", "O[k,p] += I[c,p+r] * W[k,c,r]", {"k": 3, "c": 2, "p": 9, "r": 3}, 1),
    ("stride 2", "O[p] += I[p*2+r] * W[r]", {"p": 11, "r": 4}, 1),
    ("dilation 2", "O[k,p] += I[p+r*2] * W[k,r]", {"k": 2, "p": 10, "r": 3}, 1),
    ("2-D", "O[p,q] += I[p+r,q+s] * W[r,s]", {"p": 6, "q": 5, "r": 3, "s": 2}, 1),
    ("on 3 instances", "O[k,p] += I[p+r] * W[k,r]", {"k": 2, "p": 9, "r": 3}, 3),
]


def _solve(share: float, text: str, extents: dict, mesh: int, monkeypatch):
    monkeypatch.setattr(windows, "FACTORED_SHARE", share)
    p = Problem(Workload.from_text("w", text, extents), _arch(mesh))
    factored = any(v.name.startswith("ctype_") for v in build(p).model.proto.variables)
    return solve(p, options=SolveOptions(time_limit=120, work_limit=60)), factored


@pytest.mark.parametrize("name, text, extents, mesh", CASES, ids=[c[0] for c in CASES])
def test_factored_tables_keep_every_figure_of_the_optimum(name, text, extents, mesh, monkeypatch) -> None:
    pairs, plain = _solve(0.0, text, extents, mesh, monkeypatch)
    types, factored = _solve(1e9, text, extents, mesh, monkeypatch)
    assert not plain and factored  # the second model reads (some of) its tables through the types
    assert pairs.status == types.status and pairs.status in ("OPTIMAL", "OPTIMAL_IN_FAMILY")  # both proven
    a, b = pairs.schedule.predicted, types.schedule.predicted
    assert (a.time, a.words_total) == (b.time, b.words_total)
    assert differences(b, replay(types.schedule, mode="count").figures) == []
