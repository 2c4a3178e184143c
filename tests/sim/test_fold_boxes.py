"""The box of a loop body (sim/spatial_fold.py, ``_Folder.box``) holds every region an output enters in it.

The fold compares the output keys entered so far within ``F_t``, the union
of the boxes of the run's later bodies; it is exact only if every key a body
can enter lies in that body's box. The box is tight along the dimensions
whose loops of the same level are outside the folded loop (their piece is
fixed for the whole body); this checks it against the regions the walk
itself computes for each body's steps, on random schedules (placed buffers
included, where a buffer holds pieces of different levels along different
dimensions).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from mapsearch.sim import spatial_fold
from mapsearch.sim.spatial_fold import _Folder, foldable
from mapsearch.sim.spatial_tracker import Tracker
from mapsearch.sim.walk_spatial import SpatialWalk
from tests.sim.test_placed_spatial import place_anywhere
from tests.sim.test_spatial_fold import random_long


def _check_boxes(s, monkeypatch) -> int:
    """Walk ``s`` folded; at every folded loop, for every body, the regions of its steps against its box.
    Returns how many (body, output) boxes were checked."""
    walk = SpatialWalk(s, False, None)
    if not foldable(walk):
        return 0
    checked = [0]
    fold = _Folder.fold
    probe = SpatialWalk(s, False, None)  # a second walk: the regions it is fed depend on the steps only

    def probing_fold(self, a, i, k, n, f, parent, cur, body):
        size = self.vt.size[i][k][f:f + n]
        start = self.vt.start[i][k][f:f + n]
        for z in range(n):
            seen: dict = {}
            feed = Tracker.feed

            def record(tr, base, active, region, keeper_change):
                seen.setdefault((tr.tensor, tr.level), []).append((active.copy(), region[0::2].copy()))
                return feed(tr, base, active, region, keeper_change)

            monkeypatch.setattr(Tracker, "feed", record)
            try:
                probe.feed(self.steps(a, parent, cur, z, z + 1))
            finally:
                monkeypatch.setattr(Tracker, "feed", feed)
            for tr in self.outputs:
                lo, hi = self.box(tr, i, k, z, parent, cur, a, size, start)
                for active, region_lo in seen.get((tr.tensor, tr.level), []):
                    steps, x = np.nonzero(active)
                    got = region_lo[:, steps, x]
                    assert (got >= lo[:, x]).all() and (got <= hi[:, x]).all(), (a, z, tr.tensor, tr.level)
                checked[0] += 1
        return fold(self, a, i, k, n, f, parent, cur, body)

    monkeypatch.setattr(_Folder, "fold", probing_fold)
    spatial_fold.walk_folded(walk)
    return checked[0]


@pytest.mark.parametrize("seed", range(30))
def test_every_region_of_a_body_lies_in_its_box(seed: int, monkeypatch) -> None:
    monkeypatch.setattr(spatial_fold, "LEAF_CELLS", 1)
    rng = random.Random(1000 + seed)
    s = random_long(rng)
    if rng.random() < 0.5:
        s = place_anywhere(s, rng)
    assert _check_boxes(s, monkeypatch) > 0
