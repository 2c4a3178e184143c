"""The output key set of the walk with instances (sim/key_set.py) against a plain Python set.

Its pages of cells, its sorted sparse form and its pending translates only
change what a query costs: membership, the keys each add reports new, and
every box query must be those of the set itself, in key order.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mapsearch.sim import key_set
from mapsearch.sim.key_set import Seen, distinct


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
    assert seen.form == form and (seen.dense is None) == (form != "bitmap") and (seen.side is not None) == (form == "cells")
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
    assert seen.npages == 1 and int(seen.side.prod()) >= key_set.CELL_KEYS  # one corner, one page
    read = []
    cell_keys = Seen._cell_keys
    monkeypatch.setattr(Seen, "_cell_keys", lambda self, cells, lo, hi: read.append(cells.shape[1]) or
                        cell_keys(self, cells, lo, hi))
    coords = seen.box_coords(np.zeros(3, np.int64), np.full(3, 63))
    assert coords.tolist() == corner.tolist() and read == [1]


def test_distinct_sorts_and_drops_repeats() -> None:
    assert distinct(np.array([5, 1, 5, 3, 1], np.int64)).tolist() == [1, 3, 5]
    assert distinct(np.zeros(0, np.int64)).tolist() == []


def _moved(model_keys, radix, g, ms) -> list[int]:
    out = []
    for m in ms:
        for k in model_keys:
            c = list(np.unravel_index(k, radix))
            c[1:] = [x + m * d for x, d in zip(c[1:], g)]
            out.append(int(np.ravel_multi_index(tuple(c), radix)))
    return out


@pytest.mark.parametrize("eager", [False, True])
@pytest.mark.parametrize("form", ["bitmap", "cells", "sorted"])
@pytest.mark.parametrize("seed", range(12))
def test_translates_answer_as_a_python_set(form, seed, eager, monkeypatch) -> None:
    """Keys added as translates (the fold's runs; sometimes overlapping the set or each other, sometimes not)
    leave the set, the keys reported new, and every query as a plain set says. The set is read on some steps
    only, so several translates and plain adds wait together (pending, as the fold leaves them); ``eager``
    puts every translate in at once, as if nothing were pending: both read the same."""
    rng = np.random.default_rng(100 + seed)
    radix = (int(rng.integers(1, 3)),) + tuple(int(x) for x in rng.integers(2, 10, size=int(rng.integers(1, 4))))
    if form == "sorted":
        monkeypatch.setattr(key_set, "DENSE_KEYS", 0)
    if eager:
        add_translates = Seen.add_translates
        monkeypatch.setattr(Seen, "add_translates", lambda self, *a: (add_translates(self, *a), self._flush()))
    seen = Seen(radix, indexed_keys=0 if form == "cells" else 1 << 40, cell_keys=4)
    size = int(np.prod(radix))
    model: set[int] = set()
    reported: list[int] = []
    unread: list[int] = []  # the keys new since the set was last read
    for step in range(12):
        if rng.random() < 0.4:
            keys = rng.integers(0, size, size=int(rng.integers(0, 6)))
            seen.add(keys)
            new = sorted(set(int(k) for k in keys) - model)
        else:
            # Distinct keys in a small box, moved along one or two axes by steps that may or may not clear it.
            g = np.zeros(len(radix) - 1, np.int64)
            for a in rng.choice(len(g), size=int(rng.integers(1, min(2, len(g)) + 1)), replace=False):
                g[a] = int(rng.integers(1, 4))
            times = int(rng.integers(1, 4))
            hi = [r - 1 - int(d) * times for r, d in zip(radix[1:], g)]
            if min(hi) < 0:
                continue
            los = [int(rng.integers(0, h + 1)) for h in hi]
            his = [int(rng.integers(lo, h + 1)) for lo, h in zip(los, hi)]
            box = itertools.product(range(radix[0]), *[range(lo, h + 1) for lo, h in zip(los, his)])
            keys = np.array(sorted(set(int(np.ravel_multi_index(c, radix)) for c in box)), np.int64)
            keys = keys[rng.random(len(keys)) < 0.6]
            ms = np.arange(1, times + 1, dtype=np.int64)
            seen.add_translates(keys, g, ms)
            moved = _moved(keys.tolist(), radix, g, ms)
            new = list(dict.fromkeys(k for k in moved if k not in model))
        model |= set(new)
        unread += new
        if step < 11 and rng.random() < 0.6:
            continue  # not read: what was added stays pending
        got = [int(k) for a in seen.added for k in a][len(reported):]
        assert sorted(got) == sorted(unread) and len(got) == len(set(got))
        reported += got
        unread = []
        probe = rng.integers(0, size, size=8)
        assert list(seen.contains(probe)) == [int(k) in model for k in probe]
        lo = np.zeros(len(radix) - 1, np.int64)
        coords = seen.box_coords(lo, np.array(radix[1:]) - 1)
        got_box = list(np.ravel_multi_index(tuple(coords), radix)) if coords.shape[1] else []
        assert got_box == sorted(model)


@pytest.mark.parametrize("form", ["bitmap", "cells"])
def test_translates_that_clear_each_other_go_in_without_a_sort(form, monkeypatch) -> None:
    """Translates known apart and new take the fast path (no call of the sorting add) and wait, unread, until
    the set is read; ones that may meet go through the sorting add. Fails if the fast path is switched off."""
    radix = (1, 16, 16, 8)
    seen = Seen(radix, indexed_keys=0 if form == "cells" else 1 << 40, cell_keys=4)
    sorted_adds = []
    add = Seen._add
    monkeypatch.setattr(Seen, "_add", lambda self, keys: sorted_adds.append(len(keys)) or add(self, keys))
    corner = np.array(list(itertools.product([0], range(2), range(3), range(4)))).T
    keys = np.ravel_multi_index(tuple(corner), radix)
    seen.add(keys)
    assert sorted_adds == [24]
    seen.add_translates(keys, np.array([2, 0, 0]), np.arange(1, 8))  # steps of 2 along a side of 2: apart
    assert len(seen._pending) == 1 and sorted_adds == [24]  # pending: nothing read yet
    assert seen.contains(np.ravel_multi_index((0, 15, 2, 3), radix)[None])[0]
    assert sorted_adds == [24] and not seen._pending and len(seen.added[-1]) == 7 * 24
    seen.add_translates(keys, np.array([0, 1, 0]), np.arange(1, 3))  # steps of 1 along a side of 3: may meet
    assert len(seen.added[-1]) == 2 * 8 and sorted_adds == [24, 48]
    assert int(seen.contains(np.arange(int(np.prod(radix)))).sum()) == 8 * 24 + 16


def test_a_translate_out_of_the_key_space_is_refused() -> None:
    seen = Seen((1, 4, 4))
    with pytest.raises(ValueError):
        seen.add_translates(np.array([0, 1], np.int64), np.array([0, 2]), np.arange(1, 3))
    # Backwards: keys 3 and 7 of (2, 8) moved by -2, -4, -6 leave the space below 0 (-3, -1 were accepted).
    seen = Seen((2, 8))
    with pytest.raises(ValueError):
        seen.add_translates(np.array([3, 7], np.int64), np.array([-2]), np.arange(1, 4))
    seen.add_translates(np.array([6, 7], np.int64), np.array([-2]), np.arange(1, 4))  # down to 0 and 1: inside
    assert sorted(int(k) for a in seen.added for k in a) == [0, 1, 2, 3, 4, 5]


