"""Bandwidth: the link between a cache and the cache one level below it.

It counts the words that cross it, down (``input``) and up (``output``), in
total and per tensor name, and turns them into clocks:

- shared line (``output_clocks_per_word is None``):
  ``time = (input + output) * input_clocks_per_word``
- separate lines: ``time = max(input * input_clocks_per_word, output * output_clocks_per_word)``

Costs may be ``Fraction`` (``1/2`` clock per word is two words per clock);
the time is then exact.

As in the seed, the chain is built bottom-up: ``Bandwidth(child_cache)`` and
then ``Cache(size, bandwidth)`` for the level above it.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import TYPE_CHECKING, Sequence

from mapsearch.sim.tensor import Tensor

if TYPE_CHECKING:
    from mapsearch.sim.cache import Cache

Number = int | Fraction


class Bandwidth:
    """Link from the cache above (``upper``, set when that cache is built) down to ``cache``.

    A link may serve several child caches (the instances of a meshed level
    under one parent instance share their parent's link): pass a list of
    caches; ``cache`` is then the first and ``caches`` all of them.
    """

    def __init__(
        self,
        cache: "Cache | Sequence[Cache]",
        input_clocks_per_word: Number = 1,
        output_clocks_per_word: Number | None = None,
    ):
        caches = tuple(cache) if isinstance(cache, (list, tuple)) else (cache,)
        if not caches:
            raise ValueError("a link needs at least one cache below it")
        for c in caches:
            if c.up is not None:
                raise ValueError(f"{c.name} already has a link above it")
            if c.level != caches[0].level:
                raise ValueError("the caches below one link must be at one level")
        self.caches: tuple["Cache", ...] = caches
        self.cache = caches[0]
        self.upper: "Cache | None" = None
        self.input_clocks_per_word = input_clocks_per_word
        self.output_clocks_per_word = output_clocks_per_word
        self.input = 0
        self.output = 0
        self.input_by_tensor: dict[str | None, int] = defaultdict(int)
        self.output_by_tensor: dict[str | None, int] = defaultdict(int)
        for c in caches:
            c.up = self

    @property
    def shared(self) -> bool:
        """True for one line carrying both directions."""
        return self.output_clocks_per_word is None

    @property
    def time(self) -> Number:
        """Clocks the words moved so far take, per the line model."""
        if self.output_clocks_per_word is None:
            return (self.input + self.output) * self.input_clocks_per_word
        return max(self.input * self.input_clocks_per_word, self.output * self.output_clocks_per_word)

    def count_down(self, name: str | None, words: int) -> None:
        """Record ``words`` of tensor ``name`` moving down this link."""
        self.input += words
        self.input_by_tensor[name] += words

    def count_up(self, name: str | None, words: int) -> None:
        """Record ``words`` of tensor ``name`` moving up this link."""
        self.output += words
        self.output_by_tensor[name] += words

    def load(self, tensor: Tensor) -> Tensor:
        """Copy ``tensor`` into the child cache (allocating there) and count its words down."""
        copy = tensor.copy(level=self.cache.level)
        self.cache.alloc(copy)
        self.count_down(copy.name, copy.size())
        return copy

    def store(self, tensor: Tensor) -> Tensor:
        """Move ``tensor`` out of the child cache (freeing it there) and count its words up.

        Returns the copy one level up; allocating it is the upper cache's job.
        """
        self.cache.free(tensor)
        self.count_up(tensor.name, tensor.size())
        return tensor.copy(level=self.cache.level + 1)

    def run(self, op: object, *args: object) -> object:
        return self.cache.run(op, *args)

    def reset(self) -> None:
        self.input = 0
        self.output = 0
        self.input_by_tensor.clear()
        self.output_by_tensor.clear()

    def __repr__(self) -> str:
        return f"<Bandwidth input: {self.input}, output: {self.output}, time: {self.time}, cache: {self.cache.name}>"
