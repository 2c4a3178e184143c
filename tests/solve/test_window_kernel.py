"""The coincidence kernel by key match (window_kernel._kernel) gives exactly what the dense broadcast gives,
and window pruning on each table's distinct columns keeps exactly the chains it keeps on every column.

``_kernel`` sums ``m * n * [coincidence] * words`` over every pair of
types through the types' keys and two integer products; ``_dense_kernel``
(the form it replaced, kept in the module) compares every pair of types of
every pair of rows. Both are checked equal, entry for entry and in dtype,
on random types (counts of 0 included, keys found on one side only, codes
over a small and a wide range) and on the types of real chains: pairs of
chains, chains split over mesh axes, and the composite context of an axis
over three dimensions.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mapsearch.model import chains as chains_module  # noqa: E402
from mapsearch.model import row_keys, window_kernel, window_pruning, window_tables  # noqa: E402
from mapsearch.model.windows import Window  # noqa: E402
from mapsearch.model.window_kernel import _dense_kernel, _kernel  # noqa: E402
from mapsearch.model.window_tables import _composite, _distinct_types  # noqa: E402


def assert_same(advance, context, se: int, so: int) -> None:
    got, want = _kernel(advance, context, se, so, "test"), _dense_kernel(advance, context, se, so, "test")
    assert got.dtype == want.dtype == np.int64
    assert got.shape == want.shape
    assert np.array_equal(got, want)


def random_types(rng, rows: int, types: int, high: int, zeros: float, advance: bool):
    """Types of the kernel's form; where a count is 0 the other entries are 0 too, as _distinct_types makes them."""
    count = rng.integers(0, 4, size=(rows, types)) * (rng.random((rows, types)) >= zeros)
    first, before, after = (rng.integers(0, high, size=(rows, types)) * (count > 0) for _ in range(3))
    return (before, after, count, first) if advance else (first, before, after, count)


@pytest.mark.parametrize("se, so", [(1, 1), (1, 2), (2, 1), (2, 3), (3, 3), (3, 1)])
@pytest.mark.parametrize("rows, cols, ta, to, high", [(1, 1, 1, 1, 3), (7, 5, 2, 3, 3), (40, 30, 3, 4, 4),
                                                      (25, 60, 4, 2, 6), (13, 9, 6, 5, 2), (30, 20, 3, 3, 500)])
def test_random_types(se, so, rows, cols, ta, to, high) -> None:
    """Small ``high`` makes many coincidences; ``high = 500`` codes over a range wider than the lookup table."""
    rng = np.random.default_rng(hash((se, so, rows, cols, ta, to, high)) % 2**32)
    for zeros in (0.0, 0.3, 1.0):
        assert_same(random_types(rng, rows, ta, high, zeros, True), random_types(rng, cols, to, high, zeros, False),
                    se, so)


def test_no_rows_or_columns() -> None:
    rng = np.random.default_rng(0)
    for rows, cols in ((0, 3), (3, 0), (0, 0)):
        assert_same(random_types(rng, rows, 2, 3, 0.0, True), random_types(rng, cols, 2, 3, 0.0, False), 1, 2)


def test_many_keys_fall_back_to_the_dense_form(monkeypatch) -> None:
    """Where the keys are too many for the products to pay, the dense form answers (the same table)."""
    rng = np.random.default_rng(1)
    advance, context = random_types(rng, 20, 2, 3, 0.0, True), random_types(rng, 20, 2, 3, 0.0, False)
    calls = []
    monkeypatch.setattr(window_kernel, "_dense_kernel", lambda *a: calls.append(1) or _dense_kernel(*a))
    monkeypatch.setattr(window_kernel, "_DENSE_PER_KEY", 0)
    assert np.array_equal(window_kernel._kernel(advance, context, 1, 1, "test"), _dense_kernel(advance, context, 1, 1, "test"))
    assert calls


@pytest.mark.parametrize("extents, spatial", [((14, 3), ()), ((11, 5), ()), ((12, 4), ((2, 4),)), ((8, 4), ((1, 2), (3, 4)))])
def test_chain_types(extents, spatial) -> None:
    """The types of real chains, every table variant, both directions, coefficients 1 and 2, every instance."""
    (ep, er), depth = extents, 3
    cp = chains_module.enumerate_chains(ep, depth, ((0, 1), (1, 0)), 1, None, False, spatial, True)
    cr = chains_module.enumerate_chains(er, depth, ((0, 1), (1, 0)), 1, None, False, spatial, True)
    memo: dict = {}
    trees = {id(ch): len(window_tables.instances_of(memo, ch).trees) for ch in (cp, cr)}  # instance 0, then each class
    assert not spatial or max(trees.values()) > 1
    for j, le, lo, outer in window_tables.table_variants(depth):
        for a, b, se, so in ((cp, cr, 1, 1), (cr, cp, 1, 1), (cp, cr, 2, 1), (cr, cp, 1, 2)):
            for wa in range(trees[id(a)]):
                for wb in range(trees[id(b)]):
                    advance, _ = _distinct_types(memo, a, "advance", j, le, wa)
                    context, _ = _distinct_types(memo, b, "context", min(j if outer else j - 1, lo), lo, wb)
                    assert_same(advance, context, se, so)


def test_composite_context() -> None:
    """An axis over three dimensions: the other two's context types folded into one composite (coefficient 1)."""
    depth = 2
    chains = [chains_module.enumerate_chains(e, depth, ((1, 0), (0, 1)), window=True) for e in (6, 4, 3)]
    memo: dict = {}
    for coeffs in ((1, 1, 1), (2, 1, 3)):
        for j, le, others in window_tables.joint_variants(depth, 2):
            advance, _ = _distinct_types(memo, chains[0], "advance", j, le)
            contexts = [_distinct_types(memo, ch, "context", min(j if outer else j - 1, lo), lo)[0]
                        for ch, (outer, lo) in zip(chains[1:], others)]
            assert_same(advance, _composite(contexts, list(coeffs[1:])), coeffs[0], 1)


# --------------------------------------------------------------------------- pruning on distinct columns

def test_distinct_columns(monkeypatch) -> None:
    """Each distinct column once, the first copy, in order (also when every hash collides: row_keys' fallback)."""
    base = np.array([[0, 1, 0, 2, 5], [3, 1, 0, 2, 5], [0, 1, 4, 2, 6]])
    table = base[:, [0, 1, 0, 2, 1, 3, 4, 4, 2]]
    for collide in (False, True):
        if collide:
            monkeypatch.setattr(row_keys, "digest", lambda columns, seed, n: np.zeros(n, dtype=np.int64))
        assert np.array_equal(window_pruning._distinct_columns(table), base)
        assert window_pruning._distinct_columns(np.zeros((4, 0), dtype=np.int64)).shape == (4, 0)


@pytest.mark.parametrize("extents, coeffs, spatial", [((14, 3), (1, 1), ()), ((11, 5), (2, 1), ()),
                                                      ((12, 4), (1, 1), ((2, 4),)), ((8, 4), (2, 1), ((1, 2), (3, 4))),
                                                      ((9, 4, 3), (1, 2, 1), ())])
def test_pruning_on_distinct_columns_is_pruning_on_every_column(extents, coeffs, spatial, monkeypatch) -> None:
    """prune_window_chains keeps the same chains as with every copy of every column (the form before)."""
    depth = 3 if len(extents) == 2 else 2
    dims = tuple("pqr"[:len(extents)])
    chains = {d: chains_module.enumerate_chains(e, depth, ((0, 1), (1, 0)), 1, None, False, spatial, True)
              for d, e in zip(dims, extents)}
    windows = (Window("I", dims, coeffs),)
    got = window_pruning.prune_window_chains(chains, windows, depth)
    monkeypatch.setattr(window_pruning, "_distinct_columns", lambda table: table)
    want = window_pruning.prune_window_chains(chains, windows, depth)
    assert any(len(got[d]) < len(chains[d]) for d in dims)  # the pruning has something to do
    for d in dims:
        assert np.array_equal(got[d].tiles, want[d].tiles) and np.array_equal(got[d].counts, want[d].counts)
