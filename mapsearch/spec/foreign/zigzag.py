"""ZigZag 3.x hardware and workload YAML -> a mapsearch tree and workload.

Hardware (``zigzag/inputs/hardware/*.yaml``): ``memories`` are listed from
the MACs up; each serves some operands (``I1``, ``I2``, ``O``) and is
shared across its ``served_dimensions`` of the ``operational_array``. An
operand's hierarchy is the memories that serve it, so ZigZag lets each
operand have its own: mapsearch chains every memory, top first, and each
keeps exactly its operands and bypasses the others (exact: ZigZag has no
bypass decision either). The workload's operands map to memory operands by
ZigZag's default ``memory_operand_links``: ``O -> O``, ``W -> I2``, ``I ->
I1`` (a mapsearch workload: the output, the last input, the first input).

- ``size`` (bits) / the widest precision the memory holds = words.
- A port of ``bandwidth_max`` bits per cycle moves ``bandwidth_max /
  precision`` words per cycle; read ports bound words read (to the level
  below, ``tl``, and above, ``th``), write ports words written; a
  ``read_write`` port makes the links shared. As for AccelForge, a memory's
  port bounds the link above it and the link below it.
- ``r_cost``/``w_cost`` (pJ per access of ``bandwidth_max`` bits) become pJ
  per word (``cost * precision / bandwidth_max``); ``unit_energy`` is pJ per
  MAC.
- A memory not shared across an array dimension has one instance per
  position along it: the dimension becomes a mesh axis on the first memory
  (from the top) that is replicated along it; what no memory replicates goes
  on the operand level under the MACs (one op's operands, free links).

Not expressible (one line): an in-memory-computing array (``is_imc``);
a memory shared along an array dimension below one that is replicated along
it. Noted: systolic dimensions (mapsearch multicasts instead of forwarding),
``dataflows`` (spatial-unrolling hints), mixed precisions in one memory.

Workload YAML: a list of layers ``{id, operator_type, equation:
O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix], dimension_relations:
[ix=1*ox+1*fx], loop_dims, loop_sizes, operand_precision, padding}``.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Mapping

from mapsearch.spec.energy import LevelEnergy
from mapsearch.spec.foreign.accelforge_parts import FREE, Port, join_ports
from mapsearch.spec import limits
from mapsearch.spec.foreign.common import bad, over_limit, untranslatable
from mapsearch.spec.foreign.operands import operand_words
from mapsearch.spec.foreign.sets import as_set_text
from mapsearch.spec.set_expr import parse_set_expr
from mapsearch.spec.tree_nodes import ComputeNode, HierarchicalNode, MemoryNode, SetRule, SpatialAxis, Tree
from mapsearch.spec.tree_yaml import Where
from mapsearch.spec.workload import AffineIndex, Einsum, TensorAccess, Workload, WorkloadGraph

__all__ = ["zigzag_tree", "zigzag_workload"]

_RELATION = re.compile(r"^(\w+)\s*=\s*(?:(\d+)\s*\*\s*)?(\w+)\s*\+\s*(?:(\d+)\s*\*\s*)?(\w+)\Z")
_ACCESS = re.compile(r"(\w+)((?:\[\w*\])+)")


def zigzag_workload(data: Any, source: str, name: str) -> tuple[Workload, dict[str, int], tuple[str, ...]]:
    """``(workload, bits per tensor, notes)`` of a one-layer file (ZigZag maps layers one at a time).

    An input operand of 0 bits (ZigZag's ``Pooling``: ``W: 0``, a placeholder)
    holds no data: ZigZag stores and moves none of it (its capacity and
    transfer counts skip a 0-bit operand), so the layer is read without it, as
    ``O += I`` over the same loops (the same ops), with a note. An output of
    0 bits, or every input at 0 bits, is refused.
    """
    if not isinstance(data, list) or not data:
        raise bad(source, "", "a list of ZigZag layers", data)
    if len(data) > 1:
        raise untranslatable(source, "", f"{len(data)} layers; ZigZag maps a network layer by layer and so does "
                             f"mapsearch's characterize: give one layer per file to solve")
    w = _layer(data[0], source, "[0]", name)
    _check_layer_labels(data[0], w, source, "[0]")
    given = data[0].get("operand_precision") or {}
    if not isinstance(given, dict):
        raise bad(source, "[0].operand_precision", "a mapping from operand to bits", given)
    bits = {}
    for t in w.tensor_names:  # O: the partial sums' width
        b = given.get(t)
        if b is None:
            continue
        if isinstance(b, bool) or not isinstance(b, int) or b < 0:
            raise bad(source, f"[0].operand_precision.{t}", "bits: int >= 0", b)
        bits[t] = b
    return _without_empty_operands(w, bits, source)


def _check_layer_labels(layer: Mapping[str, Any], w: Workload, source: str, field: str) -> None:
    """``operator_type`` is a label (ZigZag picks the layer's mapping entry by it; the equation says what the
    layer computes): any name. ``operand_source`` maps an input operand to the layer producing it: the layer's
    own id for an operand from outside (ZigZag's constant operand), else an earlier layer's (a layer cut out of
    a network names its producer, which a one-layer solve does not need); ZigZag links a layer to producers it
    has already read, so a later id, or an operand the equation does not read, is refused."""
    kind = layer.get("operator_type")
    if kind is not None and not isinstance(kind, str):
        raise bad(source, f"{field}.operator_type", "a name such as Conv, Gemm or Pooling", kind)
    sources = layer.get("operand_source")
    if sources is None:
        return
    if not isinstance(sources, dict):
        raise bad(source, f"{field}.operand_source", "a mapping from input operand to layer id", sources)
    inputs = [t.name for t in w.einsum.inputs]
    own = layer.get("id")
    own = own if isinstance(own, int) and not isinstance(own, bool) else None
    for op, src in sources.items():
        if op not in inputs:
            raise bad(source, f"{field}.operand_source", f"input operands of the equation ({', '.join(inputs)})", op)
        if src in (None, []):
            continue
        if isinstance(src, bool) or not isinstance(src, int) or src < 0 or (own is not None and src > own):
            limit = f" <= {own} (this layer's id: an earlier layer or the layer itself)" if own is not None else " >= 0"
            raise bad(source, f"{field}.operand_source.{op}", f"a layer id{limit}", src)


def _without_empty_operands(w: Workload, bits: dict[str, int], source: str
                            ) -> tuple[Workload, dict[str, int], tuple[str, ...]]:
    """The layer without its 0-bit inputs (see :func:`zigzag_workload`)."""
    e = w.einsum
    empty = [t.name for t in e.inputs if bits.get(t.name) == 0]
    if not empty and bits.get(e.output.name) != 0:
        return w, bits, ()
    field = f"[0].operand_precision.{empty[0] if empty else e.output.name}"
    if bits.get(e.output.name) == 0:
        raise untranslatable(source, field, f"the output {e.output.name} has 0 bits: the layer produces nothing")
    kept = tuple(t for t in e.inputs if t.name not in empty)
    if not kept:
        raise untranslatable(source, field, "every input has 0 bits: the layer reads nothing")
    reduced = Einsum(e.output, kept)
    lost = [d for d in e.dims if d not in reduced.dims]
    if lost:
        raise untranslatable(source, field, f"{', '.join(empty)} of 0 bits is the only operand indexed by "
                             f"{', '.join(lost)}; without it the layer would do fewer ops")
    extents = dict(w.extents)
    reduced_w = Workload(w.name, reduced, tuple((d, extents[d]) for d in reduced.dims))
    note = (f"{source}: {field}: {', '.join(empty)} of 0 bits holds no data (ZigZag stores and moves none of it): "
            f"read as {reduced.text()}, the same ops")
    return reduced_w, {t: b for t, b in bits.items() if t not in empty}, (note,)


def _layer(layer: Any, source: str, field: str, name: str) -> Workload:
    if not isinstance(layer, dict):
        raise bad(source, field, "a mapping with equation, loop_dims and loop_sizes", layer)
    for key in ("equation", "loop_dims", "loop_sizes"):
        if key not in layer:
            raise bad(source, f"{field}.{key}", f"a {key}", None)
    dims, sizes = layer["loop_dims"], layer["loop_sizes"]
    if not isinstance(dims, list) or not isinstance(sizes, list) or len(dims) != len(sizes):
        raise bad(source, f"{field}.loop_sizes", "one size per loop dimension", sizes)
    extents = {}
    for d, n in zip(dims, sizes):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise bad(source, f"{field}.loop_sizes", "ints >= 1", sizes)
        over_limit(source, f"{field}.loop_sizes", limits.extent_error(n) and f"{d}: {limits.extent_error(n)}")
        extents[str(d).lower()] = n
    if any(p not in (None, [0, 0]) and p != [0, 0] for p in layer.get("padding") or []):
        raise untranslatable(source, f"{field}.padding", "padding reads outside the input; mapsearch has no padding")
    relations: dict[str, AffineIndex] = {}
    for i, rel in enumerate(layer.get("dimension_relations") or []):
        m = _RELATION.match(str(rel).replace(" ", ""))
        if m is None:
            raise bad(source, f"{field}.dimension_relations[{i}]", "ix=s*ox+d*fx", rel)
        for g in (2, 4):
            over_limit(source, f"{field}.dimension_relations[{i}]", None if int(m.group(g) or 1) <= limits.MAX_EXTENT
                       else f"expected a coefficient <= {limits.MAX_EXTENT:,} (a stride or dilation), got "
                            f"{limits.describe(int(m.group(g)))}")
        relations[m.group(1)] = AffineIndex(((m.group(3), int(m.group(2) or 1)), (m.group(5), int(m.group(4) or 1))))
    eq = str(layer["equation"]).replace(" ", "")
    lhs, sep, rhs = eq.partition("+=") if "+=" in eq else eq.partition("=")
    if not sep:
        raise bad(source, f"{field}.equation", "O[...]+=W[...]*I[...]", layer["equation"])
    if "+" in rhs:
        raise untranslatable(source, f"{field}.equation", f"{layer['equation']!r} adds tensors; mapsearch's "
                             f"einsums multiply them")

    def access(text: str) -> TensorAccess:
        m = _ACCESS.fullmatch(text)
        if m is None:
            raise bad(source, f"{field}.equation", "TENSOR[dim][dim]...", text)
        idx = [s for s in re.findall(r"\[(\w*)\]", m.group(2)) if s]
        return TensorAccess(m.group(1), tuple(relations.get(d, AffineIndex(((d, 1),))) for d in idx))

    out = access(lhs)
    ins = tuple(access(t) for t in rhs.split("*"))
    einsum = Einsum(out, ins)
    for d in einsum.dims:
        if d not in extents:
            raise bad(source, f"{field}.loop_dims", f"a size for {d.upper()}", sorted(extents))
    return Workload(str(layer.get("name") or name), einsum, tuple((d, extents[d]) for d in einsum.dims))


def _links(workload: Workload) -> dict[str, str]:
    """Memory operand -> tensor, by ZigZag's default links (W -> I2, I -> I1, O -> O)."""
    e = workload.einsum
    names = {t.name for t in e.inputs}
    if {"W", "I"} <= names or names <= {"W", "I"}:
        links = {"I2": "W", "I1": "I"}
    else:
        links = {"I1": e.inputs[0].name, "I2": e.inputs[-1].name if len(e.inputs) > 1 else ""}
    return {**{k: v for k, v in links.items() if v in names}, "O": e.output.name}


def zigzag_tree(data: Mapping[str, Any], source: str, name: str, workload: Any) -> tuple[Tree, tuple[str, ...]]:
    w = getattr(workload, "workload", workload)
    if isinstance(w, WorkloadGraph):
        raise untranslatable(source, "", "ZigZag maps one layer at a time")
    array = data.get("operational_array")
    if not isinstance(array, dict):
        raise bad(source, "operational_array", "a mapping with dimensions and sizes", array)
    if array.get("is_imc"):
        raise untranslatable(source, "operational_array.is_imc", "an in-memory-computing array has no "
                             "counterpart in mapsearch's model")
    dims, sizes = array.get("dimensions"), array.get("sizes")
    if not isinstance(dims, list) or not isinstance(sizes, list) or len(dims) != len(sizes):
        raise bad(source, "operational_array.sizes", "one size per dimension", sizes)
    notes = []
    if array.get("systolic_dimensions"):
        notes.append(f"{source}: operational_array.systolic_dimensions: mapsearch multicasts along "
                     f"{', '.join(array['systolic_dimensions'])} instead of forwarding from neighbour to neighbour")
    if data.get("dataflows"):
        notes.append(f"{source}: dataflows: spatial-unrolling hints for ZigZag's mapper; mapsearch searches every split")
    memories = data.get("memories")
    if not isinstance(memories, dict) or not memories:
        raise bad(source, "memories", "a mapping of memories", memories)
    links = _links(w)
    precision = _precisions(workload, w, links, notes)
    tensors = w.tensor_names
    nodes, parent, fanned = [], None, set()
    for mname in _chain_order(memories, dims, links, source):
        m = memories[mname]
        f = f"memories.{mname}"
        if not isinstance(m, dict):
            raise bad(source, f, "a mapping with size, operands, ports, served_dimensions", m)
        ops = [o for o in m.get("operands") or [] if o in links]
        held = frozenset(links[o] for o in ops)
        if not held:
            notes.append(f"{source}: {f}: serves no operand of this layer; left out")
            continue
        widths = {precision[links[o]] for o in ops}
        bits = max(widths)
        if len(widths) > 1:
            notes.append(f"{source}: {f}.size: holds operands of {sorted(widths)} bits; mapsearch counts it in "
                         f"{bits}-bit words")
        served = set(m.get("served_dimensions") or [])
        replicated = {d for d in dims if d not in served}
        if not fanned <= replicated:
            raise untranslatable(source, f"{f}.served_dimensions", f"{mname} is shared along "
                                 f"{', '.join(sorted(fanned - replicated))}, which a memory above it is "
                                 f"replicated along")
        where = Where(source, 1, 1, f)
        axes = tuple(_axis(d, sizes[dims.index(d)], where) for d in dims if d in replicated - fanned)
        fanned |= replicated
        size = m.get("size")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise bad(source, f"{f}.size", "bits: int >= 1", size)
        port, energy = _port(m, f, source, ops, links, precision, notes)
        if bits < 1:
            raise untranslatable(source, f"{f}.operands", f"{mname} holds only operands of {bits} bits")
        if size < bits:
            raise untranslatable(source, f"{f}.size", f"{mname} holds {size} bits, less than one {bits}-bit word, "
                                 f"but must keep {', '.join(sorted(held))}")
        capacity = size // bits
        over_limit(source, f"{f}.size", limits.capacity_error(capacity) and
                   f"{limits.capacity_error(capacity)} ({size:,} bits of {bits})")
        link = None if parent is None else join_ports(parent, port)
        rule = SetRule(as_set_text(held, tensors), parse_set_expr(as_set_text(held, tensors)), where)
        other = frozenset(tensors) - held
        bypass = SetRule(as_set_text(other, tensors), parse_set_expr(as_set_text(other, tensors)), where) if other else None
        nodes.append(MemoryNode(mname, capacity, link, axes, rule, None, bypass, where,
                                LevelEnergy(mname, energy[0], energy[1])))
        parent = port
    if not nodes:
        raise bad(source, "memories", "memories serving the layer's operands", list(memories))
    where = Where(source, 1, 1, "operational_array")
    rest = tuple(_axis(d, sizes[dims.index(d)], where) for d in dims if d not in fanned)
    nodes.append(MemoryNode("mac_operands", operand_words(w.einsum, w.extent), join_ports(parent, FREE), rest, None,
                            None, None, where, LevelEnergy("mac_operands")))
    unit = Fraction(str(array.get("unit_energy", 0)))
    nodes.append(ComputeNode("mac", (), Fraction(1), where, (unit, Fraction(0))))
    tree = Tree(str(data.get("name", name)), HierarchicalNode(tuple(nodes), Where(source, 1, 1, "memories")), False,
                source, "", "pJ")
    return tree, tuple(dict.fromkeys(notes))


def _chain_order(memories: Mapping[str, Any], dims: list, links: Mapping[str, str], source: str) -> list[str]:
    """Memories top first: each operand's own order (ZigZag lists from the MACs up), and among the memories
    free to go next the most shared one (fewest replicated array dimensions), then the one listed last."""
    listed = list(memories)
    below: dict[str, set[str]] = {m: set() for m in listed}  # memories that must come after m
    for op in links:
        serving = [m for m in listed if isinstance(memories[m], dict) and op in (memories[m].get("operands") or [])]
        for lower, upper in zip(serving, serving[1:]):
            below[upper].add(lower)
    waiting = {m: sum(m in below[u] for u in listed) for m in listed}
    order: list[str] = []
    while len(order) < len(listed):
        free = [m for m in listed if m not in order and waiting[m] == 0]
        if not free:
            raise untranslatable(source, "memories", "the operands' hierarchies order the memories in a cycle")

        def replicated(m: str) -> int:
            served = set(memories[m].get("served_dimensions") or []) if isinstance(memories[m], dict) else set()
            return sum(d not in served for d in dims)

        nxt = min(free, key=lambda m: (replicated(m), -listed.index(m)))
        order.append(nxt)
        for lower in below[nxt]:
            waiting[lower] -= 1
    return order


def _axis(dim: str, size: Any, where: Where) -> SpatialAxis:
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise bad(where.source, "operational_array.sizes", "ints >= 1", size)
    over_limit(where.source, "operational_array.sizes", limits.instances_error(size, dim))
    everything = SetRule("All", parse_set_expr("All"), where)
    return SpatialAxis(dim, size, everything, SetRule("Nothing", parse_set_expr("Nothing"), where), where)


def _precisions(workload: Any, w: Workload, links: Mapping[str, str], notes: list) -> dict[str, int]:
    given = getattr(workload, "bits", None) or {}
    out = {}
    for t in w.tensor_names:
        out[t] = given.get(t, 8)
    if not given:
        notes.append("the workload gives no operand precision; 8 bits per word assumed")
    return out


def _port(m: Mapping[str, Any], field: str, source: str, ops: list[str], links: Mapping[str, str],
          precision: Mapping[str, int], notes: list) -> tuple[Port, tuple[Fraction, Fraction]]:
    """The memory's cost per word (clocks) to read and to write, and its energy per word (pJ)."""
    read, write, shared = Fraction(0), Fraction(0), False
    e_read, e_write = Fraction(0), Fraction(0)
    r_cost, w_cost = (Fraction(str(m.get(k) or 0)) for k in ("r_cost", "w_cost"))
    for j, p in enumerate(m.get("ports") or []):
        if not isinstance(p, dict) or not isinstance(p.get("bandwidth_max"), int) or p["bandwidth_max"] < 1:
            raise bad(source, f"{field}.ports[{j}]", "a port with bandwidth_max >= 1 bits per cycle", p)
        over_limit(source, f"{field}.ports[{j}].bandwidth_max", None if p["bandwidth_max"] <= limits.MODEL_LIMIT
                   else f"expected bits per cycle <= 2^62 (the solver's integers hold a word's clocks exactly), "
                        f"got {limits.describe(p['bandwidth_max'])}")
        shared |= p.get("type") == "read_write"
        for alloc in p.get("allocation") or []:
            op, _, direction = str(alloc).partition(", ")
            if op not in ops:
                continue
            per_word = Fraction(precision[links[op]], p["bandwidth_max"])
            if direction in ("tl", "th"):
                read, e_read = max(read, per_word), max(e_read, r_cost * per_word)
            else:
                write, e_write = max(write, per_word), max(e_write, w_cost * per_word)
    widths = sorted({precision[links[op]] for op in ops})
    if len(widths) > 1 and (read or write):
        notes.append(f"{source}: {field}.ports: words of {widths} bits share its ports; mapsearch charges every "
                     f"word the widest one's time and energy")
    port = Port(read, write, "shared" if shared else "separate")
    if shared and read != write:
        port = Port(max(read, write), max(read, write), "shared")
    return port, (e_read, e_write)
