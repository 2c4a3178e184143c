"""Random small problems shared by the sparse solver tests (tests/sparse/test_*solve.py)."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Callable

import pytest

from mapsearch.errors import InfeasibleError
from mapsearch.model.problem import Problem
from mapsearch.model.options import SolveOptions
from mapsearch.sparse.solve import SparseSolveResult, solve_sparse
from mapsearch.spec.architecture import Architecture, Compute, Level, Link
from mapsearch.spec.workload import Workload


def small_arch(caps) -> Architecture:
    """Levels DRAM/L1/L0 (the last ``len(caps)``) with these capacities, plain links, one-clock scalar ops."""
    names = ["DRAM", "L1", "L0"][-len(caps):]
    levels = tuple(Level(names[i], caps[i], None if i == 0 else Link()) for i in range(len(caps)))
    return Architecture("a", levels, Compute((), Fraction(1)), False)


def random_case(rng: random.Random, third: tuple[str, str, str], density: Callable, fmt: Callable):
    """(workload, arch, densities, formats): a matmul, an SpMV or ``third`` (name, einsum, dims) at random
    small extents on 2-3 levels; ``density(rng, tensor access, extents)`` and ``fmt(rng, ranks)`` per input."""
    kind = rng.choice(["mm", "spmv", "third"])
    if kind == "mm":
        w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {d: rng.randint(2, 10) for d in "mnk"})
    elif kind == "spmv":
        w = Workload.from_text("mv", "y[i] += A[i,j] * x[j]", {"i": rng.randint(2, 24), "j": rng.randint(2, 24)})
    else:
        name, text, dims = third
        w = Workload.from_text(name, text, {d: rng.randint(2, 6) for d in dims})
    depth = rng.choice([2, 3])
    caps = [None] + sorted((rng.randint(12, 200) for _ in range(depth - 1)), reverse=True)
    dens, fmts = {}, {}
    for t in w.einsum.inputs:
        dens[t.name] = density(rng, t, [w.extent[ix.dims[0]] for ix in t.indices])
        fmts[t.name] = fmt(rng, len(t.indices))
    return w, small_arch(caps), dens, fmts


def solve_or_skip(w: Workload, arch: Architecture, dens, fmts) -> SparseSolveResult:
    """``solve_sparse`` of a random case; skipped when its random capacities fit nothing (a tiny L0)."""
    try:
        return solve_sparse(Problem(w, arch), dens, fmts, options=SolveOptions(time_limit=10, work_limit=2.0))
    except InfeasibleError:
        pytest.skip("infeasible capacities")
