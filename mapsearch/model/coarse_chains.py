"""Coarse tile chains: the rows of a dimension whose extents are halvings or powers of two.

The coarse search that starts each phase (solve/coarse.py) restricts the
model to these rows, and the first schedule on a meshed path
(solve/narrow.py) builds a model from them alone. Either way a subset of the
family: nothing here bounds anything.
"""

from __future__ import annotations

import numpy as np

from mapsearch.model.spatial_views import is_class_entry


def coarse_chains(extent: int, tiles, powers_of_two: bool = True) -> list[int]:
    """Rows of chains whose extents are all ``ceil(E / 2**k)``, ``E`` or 1, or (``powers_of_two``) powers of two."""
    values = {extent, 1}
    k = 1
    while k <= extent:
        values.add(-(-extent // k))
        if powers_of_two:
            values.add(k)
        k *= 2
    return np.flatnonzero(np.all(np.isin(tiles, sorted(values)), axis=1)).tolist()


def coarse_rows(chains, meshed: bool) -> list[int]:
    """The coarse chains of a dimension; the halvings alone where every chain is coarse (without a mesh).

    Where every chain of a dimension is coarse (an enumeration reduced at
    depth, ``space.reduced``, or pruned to such extents), the coarse model
    would be the full model and give no quick first schedule: BERT's FFN
    on ``cpu-core`` (5 levels) then ended its time phase at 16x the compute
    time under a work limit of 5, while the halvings' model proves the
    compute time in 4.5 s. Not under a mesh: there the halvings can leave out
    the parts the array needs (the 3x3 layer on ``tpu-v4i-like`` then got no
    coarse schedule at all).
    """
    rows = coarse_chains(chains.extent, chains.tiles)
    if len(rows) == len(chains.tiles) and not meshed:
        rows = coarse_chains(chains.extent, chains.tiles, powers_of_two=False)
    if chains.flavoured and any(is_class_entry(e) for v in chains.flavoured for e in v):
        # A window dimension's unequal parts above L0 time each class of link copies apart: a model
        # without them has one link time per link, as before they were searched, and finds its first
        # schedules as fast (ResNet-50's 3x3 layer on tpu-v4i-like at 10 s: 2,620 clocks, not 76,196).
        from mapsearch.model.spatial_chains import unequal_above

        unequal = unequal_above(chains.tiles, chains.extent, chains.parts_by_level(), chains.factors)
        rows = [r for r in rows if not unequal[r]]
    return rows
