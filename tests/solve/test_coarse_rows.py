"""Which chains the coarse search keeps (mapsearch/solve/coarse.py, ``coarse_rows``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from mapsearch.model.coarse_chains import coarse_chains, coarse_rows


def _chains(extent: int, rows: list[tuple[int, ...]]):
    return SimpleNamespace(extent=extent, tiles=np.array(rows, dtype=np.int64), reduced=True, flavoured=None)


def test_coarse_chains_are_powers_of_two_and_halvings():
    # 24: powers of two 1..16 and halvings 24, 12, 6, 3, 2, 1; 5 and 7 are neither.
    c = _chains(24, [(24, 8), (12, 5), (16, 4), (7, 1), (6, 3)])
    assert coarse_chains(c.extent, c.tiles) == [0, 2, 4]
    assert coarse_chains(c.extent, c.tiles, powers_of_two=False) == [4]


def test_every_chain_coarse_falls_back_to_the_halvings_without_a_mesh():
    # Every row is coarse, so the coarse model would be the full one: keep the halvings alone.
    c = _chains(24, [(24, 8), (12, 6), (16, 4), (6, 3), (3, 1)])
    assert coarse_rows(c, meshed=False) == [1, 3, 4]
    # Under a mesh the halvings could drop the parts an array needs: every row stays.
    assert coarse_rows(c, meshed=True) == [0, 1, 2, 3, 4]


def test_a_proper_coarse_subset_is_kept_as_it_is():
    c = _chains(24, [(24, 8), (12, 5), (16, 4)])
    assert coarse_rows(c, meshed=False) == [0, 2]
