"""Tensors, readers, densities, formats and partitions."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io
import scipy.sparse

from mapsearch.sparse import Format, NofM, SparseTensor, Uniform, ciss, coo, csf, csr, dense, read_tensor
from mapsearch.sparse.density import Banded, power_law
from mapsearch.sparse.format import words
from mapsearch.sparse.partition import uniform_occupancy, uniform_shape, uniform_shape_parts, uniform_slice
from mapsearch.sparse.tensor import write_npz, write_tns


def test_coo_roundtrip_and_fibertree():
    a = np.array([[0, 2, 0], [0, 0, 0], [1, 0, 3]], float)
    t = SparseTensor.from_dense(a)
    assert t.nnz == 3 and np.array_equal(t.to_dense(), a)
    ft = t.fibertree()
    assert ft[0]["coords"].tolist() == [0, 2] and ft[0]["ptr"].tolist() == [0, 2]
    assert ft[1]["coords"].tolist() == [1, 0, 2] and ft[1]["ptr"].tolist() == [0, 1, 3]
    assert ft[1]["values"].tolist() == [2, 1, 3]
    d = SparseTensor.from_coo((2, 2), [[1, 1, 0], [0, 0, 1]], [1.0, 2.0, 0.0])  # duplicates summed, zero dropped
    assert d.coords.tolist() == [[1], [0]] and d.values.tolist() == [3.0]


def test_readers(tmp_path):
    m = scipy.sparse.random(7, 5, density=0.3, random_state=1, format="coo")
    scipy.io.mmwrite(str(tmp_path / "m.mtx"), m)
    t = read_tensor(tmp_path / "m.mtx")
    assert np.allclose(t.to_dense(), m.toarray())
    u = Uniform((0.7, 0.5, 0.6)).sample((5, 4, 6), seed=3)
    write_tns(u, tmp_path / "u.tns")
    write_npz(u, tmp_path / "u.npz")
    for p in ("u.tns", "u.npz"):
        r = read_tensor(tmp_path / p, shape=u.shape)
        assert np.array_equal(r.coords, u.coords) and np.allclose(r.values, u.values)
    with pytest.raises(ValueError, match="unknown sparse file type"):
        read_tensor(tmp_path / "x.csv")


def test_uniform_density_semantics():
    # fromRandom: rank-0 coordinates present w.p. d0 (then dropped if their fiber is empty); leaves w.p. prod d.
    d = (0.5, 0.4, 0.3)
    shape = (2000, 30, 10)
    nnz = [Uniform(d).sample(shape, seed=s).nnz for s in range(5)]
    assert abs(np.mean(nnz) / (np.prod(shape) * np.prod(d)) - 1) < 0.03  # top-rank std ~1% over 5 seeds
    t = Uniform(d).sample(shape, seed=0)
    top = len(np.unique(t.coords[0]))
    expect = Uniform(d).region_counts(np.zeros((3, 1), int), np.array(shape).reshape(3, 1))[0, 0]
    assert abs(top / expect - 1) < 0.1
    assert np.all(t.values >= 1) and np.all(t.values <= 10)
    assert Uniform(d).sample(shape, 7).nnz == Uniform(d).sample(shape, 7).nnz  # seeded
    big = Uniform((0.01, 0.001)).sample((2000, 100000), seed=1)  # the subset sampler path
    assert abs(big.nnz / (2000 * 100000 * 1e-5) - 1) < 0.1


def test_structured_densities_are_exact():
    t = NofM((2, 3), (4, 8)).sample((8, 16))
    assert t.nnz == 4 * 6 and set(np.bincount(t.coords[0])[np.bincount(t.coords[0]) > 0]) == {6}
    b = Banded(1, 2).sample((6, 6))
    D = Banded(1, 2).region_counts(np.array([[0], [0]]), np.array([[6], [6]]))
    assert D[0, 1] == b.nnz and D[0, 0] == 6


def test_format_word_counts():
    # 3x4 matrix, rows 0 and 2 non-empty: 3 nonzeros.
    t = SparseTensor.from_dense(np.array([[1, 0, 2, 0], [0, 0, 0, 0], [0, 3, 0, 0]], float))
    ext = np.array([[3], [4]])
    D = np.array([[2, 3]])  # distinct rows, nonzeros
    assert (len(set(t.coords[0].tolist())), t.coords.shape[1]) == (2, 3)
    assert [int(x[0]) for x in words(csr(2), ext, D)] == [3, 3 + 4]  # nnz values; nnz coords + (R+1) pointers
    assert [int(x[0]) for x in words(csf(2), ext, D)] == [3, 2 + 3 + 3]  # 2 row coords + (2+1) ptrs + 3 col coords
    assert [int(x[0]) for x in words(coo(2), ext, D)] == [3, 6]
    assert [int(x[0]) for x in words(dense(2), ext, D)] == [12, 0]
    assert [int(x[0]) for x in words(Format.parse("CU", 2), ext, D)] == [8, 2]  # 2 rows x 4 stored, no ptrs
    t3 = np.array([[2, 3, 5]])  # 2 slices, 3 fibers, 5 nonzeros
    assert [int(x[0]) for x in words(ciss(3), np.array([[4], [4], [4]]), t3)] == [5, 2 + 3 + 5 * 2]
    assert Format.parse("CSR", 2) == csr(2) and Format.parse("u,c", 2).rank_kinds() == ("U", "C")


def _notebook_uniform_slice(t, n):
    """The notebook's uniform_slice, over a dict of slices (pure Python)."""
    nnz = {i: int(c) for i, c in enumerate(t.slice_nnz()) if c}
    track = [0] * n
    owner = {}
    for i in sorted(nnz):
        cur = track.index(min(track))
        owner[i] = cur
        track[cur] += nnz[i]
    return owner, track


def test_partitions():
    t = power_law((40, 8, 8), 3000, 1.3, seed=2)
    owner, track = _notebook_uniform_slice(t, 6)
    p = uniform_slice(t, 6)
    assert p.loads.tolist() == track
    assert all(p.part_of[k] == owner[int(i)] for k, i in enumerate(t.coords[0]))
    s = uniform_shape(t, 8)
    assert s.parts == 5 and s.loads.sum() == t.nnz and s.loads.tolist() == [int(t.slice_nnz()[8 * k:8 * k + 8].sum()) for k in range(5)]
    assert uniform_shape_parts(t, 6).parts == 6
    o = uniform_occupancy(t, 100)
    assert o.loads.max() == 100 and o.loads.sum() == t.nnz
    assert p.imbalance < s.imbalance
    big = uniform_slice(t, 100)  # the heap path
    assert big.loads.sum() == t.nnz
