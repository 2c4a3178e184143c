"""Data layouts: where each tensor element lives in DRAM (docs/dram.md).

A :class:`LayoutSpec` says how a tensor's elements are laid out relative to
its base; :class:`Placement` binds it to a tensor's shape, a base address and
the element size and maps element coordinates to byte addresses (vectorised:
``coords`` is an ``(axes, n)`` int array).

Kinds:

- ``row_major``: row-major over the axes in ``order`` (outermost first;
  default: the tensor's own axis order).
- ``tiled``: tile-contiguous. The tensor is cut into tiles of ``tile``
  extents (per axis; an axis not given is whole); tiles are stored one after
  another, row-major over the tile grid in ``order``, each tile row-major in
  ``order`` inside and padded to the full tile size at the edges.
- ``row_aligned``: the first ``slice_axes`` axes of ``order`` select a slice
  (e.g. ``[n, c]``: one slice per input channel); each slice is row-major
  inside and padded to the DRAM's row stride (``DramSpec.row_stride_bytes``
  unless ``align`` is given), so every slice starts in a fresh row — the
  seed's layout.

Axes are named by their index text (``c``, ``p+r``) or by position.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from mapsearch.dram.geometry import DramSpec
from mapsearch.errors import SpecError, short_repr
from mapsearch.spec.workload import Workload

ROW_MAJOR = "row_major"
TILED = "tiled"
ROW_ALIGNED = "row_aligned"
KINDS = (ROW_MAJOR, TILED, ROW_ALIGNED)
_I64 = np.int64
# Byte addresses are numpy int64 (base + element offset * element size): a base is at most 2^48 bytes
# (256 TiB, beyond any DRAM traced), a tensor's footprint must end below 2^62 so that no address overflows.
MAX_BASE = 2**48
MAX_END = 2**62


class LayoutError(ValueError):
    """A layout that does not fit its tensor; ``field`` names the entry."""

    def __init__(self, field: str, detail: str):
        super().__init__(f"{field}: {detail}")
        self.field = field
        self.detail = detail


@dataclass(frozen=True)
class LayoutSpec:
    """How one tensor is laid out; ``order`` holds axis positions outer -> inner (empty: natural)."""

    kind: str = ROW_MAJOR
    order: tuple[int, ...] = ()
    tile: tuple[tuple[int, int], ...] = ()  # tiled: (axis position, extent)
    slice_axes: int = 1  # row_aligned: leading axes of ``order`` that select a slice
    align: int | None = None  # row_aligned: slice alignment in bytes (default: the DRAM's row stride)
    base: int | None = None  # byte address of element 0 (default: packed after the previous tensor)


def row_major(*order: int) -> LayoutSpec:
    return LayoutSpec(ROW_MAJOR, tuple(order))


def tiled(tile: Mapping[int, int], order: Sequence[int] = ()) -> LayoutSpec:
    return LayoutSpec(TILED, tuple(order), tuple(sorted(tile.items())))


def row_aligned(slice_axes: int = 1, order: Sequence[int] = (), align: int | None = None) -> LayoutSpec:
    return LayoutSpec(ROW_ALIGNED, tuple(order), (), slice_axes, align)


class Placement:
    """A tensor bound to DRAM: shape, base byte address, element size and layout."""

    def __init__(self, tensor: str, shape: Sequence[int], spec: LayoutSpec, base: int, element_bytes: int, row_stride: int):
        self.tensor = tensor
        self.shape = tuple(int(s) for s in shape)
        self.spec = spec
        self.base = int(base)
        self.eb = int(element_bytes)
        n = len(self.shape)
        order = tuple(spec.order) if spec.order else tuple(range(n))
        if sorted(order) != list(range(n)):
            raise LayoutError("order", f"expected a permutation of the {n} axes of {tensor}, got {list(order)}")
        self.order = order
        self.kind = spec.kind
        if self.kind == ROW_MAJOR:
            self.strides = self._strides(order, self.shape)
            self.elements = math.prod(self.shape)
        elif self.kind == ROW_ALIGNED:
            k = spec.slice_axes
            if not 0 <= k <= n:
                raise LayoutError("slice", f"expected 0..{n} slice axes for {tensor}, got {k}")
            inner = order[k:]
            inner_words = math.prod(self.shape[a] for a in inner)
            align = spec.align or row_stride
            if align % self.eb:
                raise LayoutError("align", f"expected a multiple of the element size {self.eb}, got {align}")
            slice_words = -(-inner_words * self.eb // align) * align // self.eb
            self.strides = [0] * n
            s = 1
            for a in reversed(inner):
                self.strides[a] = s
                s *= self.shape[a]
            s = slice_words
            for a in reversed(order[:k]):
                self.strides[a] = s
                s *= self.shape[a]
            self.elements = s
        elif self.kind == TILED:
            t = dict(spec.tile)
            for a, e in t.items():
                if not 0 <= a < n or e < 1:
                    raise LayoutError("tile", f"bad tile axis {a} or extent {e} for {tensor}")
            self.tile = tuple(min(int(t.get(a, self.shape[a])), self.shape[a]) for a in range(n))
            self.grid = tuple(-(-self.shape[a] // self.tile[a]) for a in range(n))
            self.tile_words = math.prod(self.tile)
            self.in_strides = self._strides(order, self.tile)
            self.grid_strides = [s * self.tile_words for s in self._strides(order, self.grid)]
            self.elements = math.prod(self.grid) * self.tile_words
        else:
            raise LayoutError("kind", f"expected one of {', '.join(KINDS)}, got {self.kind!r}")

    @staticmethod
    def _strides(order: Sequence[int], shape: Sequence[int]) -> list[int]:
        strides = [0] * len(shape)
        s = 1
        for a in reversed(order):
            strides[a] = s
            s *= shape[a]
        return strides

    @property
    def size_bytes(self) -> int:
        """Bytes from the base to the end of the footprint (padding included)."""
        return self.elements * self.eb

    def element_index(self, coords: np.ndarray) -> np.ndarray:
        """Element offset (in words, padding counted) of each coordinate column."""
        c = np.asarray(coords, dtype=_I64)
        if self.kind == TILED:
            out = np.zeros(c.shape[1:], _I64)
            for a in range(len(self.shape)):
                q, r = np.divmod(c[a], self.tile[a])
                out += q * self.grid_strides[a] + r * self.in_strides[a]
            return out
        out = np.zeros(c.shape[1:], _I64)
        for a, s in enumerate(self.strides):
            out += c[a] * s
        return out

    def addresses(self, coords: np.ndarray) -> np.ndarray:
        """Byte address of each coordinate column: ``base + element_index * element_bytes``."""
        return self.base + self.element_index(coords) * self.eb

    def describe(self) -> str:
        extra = ""
        if self.kind == TILED:
            extra = f" tile={list(self.tile)}"
        elif self.kind == ROW_ALIGNED:
            extra = f" slice_axes={self.spec.slice_axes} slice_stride_words={self.strides[self.order[self.spec.slice_axes - 1]] if self.spec.slice_axes else 0}"
        return f"{self.tensor}: {self.kind} order={list(self.order)}{extra} base=0x{self.base:x} bytes={self.size_bytes}"


class Layouts:
    """The placement of every tensor of a workload in one DRAM.

    Tensors not given a layout are row-major. Bases not given are packed in
    workload order (inputs, then the output), each aligned to the DRAM's row
    stride so that two tensors never share a row. Two tensors' footprints
    (base to end, padding included) never overlap: a LayoutError names the
    later tensor's base and both tensors.
    """

    def __init__(self, workload: Workload, dram: DramSpec, specs: Mapping[str, LayoutSpec] | None = None):
        self.workload = workload
        self.dram = dram
        specs = dict(specs or {})
        for t in specs:
            if t not in workload.tensor_names:
                raise LayoutError(f"layouts.{t}", f"unknown tensor; expected one of {', '.join(workload.tensor_names)}")
        stride = dram.row_stride_bytes
        self.placements: dict[str, Placement] = {}
        nxt = 0
        for t in workload.tensor_names:
            spec = specs.get(t, LayoutSpec())
            base = spec.base if spec.base is not None else -(-nxt // stride) * stride
            try:
                p = Placement(t, workload.tensor_shape(t), spec, base, dram.element_bytes, stride)
            except LayoutError as e:
                raise LayoutError(f"layouts.{t}.{e.field}", e.detail) from None
            if base + p.size_bytes > MAX_END:
                raise LayoutError(f"layouts.{t}", f"the tensor's {p.size_bytes:,} bytes from base {base:,} end beyond "
                                  f"byte 2^62 (the trace's addresses are 64-bit)")
            for u, q in self.placements.items():
                if base < q.base + q.size_bytes and q.base < base + p.size_bytes:
                    raise LayoutError(
                        f"layouts.{t}.base", f"{t} at bytes {base:,}..{base + p.size_bytes - 1:,} overlaps {u} at bytes "
                        f"{q.base:,}..{q.base + q.size_bytes - 1:,}; expected disjoint address ranges (e.g. {t} at a base "
                        f">= {q.base + q.size_bytes:,}, or no base: packed after the others)")
            self.placements[t] = p
            nxt = max(nxt, base + p.size_bytes)
        self.end = nxt

    def __getitem__(self, tensor: str) -> Placement:
        return self.placements[tensor]

    @property
    def max_address(self) -> int:
        return max(0, self.end - 1)


def axis_names(workload: Workload, tensor: str) -> list[str]:
    """The names an axis may be referred to by: its index text (``c``, ``p+r``)."""
    return [ix.text() for ix in workload.tensor(tensor).indices]


def _axis(workload: Workload, tensor: str, name: object, field: str) -> int:
    names = axis_names(workload, tensor)
    if isinstance(name, int) and not isinstance(name, bool):
        if 0 <= name < len(names):
            return name
        raise LayoutError(field, f"axis position {name} out of range 0..{len(names) - 1}")
    text = str(name).replace(" ", "")
    matches = [i for i, n in enumerate(names) if n == text or n.replace("*", "") == text]
    if len(matches) != 1:
        raise LayoutError(field, f"unknown axis {name!r} of {tensor}; expected one of {', '.join(names)} (or a position)")
    return matches[0]


def layout_spec_from_dict(workload: Workload, tensor: str, data: object, field: str) -> LayoutSpec:
    """``{kind: row_aligned, order: [n, c, p+r, q+s], slice: c}`` and friends (see the module doc)."""
    if isinstance(data, str):
        data = {"kind": data}
    if not isinstance(data, Mapping):
        raise LayoutError(field, f"expected a mapping with kind, got {data!r}")
    known = ("kind", "order", "tile", "slice", "align", "base")
    for k in data:
        if k not in known:
            raise LayoutError(f"{field}.{k}", f"unknown field; expected one of {', '.join(known)}")
    kind = data.get("kind", ROW_MAJOR)
    if kind not in KINDS:
        raise LayoutError(f"{field}.kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    order = tuple(_axis(workload, tensor, a, f"{field}.order[{i}]") for i, a in enumerate(data.get("order") or ()))
    n = len(workload.tensor(tensor).indices)
    if order and sorted(order) != list(range(n)):
        raise LayoutError(f"{field}.order", f"expected every axis of {tensor} once ({', '.join(axis_names(workload, tensor))})")
    full = order or tuple(range(n))
    tile: tuple[tuple[int, int], ...] = ()
    if kind == TILED:
        raw = data.get("tile") or {}
        if not isinstance(raw, Mapping):
            raise LayoutError(f"{field}.tile", f"expected a mapping axis -> extent, got {raw!r}")
        items = []
        for a, e in raw.items():
            if not isinstance(e, int) or isinstance(e, bool) or e < 1:
                raise LayoutError(f"{field}.tile.{a}", f"expected an int >= 1, got {e!r}")
            items.append((_axis(workload, tensor, a, f"{field}.tile.{a}"), int(e)))
        tile = tuple(sorted(items))
    slice_axes = 1
    if kind == ROW_ALIGNED:
        s = data.get("slice", 1 if n > 1 else 0)
        if isinstance(s, int) and not isinstance(s, bool):
            slice_axes = s
        else:
            slice_axes = full.index(_axis(workload, tensor, s, f"{field}.slice")) + 1
        if not 0 <= slice_axes <= n:
            raise LayoutError(f"{field}.slice", f"expected 0..{n} slice axes, got {s!r}")
    align = data.get("align")
    if align is not None and (not isinstance(align, int) or isinstance(align, bool) or align < 1):
        raise LayoutError(f"{field}.align", f"expected an int >= 1 (bytes), got {align!r}")
    base = data.get("base")
    if base is not None:
        if isinstance(base, str):
            try:
                base = int(base, 0)
            except ValueError:
                raise LayoutError(f"{field}.base", f"expected a byte address, got {base!r}") from None
        if not isinstance(base, int) or isinstance(base, bool) or not 0 <= base <= MAX_BASE:
            raise LayoutError(f"{field}.base", f"expected a byte address from 0 to 2^48 ({MAX_BASE:,}), "
                              f"got {short_repr(base, 80)}")
    return LayoutSpec(kind, order, tile, slice_axes, align, base)


def layout_spec_to_dict(workload: Workload, tensor: str, spec: LayoutSpec) -> dict[str, object]:
    """The inverse of :func:`layout_spec_from_dict`: axes by their index text."""
    names = axis_names(workload, tensor)
    out: dict[str, object] = {"kind": spec.kind}
    if spec.order:
        out["order"] = [names[a] for a in spec.order]
    if spec.kind == TILED:
        out["tile"] = {names[a]: e for a, e in spec.tile}
    if spec.kind == ROW_ALIGNED:
        out["slice"] = spec.slice_axes
    if spec.align is not None:
        out["align"] = spec.align
    if spec.base is not None:
        out["base"] = spec.base
    return out


def layouts_from_dict(workload: Workload, dram: DramSpec, data: Mapping[str, object] | None) -> Layouts:
    """:class:`Layouts` from ``{tensor: layout mapping}``; LayoutError names the field."""
    specs = {}
    for t, raw in (data or {}).items():
        if t not in workload.tensor_names:
            raise LayoutError(f"layouts.{t}", f"unknown tensor; expected one of {', '.join(workload.tensor_names)}")
        specs[t] = layout_spec_from_dict(workload, t, raw, f"layouts.{t}")
    return Layouts(workload, dram, specs)


def _spec_error(source: str, field: str, detail: str) -> SpecError:
    return SpecError(source, field, "", None, detail=" ".join(detail.split()))


def placed_layouts(workload: Workload, dram: DramSpec, specs: Mapping[str, LayoutSpec], source: str) -> Layouts:
    """:class:`Layouts` of ``specs`` in ``dram``; a layout that does not place (bases that overlap, an end beyond
    2^62) is one SpecError naming ``source`` and the field (``layouts.W.base``). ``mapsearch trace --layouts``
    and ``mapsearch solve --dram-layouts`` both refuse with it, in the same words."""
    try:
        return Layouts(workload, dram, specs)
    except LayoutError as e:
        raise _spec_error(source, e.field, e.detail) from None


def layout_specs(workload, raw: object, source: str, field: str = "layouts") -> dict[str, LayoutSpec]:
    """``{tensor: layout mapping}`` -> specs; a bad entry is one SpecError naming ``source`` and the field."""
    raw = raw or {}
    if not isinstance(raw, Mapping):
        raise _spec_error(source, field, f"expected a mapping tensor -> layout, got {raw!r}")
    specs = {}
    for t, entry in raw.items():
        if t not in workload.tensor_names:
            raise _spec_error(source, f"{field}.{t}", f"unknown tensor; expected one of {', '.join(workload.tensor_names)}")
        try:
            specs[t] = layout_spec_from_dict(workload, t, entry, f"{field}.{t}")
        except LayoutError as e:
            raise _spec_error(source, e.field, e.detail) from None
    return specs
