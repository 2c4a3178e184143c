"""Per-rank formats and the exact count of payload and metadata words of a (sub)tensor.

A :class:`Format` is a list of rank groups, top first, in the tensor's axis
order; each group covers one or more consecutive ranks and is uncompressed
(``U``) or compressed (``C``). A ``C`` group over several ranks is a
coordinate list with one coordinate word per rank per entry (COO).

Counting rule (exact; the replay and the model share it). For a box of the
tensor (a tile region, or the whole tensor) with extents ``e_k`` and ``D_k``
= distinct non-empty prefixes ``(c_0..c_k)`` in the box:

- ``fibers_0 = 1`` (the root); the fibers of group ``g+1`` are the entries of
  group ``g``.
- Entries of a ``U`` group over ranks ``[a, b)``: ``fibers * prod(e_a..e_{b-1})``
  (every coordinate, empty ones included); of a ``C`` group: ``D_{b-1}``.
- Coordinate words: ``C`` group: ``entries * (b - a)``; ``U``: none.
- Pointer words: a group followed by a ``C`` group stores ``entries + fibers``
  words (``n + 1`` per fiber of ``n`` entries: where each child fiber
  starts). A group followed by a ``U`` group stores none (children have a
  fixed size) and the last group stores none (payloads follow in order).
- Payload words: the entries of the last group (a ``U`` leaf stores zeros).

So CSR ``(U, C)`` of an ``R x S`` matrix costs ``R + 1`` pointers, ``nnz``
coordinates, ``nnz`` values; CSF ``(C, C, C)`` per-fiber ``n + 1`` pointers
(one more per fiber than the concatenated CSF arrays); COO ``nnz * ndim``
coordinates; CISS ``(C | C C)``: per non-empty slice one coordinate and one
pointer (+1), then ``ndim - 1`` coordinates per nonzero; all-``U`` is dense:
the box's volume in payload, no metadata.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Format:
    groups: tuple[tuple[str, int], ...]  # (kind "U"/"C", ranks covered), top first
    name: str = ""

    def __post_init__(self):
        for kind, n in self.groups:
            if kind not in ("U", "C") or n < 1:
                raise ValueError(f"bad rank group {(kind, n)}; expected ('U'|'C', ranks >= 1)")

    @property
    def ndim(self) -> int:
        return sum(n for _, n in self.groups)

    @property
    def compressed(self) -> bool:
        return any(k == "C" for k, _ in self.groups)

    def rank_kinds(self) -> tuple[str, ...]:
        return tuple(k for k, n in self.groups for _ in range(n))

    def text(self) -> str:
        return self.name or ",".join(k if n == 1 else f"{k}{n}" for k, n in self.groups)

    @staticmethod
    def parse(text: str, ndim: int) -> "Format":
        """``"CSR"``, ``"CSF"``, ``"COO"``, ``"CISS"``, ``"dense"`` or per-rank letters such as ``"UC"``."""
        t = text.strip()
        presets = {"csr": csr, "csf": csf, "coo": coo, "ciss": ciss, "dense": dense, "u": dense}
        if t.lower() in presets:
            return presets[t.lower()](ndim)
        letters = t.replace(",", "").replace(" ", "").upper()
        if len(letters) != ndim or set(letters) - {"U", "C"}:
            raise ValueError(f"format {text!r}: expected a preset (CSR, CSF, COO, CISS, dense) or {ndim} letters U/C")
        return Format(tuple((k, 1) for k in letters))


def dense(ndim: int) -> Format:
    return Format((("U", 1),) * ndim, "dense") if ndim else Format((), "dense")


def csr(ndim: int = 2) -> Format:
    """Uncompressed top rank, compressed below (CSR for a matrix)."""
    return Format((("U", 1),) + (("C", 1),) * (ndim - 1), "CSR")


def csf(ndim: int) -> Format:
    return Format((("C", 1),) * ndim, "CSF")


def coo(ndim: int) -> Format:
    return Format((("C", ndim),), "COO")


def ciss(ndim: int) -> Format:
    """Tensaurus CISS: compressed slices of the top rank, each a coordinate list of its nonzeros."""
    if ndim < 2:
        return coo(ndim)
    return Format((("C", 1), ("C", ndim - 1)), "CISS")


def words(fmt: Format, extents: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(payload, metadata) words of boxes: ``extents`` ``(ndim, n)``, ``D`` ``(n, ndim)``.

    Works on integer counts (exact) and on expected counts (floats): the
    words are linear in ``D`` for fixed extents.
    """
    extents = np.asarray(extents)
    n = extents.shape[1] if extents.ndim == 2 else 1
    if not fmt.groups:  # a scalar: one payload word
        return np.ones(n, D.dtype if D.size else np.int64), np.zeros(n, np.int64)
    fibers = np.ones(n, dtype=D.dtype)
    meta = np.zeros(n, dtype=D.dtype)
    a = 0
    entries = fibers
    for g, (kind, size) in enumerate(fmt.groups):
        b = a + size
        if kind == "U":
            entries = fibers * np.prod(extents[a:b], axis=0).astype(D.dtype)
        else:
            entries = D[:, b - 1]
            meta = meta + entries * size
        if g + 1 < len(fmt.groups) and fmt.groups[g + 1][0] == "C":
            meta = meta + entries + fibers
        fibers = entries
        a = b
    return entries, meta
