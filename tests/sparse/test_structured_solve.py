"""The sparse solver on fixed-structured densities (NofM, Banded): exact, checked against the replay on data.

- Chains: a positional footprint is summed piece by piece; ``hi - lo`` and
  ``1`` reproduce the affine and unit footprints, and the sum of the pieces'
  starts equals a hand walk of the split.
- Terms: ``count_terms`` of a format, evaluated on a density's exact counts,
  equal ``format.words``; ``box_factors`` multiply to ``region_counts``.
- Random cases: the solver's words per link and tensor equal the replay's
  counts on the density's data **exactly** (and ``expected``'s walk), effectual
  ops equal the replay's, and the result checks against NumPy.
- Brute force: the fewest words over every schedule of the family, scored
  by ``expected`` (exact for these densities), equal the solver's.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import brute_force as bf
from sparse_cases import random_case, small_arch, solve_or_skip
from mapsearch.model import chains as C
from mapsearch.model.footprints import positional_footprint
from mapsearch.model.problem import Problem, UnsupportedProblem
from mapsearch.spec.constraints import Constraints, TileLimit
from mapsearch.model.options import SolveOptions
from mapsearch.sparse import Banded, Dense, NofM, Uniform, ciss, coo, csf, csr, dense, replay_sparse
from mapsearch.sparse.density import sample_inputs
from mapsearch.sparse.format import Format, words
from mapsearch.sparse.model import expected
from mapsearch.sparse.solve import count_terms, solve_sparse
from mapsearch.spec.workload import Workload

PRESETS = (csr, csf, coo, ciss, dense)


def _split_walk(extent: int, tiles) -> list[list[tuple[int, int]]]:
    """Every level's pieces ``(lo, size)``, by hand."""
    levels = [[(0, extent)]]
    for t in tiles:
        levels.append([(a, min(t, lo + s - a)) for lo, s in levels[-1] for a in range(lo, lo + s, t)])
    return levels


@pytest.mark.parametrize("extent,depth", [(10, 1), (13, 2), (17, 3), (7, 3)])
def test_positional_footprints_sum_every_piece(extent, depth, monkeypatch):
    monkeypatch.setattr(C, "PIECES_PER_BATCH", 40)  # several batches
    x = positional_footprint("x", lambda lo, hi: hi - lo)
    one = positional_footprint("one", lambda lo, hi: np.ones_like(lo))
    start = positional_footprint("start", lambda lo, hi: lo)
    tiles = C._enumerate_tiles(extent, [(1, extent)] * depth, ["full"] * depth)
    q = C._quantities(extent, tiles, ((1, 0), (0, 1), x, one, start), 1)
    for affine, positional in (((1, 0), x), ((0, 1), one)):
        assert np.array_equal(q["sums"][affine], q["sums"][positional])
        for key in q["small"][affine]:
            assert np.array_equal(q["small"][affine][key], q["small"][positional][key])
    for r in range(len(tiles)):
        levels = _split_walk(extent, tiles[r])
        for j, pieces in enumerate(levels):
            assert q["sums"][start][r, j] == sum(lo for lo, _ in pieces)
            for i in range(j + 1, depth + 1):
                assert q["small"][start][(j, i)][r] == sum(lo for lo, s in pieces if s <= tiles[r, i - 1])


def _random_box(rng: np.random.Generator, shape, whole=()):
    lo = np.array([[rng.integers(0, e)] for e in shape])
    hi = np.array([[rng.integers(l[0] + 1, e + 1)] for l, e in zip(lo, shape)])
    for r in whole:
        lo[r], hi[r] = 0, shape[r]
    return lo, hi


STRUCTURES = [
    (NofM((2, 3, 4), (4, 5, 4), (1, 0, 2)), (13, 11, 9), ()),
    (NofM((1, 2), (16, 4)), (20, 9), ()),
    (NofM((3, 1), (3, 2)), (7, 9), ()),
    (Banded(2, 3), (12, 15), (1,)),
    (Banded(0, 5), (12, 7), (0,)),
    (Banded(4, 1), (9, 12), (0, 1)),
]


@pytest.mark.parametrize("density,shape,whole", STRUCTURES)
def test_box_factors_multiply_to_the_counts(density, shape, whole):
    rng = np.random.default_rng(1)
    for _ in range(200):
        lo, hi = _random_box(rng, shape, whole)
        D = density.region_counts(lo, hi)[0]
        for k in range(len(shape)):
            v = 1
            for r, g in enumerate(density.box_factors(k, shape, frozenset(whole))):
                if g is not None:
                    v *= int(hi[r, 0] - lo[r, 0]) if g == "x" else int(g(lo[r], hi[r])[0])
            assert v == D[k]


@pytest.mark.parametrize("density,shape,whole", STRUCTURES)
def test_count_terms_equal_the_format_count(density, shape, whole):
    rng = np.random.default_rng(2)
    n = len(shape)
    fmts = [f(n) for f in PRESETS if not (f is csr and n < 2)]
    fmts += [Format(tuple((k, 1) for k in "UC"[::-1][: n] + "U" * (n - 2)))] if n >= 2 else []
    for _ in range(100):
        lo, hi = _random_box(rng, shape, whole)
        D = density.region_counts(lo, hi)
        x = (hi - lo)[:, 0]
        for fmt in fmts:
            p, m = words(fmt, hi - lo, D)
            got = sum((t.payload + t.meta) * int(np.prod([x[r] for r in t.xs])) *
                      (1 if t.level is None else D[0, t.level]) for t in count_terms(fmt))
            assert got == p[0] + m[0]


def _structured(rng: random.Random, n: int, extents):
    """A random NofM (sometimes with a dense rank) for a tensor of ``n`` ranks."""
    ms = [rng.choice([1, 2, 3, 4, extents[r]]) for r in range(n)]
    ns = [rng.randint(1, m) for m in ms]
    return NofM(tuple(ns), tuple(ms), tuple(rng.randrange(m) for m in ms))


def _case(rng: random.Random):
    # (MTTKRP's B and C share f, which the replay's join does not take as one einsum; TTM has a 3-rank A too.)
    return random_case(rng, ("ttm", "Y[i,j,f] += A[i,j,k] * B[k,f]", "ijkf"),
                       lambda rng, t, ext: _structured(rng, len(ext), ext) if rng.random() < 0.8 else Dense(),
                       lambda rng, n: rng.choice([f for f in PRESETS if not (f is csr and n < 2)])(n))  # CSF/CISS of 3 ranks


def _assert_exact(r, w, dens, fmts, output_density=None):
    """The solver's words equal the replay's on the density's data, tensor by tensor; ops and data too."""
    rp = replay_sparse(r.schedule, sample_inputs(w, dens), fmts)
    walk = expected(r.schedule, dens, fmts, output_density)
    assert r.tolerance == 1e-9  # no table: integer sums
    for mine, real, other in zip(r.links, rp.links, walk.links):
        for tm in mine.tensors:
            tr, to = real.tensor(tm.tensor), other.tensor(tm.tensor)
            for name in ("payload_down", "meta_down", "payload_up", "meta_up"):
                assert getattr(tm, name) == getattr(tr, name) == getattr(to, name), (mine.name, tm.tensor, name)
    assert r.effectual_ops == rp.effectual_ops
    assert rp.data_ok
    return rp


@pytest.mark.parametrize("seed", range(20))
def test_solver_words_equal_the_replay_exactly(seed):
    rng = random.Random(seed)
    w, arch, dens, fmts = _case(rng)
    r = solve_or_skip(w, arch, dens, fmts)
    _assert_exact(r, w, dens, fmts)
    print(f"seed {seed}: {w.name} {dens} {[f.text() for f in fmts.values()]} {[(l.name, l.words) for l in r.links]}")


@pytest.mark.parametrize("whole", ["i", "j"])
@pytest.mark.parametrize("fmt", [csr(2), csf(2), coo(2), dense(2)])
def test_banded_with_a_whole_rank_is_exact(whole, fmt):
    w = Workload.from_text("mv", "y[i] += A[i,j] * x[j]", {"i": 20, "j": 14})
    c = Constraints(tiles=tuple(TileLimit(level, whole, w.extent[whole], w.extent[whole]) for level in ("L1", "L0")))
    dens = {"A": Banded(2, 3)}
    r = solve_sparse(Problem(w, small_arch([None, 200, 60])), dens, {"A": fmt}, c, options=SolveOptions(time_limit=20))
    assert r.status == "OPTIMAL_IN_FAMILY"  # sparse measures keep default buffer positions
    _assert_exact(r, w, dens, {"A": fmt})
    # By hand: row i of 20 holds columns [i-2, i+3] within [0, 14).
    assert r.effectual_ops == sum(max(0, min(14, i + 4) - max(0, i - 2)) for i in range(20)) == 78


BRUTE = [
    ("Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 3, "k": 6}, [None, 14], {"A": NofM((1, 2), (1, 4))}, {"A": csr(2)}),
    ("Z[m,n] += A[m,k] * B[k,n]", {"m": 5, "n": 4, "k": 4}, [None, 16], {"A": NofM((2, 1), (3, 2), (1, 0)), "B": NofM((1, 1), (1, 2))},
     {"A": csf(2), "B": coo(2)}),
    ("y[i] += A[i,j] * x[j]", {"i": 6, "j": 7}, [None, 12, 5], {"A": NofM((1, 3), (2, 4), (0, 1))}, {"A": ciss(2)}),
]


@pytest.mark.parametrize("text,extents,caps,dens,fmts", BRUTE)
def test_fewest_words_equal_brute_force(text, extents, caps, dens, fmts):
    w = Workload.from_text("w", text, extents)
    arch = small_arch(caps)
    r = solve_sparse(Problem(w, arch), dens, fmts, options=SolveOptions(objective="words", time_limit=30))
    assert r.status == "OPTIMAL_IN_FAMILY"  # sparse measures keep default buffer positions
    scores = [expected(schedule, dens, fmts).words_total for schedule in bf.fitting_schedules(w, arch)]
    best, n = min(scores), len(scores)
    print(f"{text} {extents}: solver {r.words_total}, brute force {best} over {n} schedules")
    assert r.words_total == best
    assert float(r.phases[-1].value) == best


def test_structure_changes_the_optimum():
    """2:4 along k: a CSR A holds half of k; the structure-aware schedule moves fewer words than the dense one."""
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 24, "n": 16, "k": 32})
    arch = small_arch([None, 400, 40])
    dens, fmts = {"A": NofM((1, 2), (1, 4))}, {"A": csr(2)}
    opts = SolveOptions(objective="words", time_limit=30)
    from mapsearch.solve.run import solve
    # The density model searches default buffer positions only (a named restriction), so the
    # dense optimum it is compared with is the one of that family.
    d = solve(Problem(w, arch), options=SolveOptions(objective="words", time_limit=30, placement=False)).schedule
    s = solve_sparse(Problem(w, arch), dens, fmts, options=opts)
    on_dense_optimum = expected(d, dens, fmts).words_total
    print(f"dense optimum: {on_dense_optimum} words on 2:4 data; structured optimum {s.words_total}")
    assert s.words_total <= on_dense_optimum
    _assert_exact(s, w, dens, fmts)


def test_mixed_uniform_and_structured_ops():
    """A Uniform input scales the structured count by its density product (in expectation)."""
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 6, "n": 5, "k": 8})
    dens = {"A": NofM((1, 2), (1, 4)), "B": Uniform((0.5, 0.4))}
    r = solve_sparse(Problem(w, small_arch([None, 100, 20])), dens, {"A": csr(2), "B": coo(2)},
                     options=SolveOptions(time_limit=10))
    assert r.effectual_ops == pytest.approx(6 * 5 * 4 * 0.5 * 0.4)


@pytest.mark.parametrize("fmt", [csr(2), coo(2), csf(2), ciss(2)])
def test_compressed_output_is_exact_on_data(fmt):
    """Z = A B of product-form NofM inputs is itself NofM: rows from A's rank 0, columns from B's rank 1.

    The replay counts a compressed output with the result's real pattern, so
    the solver (told that pattern) must match it exactly, stores and partial-sum
    reloads included.
    """
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 11, "n": 9, "k": 8})
    dens = {"A": NofM((1, 2), (3, 4), (1, 0)), "B": NofM((2, 1), (4, 2), (0, 1))}
    fmts = {"A": csr(2), "B": coo(2), "Z": fmt}
    z = NofM((1, 1), (3, 2), (1, 1))
    for objective in ("time", "words"):
        r = solve_sparse(Problem(w, small_arch([None, 90, 24])), dens, fmts, options=SolveOptions(objective=objective, time_limit=20),
                         output_density=z)
        rp = _assert_exact(r, w, dens, fmts, z)
        assert rp.result.nnz == 16  # rows 1, 4, 7, 10 (of 11) x columns 1, 3, 5, 7 (of 9), by hand


def test_refusals():
    w = Workload.from_text("mv", "y[i] += A[i,j] * x[j]", {"i": 8, "j": 9})
    with pytest.raises(UnsupportedProblem, match="jointly"):
        solve_sparse(Problem(w, small_arch([None, 64, 16])), {"A": Banded(1, 1)}, {"A": csr(2)})
    with pytest.raises(ValueError, match="ranks"):
        solve_sparse(Problem(w, small_arch([None, 64, 16])), {"A": NofM((1,), (2,))}, {"A": csr(2)})
    with pytest.raises(UnsupportedProblem, match="output_density"):
        solve_sparse(Problem(w, small_arch([None, 64, 16])), {"A": NofM((1, 1), (2, 1))}, {"A": csr(2), "y": coo(1)})


def test_uniform_output_density_equals_the_walk():
    """A CSF output under Uniform needs a fiber table on its dims (stores and reloads less first visits)."""
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 10, "n": 13, "k": 7})
    dens, fmts = {"A": Uniform((0.8, 0.5))}, {"A": csr(2), "Z": csf(2)}
    z = Uniform((0.9, 0.3))
    r = solve_sparse(Problem(w, small_arch([None, 90, 24])), dens, fmts, options=SolveOptions(time_limit=20), output_density=z)
    walk = expected(r.schedule, dens, fmts, z)
    assert r.tolerance > 1e-9  # a table term
    for mine, other in zip(r.links, walk.links):
        z_mine, z_walk = mine.tensor("Z"), other.tensor("Z")
        assert z_mine.meta_up == pytest.approx(z_walk.meta_up, rel=r.tolerance) and z_walk.meta_up > 0
        assert z_mine.meta_down == pytest.approx(z_walk.meta_down, rel=r.tolerance, abs=1e-9)
        assert mine.words == pytest.approx(other.words, rel=r.tolerance)
