"""Tensor: an n-D view over flat storage, as the seed simulator defines it.

A view is ``data`` (a flat NumPy array, or ``None`` for a view that only
counts words), ``offset`` and per-axis strides ``skips`` (in elements) over a
shape ``sz``. Indexing (``t[i][j]``, ``t[:, 0:2]``, ``t[i, j]``) makes new
views of the same storage; nothing is copied until a cache moves a view.

Fresh storage is laid out row-major (the last axis has stride 1), as NumPy
does. Every view carries the ``key`` of the allocation it belongs to (views
of one allocation share it) and the ``name`` of the tensor it is a part of:
caches track residency by key, links count words per name.

>>> t = Tensor(list(range(6)), 0, [2, 3])
>>> t[1][2].value, t[:, 1:3].tolist(), t[1].sum()
(5.0, [[1.0, 2.0], [4.0, 5.0]], 12.0)
"""

from __future__ import annotations

import itertools
import math
from typing import Hashable, Iterable, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

_fresh_keys = itertools.count()


def _row_major(shape: Sequence[int]) -> list[int]:
    skips, step = [], 1
    for n in reversed(shape):
        skips.append(step)
        step *= n
    return skips[::-1]


def _as_storage(data: object) -> np.ndarray | None:
    """The flat array behind a view; Python lists become float64 so values can be accumulated."""
    if data is None:
        return None
    if isinstance(data, np.ndarray):
        return data if data.ndim == 1 else data.reshape(-1)
    return np.array(data, dtype=np.float64).reshape(-1)


class _Wordless:
    """Identity of a data-less allocation (views of it share this token)."""

    __slots__ = ()


class Tensor:
    """An n-D view over flat storage.

    ``Tensor(data, level, sz, offset=0, skips=None, *, name=None, key=None)``:
    ``data`` may be a list, a NumPy array (flattened; shared when contiguous)
    or ``None`` (a view with a shape and no values, for counting words only).
    ``level`` is the cache level it resides at (0 next to compute).
    """

    def __init__(
        self,
        data: object,
        level: int,
        sz: Iterable[int],
        offset: int = 0,
        skips: Iterable[int] | None = None,
        *,
        name: str | None = None,
        key: Hashable | None = None,
        _storage: object | None = None,
    ):
        self.data = _as_storage(data)
        self.level = level
        self.sz = [int(n) for n in sz]
        self.offset = int(offset)
        self.skips = [int(s) for s in skips] if skips is not None else _row_major(self.sz)
        if len(self.skips) != len(self.sz):
            raise ValueError(f"{len(self.sz)} axes but {len(self.skips)} strides")
        self.name = name
        self.key: Hashable = next(_fresh_keys) if key is None else key
        # What residency compares to tell "the same allocation again" from a clash of keys.
        if _storage is None:
            _storage = self.data if self.data is not None else _Wordless()
        self.storage: object = _storage
        if self.data is not None and self.size() > 0:
            last = self.offset + sum((n - 1) * s for n, s in zip(self.sz, self.skips))
            if self.offset < 0 or last >= len(self.data):
                raise IndexError(f"view reaches element {last} of storage of {len(self.data)}")

    # ------------------------------------------------------------------ shape
    def size(self) -> int:
        """Number of elements (words) of the view."""
        return math.prod(self.sz)

    @property
    def ndim(self) -> int:
        return len(self.sz)

    def __len__(self) -> int:
        if not self.sz:
            raise TypeError("a scalar view has no length")
        return self.sz[0]

    # ------------------------------------------------------------------ views
    def _view(self, sz: list[int], offset: int, skips: list[int]) -> "Tensor":
        return Tensor(
            self.data, self.level, sz, offset, skips, name=self.name, key=self.key, _storage=self.storage
        )

    def __getitem__(self, key: object) -> "Tensor":
        """A view by integers (drop the axis) and step slices (keep it), leading axes first."""
        keys = key if isinstance(key, tuple) else (key,)
        if len(keys) > len(self.sz):
            raise IndexError(f"{len(keys)} indices for a view of {len(self.sz)} axes")
        sz, skips, offset = [], [], self.offset
        for axis, k in enumerate(keys):
            n, s = self.sz[axis], self.skips[axis]
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                sz.append(len(range(start, stop, step)))
                skips.append(s * step)
                offset += s * start
            elif isinstance(k, (int, np.integer)):
                i = int(k) + n if k < 0 else int(k)
                if not 0 <= i < n:
                    raise IndexError(f"index {k} out of range for axis {axis} of extent {n}")
                offset += s * i
            else:
                raise TypeError(f"indices must be integers or slices, got {type(k).__name__}")
        rest = len(keys)
        return self._view(sz + self.sz[rest:], offset, skips + self.skips[rest:])

    def __setitem__(self, key: object, value: object) -> None:
        """Write through the view into the storage (``t[i][j] = v``, ``t[0:2, 1] = 0``)."""
        self._values_for("assign to")[key if self.sz else ...] = value

    # ------------------------------------------------------------------ values
    def _values_for(self, what: str) -> np.ndarray:
        if self.data is None:
            raise ValueError(f"cannot {what} a view without data ({self.describe()})")
        return self.to_numpy()

    def to_numpy(self) -> np.ndarray:
        """A writable NumPy view of the same elements (no copy)."""
        if self.data is None:
            raise ValueError(f"{self.describe()} has no data")
        item = self.data.itemsize
        return as_strided(self.data[self.offset :], shape=self.sz, strides=[s * item for s in self.skips])

    @property
    def value(self) -> object:
        """The element of a scalar view."""
        if self.sz:
            raise TypeError("value is defined for scalar views only")
        return self._values_for("read").item()

    def sum(self) -> object:
        """Sum of the view's elements."""
        return self._values_for("sum").sum().item()

    def tolist(self) -> object:
        return self._values_for("list").tolist()

    def copy(self, level: int, key: Hashable | None = None) -> "Tensor":
        """A contiguous copy at ``level`` (fresh storage, same name; no data stays no data)."""
        data = None if self.data is None else self.to_numpy().copy().reshape(-1)
        return Tensor(data, level, self.sz, name=self.name, key=key)

    def describe(self) -> str:
        """How errors name the view: its key when that is text (the replay's tiles), else its name."""
        if isinstance(self.key, str):
            return self.key
        label = self.name or "tensor"
        return f"{label} {self.sz} (allocation {self.key!r})"

    def __repr__(self) -> str:
        if self.data is None:
            return f"<Tensor {self.describe()} level {self.level}, no data>"
        return repr(self.tolist())
