"""Steps 3 and 4 of reading a tree file: flattening into paths, and binding a path to a workload.

:func:`flatten` turns a :class:`~mapsearch.spec.tree_nodes.Tree` into one
:class:`FlatPath` per compute, each with a flat
:class:`~mapsearch.spec.architecture.Architecture`. A path's ``tensors`` rules
and ``may_reuse`` expressions name tensors, so they are bound to a workload
separately (:func:`path_constraints`, :func:`path_architecture`). Choosing the
best path is the solver's job (:func:`mapsearch.solve.tree.solve_tree`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from mapsearch.errors import MapsearchError
from mapsearch.spec import limits
from mapsearch.spec.architecture import Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.constraints import Constraints
from mapsearch.spec.energy import EnergyModel
from mapsearch.spec.set_expr import union_terms
from mapsearch.spec.tree_nodes import (
    ComputeNode,
    HierarchicalNode,
    LoopBound,
    MemoryNode,
    Node,
    ParallelNode,
    SetRule,
    SpatialAxis,
    StageNode,
    Tree,
)
from mapsearch.spec.tree_yaml import TreeError, Where
from mapsearch.spec.workload import Workload

__all__ = ["UnusablePath", "KeepRule", "ReuseRule", "FlatPath", "flatten", "single_architecture",
           "path_architecture", "path_must_reuse", "path_constraints"]


class UnusablePath(MapsearchError):
    """A path whose rules contradict the workload's homes (e.g. it bypasses a tensor at the level next to compute).

    :func:`solve_tree` reports such a path as skipped; called directly,
    :func:`path_constraints` raises it.
    """

    def __init__(self, message: str, where: Where | None = None):
        self.where = where
        super().__init__(f"{where}: {message}" if where is not None else message)


# --------------------------------------------------------------------------
# Step 3: flattening.
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class KeepRule:
    """The ``tensors`` rules of one memory on a path."""

    level: str
    keep: SetRule | None
    may_keep: SetRule | None
    bypass: SetRule | None


@dataclass(frozen=True)
class ReuseRule:
    """A ``may_reuse`` or ``must_reuse`` expression of one fanout dimension."""

    level: str
    axis: str
    rule: SetRule


@dataclass(frozen=True)
class FlatPath:
    """One compute and the memories from the root down to it.

    ``architecture`` needs no workload: a ``may_reuse`` that is a plain union
    of names and roles is copied as such into ``MeshAxis.may_reuse``; any
    other expression (``~B``, ``All - A``) is written ``('none',)`` there (no
    multicast: the safe side) until :func:`path_architecture` binds it to a
    workload.
    """

    compute_name: str
    architecture: Architecture
    keep_rules: tuple[KeepRule, ...]
    must_reuse: tuple[ReuseRule, ...]
    may_reuse: tuple[ReuseRule, ...] = ()
    where: Where | None = None
    loop_bounds: tuple[tuple[str, str, LoopBound], ...] = ()  # (level, axis, bound): bound per workload

    @property
    def name(self) -> str:
        return self.compute_name


def _items(nodes: Iterable[Node]) -> list[Node]:
    """A chain's nodes with nested ``!Hierarchical`` chains spliced in."""
    out: list[Node] = []
    for n in nodes:
        if isinstance(n, HierarchicalNode):
            out.extend(_items(n.nodes))
        else:
            out.append(n)
    return out


def _walk_chain(nodes: Iterable[Node], prefix: tuple[Node, ...], out: list[tuple[tuple[Node, ...], ComputeNode]]) -> None:
    """Paths of a chain: each node is the parent of the ones after it.

    After a ``!Parallel`` the chain goes on from the node above the
    ``!Parallel`` (the seed's rule): the nodes that follow are one more
    alternative, not children of the branches.
    """
    items = _items(nodes)
    pending: list[Node] = []  # appended since the chain start or the last !Parallel
    current = prefix
    for i, n in enumerate(items):
        if isinstance(n, ParallelNode):
            for branch in n.nodes:
                _walk_branch(branch, current, out)
            pending = []
            continue
        if isinstance(n, ComputeNode):
            if i + 1 < len(items):
                nxt = items[i + 1]
                raise TreeError(n.where, f"!Compute {n.name!r} is not a leaf: {_describe(nxt)} (at {nxt.where}) "
                                f"follows it in the same chain. A compute ends its path; to give a "
                                f"compute its own path beside others, put it in a !Parallel branch")
            out.append((current, n))
            return
        current = current + (n,)
        pending.append(n)
    if pending:
        first = pending[0]
        raise TreeError(first.where, f"this chain ends without a !Compute: {_describe(first)} and the nodes after it "
                        f"lead to no compute")


def _walk_branch(node: Node, prefix: tuple[Node, ...], out: list[tuple[tuple[Node, ...], ComputeNode]]) -> None:
    if isinstance(node, HierarchicalNode):
        _walk_chain(node.nodes, prefix, out)
    elif isinstance(node, ParallelNode):
        for branch in node.nodes:
            _walk_branch(branch, prefix, out)
    else:
        _walk_chain((node,), prefix, out)


def _describe(n: Node) -> str:
    if isinstance(n, MemoryNode):
        return f"!Memory {n.name!r}"
    if isinstance(n, StageNode):
        return f"!ProcessingStage {n.name!r}"
    if isinstance(n, ComputeNode):
        return f"!Compute {n.name!r}"
    return "!Parallel" if isinstance(n, ParallelNode) else "!Hierarchical"


def _fold(link: Link, stage: StageNode) -> Link:
    """A stage on a link: every word crosses both, so the slower cost per word per direction binds.

    Under ``time = max over links`` this is exact: ``max(w*a, w*b) = w*max(a, b)``.
    """
    s = stage.link
    if s.lines != link.lines:
        raise TreeError(stage.where, f"!ProcessingStage {stage.name!r} has lines: {s.lines} but the link it sits on "
                        f"has lines: {link.lines}; give both the same lines")
    return Link(max(link.input_clocks_per_word, s.input_clocks_per_word),
                max(link.output_clocks_per_word, s.output_clocks_per_word), link.lines)


def _mesh_axis(axis: SpatialAxis) -> MeshAxis:
    terms = union_terms(axis.may_reuse.expr)
    return MeshAxis(axis.name, axis.fanout, terms if terms is not None else ("none",), split_bounds=axis.split_bounds)


def _path(tree: Tree, nodes: tuple[Node, ...], compute: ComputeNode) -> FlatPath:
    levels: list[Level] = []
    keep_rules: list[KeepRule] = []
    must: list[ReuseRule] = []
    may: list[ReuseRule] = []
    bounds: list[tuple[str, str, LoopBound]] = []
    stages: list[StageNode] = []
    for n in nodes:
        if isinstance(n, StageNode):
            if not levels:
                raise TreeError(n.where, f"!ProcessingStage {n.name!r} has no !Memory above it; a stage sits on "
                                f"the link between two memories")
            stages.append(n)
            continue
        assert isinstance(n, MemoryNode)
        top = not levels
        if top:
            if n.link is not None:
                raise TreeError(n.where, f"!Memory {n.name!r} is the top of the path to {compute.name!r}: no link "
                                f"above it; remove its clocks-per-word fields")
            if n.spatial:  # as the flat format's levels[0].mesh: the backing store is one instance
                raise TreeError(replace(n.spatial[0].where, field=n.spatial[0].where.field.rsplit("[", 1)[0]),
                                f"!Memory {n.name!r} is the top of the path to {compute.name!r}: expected no spatial "
                                f"fanout (the top memory is one instance); remove this field or put the fanout on "
                                f"a memory below it")
        elif n.size is None:
            raise TreeError(n.where, f"!Memory {n.name!r}: only the top memory may be unbounded (size: inf)")
        link = None
        if not top:
            link = n.link or Link()
            for s in stages:
                link = _fold(link, s)
        stages = []
        mesh = tuple(_mesh_axis(a) for a in n.spatial)
        instances = math.prod(a.size for a in mesh)
        if limits.instances_error(instances) is not None:
            raise TreeError(n.where, limits.instances_error(instances))
        levels.append(Level(n.name, n.size, link, instances, mesh))
        if n.keep or n.may_keep or n.bypass:
            keep_rules.append(KeepRule(n.name, n.keep, n.may_keep, n.bypass))
        for a in n.spatial:
            may.append(ReuseRule(n.name, a.name, a.may_reuse))
            if union_terms(a.must_reuse.expr) != ("none",):
                must.append(ReuseRule(n.name, a.name, a.must_reuse))
            bounds.extend((n.name, a.name, b) for b in a.loop_bounds)
    if stages:
        s = stages[0]
        raise TreeError(s.where, f"!ProcessingStage {s.name!r} sits between the last memory and !Compute "
                        f"{compute.name!r}; a stage must sit between two memories")
    if not levels:
        raise TreeError(compute.where, f"!Compute {compute.name!r} has no !Memory above it")
    memories = [n for n in nodes if isinstance(n, MemoryNode)]
    energy = None
    if compute.energy is not None and all(n.energy is not None for n in memories):  # a model only when complete
        energy = EnergyModel(tuple(n.energy for n in memories), compute.energy[0], compute.energy[1], tree.energy_unit)
    arch = Architecture(f"{tree.name}/{compute.name}", tuple(levels), Compute(compute.block, compute.clocks_per_call, compute.block_roles),
                        tree.double_buffering, energy=energy)
    return FlatPath(compute.name, arch, tuple(keep_rules), tuple(must), tuple(may), compute.where, tuple(bounds))


def flatten(tree: Tree) -> list[FlatPath]:
    """One :class:`FlatPath` per ``!Compute``, in the order the computes appear in the file."""
    found: list[tuple[tuple[Node, ...], ComputeNode]] = []
    _walk_chain(tree.root.nodes, (), found)
    if not found:
        raise TreeError(tree.root.where, "the tree has no !Compute")
    return [_path(tree, nodes, compute) for nodes, compute in found]


def single_architecture(tree: Tree) -> Architecture:
    """The architecture of a tree with exactly one compute (a preset, say), named after the tree.

    A tree with several computes is a TreeError naming them.
    """
    paths = flatten(tree)
    if len(paths) != 1:
        names = ", ".join(p.compute_name for p in paths)
        raise TreeError(tree.root.where, f"the tree has {len(paths)} computes ({names}); pick one with flatten() "
                        f"or solve them all with solve_tree()")
    return replace(paths[0].architecture, name=tree.name)


# --------------------------------------------------------------------------
# Step 4: binding a path to a workload.
# --------------------------------------------------------------------------


def _ordered(names: frozenset[str], workload: Workload) -> tuple[str, ...]:
    return tuple(t for t in workload.tensor_names if t in names)


def path_architecture(path: FlatPath, workload: Workload) -> Architecture:
    """``path.architecture`` with every ``may_reuse`` evaluated to the workload's tensor names.

    An expression that names no tensor becomes ``('none',)``. Unknown names
    are a TreeError at their place in the file.
    """
    if not path.may_reuse and not path.must_reuse and not path.loop_bounds:
        return path.architecture
    bound = {(r.level, r.axis): _ordered(r.rule.evaluate(workload), workload) for r in path.may_reuse}
    must = {key: _ordered(names, workload) for key, names in path_must_reuse(path, workload).items()}
    limits: dict[tuple[str, str], list] = {}
    for level, axis, rule in path.loop_bounds:
        limits.setdefault((level, axis), []).append(rule.bind(workload))
    levels = []
    for lv in path.architecture.levels:
        mesh = tuple(replace(a, may_reuse=(bound[(lv.name, a.name)] or ("none",)) if (lv.name, a.name) in bound
                             else a.may_reuse, must_reuse=must.get((lv.name, a.name), ()),
                             split_bounds=a.split_bounds + tuple(limits.get((lv.name, a.name), ()))) for a in lv.mesh)
        levels.append(replace(lv, mesh=mesh))
    return replace(path.architecture, levels=tuple(levels))


def path_must_reuse(path: FlatPath, workload: Workload) -> dict[tuple[str, str], frozenset[str]]:
    """``(level, fanout dimension) -> tensors`` that every instance along it must share.

    :func:`path_architecture` writes them into ``MeshAxis.must_reuse``; the
    solver then splits that axis only over dimensions that index none of
    them (model/spatial.py).
    """
    return {(r.level, r.axis): r.rule.evaluate(workload) for r in path.must_reuse}


def path_constraints(path: FlatPath, workload: Workload, homes: Mapping[str, str] | None = None,
                     name: str = "") -> Constraints:
    """The path's ``tensors`` rules as solver constraints (``Constraints(keep=...)``).

    Per memory: tensors in ``keep`` are kept, tensors in ``bypass`` or outside
    ``may_keep`` (when given) are bypassed; a tensor in both is a TreeError.
    Rules at a tensor's home or above it, and at the innermost memory, are
    not decisions of the solver: a rule that agrees with what must happen
    there is dropped, one that contradicts it (bypass at the home or at the
    memory next to compute, keep above the home) raises :class:`UnusablePath`.
    The top memory's rules are dropped for a tensor homed lower (they
    describe the backing store, e.g. ``keep: All``).
    """
    arch = path.architecture
    homes = dict(homes or {})
    for t, level in homes.items():
        if level not in arch.level_names:
            raise UnusablePath(f"the home of {t}, {level!r}, is not on the path to {path.compute_name!r} "
                               f"({', '.join(arch.level_names)})", path.where)
    home_index = {t: arch.index(homes.get(t, arch.levels[0].name)) for t in workload.tensor_names}
    innermost = arch.depth - 1
    keep: list[tuple[str, str, bool]] = []
    for rule in path.keep_rules:
        i = arch.index(rule.level)
        kept = rule.keep.evaluate(workload) if rule.keep else frozenset()
        bypassed = rule.bypass.evaluate(workload) if rule.bypass else frozenset()
        if rule.may_keep is not None:
            bypassed = bypassed | (frozenset(workload.tensor_names) - rule.may_keep.evaluate(workload) - kept)
        both = kept & (rule.bypass.evaluate(workload) if rule.bypass else frozenset())
        if both:
            raise TreeError(rule.bypass.where, f"{', '.join(_ordered(both, workload))} both kept and bypassed at "
                            f"{rule.level} (keep: {rule.keep.text!r}, bypass: {rule.bypass.text!r})")
        for t in workload.tensor_names:
            flag = True if t in kept else False if t in bypassed else None
            if flag is None:
                continue
            h = home_index[t]
            src = rule.keep if flag else (rule.bypass or rule.may_keep)
            if i == 0 and i != h:
                continue  # the top memory's rules describe the backing store; a home below it overrides them
            if i < h and flag:
                raise UnusablePath(f"{rule.level} keeps {t} ({src.text!r}) but is above {t}'s home "
                                   f"{arch.levels[h].name}", src.where)
            if i == h and not flag:
                raise UnusablePath(f"{rule.level} bypasses {t} ({src.text!r}) but is its home", src.where)
            if i == innermost and i > h and not flag:
                raise UnusablePath(f"{rule.level} bypasses {t} ({src.text!r}) but is the memory next to "
                                   f"{path.compute_name!r} on this path, which holds every operand", src.where)
            if h < i < innermost:
                keep.append((rule.level, t, flag))
    return Constraints(name=name or f"tensors rules of {path.compute_name}", keep=tuple(keep))
