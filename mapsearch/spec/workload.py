"""The workload: one einsum (or, later, a chain of them) over named dimensions.

Every point of the iteration space is one multiply-accumulate. A tensor axis
is indexed by an affine sum of dimensions with positive integer coefficients,
so a convolution input reads ``I[c, p*stride + r*dil]``.

>>> w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})
>>> w.einsum.output.name, w.tensor_shape("A"), w.macs
('Z', (4, 4), 64)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from mapsearch.spec.einsum import AffineIndex, Einsum, TensorAccess
from mapsearch.spec.einsum_text import parse_einsum

__all__ = ["AffineIndex", "Einsum", "TensorAccess", "Workload", "WorkloadGraph"]


@dataclass(frozen=True)
class Workload:
    """A named einsum with an integer extent per dimension."""

    name: str
    einsum: Einsum
    extents: tuple[tuple[str, int], ...]

    @staticmethod
    def from_text(name: str, einsum: str, extents: Mapping[str, int]) -> "Workload":
        """Parse the einsum text (see :mod:`mapsearch.spec.einsum_text`)."""
        parsed = parse_einsum(einsum)
        return Workload(name, parsed, tuple((d, int(extents[d])) for d in parsed.dims))

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(d for d, _ in self.extents)

    @property
    def extent(self) -> dict[str, int]:
        """Extent per dimension, as a fresh dict."""
        return dict(self.extents)

    @property
    def macs(self) -> int:
        return math.prod(e for _, e in self.extents)

    @property
    def tensors(self) -> tuple[TensorAccess, ...]:
        return self.einsum.tensors

    @property
    def tensor_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tensors)

    def tensor(self, name: str) -> TensorAccess:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def is_output(self, name: str) -> bool:
        return name == self.einsum.output.name

    def tensor_shape(self, name: str) -> tuple[int, ...]:
        ext = self.extent
        return tuple(ix.span(ext) for ix in self.tensor(name).indices)

    def tensor_words(self, name: str) -> int:
        return math.prod(self.tensor_shape(name))



@dataclass(frozen=True)
class WorkloadGraph:
    """Several einsums sharing tensors (a chain or a DAG), with one extent per dimension name.

    ``einsums`` are in an order where every tensor is written before it is
    read. See docs/fusion.md.

    >>> g = WorkloadGraph.from_texts("mm3", ["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n] * C[n,p]"],
    ...                              {"m": 4, "n": 3, "k": 5, "p": 2})
    >>> g.intermediates, g.shared_dims
    (('T',), ('m', 'n'))
    """

    name: str
    einsums: tuple[Einsum, ...]
    extents: tuple[tuple[str, int], ...]

    @staticmethod
    def from_texts(name: str, texts: list[str], extents: Mapping[str, int]) -> "WorkloadGraph":
        einsums = tuple(parse_einsum(t) for t in texts)
        dims: dict[str, None] = {}
        for e in einsums:
            for d in e.dims:
                dims.setdefault(d, None)
        return WorkloadGraph(name, einsums, tuple((d, int(extents[d])) for d in dims))

    @property
    def extent(self) -> dict[str, int]:
        return dict(self.extents)

    @property
    def tensor_names(self) -> tuple[str, ...]:
        """Every tensor of the chain, in order of first appearance (per einsum: inputs, then the output)."""
        seen: dict[str, None] = {}
        for e in self.einsums:
            for t in e.tensors:
                seen.setdefault(t.name, None)
        return tuple(seen)

    @property
    def intermediates(self) -> tuple[str, ...]:
        """Tensors written by one einsum and read by a later one."""
        written = [e.output.name for e in self.einsums]
        read = {t.name for e in self.einsums for t in e.inputs}
        return tuple(t for t in written if t in read)

    @property
    def shared_dims(self) -> tuple[str, ...]:
        """Dimensions every einsum iterates (the ones a fused outer nest may tile)."""
        common = set(self.einsums[0].dims)
        for e in self.einsums[1:]:
            common &= set(e.dims)
        return tuple(d for d, _ in self.extents if d in common)

    def stage(self, i: int) -> Workload:
        """Einsum ``i`` alone, as a one-einsum workload over its own dimensions."""
        e = self.einsums[i]
        ext = self.extent
        return Workload(f"{self.name}[{i}]", e, tuple((d, ext[d]) for d in e.dims))

    @property
    def macs(self) -> int:
        return sum(self.stage(i).macs for i in range(len(self.einsums)))

    def dag(self):
        """The tensor/einsum DAG as a ``networkx.DiGraph`` (tensor -> einsum -> tensor)."""
        import networkx as nx

        g = nx.DiGraph()
        for i, e in enumerate(self.einsums):
            node = ("einsum", i)
            g.add_node(node, text=e.text())
            for t in e.inputs:
                g.add_edge(("tensor", t.name), node)
            g.add_edge(node, ("tensor", e.output.name))
        return g
