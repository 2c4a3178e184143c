"""A tensor's region in words, axis by axis, from the extents of the pieces a buffer holds.

Read by the capacity constraints (model/capacity.py) and by placed buffers
(model/placement.py).
"""

from __future__ import annotations

from mapsearch.model.encoding import Encoding, Q
from mapsearch.model.problem import footprint
from mapsearch.model.skew import ONE_PER_PIECE, window_key


def region_of(enc: Encoding, tensor: str, extent_at, stem: str) -> Q:
    """``prod over axes`` of the axis's words, from ``extent_at(d, f)`` = ``f(piece extent of d)``.

    A split window ``sum_g c_g d_g`` spans ``sum_g c_g (x_g - 1) + 1`` words
    for pieces ``x_g`` (``s*(x-1) + t*(y-1) + 1`` for ``s*p + t*r``,
    model/windows.py); every other axis is a product of
    its dimensions' footprints (pinned ones give 1).
    """
    w = enc.problem.workload
    access = w.tensor(tensor)
    windows = [win for win in enc.windows if win.tensor == tensor]
    in_window = {d for win in windows for d in win.dims}
    expanded = enc.cache.get("expanded", {}).get(tensor)

    def span(win) -> Q:
        terms = [(c, extent_at(d, (1, 0))) for d, c in zip(win.dims, win.coeffs)]
        return enc.linear(terms + [(1 - sum(win.coeffs), Q.const(1))], floor=1)

    if expanded:  # a skewed axis (model/skew.py): the polynomial of its box, every other axis but the windows
        boxed = {window_key(win.dims): win for win in windows if win.box}

        def factor(key: str, f) -> Q:
            return span(boxed[key]) if key in boxed else extent_at(key, f)

        terms = [(coeff, enc.product([factor(d, f) for d, f in per_dim if f != ONE_PER_PIECE], f"{stem}_m{k}"))
                 for k, (coeff, per_dim) in enumerate(expanded)]
        factors = [enc.linear(terms, floor=1)]
    else:
        factors = [extent_at(d, footprint(access, d, w)) for d in w.dims if d in access.dims and d not in in_window]
    factors += [span(win) for win in windows if not win.box]
    return enc.product(factors, stem)
