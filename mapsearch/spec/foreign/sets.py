"""Tensor sets as the peers' set expressions see them (AccelForge's ``InvertibleSet`` of tensor names).

``~A`` is the complement within the einsum's tensors; ``|``, ``&``, ``-``,
``^`` are the set operators; ``len(S)``, ``bool(S)`` and ``t in S`` work;
``S.tensors`` is ``S`` and ``S.bits_per_value`` is the bits of its one
tensor. The result of a translated expression becomes a mapsearch set
expression (:func:`as_set_text`), the tree format's own, so that the
``keep``/``bypass`` rules go through :mod:`mapsearch.spec.tree` unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Mapping

__all__ = ["TensorSet", "as_set_text"]


@dataclass(frozen=True)
class TensorSet:
    names: frozenset[str]
    universe: frozenset[str]
    bits: Mapping[str, int] = field(default_factory=dict, compare=False)

    EXPR_ATTRIBUTES = ("tensors", "bits_per_value")

    def _other(self, other: object) -> frozenset[str]:
        if isinstance(other, TensorSet):
            return other.names
        raise TypeError(f"a set operator needs two tensor sets, got {type(other).__name__}")

    def _new(self, names: frozenset[str]) -> "TensorSet":
        return TensorSet(frozenset(names), self.universe, self.bits)

    def __or__(self, other: object) -> "TensorSet":
        return self._new(self.names | self._other(other))

    def __and__(self, other: object) -> "TensorSet":
        return self._new(self.names & self._other(other))

    def __sub__(self, other: object) -> "TensorSet":
        return self._new(self.names - self._other(other))

    def __xor__(self, other: object) -> "TensorSet":
        return self._new(self.names ^ self._other(other))

    def __invert__(self) -> "TensorSet":
        return self._new(self.universe - self.names)

    def __bool__(self) -> bool:
        return bool(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.names))

    def __contains__(self, item: object) -> bool:
        return item in self.names

    @property
    def tensors(self) -> "TensorSet":
        return self

    @property
    def bits_per_value(self) -> int:
        if len(self.names) != 1:
            raise ValueError(f"bits_per_value of a set of {len(self.names)} tensors (expected one)")
        (name,) = self.names
        if name not in self.bits:
            raise ValueError(f"no bits_per_value for {name}")
        return self.bits[name]


def as_set_text(names: frozenset[str], order: tuple[str, ...]) -> str:
    """A mapsearch set expression naming exactly ``names`` (``Nothing`` when empty), in ``order``."""
    chosen = [t for t in order if t in names]
    return " | ".join(chosen) if chosen else "Nothing"
