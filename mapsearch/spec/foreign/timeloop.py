"""Timeloop v0.4 problem, architecture and constraints -> mapsearch's workload, tree and constraints.

Problem (``problem: {shape: {dimensions, coefficients, data_spaces}, instance}``):
each data space is a tensor, each projection axis a sum of ``[DIM]`` or
``[DIM, COEFFICIENT]`` terms (the coefficient's value from ``instance``, else
its ``default``); the data space with ``read_write: true`` is the output.
Dimension names are kept as written (``C``, ``M``, ...).

Instance keys that are neither a dimension nor a coefficient of the shape
are ignored, as Timeloop ignores them (a note names them: ``HStride`` is not
the coefficient ``Hstride``, which keeps its default).

Architecture (``architecture: {version: 0.4, nodes: [...]}``): ``!Component``
nodes are storage, except the last one, the compute. A storage holds
``depth`` rows of ``width / datawidth`` words, as Timeloop's buffer model
counts them (``datawidth`` 16 bits when not given; ``block_size`` words or
``cluster_size`` blocks per row; ``entries``; ``sizeKB``; ``size`` in words
also works; none: unbounded, top only); a width that is not a whole number
of words is refused, as Timeloop refuses it; ``read_bandwidth``/``write_bandwidth`` are words per
cycle (none: unbounded) and bound the links above and below it, as for
AccelForge (mapsearch/spec/foreign/accelforge_parts.py). ``!Container``
``spatial: {meshX, meshY}`` fans out everything below it; the fanout goes on
the next storage. ``!Parallel`` storages are chained (as timeloopfe
flattens them), each keeping what its constraints say. Under the compute a
level holding one op's operands is added (see accelforge_arch.py).

timeloopfe (Timeloop v4's front end) writes attribute values as Python
expressions: ``datawidth: DATAWIDTH`` (a name of the top-level
``variables:``, of this file or of a variables file given with ``-c``, or a
``--var``), ``width: datawidth * 3`` (the component's other attributes and
its containers' attributes), ``split: len(spec.problem.instance)``. The
values mapsearch reads (sizes, bandwidths, meshes, ``split``) are evaluated
by expr.py's whitelisted ``ast`` walk with timeloopfe's common functions
(``len``, ``min``, ``max``, ``int``, ``ceil``, ``floor``, ``log2``, ...) and
``spec.problem.instance`` (the problem's instance as timeloopfe holds it:
with a ``densities`` entry, so ``len`` counts it); anything else is one line
naming the file, the field and the expression. Names resolve in any order
(timeloopfe needs an attribute's names above it). The evaluation, and the
reading of a node's sizes, bandwidths and meshes, are in timeloop_attrs.py.

Sparse features: ``sparse_optimizations`` (compressed representation
formats, skipping and gating) change what Sparseloop moves, stores and
computes: refused. ``metadata_*`` storage attributes hold a compressed
format's metadata; without ``sparse_optimizations`` Timeloop stores none, so
they are left out with a note.

Constraints (on a node as ``constraints: {dataspace, temporal, spatial}``, or
``constraints:``/``architecture_constraints:``/``mapspace_constraints: {targets: [...]}``,
in the architecture's file or a separate one):
``dataspace``/``bypass`` keep and bypass lists become the tree's keep rules
(exact). A temporal ``permutation`` naming every dimension becomes the loop
order of the level whose loops it is (Timeloop lists inner to outer), and
``factors`` at the innermost storage become its tile extents. Other mapping
constraints (partial permutations, factors above the innermost storage) are
mapper restrictions mapsearch cannot state: they are left out with a note,
so mapsearch searches a wider space. A ``spatial`` constraint on a
``!Container`` becomes split bounds on its mesh axes (the split's X/Y
assignment, factors: timeloop_constraints.spatial_bounds); on a storage it
is left out with a note.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Mapping

from mapsearch.spec.foreign.accelforge_parts import FREE, Port, join_ports
from mapsearch.spec import limits
from mapsearch.spec.foreign.common import Tagged, bad, over_limit, untranslatable
from mapsearch.spec.foreign.timeloop_attrs import _SPARSE, _Evaluator, _evaluated_split, _mesh, _port, _scopes, _words
from mapsearch.spec.set_expr import parse_set_expr
from mapsearch.spec.tree_nodes import ComputeNode, HierarchicalNode, MemoryNode, SetRule, SpatialAxis, Tree
from mapsearch.spec.tree_yaml import Where
from mapsearch.spec.workload import AffineIndex, Einsum, TensorAccess, Workload, WorkloadGraph

__all__ = ["timeloop_problem", "timeloop_arch"]

_DIM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")  # \Z: "$" also matches before a final newline


def timeloop_problem(data: Mapping[str, Any], source: str, name: str) -> tuple[Workload, dict, tuple[str, ...]]:
    """``(workload, bits per tensor, notes)``."""
    p = data.get("problem")
    if not isinstance(p, dict):
        raise bad(source, "problem", "a mapping with shape and instance", p)
    if "version" in p and str(p["version"]) != "0.4":  # as the architecture's (0.4: timeloopfe's v4 format)
        raise bad(source, "problem.version", "0.4 (Timeloop v4's format; leave it out for the older files)",
                  p["version"])
    shape, instance = p.get("shape"), p.get("instance")
    if not isinstance(shape, dict):
        raise bad(source, "problem.shape", "a mapping with dimensions and data_spaces", shape)
    if not isinstance(instance, dict):
        raise bad(source, "problem.instance", "a mapping from dimension to size", instance)
    dims = shape.get("dimensions")
    if isinstance(dims, str):
        dims = [d for d in re.split(r"[\s,]+", dims) if d]
    if not isinstance(dims, list) or not dims or not all(isinstance(d, str) and _DIM.match(d) for d in dims):
        raise bad(source, "problem.shape.dimensions", "a list of dimension names", dims)
    repeated = sorted({d for d in dims if dims.count(d) > 1})
    if repeated:
        raise bad(source, "problem.shape.dimensions", f"each dimension named once ({', '.join(repeated)} is "
                  f"repeated)", dims)
    coef = {}
    for i, c in enumerate(shape.get("coefficients") or []):
        if not isinstance(c, dict) or "name" not in c:
            raise bad(source, f"problem.shape.coefficients[{i}]", "a mapping with name and default", c)
        coef[c["name"]] = instance.get(c["name"], c.get("default", 1))
    for key in ("densities", "commonDensity"):
        if instance.get(key) not in (None, {}):
            raise untranslatable(source, f"problem.instance.{key}", "densities describe sparse tensors; use "
                                 "mapsearch's --density with a mapsearch workload")
    extents = {}
    for d in dims:
        v = instance.get(d)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise bad(source, f"problem.instance.{d}", "int >= 1", v)
        over_limit(source, f"problem.instance.{d}", limits.extent_error(v))
        extents[d] = v
    spaces = shape.get("data_spaces")
    if not isinstance(spaces, list) or len(spaces) < 2:
        raise bad(source, "problem.shape.data_spaces", "a list of two or more data spaces", spaces)
    accesses, output = [], None
    for i, ds in enumerate(spaces):
        f = f"problem.shape.data_spaces[{i}]"
        if not isinstance(ds, dict) or not isinstance(ds.get("name"), str):
            raise bad(source, f, "a mapping with name and projection", ds)
        axes = tuple(_axis(ax, coef, dims, source, f"{f}.projection[{j}]") for j, ax in enumerate(ds.get("projection") or []))
        acc = TensorAccess(ds["name"], axes)
        if ds.get("read_write"):
            if output is not None:
                raise untranslatable(source, f, "two read-write data spaces; mapsearch's einsums have one output")
            output = acc
        else:
            accesses.append(acc)
    if output is None:
        raise bad(source, "problem.shape.data_spaces", "one data space with read_write: true (the output)", None)
    if not all(ix.is_plain for ix in output.indices):
        raise untranslatable(source, "problem.shape.data_spaces", f"output {output.name} is indexed by sums; "
                             f"mapsearch's outputs are indexed by plain dimensions")
    einsum = Einsum(output, tuple(accesses))
    used = set(einsum.dims)
    unused = [d for d in dims if d not in used]
    if any(extents[d] > 1 for d in unused):
        raise untranslatable(source, "problem.shape.dimensions", f"{', '.join(unused)} index no data space")
    notes = _unknown_instance_keys(instance, dims, coef, source)
    return Workload(shape.get("name", name) or name, einsum, tuple((d, extents[d]) for d in einsum.dims)), {}, notes


def _unknown_instance_keys(instance: Mapping[str, Any], dims: list, coef: Mapping[str, Any],
                           source: str) -> tuple[str, ...]:
    """A note naming the instance keys Timeloop ignores (``ParseWorkloadInstance`` looks up each dimension and
    coefficient by its exact name and nothing else), with the coefficient a key differs from only in case."""
    known = set(dims) | set(coef) | {"densities", "commonDensity"}
    unknown = [k for k in instance if k not in known]
    if not unknown:
        return ()
    lower = {c.lower(): c for c in coef} | {d.lower(): d for d in dims}
    meant = {k: lower[str(k).lower()] for k in unknown if str(k).lower() in lower}
    what = ", ".join(f"{k} (not {meant[k]}, which stays {coef.get(meant[k], instance.get(meant[k]))})" if k in meant
                     else str(k) for k in unknown)
    return (f"{source}: problem.instance: {what}: neither a dimension nor a coefficient of the shape; Timeloop "
            f"ignores such keys: ignored",)


def _axis(raw: Any, coef: Mapping[str, Any], dims: list, source: str, field: str) -> AffineIndex:
    terms = []
    for k, term in enumerate(raw if isinstance(raw, list) else []):
        term = term if isinstance(term, list) else [term]
        if not term or term[0] not in dims:
            raise bad(source, f"{field}[{k}]", f"[DIMENSION] or [DIMENSION, COEFFICIENT] with a dimension of {dims}", term)
        c = term[1] if len(term) > 1 else 1
        c = coef.get(c, c) if isinstance(c, str) else c
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise bad(source, f"{field}[{k}]", "a coefficient that is an int >= 1", term)
        over_limit(source, f"{field}[{k}]", None if c <= limits.MAX_EXTENT else
                   f"expected a coefficient <= {limits.MAX_EXTENT:,} (a stride or dilation), got {limits.describe(c)}")
        terms.append((term[0], c))
    if not terms:
        raise bad(source, field, "a list of [DIMENSION] or [DIMENSION, COEFFICIENT] terms", raw)
    return AffineIndex(tuple(terms))


# --------------------------------------------------------------------------
# Architecture.
# --------------------------------------------------------------------------


def timeloop_arch(data: Mapping[str, Any], source: str, name: str, workload: Any,
                  more_constraints: Mapping[str, Any] | None = None, *, constraints_source: str | None = None,
                  variables: Mapping[str, Any] | None = None) -> tuple[Tree, Any, tuple[str, ...]]:
    """``(tree, Constraints or None, notes)``; ``workload`` is a Workload or a ForeignWorkload.

    ``more_constraints``: the document of a separate file (``constraints_source``): Timeloop constraints
    (``constraints:``, ``mapspace_constraints:``, ``architecture_constraints: {targets}``) and/or timeloopfe
    ``variables:``. ``variables``: ``--var`` values, which set timeloopfe variables of the same name too.
    """
    from mapsearch.spec.foreign.timeloop_constraints import apply_targets, node_targets

    w = getattr(workload, "workload", workload)
    if isinstance(w, WorkloadGraph):
        raise untranslatable(source, "architecture", "a Timeloop architecture runs one einsum at a time")
    arch = data.get("architecture")
    if not isinstance(arch, dict) or not isinstance(arch.get("nodes"), list):
        raise bad(source, "architecture", "a mapping with version: 0.4 and nodes", arch)
    if str(arch.get("version", "0.4")) != "0.4":
        raise bad(source, "architecture.version", "0.4", arch.get("version"))
    more = more_constraints or {}
    more_source = constraints_source or source
    for doc, src in ((data, source), (more, more_source)):
        if doc.get("sparse_optimizations"):
            raise untranslatable(src, "sparse_optimizations", _SPARSE)
    ev = _Evaluator([(data.get("variables"), source), (more.get("variables"), more_source)], variables or {},
                    getattr(workload, "instance", None))
    flat = _flatten(arch["nodes"], source, "architecture.nodes")
    nothing = [field for kind, _, field, _ in flat if kind == "Nothing"]
    flat = [n for n in flat if n[0] != "Nothing"]
    components = [n for n in flat if n[0] == "Component"]
    if len(components) < 2:
        raise bad(source, "architecture.nodes", "storage components and a compute component last", len(components))
    compute = components[-1]
    _check_names_and_classes(flat, compute, source)
    notes: list[str] = [f"{source}: {field}: a !Nothing node holds nothing (the data spaces it names pass through "
                        "to the next storage): left out" for field in nothing]
    scopes = _scopes(flat, ev, source, notes)
    targets = [(_evaluated_split(t, f, s, ev, scopes.get(f.split(".constraints.")[0])), f, s)
               for t, f, s in node_targets(flat, source)]
    for doc, src in ((data, source), (more, more_source)):
        targets += [(_evaluated_split(t, f, src, ev, None), f, src) for t, f in _constraint_targets(doc, src)]
    names = [n[1]["name"] for n in components[:-1]] + [f"{compute[1]['name']}_operands"]
    containers = {body["name"]: tuple(key for key, _ in _mesh(scopes[field], body["name"], Where(source, line, 1, field)))
                  for kind, body, field, line in flat if kind == "Container"}
    keep, extra, bounds = apply_targets(targets, names, w, notes, containers,
                                        frozenset(getattr(workload, "dimensions", ()) or ()) or None)
    nodes = []
    pending: list[SpatialAxis] = []
    parent: Port | None = None
    tensors = w.tensor_names
    for kind, body, field, line in flat:
        where = Where(source, line, 1, field)
        if kind == "Container":
            pending += [replace(a, split_bounds=tuple(bounds.get((body["name"], key), ())))
                        for key, a in _mesh(scopes[field], body["name"], where)]
            continue
        if (kind, body) == ("Component", compute[1]):
            break
        attrs = scopes[field]
        port = _port(attrs)
        capacity = _words(attrs, top=parent is None, total=sum(w.tensor_words(t) for t in tensors), notes=notes)
        link = None if parent is None else join_ports(parent, port)
        if parent is not None and (port.read or port.write):
            notes.append(f"{source}: {field} ({body['name']}): its bandwidth bounds the link above and the link below; "
                         f"mapsearch times each link on its own")
        kept, bypassed = keep.get(body["name"], (None, None))
        nodes.append(MemoryNode(body["name"], capacity, link, tuple(pending), _rule(kept, tensors, where),
                                None, _rule(bypassed, tensors, where), where))
        pending, parent = [], port
    where = Where(source, compute[3], 1, compute[2])
    cname = compute[1]["name"]
    from mapsearch.spec.foreign.operands import operand_words

    nodes.append(MemoryNode(f"{cname}_operands", operand_words(w.einsum, w.extent), join_ports(parent, FREE),
                            tuple(pending), None, None, None, where))
    nodes.append(ComputeNode(cname, (), 1, where))
    tree = Tree(name, HierarchicalNode(tuple(nodes), Where(source, 1, 1, "architecture")), False, source)
    return tree, extra, tuple(dict.fromkeys(notes))


# Timeloop's component classes (src/model/topology.cpp): a storage's class names one of these, a compute's one of
# those (a substring, as Timeloop matches them); Timeloop neglects a component of any other class.
_STORAGE_CLASSES = ("DRAM", "SRAM", "regfile", "smartbuffer", "storage")
_COMPUTE_CLASSES = ("mac", "compute")


def _check_names_and_classes(flat: list, compute: tuple, source: str) -> None:
    """One line for a node name given twice (constraints and containers are found by name) and for a component
    whose ``class`` Timeloop does not know as a storage (every component but the last) or a compute (the last):
    Timeloop would neglect it, and mapsearch would guess."""
    seen: dict[str, str] = {}
    for kind, body, field, _ in flat:
        name = body["name"]
        if name in seen:
            raise bad(source, f"{field}.name", f"a name no other node has ({seen[name]} is named {name!r} too)", name)
        seen[name] = field
        if kind != "Component" or "class" not in body:
            continue
        cls = body["class"]
        is_compute = body is compute[1]
        known = _COMPUTE_CLASSES if is_compute else _STORAGE_CLASSES
        if not isinstance(cls, str) or not any(k.lower() in cls.lower() for k in known):
            what = "compute" if is_compute else "storage"
            role = "the last component is the compute" if is_compute else "every component but the last is a storage"
            raise bad(source, f"{field}.class", f"a Timeloop {what} class (one naming {', '.join(known)}; {role})", cls)


def _flatten(items: list, source: str, field: str) -> list[tuple[str, dict, str, int]]:
    out = []
    for i, n in enumerate(items):
        f = f"{field}[{i}]"
        if not isinstance(n, Tagged) or not isinstance(n.value, dict):
            raise bad(source, f, "a tagged node (!Container, !Component, !Parallel, !Hierarchical)", n)
        if n.tag in ("Parallel", "Hierarchical", "Pipelined"):
            out += _flatten(n.value.get("nodes") or [], source, f"{f}.nodes")
        elif n.tag in ("Container", "Component"):
            if not isinstance(n.value.get("name"), str):
                raise bad(source, f"{f}.name", "a component name", n.value.get("name"))
            out.append((n.tag, n.value, f, n.line))
        elif n.tag == "Nothing":  # a placeholder branch of a !Parallel: no storage, the data spaces it names pass
            out.append((n.tag, n.value, f, n.line))
        else:
            raise bad(source, f, "!Container, !Component, !Parallel, !Hierarchical or !Nothing", "!" + n.tag)
    return out


def _constraint_targets(data: Mapping[str, Any], source: str):
    for key in ("constraints", "architecture_constraints", "mapspace_constraints"):
        block = data.get(key)
        if isinstance(block, dict):
            for i, t in enumerate(block.get("targets") or []):
                yield t, f"{key}.targets[{i}]"


def _rule(names: frozenset[str] | None, tensors: tuple[str, ...], where: Where) -> SetRule | None:
    if names is None:
        return None
    from mapsearch.spec.foreign.sets import as_set_text

    text = as_set_text(names, tensors)
    return SetRule(text, parse_set_expr(text), where)
