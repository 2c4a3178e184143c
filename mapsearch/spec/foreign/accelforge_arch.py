"""AccelForge architecture YAML (1.0.x) -> a mapsearch tree architecture (:class:`~mapsearch.spec.tree.Tree`).

The translation is bound to a workload: AccelForge evaluates sizes, keep
rules and ``enabled`` per einsum (``size: weight.bits_per_value``,
``enabled: len(All) == 3``, ``keep: ~MainMemory``). Per node:

- ``!Memory`` -> a memory level. ``size`` is in bits: words = bits // the
  bits per value of the tensors it may hold (they must agree; a memory's own
  ``bits_per_value`` counts). ``inf`` below the top becomes a capacity that
  holds every tensor twice (equivalent for this workload). ``tensors``:
  ``keep`` (+ ``back``) forces a buffer, a tensor outside ``keep | may_keep``
  is bypassed (AccelForge's defaults: ``may_keep`` is ``All`` when ``keep`` is
  not given, else ``Nothing``). A component's name in an expression is the set
  it keeps (``~MainMemory``), as in AccelForge, when that set is fixed.
- ``!Compute`` -> a compute path. A compute in the middle of a chain is a
  side branch (AccelForge's flattening skips it for the other computes).
  Under each compute mapsearch adds a level ``<compute>_operands`` that holds
  one op call's operands, with free links: AccelForge lets every memory
  bypass a tensor, while mapsearch's innermost level holds every operand; the
  operand level makes each real memory's keep/bypass a real decision. A
  compute's (or a ``!Container``'s) ``spatial`` fanout goes on it.
- ``!Container`` -> its ``spatial`` fanout goes on the next memory below.
  ``!Fork`` -> a side branch. ``!Hierarchical`` -> a chain.
- ``spatial``: ``may_reuse`` and ``reuse`` (mapsearch's ``must_reuse``); ``loop_bounds`` (per rank variable
  or on the product, bound to the einsum's dimensions: ``MeshAxis.split_bounds``).
- Time: one clock is one op of the path's compute (its ``throughput`` or
  ``total_latency``). A memory's accesses cost ``bits_per_value /
  bits_per_action`` actions per word at its action throughputs (actions per
  second); its ``total_latency`` (default: the sum over actions; ``max`` for
  separate ports) gives shared or separate lines. A memory's port bounds the
  link above it and the link below it (per direction the slower side binds,
  as a ``!ProcessingStage``).
- Energy: action energies per word, ``leak_power`` per clock, the compute's
  energy per op: the path's energy model when every component on it has them.

Not expressible, one line each (:class:`Untranslatable`): ``!Toll``,
``!Network``, ``!Array``; a throughput or energy that only a hwcomponents
model computes when the time needs it; ``tile_shape``;
tensors of different widths in one memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

from mapsearch.spec.architecture import SPLIT_BOUND_OPERATORS, SplitBound
from mapsearch.spec.energy import LevelEnergy
from mapsearch.spec.foreign.accelforge_parts import _COMPUTE_FIELDS, _MEMORY_FIELDS, FREE, Port, PortMixin, join_ports
from mapsearch.spec import limits
from mapsearch.spec.foreign.common import Tagged, bad, exact, over_limit, untranslatable
from mapsearch.spec.foreign.expr import ExprError, evaluate_expr
from mapsearch.spec.foreign.sets import TensorSet, as_set_text
from mapsearch.spec.set_expr import parse_set_expr
from mapsearch.spec.tree_nodes import ComputeNode, HierarchicalNode, MemoryNode, ParallelNode, SetRule, SpatialAxis, Tree
from mapsearch.spec.tree_yaml import Where

__all__ = ["EinsumView", "accelforge_tree", "is_accelforge_arch"]

_TAGS = ("Memory", "Compute", "Container", "Hierarchical", "Fork", "Parallel", "Fanout", "Toll", "Network", "Array",
         "ProcessingStage")


@dataclass(frozen=True)
class EinsumView:
    """What an architecture's expressions see of one einsum: its tensors in order, the output, bits, renames."""

    tensors: tuple[str, ...]
    output: str
    bits: Mapping[str, int]
    renames: Mapping[str, frozenset[str]]
    intermediates: frozenset[str] = frozenset()
    block_words: int = 0  # words of one op call's operands (the operand level's capacity)
    total_words: int = 0  # words of every tensor (a capacity that never binds)
    rank_variables: tuple[str, ...] = ()  # the einsum's dimensions, which a fanout's loop_bounds name


def is_accelforge_arch(data: Any) -> bool:
    nodes = data.get("arch", {}).get("nodes") if isinstance(data, dict) and isinstance(data.get("arch"), dict) else None
    return isinstance(nodes, list) and any(isinstance(n, Tagged) and n.tag in _TAGS for n in nodes)


class _Choice:
    """A component whose kept tensors are a mapping choice: an expression that names it cannot be fixed."""

    def __init__(self, name: str):
        self.name = name

    def _fail(self, *_: Any) -> Any:
        raise ValueError(f"the tensors {self.name} keeps are a mapping choice (its may_keep is wider than its keep); "
                         f"mapsearch needs them fixed to translate this rule")

    __invert__ = __or__ = __ror__ = __and__ = __rand__ = __sub__ = __rsub__ = __bool__ = __len__ = _fail


class _Translator(PortMixin):
    def __init__(self, source: str, name: str, view: EinsumView, arch: Mapping[str, Any]):
        self.source, self.view, self.name = source, view, name
        universe = frozenset(view.tensors)
        self.sets: dict[str, Any] = {
            "All": TensorSet(universe, universe, view.bits), "Tensors": TensorSet(universe, universe, view.bits),
            "Nothing": TensorSet(frozenset(), universe, view.bits),
            "Inputs": TensorSet(universe - {view.output} - view.intermediates, universe, view.bits),
            "Outputs": TensorSet(frozenset({view.output}) - view.intermediates, universe, view.bits),
            "Intermediates": TensorSet(view.intermediates, universe, view.bits),
            **{t: TensorSet(frozenset({t}), universe, view.bits) for t in universe},
            **{r: TensorSet(n, universe, view.bits) for r, n in view.renames.items()},
        }
        self.sets.update({k: v for k, v in (arch.get("variables") or {}).items() if isinstance(k, str)})
        self.notes: list[str] = []
        self.computes: list[str] = []

    # -- values -------------------------------------------------------------

    def value(self, raw: Any, field: str, extra: Mapping[str, Any] | None = None) -> Any:
        if isinstance(raw, str):
            try:
                return evaluate_expr(raw, {**self.sets, **(extra or {})})
            except ExprError as e:
                raise bad(self.source, field, "an expression AccelForge can evaluate", f"{raw} ({e})") from None
        if isinstance(raw, float):
            return exact(raw)
        return raw

    def number(self, raw: Any, field: str, extra: Mapping[str, Any] | None = None) -> Any:
        v = self.value(raw, field, extra)
        if isinstance(v, bool) or not isinstance(v, (int, float, Fraction)) or v < 0:
            raise bad(self.source, field, "a number >= 0", raw)
        return exact(v) if not isinstance(v, float) else v

    def tensor_set(self, raw: Any, field: str) -> frozenset[str]:
        v = self.value(raw, field)
        if not isinstance(v, TensorSet):
            raise bad(self.source, field, "a set expression over the einsum's tensors", raw)
        return v.names

    def where(self, node: Tagged, field: str) -> Where:
        return Where(self.source, node.line, 1, field)

    # -- the chain ----------------------------------------------------------

    def chain(self, items: Any, field: str, parent: Port | None) -> list:
        """The tree nodes of a chain; ``parent`` is the port of the nearest memory above (None at the root)."""
        if not isinstance(items, list) or not items:
            raise bad(self.source, field, "a non-empty list of nodes", items)
        out: list = []
        pending: list[SpatialAxis] = []
        for i, node in enumerate(items):
            f = f"{field}[{i}]"
            if not isinstance(node, Tagged) or not isinstance(node.value, dict):
                raise bad(self.source, f, "a tagged node (!Memory, !Compute, !Container, ...)", node)
            tag, body = node.tag, node.value
            if tag not in _TAGS:
                raise bad(self.source, f, "one of " + ", ".join("!" + t for t in _TAGS), "!" + tag)
            if tag in ("Toll", "ProcessingStage", "Network", "Array"):
                raise untranslatable(self.source, f"{f} (!{tag} {body.get('name', '')})",
                                     f"!{tag} components have no counterpart in mapsearch's model")
            if tag == "Hierarchical":
                inner = self.chain(body.get("nodes"), f"{f}.nodes", parent)
                out.extend(inner)
                parent = self.last_port(inner, parent)
                continue
            if tag in ("Fork", "Parallel"):
                branch = HierarchicalNode(tuple(self.chain(body.get("nodes"), f"{f}.nodes", parent)), self.where(node, f))
                out.append(ParallelNode((branch,), self.where(node, f)))
                continue
            if not self.enabled(body, f):
                self.notes.append(f"{self.source}: {f} ({body.get('name')}): disabled for this einsum "
                                  f"(enabled: {body.get('enabled')}); left out")
                continue
            axes = self.spatial(body, f, node)
            if tag in ("Container", "Fanout"):
                pending.extend(axes)
                continue
            if tag == "Memory":
                memory = self.memory(body, f, node, pending + axes, parent)
                pending = []
                if memory is not None:
                    out.append(memory)
                    parent = self.ports[memory.name]
                continue
            nodes = self.compute(body, f, node, pending + axes, parent)
            if i == len(items) - 1:
                out.extend(nodes)
            else:  # a compute in the middle of a chain is a side branch (AccelForge's flattening skips it)
                out.append(ParallelNode((HierarchicalNode(nodes, nodes[0].where),), nodes[0].where))
        return out

    def last_port(self, nodes: list, parent: Port | None) -> Port | None:
        for n in reversed(nodes):
            if isinstance(n, MemoryNode) and n.name in self.ports:
                return self.ports[n.name]
        return parent

    def memory(self, body: Mapping[str, Any], field: str, node: Tagged, axes: list[SpatialAxis],
               parent: Port | None) -> MemoryNode | None:
        self.check_fields(body, _MEMORY_FIELDS, field, "!Memory")
        name = str(body.get("name"))
        keep, held = self.residency(body, field)
        if keep == held or (held - keep) <= self.view.intermediates:
            # Keeping an intermediate above is the chain's fuse-or-not choice, which mapsearch's chain solve
            # makes itself (docs/fusion.md): the rules see the component without it.
            self.sets[name] = TensorSet(keep, frozenset(self.view.tensors), self.view.bits)
        else:
            self.sets[name] = _Choice(name)
        if not held:
            self.notes.append(f"{self.source}: {field} ({name}): keeps no tensor of this einsum; left out")
            return None
        bpv = self.bits_per_value(body, held, field)
        top = parent is None
        capacity = self.capacity(body, field, name, bpv, top)
        port = self.port(body, field, bpv, name)
        self.ports[name] = port
        if not top and (port.read or port.write):
            self.notes.append(f"{self.source}: {field} ({name}): its port serves the link above and the link below "
                              f"(and words that bypass it); mapsearch times each link on its own, AccelForge adds "
                              f"{name}'s accesses up")
        link = None if top else join_ports(parent, port)
        energy = self.energy(body, field, name, bpv, ("read", "write"))
        where = self.where(node, field)
        everything = frozenset(self.view.tensors)
        return MemoryNode(name, capacity, link, tuple(axes), self.rule(keep, where), self.rule(held, where),
                          None if held == everything else self.rule(everything - held, where), where,
                          None if energy is None else LevelEnergy(name, *energy))

    def compute(self, body: Mapping[str, Any], field: str, node: Tagged, axes: list[SpatialAxis],
                parent: Port | None) -> tuple:
        """``(operand level, compute)``: the compute's op, under a level holding one call's operands."""
        self.check_fields(body, _COMPUTE_FIELDS, field, "!Compute")
        name = str(body.get("name"))
        if parent is None:
            raise bad(self.source, field, "a !Memory above the compute", f"!Compute {name} at the top")
        rate = self.rates.get(field)
        if rate == math.inf and self.clock_hz is not None:
            raise untranslatable(self.source, f"{field}.actions", f"{name} computes in no time (infinite throughput) "
                                 f"beside a compute that takes time")
        if rate == math.inf:  # every component is free: AccelForge's time is 0, mapsearch counts op calls
            self.notes.append(f"{self.source}: {field} ({name}): computes in no time in AccelForge (infinite "
                              f"throughput) and so does every memory; mapsearch gives an op call one clock")
        clocks = Fraction(1) if rate in (None, math.inf) or self.clock_hz is None else Fraction(self.clock_hz) / rate
        energy = self.energy(body, field, name, None, ("compute",))
        where = self.where(node, field)
        operands = MemoryNode(f"{name}_operands", self.view.block_words, join_ports(parent, FREE), tuple(axes),
                              None, None, None, where, LevelEnergy(f"{name}_operands"))
        return operands, ComputeNode(name, (), clocks, where, None if energy is None else (energy[0], energy[1]))


    def enabled(self, body: Mapping[str, Any], field: str) -> bool:
        if "enabled" not in body:
            return True
        return bool(self.value(body["enabled"], f"{field}.enabled"))

    def spatial(self, body: Mapping[str, Any], field: str, node: Tagged) -> list[SpatialAxis]:
        out = []
        for j, s in enumerate(body.get("spatial") or []):
            f = f"{field}.spatial[{j}]"
            if not isinstance(s, dict) or "name" not in s:
                raise bad(self.source, f, "a mapping with name and fanout", s)
            fanout = self.number(s.get("fanout"), f"{f}.fanout")
            if fanout == math.inf or fanout != int(fanout) or fanout < 1:
                raise bad(self.source, f"{f}.fanout", "int >= 1", s.get("fanout"))
            over_limit(self.source, f"{f}.fanout", limits.instances_error(int(fanout)))
            reuse = self.tensor_set(s["reuse"], f"{f}.reuse") if "reuse" in s else frozenset()
            may = self.tensor_set(s["may_reuse"], f"{f}.may_reuse") if "may_reuse" in s else (
                reuse if "reuse" in s else frozenset(self.view.tensors))
            if s.get("min_usage"):
                self.notes.append(f"{self.source}: {f}.min_usage: {s['min_usage']} is a mapper constraint; "
                                  f"mapsearch searches every usage of the fanout")
            where = self.where(node, f)
            axis = SpatialAxis(str(s["name"]), int(fanout), self.rule(may, where), self.rule(reuse, where), where,
                               self.loop_bounds(s.get("loop_bounds"), f"{f}.loop_bounds"))
            out.append(axis)
        return out

    def loop_bounds(self, raw: Any, field: str) -> tuple[SplitBound, ...]:
        """A fanout's ``loop_bounds`` (AccelForge ``Comparison`` objects) bound to the einsum's rank variables."""
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise bad(self.source, field, "a list of {expression, operator, value}", raw)
        ranks = frozenset(self.view.rank_variables)
        sets = {"All": TensorSet(ranks, ranks), "Nothing": TensorSet(frozenset(), ranks),
                **{r: TensorSet(frozenset({r}), ranks) for r in ranks}}
        out = []
        for k, item in enumerate(raw):
            f = f"{field}[{k}]"
            if not isinstance(item, dict) or set(item) - {"expression", "operator", "value"} or "expression" not in item:
                raise bad(self.source, f, "a mapping with expression, operator and value", item)
            text = item["expression"]
            try:
                dims = evaluate_expr(str(text), sets)
            except ExprError as e:
                raise bad(self.source, f"{f}.expression", "a set expression over the einsum's rank variables "
                          f"({', '.join(self.view.rank_variables)})", f"{text} ({e})") from None
            if not isinstance(dims, TensorSet):
                raise bad(self.source, f"{f}.expression", "a set of rank variables", text)
            operator = item.get("operator")
            if operator not in SPLIT_BOUND_OPERATORS:
                raise bad(self.source, f"{f}.operator", "one of " + ", ".join(SPLIT_BOUND_OPERATORS), operator)
            value = self.number(item.get("value"), f"{f}.value")
            if isinstance(value, float) and not math.isfinite(value) or value != int(value):
                raise bad(self.source, f"{f}.value", "an integer >= 0", item.get("value"))
            out.append(SplitBound(tuple(d for d in self.view.rank_variables if d in dims.names), operator, int(value)))
        return tuple(out)

    def rule(self, names: frozenset[str], where: Where) -> SetRule:
        text = as_set_text(names, self.view.tensors)
        return SetRule(text, parse_set_expr(text), where)


def accelforge_tree(data: Mapping[str, Any], source: str, name: str, view: EinsumView) -> tuple[Tree, tuple[str, ...], Any]:
    """``(tree, notes, clock in Hz or None)`` of an AccelForge architecture (``arch: {nodes: [...]}``) for one einsum."""
    arch = data.get("arch") if isinstance(data, dict) else None
    if not isinstance(arch, dict):
        raise bad(source, "arch", "a mapping with nodes", arch)
    for key in arch:
        if key not in ("nodes", "extra_attributes_for_all_component_models", "variables", "name"):
            raise bad(source, f"arch.{key}", "nodes, variables or extra_attributes_for_all_component_models", key)
    t = _Translator(source, name, view, arch)
    t.ports = {}
    t.rates = {}
    _collect_rates(t, arch.get("nodes"), "arch.nodes")
    known = [r for r in t.rates.values() if r is not None and r != math.inf]
    t.clock_hz = known[-1] if known else None  # one clock: an op of the last compute in the file
    nodes = t.chain(arch.get("nodes"), "arch.nodes", None)
    tree = Tree(name, HierarchicalNode(tuple(nodes), Where(source, 1, 1, "arch")), False, source, "", "J")
    from mapsearch.spec.tree_paths import flatten

    flatten(tree)  # structural problems (no compute, a chain ending without one) now, as for native trees
    return tree, tuple(dict.fromkeys(t.notes)), t.clock_hz


def _collect_rates(t: _Translator, items: Any, field: str) -> None:
    for i, node in enumerate(items if isinstance(items, list) else []):
        if not isinstance(node, Tagged) or not isinstance(node.value, dict):
            continue
        f = f"{field}[{i}]"
        if node.tag in ("Hierarchical", "Fork", "Parallel"):
            _collect_rates(t, node.value.get("nodes"), f"{f}.nodes")
        elif node.tag == "Compute" and t.enabled(node.value, f):
            t.rates[f] = t.compute_rate(node.value, f)
