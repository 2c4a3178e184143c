"""A schedule up to renaming: its dimensions and tensors renamed by first appearance, and figures named back.

Two single-einsum schedules that differ only in the names of their
dimensions and tensors, substituted consistently (stage ``i`` of a chain of
identical einsums, ``T_i[m,n_i] += T_(i-1)[m,n_(i-1)] * W_i[n_(i-1),n_i]``),
are the same work, and a count replay of one counts the other's figures with
the other's tensor names. :func:`canonical_form` renames every dimension to
``d0, d1, ...`` and every tensor to ``t0, t1, ...`` in the order of a
fixed traversal (the einsum, its extents, the levels' tiles, orders, keeps,
splits and positions, the homes, the DRAM plan, then the names the
architecture gives: the op's block, the meshes' reuse lists and split
bounds). The renamed schedule is the key: two schedules have equal keys if
and only if one is the other with its names substituted. The traversal
visits every field of every class that holds a name, checked against the
fields this module knows; a class with another field, names that could be
read two ways (a tensor named like a dimension or a reuse role such as
``input``, either named like a level) or an object of another type give no
form (None), and the schedule is walked on its own.

:func:`rename_figures` carries a replay's :class:`Figures` from one naming to
another: only ``TensorTraffic.tensor`` holds a tensor's name (links and
occupancy are named by levels, which are not renamed); the order of every
tuple is the walk's, which follows the einsum's order of tensors and
dimensions, never their names.

The predicted figures and the workload's name are left out of the key: a
replay reads neither.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Iterable, Mapping

from mapsearch.dram.geometry import DramSpec
from mapsearch.dram.layout import LayoutSpec
from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.schedule.schedule import DramPlan, LevelMapping, Schedule, SpatialSplit
from mapsearch.spec.architecture import Architecture, Compute, Level, Link, MeshAxis, SplitBound
from mapsearch.spec.einsum import AffineIndex, Einsum, TensorAccess
from mapsearch.spec.energy import EnergyModel, LevelEnergy
from mapsearch.spec.workload import Workload

__all__ = ["CanonicalForm", "canonical_form", "rename_figures"]

# The words a mesh axis's reuse lists read as roles rather than tensors (spec/architecture.py, ``_names``).
ROLES = frozenset({"all", "none", "input", "output"})

# The fields this module renames or copies, per class; a class with other fields gives no form. The classes
# copied whole (Link, EnergyModel, LevelEnergy, DramSpec, LayoutSpec) hold no dimension or tensor name.
_FIELDS = {
    Schedule: ("workload", "architecture", "levels", "homes", "predicted", "dram"),
    LevelMapping: ("level", "tile", "order", "keep", "spatial", "positions"),
    SpatialSplit: ("dim", "part", "axis"),
    DramPlan: ("layouts", "element_order", "row_openings"),
    Workload: ("name", "einsum", "extents"),
    Einsum: ("output", "inputs"),
    TensorAccess: ("name", "indices"),
    AffineIndex: ("terms",),
    Architecture: ("name", "levels", "compute", "double_buffering", "dram", "energy"),
    Level: ("name", "capacity", "link", "instances", "mesh"),
    MeshAxis: ("name", "size", "may_reuse", "must_reuse", "split_bounds"),
    SplitBound: ("dims", "operator", "value"),
    Compute: ("block", "clocks_per_call", "block_roles"),
    Link: ("input_clocks_per_word", "output_clocks_per_word", "lines"),
    EnergyModel: ("levels", "mac", "compute_leakage", "unit"),
    LevelEnergy: ("level", "read", "write", "leakage"),
    DramSpec: ("name", "element_bytes", "row_bytes", "burst_bytes", "channels", "ranks", "bank_groups", "banks",
               "rows", "mapping", "policy", "tck_ns", "cl", "rcd", "rp", "hit_clocks", "miss_clocks",
               "conflict_clocks", "source"),
    LayoutSpec: ("kind", "order", "tile", "slice_axes", "align", "base"),
    Figures: ("links", "op_calls", "compute_time", "macs", "block_macs", "occupancy", "compute_instances",
              "busiest_calls"),
    LinkFigures: ("name", "words_down", "words_up", "time", "tensors"),
    TensorTraffic: ("tensor", "words_down", "words_up"),
}


class _Refused(Exception):
    """The schedule has no canonical form (an unknown field, or a name that reads two ways)."""


@dataclass(frozen=True)
class CanonicalForm:
    """A schedule renamed: ``key`` (the schedule in canonical names, no prediction, no workload name) and
    its own names -> the canonical ones, per dimension and per tensor."""

    key: Schedule
    dims: tuple[tuple[str, str], ...]
    tensors: tuple[tuple[str, str], ...]

    @property
    def own_tensor(self) -> dict[str, str]:
        """Canonical tensor name -> the schedule's own."""
        return {c: own for own, c in self.tensors}


class _Names:
    """One namespace's renaming: each new name gets ``prefix`` and the next number."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.to: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        if not isinstance(name, str):
            raise _Refused(f"a name of type {type(name).__name__}")
        if name not in self.to:
            self.to[name] = f"{self.prefix}{len(self.to)}"
        return self.to[name]

    def each(self, names: Iterable[str]) -> tuple[str, ...]:
        return tuple(self(n) for n in names)

    def unordered(self, names: frozenset[str]) -> frozenset[str]:
        """A set's names: the new ones numbered in sorted order (a set has none of its own)."""
        for n in sorted(names, key=str):  # a name that is not a string is refused below
            self(n)
        return frozenset(self(n) for n in names)


def _known(obj: object) -> None:
    """``obj`` is of a class this module knows, with the fields it knows; a field that takes no part in
    equality (``Schedule.source``, where a file came from) is one an exact comparison ignores too."""
    expected = _FIELDS.get(type(obj))
    if expected is None or tuple(f.name for f in fields(obj) if f.compare) != expected:  # type: ignore[arg-type]
        raise _Refused(f"{type(obj).__name__} has fields this renaming does not know")


def canonical_form(schedule: Schedule) -> CanonicalForm | None:
    """``schedule`` with its dimensions and tensors renamed by first appearance, or None where it cannot be.

    Equal keys mean one schedule is the other with names substituted consistently, so a replay of
    one gives the other's figures once :func:`rename_figures` names them back.
    """
    dim, tensor = _Names("d"), _Names("t")
    try:
        key = _schedule(schedule, dim, tensor)
    except _Refused:
        return None
    # Names that could be read two ways: a tensor named like a dimension or a reuse role, either named like a
    # level. (A mesh axis's name is compared only with the splits' axes, sim/spatial.py: a tensor ``W`` on an
    # axis ``W`` is no ambiguity.)
    levels = {lv.name for lv in schedule.architecture.levels}
    if set(dim.to) & set(tensor.to) or set(tensor.to) & ROLES or (set(dim.to) | set(tensor.to)) & levels:
        return None
    return CanonicalForm(key, tuple(dim.to.items()), tuple(tensor.to.items()))


def _schedule(s: Schedule, dim: _Names, tensor: _Names) -> Schedule:
    _known(s)
    workload = _workload(s.workload, dim, tensor)
    levels = tuple(_level(lm, dim, tensor) for lm in s.levels)
    homes = tuple((tensor(t), level) for t, level in s.homes)
    dram = None if s.dram is None else _dram(s.dram, tensor)
    architecture = _architecture(s.architecture, dim, tensor)
    return Schedule(workload, architecture, levels, homes, None, dram)


def _workload(w: Workload, dim: _Names, tensor: _Names) -> Workload:
    _known(w)
    _known(w.einsum)
    accesses = []
    for t in w.einsum.tensors:
        _known(t)
        indices = []
        for ix in t.indices:
            _known(ix)
            indices.append(AffineIndex(tuple((dim(d), c) for d, c in ix.terms)))
        accesses.append(TensorAccess(tensor(t.name), tuple(indices)))
    einsum = Einsum(accesses[-1], tuple(accesses[:-1]))
    return Workload("", einsum, tuple((dim(d), e) for d, e in w.extents))


def _level(lm: LevelMapping, dim: _Names, tensor: _Names) -> LevelMapping:
    _known(lm)
    for sp in lm.spatial:
        _known(sp)
    return LevelMapping(
        lm.level,
        tuple((dim(d), t) for d, t in lm.tile),
        dim.each(lm.order),
        tensor.unordered(lm.keep),
        tuple(SpatialSplit(dim(sp.dim), sp.part, sp.axis) for sp in lm.spatial),
        tuple((tensor(t), p) for t, p in lm.positions),
    )


def _dram(plan: DramPlan, tensor: _Names) -> DramPlan:
    _known(plan)
    for _, spec in plan.layouts:
        _known(spec)
    openings = None if plan.row_openings is None else tuple((tensor(t), n) for t, n in plan.row_openings)
    return DramPlan(tuple((tensor(t), spec) for t, spec in plan.layouts), plan.element_order, openings)


def _architecture(arch: Architecture, dim: _Names, tensor: _Names) -> Architecture:
    """The architecture's own names (levels, axes, DRAM, energy) stay; dimensions and tensors it names are
    renamed, except the reuse roles (``all``, ``none``, ``input``, ``output``)."""
    _known(arch)
    _known(arch.compute)
    for obj in (arch.dram, arch.energy) + (() if arch.energy is None else arch.energy.levels):
        if obj is not None:
            _known(obj)

    def reuse(names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(n if n in ROLES else tensor(n) for n in names)

    levels = []
    for lv in arch.levels:
        _known(lv)
        if lv.link is not None:
            _known(lv.link)
        mesh = []
        for a in lv.mesh:
            _known(a)
            for b in a.split_bounds:
                _known(b)
            bounds = tuple(SplitBound(dim.each(b.dims), b.operator, b.value) for b in a.split_bounds)
            mesh.append(MeshAxis(a.name, a.size, reuse(a.may_reuse), reuse(a.must_reuse), bounds))
        levels.append(replace(lv, mesh=tuple(mesh)) if lv.mesh else lv)
    compute = replace(arch.compute, block=tuple((dim(d), b) for d, b in arch.compute.block))
    return replace(arch, levels=tuple(levels), compute=compute)


def rename_figures(figures: Figures, tensors: Mapping[str, str]) -> Figures | None:
    """``figures`` with every per-tensor entry's name ``t`` replaced by ``tensors[t]``; None when some name is
    not in ``tensors`` or the figures have a field this module does not know (they could name a tensor)."""
    try:
        _known(figures)
        links = []
        for link in figures.links:
            _known(link)
            for tt in link.tensors:
                _known(tt)
            links.append(replace(link, tensors=tuple(replace(tt, tensor=tensors[tt.tensor]) for tt in link.tensors)))
    except (_Refused, KeyError):
        return None
    return replace(figures, links=tuple(links))
