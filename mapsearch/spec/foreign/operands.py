"""The level added under a peer's compute that holds one op call's operands (see accelforge_arch.py)."""

from __future__ import annotations

from mapsearch.spec.workload import Einsum

__all__ = ["operand_words", "window_dims"]


def window_dims(einsum: Einsum, extents: dict[str, int]) -> set[str]:
    """Dimensions mapsearch's search family keeps whole at every level (a convolution's window).

    On an axis indexed by a sum, every dimension but the one of largest
    extent (mapsearch/model/problem.py, ``pinned_dims``).
    """
    pinned: set[str] = set()
    for t in einsum.tensors:
        for ix in t.indices:
            if len(ix.terms) > 1:
                largest = max(ix.dims, key=lambda d: extents.get(d, 1))
                pinned |= {d for d in ix.dims if d != largest}
    return pinned


def operand_words(einsum: Einsum, extents: dict[str, int]) -> int:
    """Words of one op call's operands, with a convolution's filter window whole.

    The AccelForge, Timeloop and ZigZag MACs read one word of each operand
    per op. mapsearch's search family keeps a window dimension whole at
    every level (on an axis indexed by a sum, every dimension but the one of
    largest extent: docs/solver.md), so the level must fit that window.
    """
    pinned = window_dims(einsum, extents)
    sizes = {d: extents.get(d, 1) if d in pinned else 1 for d in einsum.dims}
    return sum(t.words(sizes) for t in einsum.tensors)
