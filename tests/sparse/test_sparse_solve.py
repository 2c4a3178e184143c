"""The sparse solver (mapsearch/sparse/solve.py) against the density model's walk and a brute force.

- Terms: a format's expected words of a box, as terms, equal ``format.words``
  of ``Uniform.region_counts`` on random boxes (the derivation, checked).
- Random cases: the solver's expected words per link and tensor equal
  ``sparse.model.expected`` of the schedule it returns (closed form vs walk).
- Brute force: over every schedule of the family (tests/brute_force.py),
  scored by ``expected``, the fewest expected words equal the solver's.
- Sparse vs dense: a sparse input changes the optimal schedule, and the
  sparse optimum moves fewer expected words than the dense optimum does.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import brute_force as bf
from sparse_cases import random_case, small_arch, solve_or_skip
from mapsearch.model.problem import Problem, UnsupportedProblem
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.sparse.density import Dense, Uniform
from mapsearch.sparse.format import Format, ciss, coo, csf, csr, dense, words
from mapsearch.sparse.model import expected
from mapsearch.sparse.solve import format_terms, solve_sparse, term_value
from mapsearch.spec.workload import Workload

PRESETS = (csr, csf, coo, ciss, dense)


def _fmt(rng: random.Random, n: int) -> Format:
    f = rng.choice(PRESETS)
    return coo(n) if (f is csr and n < 2) else f(n)


def test_terms_equal_the_format_count():
    rng = random.Random(0)
    worst = 0.0
    for _ in range(400):
        n = rng.randint(1, 4)
        d = [rng.choice([1.0, rng.random()]) for _ in range(n)]
        x = [rng.randint(1, 12) for _ in range(n)]
        D = Uniform(tuple(d)).region_counts(np.zeros((n, 1)), np.array(x)[:, None])
        for f in [_fmt(rng, n), Format(tuple((rng.choice("UC"), 1) for _ in range(n)))]:
            p, m = words(f, np.array(x)[:, None], D)
            got = sum(term_value(t, d, x) for t in format_terms(f, d))
            worst = max(worst, abs(got - float(p[0] + m[0])) / max(1.0, float(p[0] + m[0])))
    assert worst < 1e-12


def _case(rng: random.Random):
    def density(rng, t, ext):
        return Uniform(tuple(round(rng.uniform(0.05, 1.0), 2) for _ in ext)) if rng.random() < 0.8 else Dense()

    def fmt(rng, n):  # CSF/CISS of a 3-rank tensor count fibers whose presence depends on two tiles jointly (unsupported)
        return _fmt(rng, n) if n < 3 else rng.choice([coo(3), dense(3), csr(3)])

    return random_case(rng, ("mt", "Y[i,f] += A[i,k,l] * B[k,f] * C[l,f]", "iklf"), density, fmt)


@pytest.mark.parametrize("seed", range(24))
def test_predicted_expected_words_equal_the_walk(seed):
    rng = random.Random(seed)
    w, arch, dens, fmts = _case(rng)
    r = solve_or_skip(w, arch, dens, fmts)
    walk = expected(r.schedule, dens, fmts)
    tol = max(r.tolerance, 1e-9)
    for mine, other in zip(r.links, walk.links):
        for tm in mine.tensors:
            to = other.tensor(tm.tensor)
            for a, b in [(tm.payload_down, to.payload_down), (tm.meta_down, to.meta_down),
                         (tm.payload_up, to.payload_up), (tm.meta_up, to.meta_up)]:
                assert a == pytest.approx(b, rel=tol, abs=1e-9)
    assert r.effectual_ops == pytest.approx(walk.effectual_ops, rel=1e-12)
    print(f"seed {seed}: {w.einsum.text() if hasattr(w.einsum, 'text') else w.name} "
          f"{[(l.name, round(l.words, 3)) for l in r.links]} tol {r.tolerance:.1e}")


def test_linear_formats_are_exact():
    """COO, CSR of a matrix and dense need no table: the check holds to float rounding."""
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 9, "n": 7, "k": 11})
    dens = {"A": Uniform((0.7, 0.2)), "B": Uniform((0.5, 0.5))}
    r = solve_sparse(Problem(w, small_arch([None, 100, 16])), dens, {"A": csr(2), "B": coo(2)})
    assert r.tolerance == 1e-9
    for mine, walk in zip(r.links, r.check.links):
        assert mine.words == pytest.approx(walk.words, rel=1e-12)


BRUTE = [
    ("Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 3, "k": 5}, [None, 14], {"A": Uniform((0.6, 0.3))}, {"A": csf(2)}),
    ("Z[m,n] += A[m,k] * B[k,n]", {"m": 5, "n": 4, "k": 4}, [None, 16], {"A": Uniform((0.9, 0.2)), "B": Uniform((0.5, 0.5))},
     {"A": ciss(2), "B": csr(2)}),
    ("y[i] += A[i,j] * x[j]", {"i": 6, "j": 5}, [None, 12, 5], {"A": Uniform((0.8, 0.25))}, {"A": csf(2)}),
    ("y[i] += A[i,j] * x[j]", {"i": 7, "j": 4}, [None, 9], {"A": Uniform((0.3, 0.6))}, {"A": coo(2)}),
]


@pytest.mark.parametrize("text,extents,caps,dens,fmts", BRUTE)
def test_fewest_expected_words_equal_brute_force(text, extents, caps, dens, fmts):
    w = Workload.from_text("w", text, extents)
    arch = small_arch(caps)
    r = solve_sparse(Problem(w, arch), dens, fmts, options=SolveOptions(objective="words", time_limit=30))
    assert r.status == "OPTIMAL_IN_FAMILY"  # sparse measures keep default buffer positions
    scores = [expected(schedule, dens, fmts).words_total for schedule in bf.fitting_schedules(w, arch)]
    best, n = min(scores), len(scores)
    print(f"{text} {extents}: solver {r.words_total:.6f}, brute force {best:.6f} over {n} schedules")
    assert r.words_total == pytest.approx(best, rel=1e-7)
    assert float(r.phases[-1].value) == pytest.approx(best, rel=1e-6)


def test_sparse_optimum_differs_from_dense():
    """A at 2% density in COO: the dense optimum keeps A close; the sparse one re-reads A and reuses B and Z."""
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 32, "n": 24, "k": 32})
    arch = small_arch([None, 600, 40])
    dens, fmts = {"A": Uniform((0.2, 0.1))}, {"A": coo(2)}
    opts = SolveOptions(objective="words", time_limit=30)
    d = solve(Problem(w, arch), options=opts).schedule
    s = solve_sparse(Problem(w, arch), dens, fmts, options=opts)
    dense_sparse_words = expected(d, dens, fmts).words_total
    print(f"dense-optimal schedule: {d.predicted.words_total} dense words, {dense_sparse_words:.1f} expected sparse words")
    print(f"sparse-optimal schedule: {s.dense.words_total} dense words, {s.words_total:.1f} expected sparse words")
    assert s.words_total < 0.9 * dense_sparse_words
    assert s.dense.words_total > d.predicted.words_total  # worse on dense data: it is a different schedule


def test_refusals():
    w = Workload.from_text("mt", "Y[i,f] += A[i,k,l] * B[k,f] * C[l,f]", {"i": 4, "k": 5, "l": 6, "f": 3})
    with pytest.raises(UnsupportedProblem, match="jointly"):
        solve_sparse(Problem(w, small_arch([None, 64, 16])), {"A": Uniform((0.5, 0.5, 0.5))}, {"A": ciss(3)})
    # NofM and Banded are searched exactly: tests/sparse/test_structured_solve.py.
