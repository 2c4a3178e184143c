"""Step 2 of reading a tree file: the frozen nodes of a tree architecture (``docs/tree-format.md``).

Built by :mod:`mapsearch.spec.tree`, flattened into one architecture per
compute by :mod:`mapsearch.spec.tree_paths`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Union

from mapsearch.spec.architecture import Link, SplitBound
from mapsearch.spec.energy import LevelEnergy
from mapsearch.spec.set_expr import SetExpr, SetExprError, evaluate, evaluate_dims
from mapsearch.spec.tree_yaml import TreeError, Where
from mapsearch.spec.workload import Workload

__all__ = ["SetRule", "LoopBound", "SpatialAxis", "MemoryNode", "StageNode", "ComputeNode", "ParallelNode", "HierarchicalNode",
           "Node", "Tree"]

@dataclass(frozen=True)
class SetRule:
    """A set expression as written, its AST and where its text starts."""

    text: str
    expr: SetExpr
    where: Where

    def evaluate(self, workload: Workload) -> frozenset[str]:
        """The tensors of ``workload`` it names; an unknown name is a TreeError at the name's column."""
        tensors = {t: workload.is_output(t) for t in workload.tensor_names}
        try:
            return evaluate(self.expr, tensors, self.text)
        except SetExprError as e:
            raise TreeError(self.where.at_offset(e.position), f"{e.reason} (in {self.text!r})") from None

    def evaluate_dims(self, workload: Workload) -> frozenset[str]:
        """The dimensions of ``workload`` it names (set_expr.evaluate_dims); a tensor role or an unknown name is a
        TreeError at its column."""
        try:
            return evaluate_dims(self.expr, workload.dims, self.text)
        except SetExprError as e:
            raise TreeError(self.where.at_offset(e.position), f"{e.reason} (in {self.text!r})") from None


@dataclass(frozen=True)
class LoopBound:
    """A fanout's ``loop_bounds`` entry as written: a set expression over the workload's dimensions, bound to
    them by :func:`~mapsearch.spec.tree_paths.path_architecture` (``MeshAxis.split_bounds``)."""

    dims: SetRule
    operator: str
    value: int

    def bind(self, workload: Workload) -> SplitBound:
        names = self.dims.evaluate_dims(workload)
        return SplitBound(tuple(d for d in workload.dims if d in names), self.operator, self.value)


@dataclass(frozen=True)
class SpatialAxis:
    """One fanout dimension of a component: ``fanout`` instances along ``name``."""

    name: str
    fanout: int
    may_reuse: SetRule
    must_reuse: SetRule
    where: Where
    split_bounds: tuple[SplitBound, ...] = ()  # already bound to the workload's dimensions (a peer's loop_bounds)
    loop_bounds: tuple[LoopBound, ...] = ()  # a tree file's loop_bounds, bound per workload


@dataclass(frozen=True)
class MemoryNode:
    """``!Memory``: stores tensors. ``size`` in words per instance (None: unbounded, top only);
    ``link`` is the link from the nearest memory above down to this one (None: not given)."""

    name: str
    size: int | None
    link: Link | None
    spatial: tuple[SpatialAxis, ...]
    keep: SetRule | None
    may_keep: SetRule | None
    bypass: SetRule | None
    where: Where
    energy: LevelEnergy | None = None  # per word read/written and leakage (a peer's file; spec/energy.py)


@dataclass(frozen=True)
class StageNode:
    """``!ProcessingStage``: holds nothing; every word on the link it sits on also passes through it."""

    name: str
    link: Link
    where: Where


@dataclass(frozen=True)
class ComputeNode:
    """``!Compute``: the op at the end of a path."""

    name: str
    block: tuple[tuple[str, int], ...]
    clocks_per_call: Fraction
    where: Where
    energy: tuple[Fraction, Fraction] | None = None  # (per MAC, leakage per clock per instance)
    block_roles: tuple[tuple[str, int], ...] = ()  # the block by GEMM role instead (mapsearch/spec/block_roles.py)


@dataclass(frozen=True)
class ParallelNode:
    """``!Parallel``: alternatives; an einsum takes one of the branches."""

    nodes: tuple["Node", ...]
    where: Where


@dataclass(frozen=True)
class HierarchicalNode:
    """``!Hierarchical``: a chain; each node is the parent of the nodes after it."""

    nodes: tuple["Node", ...]
    where: Where


Node = Union[MemoryNode, StageNode, ComputeNode, ParallelNode, HierarchicalNode]


@dataclass(frozen=True)
class Tree:
    name: str
    root: HierarchicalNode
    double_buffering: bool = False
    source: str = "<tree>"
    description: str = ""
    energy_unit: str = ""  # of the nodes' energies, when they carry any
