"""The level added under a peer's compute that holds one op call's operands (see accelforge_arch.py)."""

from __future__ import annotations

from mapsearch.spec.workload import Einsum

__all__ = ["operand_words", "held_dims"]


def held_dims(einsum: Einsum, extents: dict[str, int]) -> set[str]:
    """Dimensions mapsearch's search family may keep whole at every level: on an input axis over three or
    more dimensions of extent > 1, every one but the largest (held under a spatial fanout, which the operand
    level carries, or beyond the joint coincidence table's limit: docs/solver.md, "Split filter windows").

    A filter window over two dimensions (``R+P``) and a skewed axis (a dimension of it also indexes another
    axis of its tensor: ``I[p+r+u,p]``) are split (any tile of each dimension), so their dimensions are not
    held here.
    """
    held: set[str] = set()
    for t in einsum.tensors:
        for ix in t.indices:
            live = [d for d in ix.dims if extents.get(d, 1) > 1]
            skewed = any(sum(d in jx.dims for jx in t.indices) > 1 for d in live)
            if len(live) > 2 and not skewed:
                largest = max(live, key=lambda d: extents.get(d, 1))
                held |= {d for d in live if d != largest}
    return held


def operand_words(einsum: Einsum, extents: dict[str, int]) -> int:
    """Words of one op call's operands: one word of each operand (the AccelForge, Timeloop and ZigZag MACs
    read one word of each per op), an axis over three or more dimensions with its held dimensions whole
    (:func:`held_dims`), so that the level fits what the search family holds.

    Before filter windows were split this level held a convolution's whole window (``R`` words of an input
    row for ``R+P``): a buffer the peers' MAC does not have, which let a schedule reuse operands there and so
    move fewer words over the link into it than the hardware described can (Timeloop's tutorial
    ``03-model-conv1d+oc-3level``: 2,618 words, against 4,836 with one op's operands).
    """
    held = held_dims(einsum, extents)
    sizes = {d: extents.get(d, 1) if d in held else 1 for d in einsum.dims}
    return sum(t.words(sizes) for t in einsum.tensors)
