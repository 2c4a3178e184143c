"""The mapping space a model covers: chains per dimension, orders and keep choices (a result's ``space``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mapsearch.model.encoding import Encoding

__all__ = ["SearchSpace", "search_space"]


@dataclass(frozen=True)
class SearchSpace:
    """The mapping space the model covers, per dimension."""

    chains: tuple[tuple[str, int, int], ...]  # (dim, chains kept, chains enumerated)
    orders_per_level: int
    reduced: bool  # some level drew from a reduced candidate family (very large extents or deep hierarchies)
    pinned: tuple[str, ...]  # held whole at every level (convolution filter dims)
    families: tuple[tuple[str, str], ...] = ()  # (dim, candidate family) where reduced

    @property
    def size(self) -> int:
        """Schedules in the family: tile chains x orders x keep choices (upper count)."""
        return math.prod(raw for _, _, raw in self.chains) * self.orders_per_level


def search_space(enc: Encoding) -> SearchSpace:
    p = enc.problem
    orders = math.factorial(len(p.workload.dims) - len(enc.pinned)) ** p.depth
    keeps = 2 ** sum(1 for v in enc.kept.values() if not isinstance(v, bool))
    return SearchSpace(tuple((d, len(c), c.raw_count) for d, c in enc.chains.items()), orders * keeps,
                       any(c.reduced for c in enc.chains.values()), tuple(sorted(enc.pinned)),
                       tuple((d, c.family) for d, c in enc.chains.items() if c.reduced))
