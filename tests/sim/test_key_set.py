"""The output key set of the walk with instances (sim/key_set.py) against a plain Python set.

Its coarse map of cells and its sorted sparse form only change what a query
costs: membership, the keys each add reports new, and every box query must
be those of the set itself, in key order.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mapsearch.sim import key_set
from mapsearch.sim.key_set import Seen, cell_sides, distinct


def _box_keys(model: set[int], radix, lo, hi) -> list[int]:
    out = []
    for k in sorted(model):
        c = np.unravel_index(k, radix)
        if all(a <= x <= b for x, a, b in zip(c[1:], lo, hi)):
            out.append(k)
    return out


@pytest.mark.parametrize("form", ["bitmap", "cells", "sorted"])
@pytest.mark.parametrize("seed", range(6))
def test_the_set_answers_as_a_python_set(form, seed, monkeypatch) -> None:
    rng = np.random.default_rng(seed)
    radix = tuple(int(x) for x in rng.integers(1, 9, size=int(rng.integers(2, 5))))
    if form == "sorted":
        monkeypatch.setattr(key_set, "DENSE_KEYS", 0)
    # Small cells in the "cells" form, so that boxes cut through them.
    seen = Seen(radix, indexed_keys=0 if form == "cells" else 1 << 40, cell_keys=4)
    assert (seen.dense is None) == (form == "sorted") and (seen.side is not None) == (form == "cells")
    size = int(np.prod(radix))
    model: set[int] = set()
    for _ in range(8):
        keys = rng.integers(0, size, size=int(rng.integers(0, 12)))
        assert list(seen.contains(keys)) == [int(k) in model for k in keys]
        seen.add(keys)
        new = sorted(set(int(k) for k in keys) - model)
        if new:
            assert seen.added[-1].tolist() == new
        model |= set(new)
        for _ in range(4):
            a = [int(rng.integers(-1, r + 1)) for r in radix[1:]]
            b = [int(rng.integers(-1, r + 1)) for r in radix[1:]]
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            coords = seen.box_coords(lo, hi)
            got = list(np.ravel_multi_index(tuple(coords), radix)) if coords.shape[1] else []
            assert got == _box_keys(model, radix, lo, hi)
    assert sum(len(a) for a in seen.added) == len(model)


def test_a_box_query_reads_the_occupied_cells_only(monkeypatch) -> None:
    """A 64 x 64 x 64 set (one instance) holding one corner: the query of the whole space reads the
    corner's cells (the cell path), and finds exactly the corner's keys."""
    radix = (1, 64, 64, 64)
    seen = Seen(radix, indexed_keys=0)
    corner = np.array(list(itertools.product([0], range(2), range(3), range(4)))).T
    seen.add(np.ravel_multi_index(tuple(corner), radix))
    assert int(seen.occupied.sum()) == 1 and int(seen.side.prod()) >= key_set.CELL_KEYS
    read = []
    cell_keys = Seen._cell_keys
    monkeypatch.setattr(Seen, "_cell_keys", lambda self, cells, lo, hi: read.append(cells.shape[1]) or
                        cell_keys(self, cells, lo, hi))
    coords = seen.box_coords(np.zeros(3, np.int64), np.full(3, 63))
    assert coords.tolist() == corner.tolist() and read == [1]


def test_distinct_sorts_and_drops_repeats() -> None:
    assert distinct(np.array([5, 1, 5, 3, 1], np.int64)).tolist() == [1, 3, 5]
    assert distinct(np.zeros(0, np.int64)).tolist() == []
