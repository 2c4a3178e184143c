"""Cache: one memory level with a capacity (words) and explicit residency.

Construction follows the seed, bottom-up: ``Cache(size, parent)`` where
``parent`` is what lies *below* the cache: the compute node for L0
(``Cache(32, op)``, level 0) or the ``Bandwidth`` link down to the next cache
(``Cache(1000, Bandwidth(L0))``, level 1).

Residency is tracked by allocation ``key``: every view of an allocation shares
its key, so ``holds(view)`` says whether the storage behind the view is here.
Callers may choose the key of what they allocate or move (the replay names a
tile ``"A[0:2,2:4]"``), so a tile can be found and named by its region.

What is counted:
- ``used``: words of the allocations resident now; ``peak``: the most ever.
- moving a view counts its words on every link it crosses (``load`` down,
  ``store``/``store_to`` up), per tensor name, even across levels that do not
  keep it (bypass); only the destination allocates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

from mapsearch.sim.bandwidth import Bandwidth
from mapsearch.sim.compute import ComputeNode
from mapsearch.sim.errors import CapacityError, LevelError, NotResidentError, ShapeError
from mapsearch.sim.tensor import Tensor


@dataclass
class _Allocation:
    tensor: Tensor
    words: int


class Cache:
    """A memory level: ``size`` words (``None``: unbounded) above ``parent`` (a link or the op)."""

    def __init__(self, size: int | None, parent: Bandwidth | ComputeNode, name: str | None = None):
        self.size = size
        self.parent = parent
        self.up: Bandwidth | None = None  # the link to the cache above, set by Bandwidth(self)
        self.used = 0
        self.peak = 0
        self._resident: dict[Hashable, _Allocation] = {}
        if isinstance(parent, Bandwidth):
            if parent.upper is not None:
                raise ValueError("this link already has a cache above it")
            self.level = parent.cache.level + 1
            parent.upper = self
        elif isinstance(parent, ComputeNode):
            self.level = 0
            parent.attach(self)
        else:
            raise TypeError(f"a cache sits on a Bandwidth or a compute node, got {type(parent).__name__}")
        self.name = name if name is not None else f"L{self.level}"

    # ------------------------------------------------------------ the chain
    @property
    def below(self) -> "Cache | None":
        """The cache one level down, or None for L0."""
        return self.parent.cache if isinstance(self.parent, Bandwidth) else None

    def _links_down_to(self, target: "Cache") -> list[Bandwidth]:
        """The links from this cache down to ``target``, outermost first (found from ``target`` up)."""
        links, c = [], target
        while c is not self:
            if c.up is None or c.up.upper is None:
                raise ValueError(f"{target.name} is not below {self.name}")
            links.append(c.up)
            c = c.up.upper
        if not links:
            raise ValueError(f"{target.name} is not below {self.name}")
        return links[::-1]

    def _cache_below_at(self, level: int) -> "Cache":
        c = self.below
        while c is not None and c.level != level:
            c = c.below
        if c is None:
            raise LevelError(f"{self.name} has no cache at level {level} below it")
        return c

    # ------------------------------------------------------------ residency
    def holds(self, tensor_or_key: Tensor | Hashable) -> bool:
        """True when the allocation (a view's key, or a key) is resident here."""
        key = tensor_or_key.key if isinstance(tensor_or_key, Tensor) else tensor_or_key
        return key in self._resident

    def resident(self, key: Hashable) -> Tensor:
        """The allocation resident under ``key``."""
        try:
            return self._resident[key].tensor
        except KeyError:
            raise NotResidentError(self.name, str(key), "find") from None

    @property
    def keys(self) -> tuple[Hashable, ...]:
        return tuple(self._resident)

    def alloc(self, tensor: Tensor) -> Tensor:
        """Make ``tensor``'s storage resident here; raises CapacityError past ``size``.

        Allocating the same storage again is a no-op (as in the seed).
        """
        if tensor.level != self.level:
            raise LevelError(f"{tensor.describe()} is at level {tensor.level}, {self.name} is level {self.level}")
        held = self._resident.get(tensor.key)
        if held is not None:
            if held.tensor.storage is tensor.storage:
                return tensor
            raise ValueError(f"{self.name}: another allocation already uses the key {tensor.key!r}")
        needed = tensor.size()
        if self.size is not None and self.used + needed > self.size:
            raise CapacityError(self.name, tensor.describe(), self.used, needed, self.size)
        self._resident[tensor.key] = _Allocation(tensor, needed)
        self.used += needed
        self.peak = max(self.peak, self.used)
        return tensor

    def free(self, tensor: Tensor) -> None:
        """Release the allocation behind ``tensor``; NotResidentError when it is not here."""
        held = self._resident.pop(tensor.key, None)
        if held is None:
            raise NotResidentError(self.name, tensor.describe(), "free")
        self.used -= held.words

    def create(
        self, shape: Sequence[int], *, name: str | None = None, key: Hashable | None = None, data: bool = True
    ) -> Tensor:
        """Allocate a zero tensor here (no traffic); ``data=False`` allocates words without values."""
        values = np.zeros(int(np.prod(shape, dtype=np.int64))) if data else None
        return self.alloc(Tensor(values, self.level, shape, name=name, key=key))

    def calloc(self, n: int, m: int) -> Tensor:
        """Allocate an ``n x m`` zero matrix here."""
        return self.create([n, m])

    def alloc_diag(self, n: int) -> Tensor:
        """Allocate an ``n x n`` identity matrix here."""
        return self.alloc(Tensor(np.eye(n), self.level, [n, n]))

    # ------------------------------------------------------------ moves
    def load(self, view: Tensor, into: "Cache | None" = None, *, key: Hashable | None = None) -> Tensor:
        """Copy ``view`` (resident here) down into ``into`` (default: the cache right below).

        Its words count down on every link between; only ``into`` allocates.
        Returns the copy, resident in ``into`` under ``key`` (fresh if None).
        """
        if not self.holds(view):
            raise NotResidentError(self.name, view.describe(), "load")
        target = into if into is not None else self.below
        if target is None:
            raise LevelError(f"{self.name} has no level below it to load into")
        links = self._links_down_to(target)
        copy = target.alloc(view.copy(level=target.level, key=key))
        for link in links:
            link.count_down(copy.name, copy.size())
        return copy

    def multicast(self, view: Tensor, into: Sequence["Cache"], *, key: Hashable | None = None) -> list[Tensor]:
        """Copy ``view`` (resident here) into every cache of ``into`` (all below this one) at once.

        Its words count once on every distinct link of the paths down to the
        targets (the tree they span): a multicast. Returns the copies, in order.
        """
        if not self.holds(view):
            raise NotResidentError(self.name, view.describe(), "load")
        crossed: dict[int, Bandwidth] = {}
        copies = []
        for target in into:
            links = self._links_down_to(target)
            copies.append(target.alloc(view.copy(level=target.level, key=key)))
            for link in links:
                crossed.setdefault(id(link), link)
        for link in crossed.values():
            link.count_down(view.name, view.size())
        return copies

    def reduce_into(self, sources: Sequence[tuple["Cache", Tensor]], dst: Tensor) -> None:
        """Add every source tile (each resident in its cache below) into ``dst`` (a view resident here).

        The sum is formed on the way up: the words count once on every
        distinct link of the paths from the sources (in-network reduction).
        Frees the sources below; allocates nothing here.
        """
        if not self.holds(dst):
            raise NotResidentError(self.name, dst.describe(), "store into")
        crossed: dict[int, Bandwidth] = {}
        for cache, src in sources:
            if not cache.holds(src):
                raise NotResidentError(cache.name, src.describe(), "store")
            if list(src.sz) != list(dst.sz):
                raise ShapeError(f"reduce_into: {src.describe()} has shape {src.sz}, {dst.describe()} has {dst.sz}")
            for link in self._links_down_to(cache):
                crossed.setdefault(id(link), link)
        for cache, src in sources:
            if src.data is not None and dst.data is not None:
                dst.to_numpy()[...] += src.to_numpy()
            cache.free(src)
        if sources:
            name, words = sources[0][1].name, sources[0][1].size()
            for link in crossed.values():
                link.count_up(name, words)

    def store(self, view: Tensor, *, key: Hashable | None = None) -> Tensor:
        """Move ``view`` from the cache at its level (below this one) up into this cache.

        Allocates the copy here, counts its words up on every link between and
        frees the allocation behind ``view`` below. Returns the copy.
        """
        source = self._cache_below_at(view.level)
        if not source.holds(view):
            raise NotResidentError(source.name, view.describe(), "store")
        copy = self.alloc(view.copy(level=self.level, key=key))
        for link in self._links_down_to(source):
            link.count_up(view.name, view.size())
        source.free(view)
        return copy

    def store_to(self, src: Tensor, dst: Tensor) -> None:
        """Write ``src`` (resident below) into ``dst`` (a view resident here).

        Counts ``src``'s words up on every link between, frees ``src``'s
        allocation below; allocates nothing here.
        """
        if not self.holds(dst):
            raise NotResidentError(self.name, dst.describe(), "store into")
        source = self._cache_below_at(src.level)
        if not source.holds(src):
            raise NotResidentError(source.name, src.describe(), "store")
        if list(src.sz) != list(dst.sz):
            raise ShapeError(f"store_to: {src.describe()} has shape {src.sz}, {dst.describe()} has {dst.sz}")
        if src.data is not None and dst.data is not None:
            dst.to_numpy()[...] = src.to_numpy()
        for link in self._links_down_to(source):
            link.count_up(src.name, src.size())
        source.free(src)

    def run(self, op: object, *args: object) -> object:
        """Call ``op(self.parent, *args)`` once every tensor among ``args`` is resident here."""
        for arg in args:
            if isinstance(arg, Tensor) and not self.holds(arg):
                raise NotResidentError(self.name, arg.describe(), "run an op on")
        return op(self.parent, *args)  # type: ignore[operator]

    def __repr__(self) -> str:
        return f"<Cache {self.name} level {self.level}, used: {self.used}, size: {self.size}, parent: {self.parent}>"
