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
(timeloopfe needs an attribute's names above it).

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

import math
import re
from dataclasses import replace
from fractions import Fraction
from typing import Any, Iterator, Mapping

from mapsearch.spec.foreign.accelforge_parts import FREE, Port, join_ports
from mapsearch.spec.foreign.common import ForeignSpecError, Tagged, bad, untranslatable
from mapsearch.spec.foreign.expr import ExprError, evaluate_expr
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
    keep, extra, bounds = apply_targets(targets, names, w, notes, containers)
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


_SPARSE = ("Sparseloop's sparse optimizations (representation_format, action_optimization, compute_optimization) "
           "change the words moved and stored and the ops done; mapsearch reads a Timeloop architecture dense: "
           "remove them to solve the dense design, or use mapsearch's sparse solve (--density, --format T=FMT) with "
           "a mapsearch workload")
# Storage attributes that only a compressed representation format uses (Timeloop's buffer model: no format, no
# metadata): inert without sparse_optimizations.
_METADATA = ("compression_supported", "decompression_supported", "concordant_compressed_tile_traversal")


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


# --------------------------------------------------------------------------
# timeloopfe's expressions.
# --------------------------------------------------------------------------


class _Spec:
    """``spec`` in a timeloopfe expression: only ``spec.problem.instance`` is available."""

    EXPR_ATTRIBUTES = ("problem",)

    def __init__(self, instance: Mapping[str, Any]):
        self.problem = _Problem(instance)


class _Problem:
    EXPR_ATTRIBUTES = ("instance",)

    def __init__(self, instance: Mapping[str, Any]):
        # timeloopfe's Instance node declares ``densities`` with the default {}: it is always there.
        self.instance = {**instance, **({} if "densities" in instance else {"densities": {}})}


class _Evaluator:
    """Evaluates the values of a timeloopfe file, each once; a name resolves in its scope (see :class:`_Scope`)."""

    def __init__(self, blocks: list[tuple[Any, str]], cli: Mapping[str, Any], instance: Mapping[str, Any] | None):
        self.spec = _Spec(instance) if isinstance(instance, Mapping) else None
        entries: dict[str, tuple[str, str, Any]] = {}
        for block, src in blocks:
            if block is None:
                continue
            if not isinstance(block, dict):
                raise bad(src, "variables", "a mapping from name to value", block)
            for k, v in block.items():
                if k == "version":
                    continue
                if k in entries and entries[k][2] != v and k not in cli:
                    raise bad(src, f"variables.{k}", f"the value {entries[k][0]} gives it ({entries[k][2]!r}), or "
                              f"one --var {k}=VALUE", v)
                entries[k] = (src, f"variables.{k}", v)
        for k, v in cli.items():
            entries[k] = ("--var", k, v)
        self.variables = _Scope(self, entries, None)
        self.done: dict[tuple[str, str], Any] = {}
        self.active: list[tuple[str, str]] = []

    def value(self, src: str, field: str, raw: Any, scope: _Scope) -> Any:
        """``raw`` as timeloopfe reads it: a string is a Python expression over ``scope``'s names."""
        if not isinstance(raw, str):
            return raw
        key = (src, field)
        if key in self.done:
            return self.done[key]
        if key in self.active:
            loop = " -> ".join(f for _, f in self.active[self.active.index(key):] + [key])
            raise _error(src, field, raw, f"it refers to itself ({loop})")
        self.active.append(key)
        try:
            v = evaluate_expr(raw, scope)
        except ExprError as e:
            hint = ""
            m = re.match(r"unknown name '(\w+)'", str(e))
            if m and m.group(1) == "spec":
                hint = " (spec.problem needs the workload to be a Timeloop problem file)"
            elif m and not m.group(1).startswith("_"):
                hint = (f" (define it in the file's variables:, in a variables file given with -c, or with "
                        f"--var {m.group(1)}=VALUE)")
            raise _error(src, field, raw, f"{e}{hint}") from None
        finally:
            self.active.pop()
        self.done[key] = v
        return v


def _error(src: str, field: str, raw: str, why: str) -> ForeignSpecError:
    return ForeignSpecError(src, field, "", None, detail=f"expected an expression timeloopfe evaluates (variables, "
                            f"attributes, arithmetic, len/min/max/int/ceil/floor/log2, spec.problem.instance), got "
                            f"{raw!r}: {why}")


class _Scope(Mapping):
    """The names an expression sees: ``own`` (``name -> (file, field, raw value)``) before ``parent``'s, then
    ``spec``. Values are evaluated when an expression uses them."""

    def __init__(self, ev: _Evaluator, own: Mapping[str, tuple[str, str, Any]], parent: _Scope | None):
        self.ev, self.own, self.parent = ev, own, parent

    def entry(self, name: str) -> tuple[tuple[str, str, Any], _Scope] | None:
        if name in self.own:
            return self.own[name], self
        return self.parent.entry(name) if self.parent is not None else None

    def get_value(self, key: str, default: Any = None) -> Any:
        """The evaluated value of this scope's own ``key`` (None: absent)."""
        if key not in self.own:
            return default
        src, field, raw = self.own[key]
        return self.ev.value(src, field, raw, self)

    def field(self, key: str) -> tuple[str, str, Any]:
        return self.own[key]

    def __contains__(self, name: object) -> bool:
        return (name == "spec" and self.ev.spec is not None) or (isinstance(name, str) and self.entry(name) is not None)

    def __getitem__(self, name: str) -> Any:
        found = self.entry(name)
        if found is None:
            if name == "spec" and self.ev.spec is not None:
                return self.ev.spec
            raise KeyError(name)
        (src, field, raw), scope = found
        return self.ev.value(src, field, raw, scope)

    def __iter__(self) -> Iterator[str]:
        seen = dict.fromkeys(self.own)
        if self.parent is not None:
            seen.update(dict.fromkeys(self.parent))
        return iter(seen)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _scopes(flat: list, ev: _Evaluator, source: str, notes: list[str]) -> dict[str, _Scope]:
    """Per node (by field): the scope of its attributes. A component's sees its own attributes, then those of
    the containers above it (the nearer first), then the variables, as timeloopfe's symbol table does."""
    out: dict[str, _Scope] = {}
    outer = ev.variables
    for kind, body, field, _ in flat:
        attrs = body.get("attributes") or {}
        if not isinstance(attrs, dict):
            raise bad(source, f"{field}.attributes", "a mapping of attributes", attrs)
        own = {k: (source, f"{field}.attributes.{k}", v) for k, v in attrs.items() if isinstance(k, str)}
        if kind == "Container":
            spatial = body.get("spatial") or {}
            if not isinstance(spatial, dict):
                raise bad(source, f"{field}.spatial", "a mapping with meshX, meshY", spatial)
            mesh = {k: (source, f"{field}.spatial.{k}", v) for k, v in spatial.items() if isinstance(k, str)}
            outer = _Scope(ev, own, outer)
            out[field] = _Scope(ev, mesh, outer)
            continue
        if body.get("sparse_optimizations"):
            raise untranslatable(source, f"{field}.sparse_optimizations", _SPARSE)
        metadata = [k for k in own if k.startswith("metadata_") or k in _METADATA]
        if metadata:
            notes.append(f"{source}: {field}.attributes: {', '.join(metadata)}: metadata storage for a compressed "
                         f"format; with no sparse_optimizations Timeloop stores no metadata: left out")
        out[field] = _Scope(ev, own, outer)
    return out


def _evaluated_split(t: Any, field: str, src: str, ev: _Evaluator, scope: _Scope | None) -> Any:
    """A spatial constraint's ``split`` given as an expression, evaluated (``len(spec.problem.instance)``)."""
    if not isinstance(t, dict) or not isinstance(t.get("split"), str):
        return t
    split = ev.value(src, f"{field}.split", t["split"], scope or ev.variables)
    return {**t, "split": _whole(split)}


def _whole(v: Any) -> Any:
    """An integral Fraction or float as an int; anything else unchanged."""
    if isinstance(v, bool):
        return v
    if isinstance(v, Fraction) and v.denominator == 1:
        return int(v)
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return v


def _number(scope: _Scope, keys: tuple[str, ...], what: str, whole: bool = True) -> tuple[Any, str] | None:
    """``(value, field)`` of the first of ``keys`` the node gives (Timeloop's aliases), checked ``> 0``; None when
    none is given. ``whole``: an int (or ``inf``)."""
    for key in keys:
        if key in scope.own:
            src, field, raw = scope.field(key)
            v = _whole(scope.get_value(key))
            if v == math.inf:
                return v, field
            ok = not isinstance(v, bool) and isinstance(v, (int, Fraction, float)) and v > 0
            if not ok or (whole and not isinstance(v, int)):
                raise bad(src, field, what, raw if isinstance(raw, str) and raw != v else v)
            return v, field
    return None


def _mesh(scope: _Scope, name: str, where: Where) -> list[tuple[str, SpatialAxis]]:
    """``(key, axis)`` per mesh axis of the ``!Container`` ``name`` with a fanout above 1: ``"X"`` for ``meshX``,
    ``"Y"`` for ``meshY`` (the names its spatial constraints' ``split`` assigns dimensions to)."""
    axes = []
    for key, axis in (("meshX", "X"), ("meshY", "Y")):
        found = _number(scope, (key,), "int >= 1")
        if found is None:
            continue
        n, f = found
        if n == math.inf:
            raise bad(scope.field(key)[0], f, "int >= 1", n)
        if n > 1:
            everything = SetRule("All", parse_set_expr("All"), where)
            axes.append((axis, SpatialAxis(f"{name}_{axis}", n, everything,
                                           SetRule("Nothing", parse_set_expr("Nothing"), where), where)))
    return axes


def _port(scope: _Scope) -> Port:
    costs = []
    for key in ("read_bandwidth", "write_bandwidth"):
        found = _number(scope, (key,), "words per cycle > 0", whole=False)
        costs.append(Fraction(0) if found is None or found[0] == math.inf else 1 / Fraction(str(found[0])))
    return Port(costs[0], costs[1], "separate") if any(costs) else FREE


def _words(scope: _Scope, top: bool, total: int, notes: list[str]) -> int | None:
    """Words of a storage, as Timeloop's buffer model (src/model/buffer.cpp) counts them: ``depth`` rows of
    ``block_size`` words; the block from ``width / datawidth`` (or ``width / cluster_size / datawidth``) unless
    given; ``entries`` words; ``sizeKB``. None: unbounded (the top); below the top, never binding."""
    if "size" in scope.own:  # mapsearch's own shorthand: words
        found = _number(scope, ("size",), "words: int >= 1")
        size, field = found if found else (math.inf, "")
    else:
        given = {k: _number(scope, keys, f"int > 0 ({k})" if k != "word_bits" else "bits: int > 0") for k, keys in (
            ("word_bits", ("word_bits", "word_width", "datawidth")), ("block", ("block_size", "n_words")),
            ("cluster", ("cluster_size",)), ("width", ("width", "memory_width", "data_storage_width")),
            ("entries", ("entries",)), ("depth", ("depth", "memory_depth", "data_storage_depth")),
            ("kb", ("sizeKB",)))}
        word_bits = given["word_bits"][0] if given["word_bits"] else 16  # Timeloop's kDefaultWordBits
        block = given["block"][0] if given["block"] else None
        if given["width"] is not None:
            width, field = given["width"]
            src = scope.field(field.rsplit(".", 1)[1])[0]
            if width == math.inf or width % (word_bits * (block or 1)):
                raise untranslatable(src, field, f"a width of {width} bits is not a whole number of "
                                     f"{word_bits}-bit words{f' x block_size {block}' if block else ''}; Timeloop "
                                     f"refuses it")
            cluster = given["cluster"][0] if given["cluster"] else None
            if block is not None and cluster is not None and block * word_bits * cluster != width:
                raise untranslatable(src, field, f"block_size x datawidth x cluster_size = "
                                     f"{block * word_bits * cluster} bits, not the width {width}; Timeloop refuses it")
            if block is None:
                block = width // (cluster or 1) // word_bits
        if not given["word_bits"] and ((given["width"] and given["depth"]) or given["kb"]) and not given["entries"]:
            src, key = scope.field((given["width"] or given["kb"])[1].rsplit(".", 1)[1])[:2]
            notes.append(f"{src}: {key.rsplit('.', 1)[0]}: no datawidth: Timeloop's default of 16 bits a word")
        block = block or 1
        size, field = math.inf, ""
        if given["entries"] is not None:
            size, field = given["entries"]
        elif given["depth"] is not None:
            size, field = given["depth"][0] * block, given["depth"][1]
        elif given["kb"] is not None:
            size, field = given["kb"][0] * 1024 * 8 // word_bits, given["kb"][1]
    if size == math.inf:
        return None if top else 2 * total
    if size < 1:
        raise bad(scope.field(field.rsplit(".", 1)[1])[0], field, "a storage of at least one word", size)
    return size


def _rule(names: frozenset[str] | None, tensors: tuple[str, ...], where: Where) -> SetRule | None:
    if names is None:
        return None
    from mapsearch.spec.foreign.sets import as_set_text

    text = as_set_text(names, tensors)
    return SetRule(text, parse_set_expr(text), where)
