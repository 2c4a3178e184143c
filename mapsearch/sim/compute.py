"""The compute under L0: the seed's ``BinOpx`` and the replay's ``TileOp``.

A compute node is attached to the one cache built on it (``Cache(size, op)``);
its operands must be resident there (or, for ``BinOpx``, at the cache of the
level it declares) when it runs. It accumulates ``time`` (clocks) and
``calls``.

This module also holds the einsum kernel the replay's op runs on a tile's
values, and the whole-problem reference it is compared with.
"""

from __future__ import annotations

import math
import string
from fractions import Fraction
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

from mapsearch.sim.errors import LevelError, NotResidentError, ShapeError
from mapsearch.sim.tensor import Tensor
from mapsearch.spec.workload import TensorAccess, Workload

if TYPE_CHECKING:
    from mapsearch.sim.cache import Cache

Number = int | Fraction
# kernel(output values, input values, extent per dimension of the tile)
Kernel = Callable[[np.ndarray, Sequence[np.ndarray], Mapping[str, int]], None]


class ComputeNode:
    """What every compute endpoint shares: its cache, ``time`` and ``calls``."""

    def __init__(self) -> None:
        self.cache: "Cache | None" = None
        self.time: Number = 0
        self.calls = 0

    def attach(self, cache: "Cache") -> None:
        """Called by ``Cache(size, op)``: the op computes on that cache's tensors."""
        if self.cache is not None and self.cache is not cache:
            raise ValueError(f"this op already computes under {self.cache.name}")
        self.cache = cache

    def reset(self) -> None:
        self.time = 0
        self.calls = 0

    def _cache_at(self, level: int) -> "Cache | None":
        c = self.cache
        while c is not None and c.level != level:
            c = c.up.upper if c.up is not None else None
        return c

    def _check_resident(self, operand: Tensor) -> None:
        if self.cache is None:  # a free-standing op: nothing to check against
            return
        cache = self._cache_at(operand.level)
        if cache is None or not cache.holds(operand):
            where = cache.name if cache is not None else f"level {operand.level}"
            raise NotResidentError(where, operand.describe(), "compute on")


class BinOpx(ComputeNode):
    """The seed's op: ``run(a, b, c)`` checks the operands, calls ``f(a, b, c)``, adds ``t``.

    ``as0``/``bs``/``cs`` are the operand shapes (``None`` skips the check),
    ``alevel``/``blevel``/``clevel`` their levels.
    """

    def __init__(
        self,
        as0: Sequence[int] | None,
        alevel: int,
        bs: Sequence[int] | None,
        blevel: int,
        cs: Sequence[int] | None,
        clevel: int,
        f: Callable[[Tensor, Tensor, Tensor], object],
        t: Number = 0,
    ):
        super().__init__()
        self.as0, self.alevel = as0, alevel
        self.bs, self.blevel = bs, blevel
        self.cs, self.clevel = cs, clevel
        self.f = f
        self.t = t

    def run(self, a: Tensor, b: Tensor, c: Tensor) -> object:
        """One call: returns ``c.data`` as the seed does."""
        expected = (("a", a, self.as0, self.alevel), ("b", b, self.bs, self.blevel), ("c", c, self.cs, self.clevel))
        for label, x, shape, level in expected:
            if x.level != level:
                raise LevelError(f"operand {label} ({x.describe()}) is at level {x.level}, the op expects {level}")
            if shape is not None and list(x.sz) != list(shape):
                raise ShapeError(f"operand {label} ({x.describe()}) has shape {x.sz}, the op expects {list(shape)}")
            self._check_resident(x)
        self.f(a, b, c)
        self.time += self.t
        self.calls += 1
        return c.data

    def __repr__(self) -> str:
        return f"<BinOpx time: {self.time}>"


class TileOp(ComputeNode):
    """The replay's op: one ``run`` covers a whole L0 tile of ``calls`` op calls.

    Its operands (the output tile, then the input tiles) must be resident in
    the cache the op sits under. ``time`` grows by ``calls * clocks_per_call``.
    With a ``kernel`` and operands that carry data it also computes.
    """

    def __init__(self, clocks_per_call: Number, kernel: Kernel | None = None):
        super().__init__()
        self.clocks_per_call = clocks_per_call
        self.kernel = kernel

    def run(self, output: Tensor, inputs: Sequence[Tensor], *, calls: int, extents: Mapping[str, int]) -> None:
        for x in (output, *inputs):
            if self.cache is not None and x.level != self.cache.level:
                raise LevelError(f"{x.describe()} is at level {x.level}; the op computes at {self.cache.level}")
            self._check_resident(x)
        if self.kernel is not None and output.data is not None:
            self.kernel(output.to_numpy(), [x.to_numpy() for x in inputs], extents)
        self.time += calls * self.clocks_per_call
        self.calls += calls


def calls_for_tile(extents: Mapping[str, int], block: Mapping[str, int]) -> int:
    """Op calls that cover a tile: the blocks it splits into, remainders included.

    Counted as the contract splits (``range(0, t, b)``), i.e. ``prod ceil(t_d / b_d)``.
    """
    return math.prod(len(range(0, t, block.get(d, 1))) for d, t in extents.items())


# ---------------------------------------------------------------- the kernel
def _letters(workload: Workload) -> dict[str, str]:
    alphabet = string.ascii_lowercase + string.ascii_uppercase
    if len(workload.dims) > len(alphabet):
        raise ValueError(f"{len(workload.dims)} dimensions; the kernel handles at most {len(alphabet)}")
    return dict(zip(workload.dims, alphabet))


def _own_dims(access: TensorAccess) -> tuple[str, ...]:
    return tuple(dict.fromkeys(access.dims_in_order()))


def _positions(access: TensorAccess, extents: Mapping[str, int]) -> tuple[np.ndarray, ...]:
    """Per tensor axis, the index ``sum c*x_d`` at every point of the box over the tensor's dims.

    The arrays broadcast to one axis per dimension of the tensor (first-appearance order).
    """
    dims = _own_dims(access)
    grid = {
        d: np.arange(extents[d]).reshape([-1 if k == i else 1 for k in range(len(dims))])
        for i, d in enumerate(dims)
    }
    return tuple(sum(c * grid[d] for d, c in ix.terms) for ix in access.indices)


def _gather(values: np.ndarray, access: TensorAccess, extents: Mapping[str, int]) -> np.ndarray:
    """The operand as one axis per dimension: ``g[x...] = values[sum c*x ...]``."""
    if not access.indices:
        return values
    g = values[_positions(access, extents)]
    # Broadcasting leaves size-1 axes for dims no index spans with extent > 1.
    return np.broadcast_to(g, tuple(extents[d] for d in _own_dims(access)))


def einsum_kernel(workload: Workload) -> Kernel:
    """``output += prod(inputs)`` over a box of the given extents, in box-local coordinates.

    A tile's buffers start at the region's first index, and the region's first
    index is ``sum c*start_d``, so an element's place in the tile is
    ``sum c*(x_d - start_d)``: the box's extents are all the kernel needs.
    """
    letters = _letters(workload)
    out_access = workload.einsum.output
    accesses = workload.einsum.inputs
    out_plain = all(ix.is_plain for ix in out_access.indices)
    # Output dims absent from every input (``Z[m,n] += A[m,k] * B[k]``) broadcast: numpy's einsum needs
    # them on an operand, so each gets a vector of ones over the box (as sim/data.py does).
    missing = [d for d in _own_dims(out_access) if not any(d in _own_dims(a) for a in accesses)]
    spec = ",".join(["".join(letters[d] for d in _own_dims(a)) for a in accesses] + [letters[d] for d in missing])
    spec += "->" + "".join(letters[d] for d in _own_dims(out_access))

    def kernel(out: np.ndarray, inputs: Sequence[np.ndarray], extents: Mapping[str, int]) -> None:
        operands = [_gather(v, a, extents) for v, a in zip(inputs, accesses)]
        operands += [np.ones(extents[d]) for d in missing]
        contribution = np.einsum(spec, *operands)
        if out_plain:
            out += contribution
        else:
            np.add.at(out, _positions(out_access, extents), contribution)

    return kernel


def einsum_reference(workload: Workload, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The whole output computed in one go (the box is the whole iteration space)."""
    out = np.zeros(workload.tensor_shape(workload.einsum.output.name))
    einsum_kernel(workload)(out, [inputs[a.name] for a in workload.einsum.inputs], workload.extent)
    return out
