"""A tensor's region in words, axis by axis, from the extents of the pieces a buffer holds.

Read by the capacity constraints (model/capacity.py) and by placed buffers
(model/placement.py).
"""

from __future__ import annotations

from mapsearch.model.encoding import Encoding, Q
from mapsearch.model.problem import footprint


def region_of(enc: Encoding, tensor: str, extent_at, stem: str) -> Q:
    """``prod over axes`` of the axis's words, from ``extent_at(d, f)`` = ``f(piece extent of d)``.

    A split window ``s*p + t*r`` spans ``s*(x-1) + t*(y-1) + 1`` words for
    pieces ``x``, ``y`` (model/windows.py); every other axis is a product of
    its dimensions' footprints (pinned ones give 1).
    """
    w = enc.problem.workload
    access = w.tensor(tensor)
    windows = [win for win in enc.windows if win.tensor == tensor]
    in_window = {d for win in windows for d in win.dims}
    factors = [extent_at(d, footprint(access, d, w)) for d in w.dims if d in access.dims and d not in in_window]
    for win in windows:
        (p, r), (cs, ct) = win.dims, win.coeffs
        factors.append(enc.linear([(cs, extent_at(p, (1, 0))), (ct, extent_at(r, (1, 0))), (1 - cs - ct, Q.const(1))],
                                  floor=1))
    return enc.product(factors, stem)
