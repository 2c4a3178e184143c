"""A schedule as Timeloop's loop nest: storage levels, per-level loop factors with residuals, permutations.

This is the shared core of the Timeloop export (:mod:`mapsearch.report.export_timeloop`
writes it as YAML). It states the schedule **exactly** or refuses with one line;
it never pads a problem or moves a buffer.

Tiling. A dimension's tiling is a chain of *cuts*, outer to inner: the
level-1 tile, a spatial part where a meshed level splits the dimension, the
level-2 tile, ..., and finally 1 (the loops over single MACs). Each cut is
one Timeloop loop. mapsearch splits with remainder
(``for x0 in range(0, s, T): piece = min(T, s - x0)``, every piece of every
parent). Timeloop (``src/mapping/parser.cpp``, ``src/loop-analysis/nest-analysis.cpp``)
gives a loop ``end`` iterations, or ``residual`` iterations (written
``M=7,6``) when every outer loop over the same dimension is at its last
iteration, and requires
``((r_1 - 1) * e_2 + (r_2 - 1)) * e_3 + ... + r_n == extent``. So a cut is
exact when every piece that is not on the chain of last pieces splits
evenly; its ``end`` is then ``parent / cut`` and its ``residual`` the number
of cuts of the last piece. :func:`dimension_loops` derives them and proves
the chain (it raises otherwise, naming the dimension and the sizes).

Storage levels. One Timeloop storage level per mapsearch level. Timeloop
places a level's spatial loops *inside* its temporal loops, while mapsearch
splits the parent tile into parts first and then loops over its tiles
inside each part. Where a part holds more than one tile of a split
dimension, a pass-through level (``<level>_parts``, Timeloop's usual
"dummy buffer": it keeps no tensor) is inserted between the fanout and the
meshed level to carry those temporal loops, so the nest stays the same.

Spatial. A meshed level's axes are Timeloop's ``meshX`` (first axis) and
``meshY`` (second); a split's loops go to its axis, first listed split
outermost (mapsearch's mixed radix), with ``split`` the number of X loops.
mapsearch's per-axis ``may_reuse`` has one Timeloop counterpart per level,
``no_reuse``: a tensor that no axis with a reuse opportunity may reuse is
listed there; a tensor reusable along one such axis but not another is
refused.

Refused (one line each, a :class:`TimeloopRefusal` naming the schedule's
file, the field and what Timeloop cannot express): buffers placed away from
their level's tile (Timeloop keeps a tensor's tile at its level's boundary),
homes below the top (Timeloop's outermost level backs every data space and
counts its fill), rank-0 tensors (a Timeloop data space has at least one
dimension), more than 26 dimensions (Timeloop names dimensions with one
letter), a remainder off the last piece, a tensor shareable along one mesh
axis but not another.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass, field

from mapsearch.report.export_refusal import ExportRefusal
from mapsearch.schedule.schedule import Schedule

__all__ = ["Cut", "Loop", "StorageLevel", "TimeloopNest", "TimeloopRefusal", "dimension_loops", "dimension_letters",
           "timeloop_nest", "residual_product"]


class TimeloopRefusal(ExportRefusal):
    """A schedule Timeloop cannot state (:class:`~mapsearch.report.export_refusal.ExportRefusal`).

    >>> str(TimeloopRefusal("homes.Z", "homes below the top (Z at L1)", "s.json"))
    's.json: homes.Z: Timeloop cannot express homes below the top (Z at L1)'
    """

    PEER = "Timeloop"


@dataclass(frozen=True)
class Cut:
    """One loop over one dimension: pieces are cut into chunks of ``size``, at ``target`` (temporal or spatial)."""

    target: str
    kind: str  # "temporal" or "spatial"
    size: int
    field: str = ""  # the schedule's field that asks for this cut (levels[1].tile.m), for a refusal


@dataclass(frozen=True)
class Loop:
    """Timeloop's factor of a dimension at one (target, kind): ``end`` iterations, ``residual`` on the last chain."""

    end: int
    residual: int

    def text(self, letter: str) -> str:
        return f"{letter}={self.end}" + (f",{self.residual}" if self.residual != self.end else "")


@dataclass(frozen=True)
class StorageLevel:
    """A Timeloop storage level: a mapsearch level, or a pass-through (``level is None``) above a meshed one."""

    name: str
    level: int | None  # mapsearch level index; None for a pass-through
    keep: tuple[str, ...]
    mesh: tuple[int, int] = (1, 1)  # (meshX, meshY) of this level's own instances per parent instance
    capacity: int | None = None


@dataclass
class TimeloopNest:
    """Everything the three Timeloop files need."""

    letters: dict[str, str]  # mapsearch dimension -> Timeloop dimension letter
    storage: list[StorageLevel]  # outermost first
    loops: dict[tuple[str, str], dict[str, Loop]]  # (target, kind) -> dimension -> loop
    permutations: dict[tuple[str, str], list[str]]  # (target, kind) -> dimensions innermost first
    split: dict[str, int] = field(default_factory=dict)  # target -> number of spatial loops on meshX
    no_reuse: dict[str, list[str]] = field(default_factory=dict)  # target -> tensors its fanout must not reuse
    notes: list[str] = field(default_factory=list)  # what Timeloop models differently (not the mapping)


def dimension_letters(dims: tuple[str, ...]) -> dict[str, str]:
    """One upper-case letter per dimension: its own initial where free, else the first free letter."""
    if len(dims) > 26:
        raise TimeloopRefusal("workload.extents", f"more than 26 dimensions (it names each with one letter); this "
                              f"workload has {len(dims)}")
    out: dict[str, str] = {}
    taken: set[str] = set()
    for d in dims:  # exact one-letter names first, so m -> M whatever comes before it
        if len(d) == 1 and d.upper() in string.ascii_uppercase and d.upper() not in taken:
            out[d] = d.upper()
            taken.add(out[d])
    for d in dims:
        if d in out:
            continue
        want = d[0].upper() if d[0].isalpha() else ""
        letter = want if want and want not in taken else next(c for c in string.ascii_uppercase if c not in taken)
        out[d] = letter
        taken.add(letter)
    return {d: out[d] for d in dims}


def dimension_loops(extent: int, cuts: list[Cut], dim: str) -> list[Loop]:
    """Timeloop's (end, residual) per cut, or a :class:`TimeloopRefusal` naming the cut Timeloop cannot state."""
    loops: list[Loop] = []
    parent, last = extent, extent  # full piece size and last-chain piece size before this cut
    several = False  # some piece before this cut is off the chain of last pieces
    for cut in cuts:
        c = cut.size
        residual = -(-last // c)
        if several and parent % c:
            raise TimeloopRefusal(
                cut.field or dim, f"the {cut.kind} cut of {dim} into {c} (a loop at {cut.target} in Timeloop's nest): it leaves a remainder in "
                f"pieces of {parent} that are not the last one, and Timeloop's residual factors shorten only the "
                f"last iteration of each loop, so this tiling cannot be stated exactly")
        end = parent // c if several else residual
        loops.append(Loop(end, residual))
        several = several or residual > 1
        parent, last = c, last - (residual - 1) * c
    if residual_product(loops) != extent:  # the parser's own check: cannot fail when the rule above holds
        raise AssertionError(f"{dim}: Timeloop factors {loops} do not multiply to {extent}")
    return loops


def residual_product(loops: list[Loop]) -> int:
    """Timeloop's check: ``((r_1 - 1) * e_2 + (r_2 - 1)) * e_3 + ... + r_n`` (loops outer to inner)."""
    total = 0
    for lp in loops:
        total = total * lp.end + lp.residual - 1
    return total + 1


def _refuse_what_timeloop_cannot_hold(s: Schedule) -> None:
    w, arch = s.workload, s.architecture
    if s.placed:
        placed = [(i, t, lm.level) for i, lm in enumerate(s.levels) for t, p in lm.positions if p != i * len(w.dims)]
        i, t, _ = placed[0]
        raise TimeloopRefusal(f"levels[{i}].positions.{t}", f"buffers placed away from their level's tile "
                              f"({', '.join(f'{t} at {level}' for _, t, level in placed)}): it keeps a tensor's tile "
                              "at its level's boundary; solve with --no-placement for a schedule it can state, or "
                              "export this one as accelforge")
    below = [t for t in w.tensor_names if s.home(t) != 0]
    if below:
        where = ", ".join(f"{t} at {arch.levels[s.home(t)].name}" for t in below)
        raise TimeloopRefusal(f"homes.{below[0]}", f"homes below the top ({where}): its outermost level backs every "
                              "data space and would count its fill")
    scalars = [t.name for t in w.tensors if not t.indices]
    if scalars:
        raise TimeloopRefusal("workload.einsum", f"rank-0 tensors ({', '.join(scalars)}): a Timeloop data space "
                              "has at least one dimension")


def _no_reuse(s: Schedule, i: int) -> list[str]:
    """Tensors that a fanout into level ``i`` may not share, in Timeloop's one list per level (or refuse)."""
    w, lv = s.workload, s.architecture.levels[i]
    splits = s.levels[i].spatial
    out = []
    for t in w.tensor_names:
        access, is_out = w.tensor(t), w.is_output(t)
        chances = {sp.axis for sp in splits if sp.dim not in access.dims}  # axes where instances could share t
        allowed = {a for a in chances if lv.axis(a).reuses(t, is_out)}
        if allowed and allowed != chances:
            raise TimeloopRefusal(f"architecture.levels[{i}].mesh", f"a tensor shared along some mesh axes of "
                                  f"{lv.name} but not others ({t} may be shared along axis "
                                  f"{', '.join(sorted(allowed))} but not along {', '.join(sorted(chances - allowed))}): "
                                  "its no_reuse is one list per level")
        if chances and not allowed:
            out.append(t)
    return out


def timeloop_nest(schedule: Schedule) -> TimeloopNest:
    """The Timeloop storage levels and loops of ``schedule`` (exact, or a :class:`TimeloopRefusal` naming its file)."""
    try:
        return _nest(schedule)
    except TimeloopRefusal as e:
        if e.source or not schedule.source:
            raise
        raise TimeloopRefusal(e.field, e.what, schedule.source) from None


def _nest(schedule: Schedule) -> TimeloopNest:
    s = schedule
    _refuse_what_timeloop_cannot_hold(s)
    w, arch = s.workload, s.architecture
    depth = arch.depth
    letters = dimension_letters(w.dims)
    names = set(arch.level_names)

    storage: list[StorageLevel] = []
    temporal_target: dict[int, str] = {}  # mapsearch level i -> target of its order's loops
    cuts: dict[str, list[Cut]] = {d: [] for d in w.dims}
    nest = TimeloopNest(letters, storage, {}, {})
    for i in range(depth):
        lv, lm = arch.levels[i], s.levels[i]
        mesh = (1, 1)
        if lv.mesh:
            sizes = [ax.size for ax in lv.mesh] + [1]
            mesh = (sizes[0], sizes[1])
        if i > 0:
            parent = storage[-1].name
            split = {sp.dim: sp for sp in lm.spatial}
            for d in w.dims:  # spatial cuts come first in the nest (docs/spatial.md)
                if d in split:
                    j = next(j for j, sp in enumerate(lm.spatial) if sp.dim == d)
                    cuts[d].append(Cut(parent, "spatial", split[d].part, f"levels[{i}].spatial[{j}].part"))
            if lm.spatial:
                x = [sp.dim for sp in lm.spatial if sp.axis == lv.mesh[0].name]
                y = [sp.dim for sp in lm.spatial if sp.axis != lv.mesh[0].name]
                rest = [d for d in reversed(w.dims) if d not in split]
                nest.permutations[(parent, "spatial")] = list(reversed(x)) + list(reversed(y)) + rest
                nest.split[parent] = len(x)
                refuse = _no_reuse(s, i)
                if refuse:
                    nest.no_reuse[parent] = refuse
            inner_parts = any(lm.tile_extent(d) < sp.part for d, sp in split.items())
            target = parent
            if inner_parts:  # the level's loops must sit inside the spatial ones: a pass-through level
                target = f"{lv.name}_parts"
                while target in names:
                    target += "_"
                names.add(target)
                storage.append(StorageLevel(target, None, (), mesh))
                mesh = (1, 1)
            temporal_target[i] = target
            for d in lm.order:
                cuts[d].append(Cut(target, "temporal", lm.tile_extent(d), f"levels[{i}].tile.{d}"))
            nest.permutations[(target, "temporal")] = list(reversed(lm.order))
        keep = tuple(t for t in w.tensor_names if s.home(t) == i or s.keeps(t, i))
        storage.append(StorageLevel(lv.name, i, keep, mesh, lv.capacity))
    inner = arch.level_names[-1]
    for d in w.dims:
        cuts[d].append(Cut(inner, "temporal", 1, f"levels[{depth - 1}].tile.{d}"))
    nest.permutations[(inner, "temporal")] = list(reversed(w.dims))
    for st in storage:  # every level has a temporal entry (all ones where it has no loop)
        nest.permutations.setdefault((st.name, "temporal"), list(reversed(w.dims)))
    for d in w.dims:
        for cut, lp in zip(cuts[d], dimension_loops(w.extent[d], cuts[d], d)):
            nest.loops.setdefault((cut.target, cut.kind), {})[d] = lp
    for key in nest.permutations:
        per = nest.loops.setdefault(key, {})
        for d in w.dims:
            per.setdefault(d, Loop(1, 1))
    if arch.compute.block_macs != 1:
        block = " ".join(f"{letters[d]}={arch.compute.block_extent(d)}" for d in w.dims)
        nest.notes.append(f"mapsearch's op covers a block {block} per call; Timeloop counts single MACs, "
                          "so its compute cycles differ (the tiling and the words are the schedule's)")
    if any(lm.spatial for lm in s.levels):
        nest.notes.append("idle instances, multicast and reduction follow Timeloop's network model, which may "
                          "count crossings differently from docs/spatial.md")
    _check_fanout(nest, storage)
    return nest


def _check_fanout(nest: TimeloopNest, storage: list[StorageLevel]) -> None:
    """Spatial factors per axis fit the fanout below each target (mapsearch guarantees it; a guard for the writer)."""
    for k, st in enumerate(storage):
        key = (st.name, "spatial")
        if key not in nest.loops:
            continue
        mesh_x, mesh_y = storage[k + 1].mesh
        perm = nest.permutations[key]
        x = perm[: nest.split[st.name]]
        used_x = math.prod(nest.loops[key][d].end for d in x)
        used_y = math.prod(nest.loops[key][d].end for d in perm if d not in x)
        if used_x > mesh_x or used_y > mesh_y:
            raise AssertionError(f"{st.name}: spatial factors {used_x} x {used_y} exceed the mesh {mesh_x} x {mesh_y}")
