"""The einsum as data: affine indices, tensor accesses, ``output += prod(inputs)``.

The grammar that reads einsum text into these is :mod:`mapsearch.spec.einsum_text`;
a workload (an einsum with extents) is :mod:`mapsearch.spec.workload`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True)
class AffineIndex:
    """``sum(coeff * dim)`` over ``terms``; coefficients are positive integers."""

    terms: tuple[tuple[str, int], ...]

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(d for d, _ in self.terms)

    @property
    def is_plain(self) -> bool:
        """True when the index is a single dimension with coefficient 1."""
        return len(self.terms) == 1 and self.terms[0][1] == 1

    def span(self, extents: Mapping[str, int]) -> int:
        """Number of index values (holes included) that dims of these extents reach.

        A tile with ``T_p`` and ``T_r`` spans ``(T_p-1)*stride + (T_r-1)*dil + 1``.
        A dim missing from ``extents`` counts as extent 1.
        """
        return sum(c * (extents.get(d, 1) - 1) for d, c in self.terms) + 1

    def lowest(self, starts: Mapping[str, int]) -> int:
        """Smallest index value when each dim starts at ``starts[d]``."""
        return sum(c * starts[d] for d, c in self.terms)

    def text(self) -> str:
        return "+".join(d if c == 1 else f"{d}*{c}" for d, c in self.terms)


@dataclass(frozen=True)
class TensorAccess:
    """A tensor as an einsum reads or writes it: its name and one index per axis."""

    name: str
    indices: tuple[AffineIndex, ...]

    @property
    def dims(self) -> frozenset[str]:
        """The dimensions that index this tensor (its relevant dimensions)."""
        return frozenset(d for ix in self.indices for d in ix.dims)

    def dims_in_order(self) -> tuple[str, ...]:
        return tuple(d for ix in self.indices for d in ix.dims)

    def words(self, extents: Mapping[str, int]) -> int:
        """Words of the region that a box of these extents touches (holes included)."""
        return math.prod(ix.span(extents) for ix in self.indices)

    def text(self) -> str:
        return f"{self.name}[{','.join(ix.text() for ix in self.indices)}]"


@dataclass(frozen=True)
class Einsum:
    """``output += prod(inputs)`` over the whole iteration space."""

    output: TensorAccess
    inputs: tuple[TensorAccess, ...]

    @property
    def tensors(self) -> tuple[TensorAccess, ...]:
        """Inputs first, then the output."""
        return self.inputs + (self.output,)

    @property
    def dims(self) -> tuple[str, ...]:
        """Dimensions in first-appearance order (output, then inputs)."""
        seen: dict[str, None] = {}
        for t in (self.output,) + self.inputs:
            for d in t.dims_in_order():
                seen.setdefault(d, None)
        return tuple(seen)

    def text(self) -> str:
        return f"{self.output.text()} += {' * '.join(t.text() for t in self.inputs)}"
