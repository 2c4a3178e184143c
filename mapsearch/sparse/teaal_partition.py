"""A TeAAL spec's ``partitioning:`` operators as the sparse replay's spatial partition (docs/sparse.md).

``teaal_partition(spec, output, tensors)`` turns what the spec says for the
einsum writing ``output`` (:attr:`~mapsearch.spec.teaal.TeaalSpec.partition_ops`,
``spacetime.space``) into the :class:`~mapsearch.sparse.partition.Partition`
that ``replay_sparse(..., partition=)`` takes: the instance of every nonzero
of the driver (the tensor whose nonzeros are split), so that nobody has to
rebuild the notebook's ``uniform_slice(8)`` by hand.

Which loops are instances:

- the einsum's ``space`` loops over ranks of the driver. Space loops of other
  ranks are left out: they spread every driver nonzero's products evenly over
  their instances, so they do not change ``mean / max`` work;
- without ``spacetime`` for the einsum: the outer loop of every rank split by
  ``uniform_occupancy``/``uniform_slice`` (the split the notebook spreads).

Several such loops give one instance per combination (row-major, outer loop
first). The part of a nonzero in loop ``R_k`` of a rank with operators
``op_1 .. op_n`` (``op_p`` makes ``R_{n-p+1}``):

- ``uniform_shape(N)``: which ``N``-coordinate part of its parent part (the
  previous operator's, the whole extent for the first) holds the coordinate;
- ``uniform_occupancy(L.N)`` / ``uniform_slice([L.]N)`` (a rank's first
  operator only, as the parser requires): the partition functions of
  :mod:`~mapsearch.sparse.partition` on the driver's axis of ``R``;
- ``R_0`` below ``uniform_shape`` operators: the coordinate within the last
  part; a rank never split (loop ``R``): the coordinate itself.

The driver: the ``driver`` argument, else the leader the operators name,
else the replay's rule (first compressed input in ``formats``, else the
first input). Anything else raises :class:`TeaalPartitionError` saying what
is supported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from mapsearch.sparse.format import Format
from mapsearch.sparse.partition import Partition, uniform_occupancy, uniform_slice
from mapsearch.sparse.replay import first_compressed
from mapsearch.sparse.tensor import SparseTensor
from mapsearch.spec.teaal import PartitionOp, TeaalSpec
from mapsearch.spec.workload import Einsum

__all__ = ["TeaalPartitionError", "teaal_partition"]

SUPPORTED = ("supported: space loops over ranks of one driver tensor; per loop R<k> either a uniform_shape split, "
             "the outer loop of a rank whose first operator is uniform_occupancy/uniform_slice, R0 below "
             "uniform_shape splits, or a rank never split")


class TeaalPartitionError(ValueError):
    """A spec's partitioning the sparse replay cannot apply (the message says what it supports)."""


@dataclass(frozen=True, eq=False)
class _LoopSplit:
    label: str  # e.g. "I1: uniform_slice(8)"
    axis: int  # the driver's axis of the loop's rank
    index: np.ndarray  # (nnz,) the loop's part of every driver nonzero
    count: int  # the loop's instances


def teaal_partition(spec: TeaalSpec, output: str, tensors: Mapping[str, SparseTensor],
                    formats: Mapping[str, Format] | None = None, *, driver: str | None = None) -> Partition:
    """The spatial partition of the driver's nonzeros that ``spec`` gives the einsum writing ``output``."""
    einsum = _einsum(spec, output)
    ops = spec.partition_ops.get(output, {})
    loops = _instance_loops(spec, output, ops)
    driver = _driver(einsum, ops, loops, formats or {}, driver, output)
    if driver not in tensors:
        raise KeyError(f"no data for {driver}, the tensor {output}'s partitioning splits")
    t = tensors[driver]
    dims = next(a for a in einsum.inputs if a.name == driver).dims_in_order()
    own = [(d, k) for d, k in loops if d in dims]
    if not own:
        raise TeaalPartitionError(f"partitioning.{output}: no space loop over a rank of {driver} "
                                  f"({', '.join(r.upper() for r in dims)}); {SUPPORTED}")
    _check_rank_order(spec, driver, dims, ops, own, output)
    splits = [_split(t, dims.index(d), d, ops.get(d, ()), k, output) for d, k in own]
    part_of = np.zeros(t.nnz, np.int64)
    parts = 1
    for s in splits:  # row-major over the loops, outer first
        part_of = part_of * s.count + s.index
        parts *= s.count
    loads = np.bincount(part_of, minlength=parts).astype(np.int64)
    return Partition(" x ".join(s.label for s in splits), parts, part_of, loads, splits[0].axis, driver)


def _einsum(spec: TeaalSpec, output: str) -> Einsum:
    outputs = [e.output.name for e in spec.graph.einsums]
    if output not in outputs:
        raise TeaalPartitionError(f"no einsum writes {output}; expected one of {', '.join(outputs)}")
    return spec.graph.einsums[outputs.index(output)]


def _instance_loops(spec: TeaalSpec, output: str, ops) -> tuple[tuple[str, int | None], ...]:
    """The loops whose iterations are instances: ``space``, else each data-dependent split's outer loop."""
    if spec.space.get(output):
        return spec.space_loops(output)
    loops = tuple((d, len(o)) for d, o in ops.items() if o and o[0].data_dependent)
    if not loops:
        raise TeaalPartitionError(f"partitioning.{output}: nothing spatial: give mapping.spacetime.{output}.space "
                                  "or split a rank with uniform_occupancy/uniform_slice")
    return loops


def _op_of(ops: Mapping[str, tuple[PartitionOp, ...]], d: str, k: int | None) -> PartitionOp | None:
    """The operator that makes loop ``R_k`` (None for ``R_0`` and unsplit ranks)."""
    o = ops.get(d, ())
    return o[len(o) - k] if k is not None and 1 <= k <= len(o) else None


def _driver(einsum: Einsum, ops, loops, formats, driver: str | None, output: str) -> str:
    inputs = [a.name for a in einsum.inputs]
    leaders = sorted({op.leader for d, k in loops if (op := _op_of(ops, d, k)) is not None and op.leader})
    if driver is not None:
        if driver not in inputs:
            raise TeaalPartitionError(f"driver {driver} is not an input of {output}'s einsum ({', '.join(inputs)})")
        if set(leaders) - {driver}:
            raise TeaalPartitionError(f"partitioning.{output}: the space loops are led by {', '.join(leaders)}, "
                                      f"not the driver {driver}; the replay splits one tensor's nonzeros")
        return driver
    if len(leaders) > 1:
        raise TeaalPartitionError(f"partitioning.{output}: space loops led by {', '.join(leaders)}; "
                                  "the replay splits one tensor's nonzeros (use one leader)")
    return leaders[0] if leaders else first_compressed(inputs, formats)


def _check_rank_order(spec: TeaalSpec, driver: str, dims, ops, own, output: str) -> None:
    """Occupancy counts fiber elements, so the fibers must be the replay's (axis order)."""
    order = spec.rank_order.get(driver)
    uses_occupancy = any((op := _op_of(ops, d, k)) is not None and op.kind == "uniform_occupancy" for d, k in own)
    if uses_occupancy and order is not None and tuple(r.lower() for r in order) != tuple(dims):
        raise TeaalPartitionError(f"partitioning.{output}: uniform_occupancy over {driver} in rank-order "
                                  f"{list(order)}; the sparse replay keeps tensors in declared (axis) order "
                                  f"{[d.upper() for d in dims]}")


def _split(t: SparseTensor, axis: int, d: str, ops: tuple[PartitionOp, ...], k: int | None, output: str) -> _LoopSplit:
    """The part of every nonzero of ``t`` in loop ``R_k`` of rank ``d`` (axis ``axis``)."""
    n = len(ops)
    name = f"{d.upper()}{'' if k is None else k}"
    unsupported = f"partitioning.{output}.{d.upper()}: space loop {name} of {[op.text() for op in ops]}"
    c = t.coords[axis]
    extent = t.shape[axis]
    if k is None or (k == 0 and n == 0):
        if n:
            raise TeaalPartitionError(f"{unsupported}: a split rank's loops are {d.upper()}{n}..{d.upper()}0; {SUPPORTED}")
        return _LoopSplit(f"{name}: every coordinate", axis, c.astype(np.int64), extent)
    if any(op.data_dependent for op in ops) and (k == 0 or k < n):
        raise TeaalPartitionError(f"{unsupported}: loops below uniform_occupancy/uniform_slice follow the data's "
                                  f"split; only {d.upper()}{n} can be spatial; {SUPPORTED}")
    if k == 0:  # the coordinate within the last shape's part
        return _shape_split(c, extent, ops[-1].n, 1, axis, f"{name}: within uniform_shape({ops[-1].n})")
    p = n - k  # 0-based operator making R_k
    op = ops[p]
    if op.kind == "uniform_occupancy":
        part = uniform_occupancy(t, op.n, axis)
        return _LoopSplit(f"{name}: {op.text()}", axis, part.part_of, part.parts)
    if op.kind == "uniform_slice":
        part = uniform_slice(t, op.n, axis)
        return _LoopSplit(f"{name}: {op.text()}", axis, part.part_of, part.parts)
    parent = ops[p - 1].n if p else extent
    return _shape_split(c, extent, parent, op.n, axis, f"{name}: {op.text()}")


def _shape_split(c: np.ndarray, extent: int, parent: int, size: int, axis: int, label: str) -> _LoopSplit:
    """Coordinate ``c``'s ``size``-part inside its ``parent``-part (fibertree's absolute-coordinate splits)."""

    def index(x: np.ndarray) -> np.ndarray:
        return x // size - (x // parent) * parent // size

    count = int(index(np.arange(extent, dtype=np.int64)).max()) + 1  # every instance, used or not
    return _LoopSplit(label, axis, index(c.astype(np.int64)), count)
