"""A schedule as AccelForge (1.0) input files: architecture, workload and a LoopTree mapping.

:func:`accelforge_files` gives ``arch.yaml``, ``workload.yaml`` and
``mapping.yaml``; :func:`accelforge_yaml` one text with the three sections
(``Spec.from_yaml`` reads both ways). ``accelforge.model.main.evaluate_mapping``
evaluates them.

The mapping is mapsearch's nest read as a LoopTree, which is what buffer
placement is (docs/cost-model.md "Buffer placement"):

- the whole nest is one sequence of loops, level 1's order first, then level
  2's, down to L0's; a meshed level's splits come first among its loops, as
  ``!Spatial`` loops (``name`` = the mesh axis, ``component`` = the level,
  ``tile_shape`` = the part); the level's own loops are ``!Temporal`` with
  ``tile_shape`` = its tile; a loop that makes one trip in every piece is
  left out; below L0's buffers, ``!Temporal`` loops of ``tile_shape: 1`` walk
  the MACs;
- each buffer is a ``!Storage`` node (``tensors``, ``component`` = its level)
  at its position in that sequence; the homes are ``!Storage`` nodes above
  every loop. A buffer is written above the loops around it that do not
  index its tensor or make one trip (down to its keeper above): it holds
  the same region there and changes at the same steps, and LoopTree
  refetches a tile below such a loop.

The architecture lists the levels as ``!Memory`` (``size`` in bits:
capacity x ``bits_per_value``; ``inf`` when unbounded), a meshed level with
``spatial`` per mesh axis (``fanout``, ``may_reuse`` and ``reuse`` as set
expressions from the axis's ``may_reuse`` and ``must_reuse``, ``loop_bounds``
from its split bounds), then
``!Compute MAC``. Action energies and throughputs are Jinja variables
(``READ_ENERGY``, ``WRITE_ENERGY``, ``MAC_ENERGY``, default 0; throughputs
``inf``): mapsearch's figures are words and clocks, not energy.

Said in the header rather than in the files: a block op (AccelForge counts
MACs), and remainder tiles (``tile_shape`` that does not divide its parent's:
the mapping states mapsearch's split, ``for x0 in range(0, s, T)``).
"""

from __future__ import annotations

import json

from mapsearch.report.export_refusal import ExportRefusal
from mapsearch.schedule.schedule import Schedule

__all__ = ["accelforge_files", "accelforge_yaml", "accelforge_nodes", "AccelForgeRefusal", "ACCELFORGE_FILES",
           "BITS_PER_VALUE"]

ACCELFORGE_FILES = ("arch.yaml", "workload.yaml", "mapping.yaml")
BITS_PER_VALUE = 8  # a placeholder word width: mapsearch counts words


class AccelForgeRefusal(ExportRefusal):
    """A schedule AccelForge cannot state (:class:`~mapsearch.report.export_refusal.ExportRefusal`).

    >>> str(AccelForgeRefusal("workload.einsum", "this einsum: its rank-0 tensors (Z) have no projection", "s.json"))
    's.json: workload.einsum: AccelForge cannot express this einsum: its rank-0 tensors (Z) have no projection'
    """

    PEER = "AccelForge"


def _loop_bound(rule) -> str:
    """A split bound as AccelForge's ``Comparison`` (an empty dimension set is ``Nothing``)."""
    expression = " | ".join(rule.dims) or "Nothing"
    return f"{{expression: {json.dumps(expression)}, operator: {json.dumps(rule.operator)}, value: {rule.value}}}"


def _set_expr(names: tuple[str, ...], tensors: tuple[str, ...]) -> str:
    """mapsearch's reuse list (tensor names or roles) as an AccelForge set expression."""
    found = set(names)
    if not found or "none" in found:
        return "Nothing"
    if "all" in found:
        return "All"
    roles = {"input": "Inputs", "output": "Outputs"}  # AccelForge's built-in sets
    parts = [roles[n] for n in names if n in roles] + [n for n in names if n in tensors]
    return " | ".join(parts) if parts else "Nothing"


def _arch_lines(s: Schedule) -> list[str]:
    arch, w = s.architecture, s.workload
    lines = ["{% set READ_ENERGY = READ_ENERGY | default(0) %}", "{% set WRITE_ENERGY = WRITE_ENERGY | default(0) %}",
             "{% set MAC_ENERGY = MAC_ENERGY | default(0) %}", "arch:", "  nodes:"]
    for i, lv in enumerate(arch.levels):
        size = "inf" if lv.capacity is None else str(lv.capacity * BITS_PER_VALUE)
        lines += ["  - !Memory", f"    name: {lv.name}", f"    size: {size}", "    leak_power: 0", "    area: 0"]
        if lv.mesh:
            lines.append("    spatial:")
            for ax in lv.mesh:
                reuse = _set_expr(ax.must_reuse, w.tensor_names)
                must = f", reuse: {json.dumps(reuse)}" if reuse != "Nothing" else ""
                rules = ", ".join(_loop_bound(rule) for rule in ax.split_bounds)
                bounds = f", loop_bounds: [{rules}]" if rules else ""
                lines.append(f"    - {{name: {ax.name}, fanout: {ax.size}, "
                             f"may_reuse: {json.dumps(_set_expr(ax.may_reuse, w.tensor_names))}{must}{bounds}}}")
        lines += [f"    tensors: {{{'keep: All, ' if i == 0 else ''}may_keep: All}}", "    actions:",
                  "    - {name: read, energy: {{READ_ENERGY}}, throughput: inf}",
                  "    - {name: write, energy: {{WRITE_ENERGY}}, throughput: inf}"]
    mac = "MAC"
    while mac in arch.level_names:
        mac += "_"
    lines += ["  - !Compute", f"    name: {mac}", "    leak_power: 0", "    area: 0", "    actions:",
              "    - {name: compute, energy: {{MAC_ENERGY}}, throughput: 1}"]
    return lines


def _workload_lines(s: Schedule) -> list[str]:
    w = s.workload
    lines = ["workload:", "  iteration_space_shape:"]
    lines += [f"    {d}: 0 <= {d} < {w.extent[d]}" for d in w.dims]
    lines += [f"  bits_per_value: {{All: {BITS_PER_VALUE}}}", "  einsums:", f"  - name: {_einsum_name(s)}",
              "    tensor_accesses:"]
    for t in w.tensors:
        out = ", output: True" if w.is_output(t.name) else ""
        if all(ix.is_plain for ix in t.indices):
            proj = "[" + ", ".join(ix.terms[0][0] for ix in t.indices) + "]"
        else:  # a sliding window: name each rank, give its expression
            ranks = [f"{t.name.upper()}{a}" for a in range(len(t.indices))]
            proj = "{" + ", ".join(f"{r}: {ix.text()}" for r, ix in zip(ranks, t.indices)) + "}"
        lines.append(f"    - {{name: {t.name}, projection: {proj}{out}}}")
    return lines


def _einsum_name(s: Schedule) -> str:
    name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in s.workload.name) or "einsum"
    return name if name[0].isalpha() else f"E_{name}"


def accelforge_nodes(schedule: Schedule) -> list[dict]:
    """The LoopTree, outermost first: ``{"kind": "storage", "tensors", "component"}``,
    ``{"kind": "temporal"|"spatial", "dim", "tile", ["axis", "component"]}``, ``{"kind": "compute"}``."""
    s = schedule
    w, arch = s.workload, s.architecture
    D = len(w.dims)
    scalars = [t.name for t in w.tensors if not t.indices]
    if scalars:
        raise AccelForgeRefusal("workload.einsum", f"this einsum: its rank-0 tensors ({', '.join(scalars)}) have no "
                                "projection", s.source)
    # The nest's temporal loops (position k = the k-th loop) and the spatial loops before each level's loops.
    loops: list[tuple[str, int, bool]] = []  # (dim, tile, makes more than one trip somewhere)
    for i in range(1, arch.depth):
        lm, parent = s.levels[i], s.levels[i - 1]
        split = {sp.dim: sp.part for sp in lm.spatial}
        for d in lm.order:
            outer = split.get(d, parent.tile_extent(d))
            loops.append((d, lm.tile_extent(d), lm.tile_extent(d) < outer))
    # A buffer stays inside the spatial loops of every meshed level at or above its own (one per instance).
    spatial_floor = [max([(j - 1) * D for j in range(1, i + 1) if s.levels[j].spatial], default=0)
                     for i in range(arch.depth)]
    # Positions: a buffer moves out past loops that do not index its tensor (down to its keeper above).
    placed: dict[int, list[tuple[int, str]]] = {}  # position -> [(level, tensor)]
    for i in range(1, arch.depth):
        for t in w.tensor_names:
            if not s.keeps(t, i):
                continue
            p = s.position(t, i)
            if p < spatial_floor[i]:
                raise AccelForgeRefusal(f"levels[{i}].positions.{t}", f"{t}'s buffer at {arch.levels[i].name} "
                                        "outside the spatial loops above it: it keeps a per-instance buffer inside "
                                        "them", s.source)
            above = s.keeper_above(t, i)
            floor = max(spatial_floor[i], 0 if above == s.home(t) else s.position(t, above))
            while p > floor and (loops[p - 1][0] not in w.tensor(t).dims or not loops[p - 1][2]):
                p -= 1
            placed.setdefault(p, []).append((i, t))
    nodes: list[dict] = []
    for i in range(arch.depth):  # homes: above every loop
        mine = [t for t in w.tensor_names if s.home(t) == i]
        if mine:
            nodes.append({"kind": "storage", "tensors": mine, "component": arch.levels[i].name})

    def storage_at(p: int, levels: range) -> None:
        by_level: dict[int, list[str]] = {}
        for i, t in sorted(placed.get(p, [])):
            if i in levels:
                by_level.setdefault(i, []).append(t)
        for i, ts in by_level.items():
            nodes.append({"kind": "storage", "tensors": sorted(ts, key=w.tensor_names.index),
                          "component": arch.levels[i].name})

    k = 0
    for i in range(1, arch.depth):
        lm = s.levels[i]
        # At the boundary before level i's loops: buffers of the levels above, level i's spatial loops, then the rest.
        storage_at(k, range(0, i))
        for sp in lm.spatial:
            nodes.append({"kind": "spatial", "dim": sp.dim, "tile": sp.part, "axis": sp.axis, "component": lm.level})
        storage_at(k, range(i, arch.depth))
        for j, _ in enumerate(lm.order):
            d, tile, moves = loops[k]
            if moves:
                nodes.append({"kind": "temporal", "dim": d, "tile": tile})
            k += 1
            if j < len(lm.order) - 1:
                storage_at(k, range(arch.depth))
    storage_at(k, range(arch.depth))
    inner = s.levels[-1]
    for d in w.dims:
        if inner.tile_extent(d) > 1:
            nodes.append({"kind": "temporal", "dim": d, "tile": 1})
    nodes.append({"kind": "compute"})
    return nodes


def _mapping_lines(s: Schedule) -> list[str]:
    mac = "MAC"
    while mac in s.architecture.level_names:
        mac += "_"
    lines = ["mapping:", "  nodes:"]
    for n in accelforge_nodes(s):
        if n["kind"] == "storage":
            lines += ["  - !Storage", f"    tensors: [{', '.join(n['tensors'])}]", f"    component: {n['component']}"]
        elif n["kind"] == "temporal":
            lines += ["  - !Temporal", f"    rank_variable: {n['dim']}", f"    tile_shape: {n['tile']}"]
        elif n["kind"] == "spatial":
            lines += ["  - !Spatial", f"    rank_variable: {n['dim']}", f"    tile_shape: {n['tile']}",
                      f"    name: {n['axis']}", f"    component: {n['component']}"]
        else:
            lines += ["  - !Compute", f"    einsum: {_einsum_name(s)}", f"    component: {mac}"]
    return lines


def _header(s: Schedule, what: str) -> list[str]:
    w, arch = s.workload, s.architecture
    lines = [f"# AccelForge {what} of a mapsearch schedule: {w.name} ({w.einsum.text()}) on {arch.name}"]
    if what != "workload":
        lines.append(f"# sizes in bits: words x {BITS_PER_VALUE} (bits_per_value, a placeholder: mapsearch counts words)")
    if arch.compute.block_macs != 1 and what != "workload":
        lines.append("# mapsearch's op is a block; AccelForge counts single MACs (the tiling and the words are the schedule's)")
    rem = [d for d in w.dims if any(s.levels[i - 1].tile_extent(d) % s.levels[i].tile_extent(d)
                                     for i in range(1, arch.depth))]
    if rem and what != "workload":
        lines.append(f"# remainder tiles along {', '.join(rem)}: each loop splits its piece as "
                     "for x0 in range(0, piece, tile_shape), the last tile shorter")
    return lines


def accelforge_files(schedule: Schedule) -> dict[str, str]:
    """``{"arch.yaml": ..., "workload.yaml": ..., "mapping.yaml": ...}`` (raises MapsearchError when it cannot)."""
    parts = {
        "arch.yaml": _header(schedule, "architecture") + _arch_lines(schedule),
        "workload.yaml": _header(schedule, "workload") + _workload_lines(schedule),
        "mapping.yaml": _header(schedule, "mapping") + _mapping_lines(schedule),
    }
    return {name: "\n".join(lines) + "\n" for name, lines in parts.items()}


def accelforge_yaml(schedule: Schedule) -> str:
    """The three sections in one file."""
    arch = _arch_lines(schedule)
    jinja, arch = arch[:3], arch[3:]
    lines = jinja + _header(schedule, "architecture, workload and mapping") + arch
    lines += _workload_lines(schedule) + _mapping_lines(schedule)
    return "\n".join(lines) + "\n"
