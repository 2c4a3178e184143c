"""Data replay (``mode="data"``): the count walk's figures plus the real computation.

Inputs are random (seeded, float64). The output is computed from the
innermost tiles that the walk visits (:func:`mapsearch.sim.pieces.tile_chunks`):
each tile reads its operands at the regions the walk counts (affine axes
gather their strided windows) and adds its product into its output region.
The result is compared with an independent reference: ``numpy.einsum`` over
strided views of the whole inputs (an affine axis ``p*s + r*d`` becomes two
view axes of strides ``s`` and ``d``; no tile code involved).

Two ways to compute the tiles, same answer:

- ``"tiles"``: in schedule order, chunk by chunk; the tiles of one chunk with
  the same shape are one batched ``einsum`` (operands gathered per tile), and
  their products are scatter-added into the output.
- ``"grid"``: first checks, from the visited sequence, that every combination
  of innermost pieces is visited exactly once; then the tiles are the blocks
  of a padded block tensor (piece id x offset in the piece, per dimension)
  and all of them are computed in one ``einsum`` (BLAS), each tile's product
  being one block of it. A visit missed or repeated makes the check fail,
  and ``"auto"`` then falls back to ``"tiles"``, which reproduces the error.

``"auto"`` (the default) uses ``"grid"`` when its check passes.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.counters import ReplayResult
from mapsearch.sim.pieces import CHUNK, PieceTables, piece_tables, tile_chunks
from mapsearch.sim.walk import count_figures
from mapsearch.spec.workload import TensorAccess, Workload

RTOL = 1e-9  # relative to the largest |reference| value (at least 1)
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_GATHER_WORDS = 1 << 22  # operand words gathered per batched call in "tiles"


def random_inputs(workload: Workload, seed: int = 0) -> dict[str, np.ndarray]:
    """One float64 array per input, uniform in [-1, 1), from ``seed``."""
    rng = np.random.default_rng(seed)
    return {t.name: rng.uniform(-1.0, 1.0, workload.tensor_shape(t.name)) for t in workload.einsum.inputs}


def _dim_view(array: np.ndarray, access: TensorAccess, dims: tuple[str, ...], extent: Mapping[str, int]) -> np.ndarray:
    """A zero-copy view of ``array`` with one axis per dimension in ``dims``.

    ``view[..d..] = array[sum c*d per axis]``: a dimension's stride is the sum
    over the axes it indexes of ``coeff * axis stride`` (sliding windows).
    """
    strides = []
    for d in dims:
        strides.append(sum(c * array.strides[a] for a, ix in enumerate(access.indices) for dd, c in ix.terms if dd == d))
    shape = tuple(extent[d] for d in dims)
    return np.lib.stride_tricks.as_strided(array, shape=shape, strides=tuple(strides), writeable=False)


def reference_output(workload: Workload, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The whole einsum with ``numpy.einsum`` over strided views (affine axes as sliding windows)."""
    ext = workload.extent
    letter = {d: _LETTERS[k] for k, d in enumerate(workload.dims)}
    operands, subs = [], []
    for t in workload.einsum.inputs:
        dims = tuple(sorted(t.dims, key=workload.dims.index))
        operands.append(_dim_view(inputs[t.name], t, dims, ext))
        subs.append("".join(letter[d] for d in dims))
    out = workload.einsum.output
    out_sub = "".join(letter[ix.dims[0]] for ix in out.indices)
    # Output dims absent from every input broadcast: einsum needs them on an operand.
    missing = [d for d in out.dims_in_order() if not any(d in t.dims for t in workload.einsum.inputs)]
    for d in missing:
        operands.append(np.ones(ext[d]))
        subs.append(letter[d])
    return np.einsum(",".join(subs) + "->" + out_sub, *operands, optimize=True)


def _check_output(workload: Workload) -> None:
    for ix in workload.einsum.output.indices:
        if not ix.is_plain:
            raise ValueError(f"data mode needs plain output indices, got {workload.einsum.output.text()}")


# --------------------------------------------------------------------------- tiles


def _flat_index(shape_of: tuple[int, ...], axes, tdims, dims, starts: np.ndarray, size: Mapping[str, int]) -> np.ndarray:
    """Flat (row-major) index into an array of shape ``shape_of`` of every element of G tile blocks.

    ``axes``: one affine index per array axis; the block has one axis per dim of
    ``tdims`` (extent ``size[d]``); returns shape ``(G, *block)``.
    """
    strides = np.cumprod((1,) + tuple(shape_of[:0:-1]))[::-1]
    nd = len(tdims)
    base = np.zeros(starts.shape[1], np.int64)
    pattern = np.zeros((1,) * nd, np.int64)
    for a, ix in enumerate(axes):
        for d, c in ix.terms:
            k = tdims.index(d)
            base += strides[a] * c * starts[dims.index(d)]
            offs = np.arange(size[d]).reshape(tuple(-1 if j == k else 1 for j in range(nd)))
            pattern = pattern + strides[a] * c * offs
    return base.reshape((-1,) + (1,) * nd) + pattern[None]


def _tile_products(workload: Workload, inputs, starts: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Per-tile output blocks ``(G, *out block)`` of G tiles of one shape, from gathered operands."""
    dims = workload.dims
    letter = {d: _LETTERS[k + 1] for k, d in enumerate(dims)}  # 'a' is the batch axis
    size = dict(zip(dims, shape))
    operands, subs = [], []
    for t in workload.einsum.inputs:
        tdims = tuple(sorted(t.dims, key=dims.index))
        array = inputs[t.name]
        operands.append(array.reshape(-1).take(_flat_index(array.shape, t.indices, tdims, dims, starts, size)))
        subs.append("a" + "".join(letter[d] for d in tdims))
    out_dims = workload.einsum.output.dims_in_order()
    for d in out_dims:
        if not any(d in t.dims for t in workload.einsum.inputs):
            operands.append(np.ones(size[d]))
            subs.append(letter[d])
    spec = ",".join(subs) + "->a" + "".join(letter[d] for d in out_dims)
    return np.einsum(spec, *operands, optimize=True), out_dims


def compute_by_tiles(schedule: Schedule, inputs, tables: PieceTables | None = None, chunk: int = CHUNK) -> np.ndarray:
    """The output, innermost tile by innermost tile in schedule order (batched by shape per chunk)."""
    wl = schedule.workload
    _check_output(wl)
    tables = tables or piece_tables(schedule)
    inner = len(schedule.levels) - 1
    out = wl.einsum.output
    z = np.zeros(wl.tensor_shape(out.name))
    nd = len(wl.dims)
    radix = tuple(int(tables.size[inner][k].max()) + 1 for k in range(nd))
    for pid in tile_chunks(schedule, tables, inner, chunk):
        starts = np.stack([tables.start[inner][k][pid[k]] for k in range(nd)])
        sizes = np.stack([tables.size[inner][k][pid[k]] for k in range(nd)])
        _add_tiles(wl, inputs, z, starts, sizes, radix)
    return z


def _add_tiles(wl: Workload, inputs, z: np.ndarray, starts: np.ndarray, sizes: np.ndarray, radix: tuple[int, ...]) -> None:
    """Add the products of the tiles ``(starts, sizes)`` (one column per tile) into ``z`` (batched by shape)."""
    out = wl.einsum.output
    zflat = z.reshape(-1)
    if starts.shape[1] == 0:
        return
    shape_key = np.ravel_multi_index(tuple(sizes), radix)
    groups = [np.arange(len(shape_key))] if shape_key.min() == shape_key.max() else [
        np.flatnonzero(shape_key == key) for key in np.unique(shape_key)
    ]
    for members in groups:
        shape = tuple(int(v) for v in sizes[:, members[0]])
        size = dict(zip(wl.dims, shape))
        per_tile = max(1, sum(math.prod(size[d] for d in t.dims) for t in wl.einsum.inputs))
        step = max(1, _GATHER_WORDS // per_tile)
        for a in range(0, len(members), step):
            sel = members[a : a + step]
            blocks, out_dims = _tile_products(wl, inputs, starts[:, sel], shape)
            flat = _flat_index(z.shape, out.indices, out_dims, wl.dims, starts[:, sel], size)
            zflat += np.bincount(flat.reshape(-1), weights=blocks.reshape(-1), minlength=zflat.size)


def compute_by_instances(schedule: Schedule, inputs, chunk: int = 1 << 16) -> np.ndarray:
    """The output of a spatial schedule: every active L0 instance's tile products, step by step.

    Instances that share an output region add into it: the reduction of a
    group (docs/spatial.md) is the sum of its members' partial sums, in
    whatever order the hardware reduces them.
    """
    from mapsearch.sim.spatial import Layout, virtual_tables

    wl = schedule.workload
    _check_output(wl)
    lay = Layout(schedule)
    vt = virtual_tables(schedule, lay)
    inner = len(schedule.levels) - 1
    nd = len(wl.dims)
    paths = [lay.path(inner, d) for d in wl.dims]
    z = np.zeros(wl.tensor_shape(wl.einsum.output.name))
    radix = tuple(int(vt.size[inner][k].max()) + 1 for k in range(nd))
    for pid in tile_chunks(schedule, vt, inner, max(16, chunk // lay.count[inner])):  # type: ignore[arg-type]
        start = np.stack([vt.start[inner][k][pid[k]][:, paths[k]] for k in range(nd)])  # (nd, steps, instances)
        size = np.stack([vt.size[inner][k][pid[k]][:, paths[k]] for k in range(nd)])
        active = (size > 0).all(axis=0)
        _add_tiles(wl, inputs, z, start[:, active], size[:, active], radix)
    return z


# --------------------------------------------------------------------------- grid


def visited_exactly_once(schedule: Schedule, tables: PieceTables, chunk: int = CHUNK) -> bool:
    """True when the walk visits every combination of innermost pieces exactly once."""
    inner = len(schedule.levels) - 1
    radix = tuple(tables.count(inner, k) for k in range(len(tables.dims)))
    visits = np.zeros(math.prod(radix), np.int64)  # saturates at 2: "more than once"
    for pid in tile_chunks(schedule, tables, inner, chunk):
        key = np.ravel_multi_index(tuple(pid), radix) if radix else np.zeros(pid.shape[1], np.int64)  # no dims: one tile
        counts = np.bincount(key, minlength=len(visits))
        np.minimum(visits + counts, 2, out=visits)
    return bool((visits == 1).all())


def _aligned(tables: PieceTables, level: int, k: int) -> bool:
    """Pieces are ``[j*T, (j+1)*T)`` for every j: the block axis is a plain reshape."""
    size = tables.size[level][k]
    t = int(size[0])
    return bool((size == t).all()) and bool((tables.start[level][k] == np.arange(len(size)) * t).all())


def _blocks(array: np.ndarray, access: TensorAccess, tdims, wl: Workload, tables: PieceTables, level: int) -> np.ndarray:
    """Padded block tensor of one input: axes (piece, offset) per dimension of ``tdims``, zeros past a piece."""
    ks = [wl.dims.index(d) for d in tdims]
    if access.indices and all(ix.is_plain for ix in access.indices) and list(access.dims_in_order()) == list(tdims):
        if all(_aligned(tables, level, k) for k in ks):
            shape = []
            for k in ks:
                shape += [tables.count(level, k), int(tables.size[level][k][0])]
            return array.reshape(shape)  # a view: no gather
    nd = len(tdims)
    pos, valid = {}, np.ones((1,) * (2 * nd), bool)
    for j, (d, k) in enumerate(zip(tdims, ks)):
        start, size = tables.start[level][k], tables.size[level][k]
        t = int(size.max())
        p = start[:, None] + np.arange(t)[None, :]
        v = np.arange(t)[None, :] < size[:, None]
        shp = [1] * (2 * nd)
        shp[2 * j], shp[2 * j + 1] = len(size), t
        pos[d] = np.where(v, p, 0).reshape(shp)
        valid = valid & v.reshape(shp)
    index = tuple(sum(c * pos[d] for d, c in ix.terms) for ix in access.indices)
    return np.where(valid, array[index], 0.0)


def compute_by_grid(schedule: Schedule, inputs, tables: PieceTables | None = None) -> np.ndarray:
    """The output as one block contraction over (piece, offset) axes; valid only if every tile is visited once."""
    wl = schedule.workload
    _check_output(wl)
    tables = tables or piece_tables(schedule)
    inner = len(schedule.levels) - 1
    dims = wl.dims
    piece = {d: _LETTERS[2 * k] for k, d in enumerate(dims)}
    offset = {d: _LETTERS[2 * k + 1] for k, d in enumerate(dims)}
    operands, subs = [], []
    for t in wl.einsum.inputs:
        tdims = tuple(sorted(t.dims, key=dims.index))
        operands.append(_blocks(inputs[t.name], t, tdims, wl, tables, inner))
        subs.append("".join(piece[d] + offset[d] for d in tdims))
    out = wl.einsum.output
    out_dims = out.dims_in_order()
    for d in out_dims:
        if not any(d in t.dims for t in wl.einsum.inputs):
            k = dims.index(d)
            operands.append(np.ones((tables.count(inner, k), int(tables.size[inner][k].max()))))
            subs.append(piece[d] + offset[d])
    blocks = np.einsum(",".join(subs) + "->" + "".join(piece[d] + offset[d] for d in out_dims), *operands, optimize=True)
    ks = [dims.index(d) for d in out_dims]
    if all(_aligned(tables, inner, k) for k in ks):
        return blocks.reshape(wl.tensor_shape(out.name))
    z = np.zeros(wl.tensor_shape(out.name))
    index, valid = [], np.ones((1,) * (2 * len(ks)), bool)
    for j, k in enumerate(ks):
        start, size = tables.start[inner][k], tables.size[inner][k]
        t = int(size.max())
        shp = [1] * (2 * len(ks))
        shp[2 * j], shp[2 * j + 1] = len(size), t
        index.append((start[:, None] + np.arange(t)[None, :]).reshape(shp))
        valid = valid & (np.arange(t)[None, :] < size[:, None]).reshape(shp)
    valid = np.broadcast_to(valid, blocks.shape)
    z[tuple(np.broadcast_to(ix, blocks.shape)[valid] for ix in index)] = blocks[valid]
    return z


# --------------------------------------------------------------------------- entry point


def compute_output(schedule: Schedule, inputs, method: str = "auto", tables: PieceTables | None = None) -> np.ndarray:
    """The output computed from the walk's innermost tiles (``method``: auto, grid or tiles)."""
    from mapsearch.sim.spatial import has_splits

    if has_splits(schedule):
        return compute_by_instances(schedule, inputs)
    tables = tables or piece_tables(schedule)
    if method == "tiles":
        return compute_by_tiles(schedule, inputs, tables)
    if method not in ("auto", "grid"):
        raise ValueError(f"method must be 'auto', 'grid' or 'tiles', got {method!r}")
    if visited_exactly_once(schedule, tables):
        return compute_by_grid(schedule, inputs, tables)
    if method == "grid":
        raise ValueError("grid method: the walk does not visit every innermost tile exactly once")
    return compute_by_tiles(schedule, inputs, tables)


def replay_data(schedule: Schedule, *, seed: int = 0, method: str = "auto", rtol: float = RTOL) -> ReplayResult:
    """``replay(schedule, mode="data")``: the count walk's figures, the output computed from the
    walk's innermost tiles, and its comparison with the reference einsum.

    ``data_ok``: ``max_abs_error <= rtol * max(1, max |reference|)``.
    """
    figures = count_figures(schedule)
    wl = schedule.workload
    inputs = random_inputs(wl, seed)
    got = compute_output(schedule, inputs, method)
    want = reference_output(wl, inputs)
    err = float(np.max(np.abs(got - want))) if want.size else 0.0
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 0.0)
    return ReplayResult(figures, bool(got.shape == want.shape and err <= rtol * scale), err)
