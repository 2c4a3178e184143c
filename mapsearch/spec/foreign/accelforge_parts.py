"""AccelForge components -> mapsearch tree nodes: a memory's words, ports and energies; a compute's clock.

Units (``accelforge/frontend/arch/components.py``): ``size`` in bits; an
action's ``throughput`` in actions per second, each action moving
``bits_per_action`` bits (default 1: the throughputs are bits per second);
``energy`` per action; ``leak_power`` in watts per instance;
``total_latency`` (seconds) is an expression over ``actions`` with their
``n_calls``. Here one clock is one op of the reference compute
(:attr:`PortMixin.clock_hz`), a word is ``bits_per_value`` bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

from mapsearch.spec.architecture import SEPARATE, SHARED, Link
from mapsearch.spec import limits
from mapsearch.spec.foreign.common import ForeignSpecError, bad, over_limit, untranslatable

__all__ = ["Port", "PortMixin", "join_ports"]

_MEMORY_FIELDS = {"name", "size", "tensors", "actions", "spatial", "component_class", "component_model",
                  "component_modeling_log", "enabled", "area", "total_area", "area_scale", "leak_power",
                  "total_leak_power", "leak_power_scale", "energy_scale", "actions_scale", "total_latency",
                  "throughput_scale", "latency_scale", "n_parallel_instances", "extra_attributes_for_component_model",
                  "bits_per_value", "bits_per_action", "values_per_action", "skip_initial_output_write"}
_COMPUTE_FIELDS = _MEMORY_FIELDS - {"size", "tensors", "bits_per_value", "bits_per_action", "values_per_action"}
_TENSOR_FIELDS = {"keep", "may_keep", "back", "tile_shape", "no_refetch_from_above", "no_resend_to_below",
                  "tensor_order_options", "force_memory_hierarchy_order"}


class _Action:
    """An action as ``total_latency`` sees it (``a.n_calls / a.throughput``)."""

    EXPR_ATTRIBUTES = ("name", "n_calls", "throughput", "energy", "bits_per_action")

    def __init__(self, name: str, n_calls: int, throughput: Any, energy: Any, bits_per_action: Any):
        self.name, self.n_calls, self.throughput = name, n_calls, throughput
        self.energy, self.bits_per_action = energy, bits_per_action


@dataclass(frozen=True)
class Port:
    """A memory's cost per word in clocks: reading it, writing it, and whether both share one port."""

    read: Fraction
    write: Fraction
    lines: str  # shared: reads and writes add up; separate: they overlap


FREE = Port(Fraction(0), Fraction(0), SEPARATE)


def join_ports(parent: Port, child: Port) -> Link:
    """The link between two memories: a word going down is read above and written below; the slower binds.

    When either side's reads and writes share a port (their times add up), the
    link is shared at the slowest cost per word: exact for that side, and for
    the other side as long as its costs are not higher.
    """
    down = max(parent.read, child.write)
    up = max(parent.write, child.read)
    busy = [p for p in (parent, child) if p.read or p.write]
    if any(p.lines == SHARED for p in busy):
        return Link(max(down, up), max(down, up), SHARED)
    return Link(down, up, SEPARATE)


class PortMixin:
    """Needs ``value``, ``number``, ``tensor_set`` and ``view`` from the translator."""

    clock_hz: Any = None  # ops per second of the reference compute; None when unknown
    source: str
    notes: list

    def actions(self, body: Mapping[str, Any], field: str) -> dict[str, dict]:
        out = {}
        for j, a in enumerate(body.get("actions") or []):
            if not isinstance(a, dict) or "name" not in a:
                raise bad(self.source, f"{field}.actions[{j}]", "a mapping with name", a)
            out[str(a["name"])] = {**a, "_field": f"{field}.actions[{j}]"}
        return out

    def check_fields(self, body: Mapping[str, Any], known: set[str], field: str, what: str) -> None:
        for key in body:
            if key not in known:
                raise bad(self.source, f"{field}.{key}", f"a field of an AccelForge {what}", key)

    def seconds(self, body: Mapping[str, Any], field: str, names: tuple[str, ...]) -> tuple | None:
        """Seconds of one call of each action alone, then of one call of each together; None if unknown."""
        acts = self.actions(body, field)
        dummy = str(body.get("component_class", "")).lower() == "dummy"
        expr = body.get("total_latency", "sum(a.n_calls / a.throughput for a in actions)")
        scale = self.number(body.get("throughput_scale", 1), f"{field}.throughput_scale")
        attrs = {k: v for k, v in body.items() if isinstance(k, str) and k not in ("actions", "total_latency", "spatial")}

        def latency(calls: Mapping[str, int]) -> Any:
            views = []
            for n in names:
                a = acts.get(n, {"_field": f"{field}.actions"})
                thr = a.get("throughput")
                if thr is None:
                    thr = math.inf if dummy else None
                else:
                    thr = self.number(thr, f"{a['_field']}.throughput") * scale * self.number(
                        a.get("throughput_scale", 1), f"{a['_field']}.throughput_scale")
                views.append(_Action(n, calls.get(n, 0), thr, a.get("energy"), a.get("bits_per_action")))
            return self.value(expr, f"{field}.total_latency", {**attrs, "actions": views})

        unknown = any(acts.get(n, {}).get("throughput") is None for n in names) and not dummy
        try:
            alone = tuple(latency({n: 1}) for n in names)
            together = latency({n: 1 for n in names})
        except ForeignSpecError:
            if unknown:  # n_calls / None: a throughput only a hwcomponents model knows
                return None
            raise
        return alone + (together,)

    def compute_rate(self, body: Mapping[str, Any], field: str) -> Any:
        """Ops per second of a compute (inf when free); None when only a hwcomponents model knows."""
        s = self.seconds(body, field, ("compute",))
        if s is None:
            return None
        return math.inf if s[0] == 0 else 1 / Fraction(s[0])

    def bits_per_action(self, body: Mapping[str, Any], action: str, field: str) -> Any:
        a = self.actions(body, field).get(action, {})
        bpa = a.get("bits_per_action", body.get("bits_per_action"))
        if bpa is None:
            return 1
        where = f"{a['_field']}.bits_per_action" if "bits_per_action" in a and "_field" in a else f"{field}.bits_per_action"
        bits = self.number(bpa, where)
        if bits == 0 or bits == math.inf:
            raise bad(self.source, where, "bits per action > 0 (an action moves bits)", bpa)
        return bits

    def port(self, body: Mapping[str, Any], field: str, bpv: int, name: str) -> Port:
        s = self.seconds(body, field, ("read", "write"))
        if s is None and body.get("component_class") is None:
            raise bad(self.source, f"{field}.actions", f"a throughput for {name}'s read and write (AccelForge needs "
                      f"one, or a component_class whose hwcomponents model gives it)", None)
        if s is None:
            raise untranslatable(self.source, f"{field}.actions", f"{name}'s throughput comes from the hwcomponents "
                                 f"model {body.get('component_class')!r}, which mapsearch does not run; give "
                                 f"throughput (or total_latency) in the file")
        read, write, both = s
        if both == read + write:
            lines = SHARED
        elif both == max(read, write):
            lines = SEPARATE
        else:
            raise untranslatable(self.source, f"{field}.total_latency", f"{body.get('total_latency')!r} is neither "
                                 f"the sum nor the max of the reads' and writes' times")
        if read == 0 and write == 0:
            return FREE
        if self.clock_hz is None or self.clock_hz == math.inf:
            raise untranslatable(self.source, f"{field}.actions", f"{name} has a finite throughput but the compute's "
                                 f"op rate is unknown or infinite, so it has no time in clocks")
        per_word = [Fraction(t) * Fraction(bpv) / Fraction(self.bits_per_action(body, a, field)) * self.clock_hz
                    for t, a in ((read, "read"), (write, "write"))]
        if lines == SHARED and per_word[0] != per_word[1]:
            raise untranslatable(self.source, f"{field}.actions", f"{name}'s reads and writes share one port "
                                 f"(their times add up) at different costs per word ({per_word[0]}, {per_word[1]} "
                                 f"clocks); mapsearch's shared line has one cost")
        return Port(per_word[0], per_word[1], lines)

    def energy(self, body: Mapping[str, Any], field: str, name: str, bpv: int | None, kinds: tuple[str, ...]) -> tuple | None:
        """Energy per word (or per op) for each action kind, and leakage per clock; None when unknown."""
        acts = self.actions(body, field)
        dummy = str(body.get("component_class", "")).lower() == "dummy"
        scale = self.number(body.get("energy_scale", 1), f"{field}.energy_scale")
        out = []
        for kind in kinds:
            a = acts.get(kind)
            e = None if a is None else a.get("energy")
            if e is None:
                if not dummy:
                    self.notes.append(f"{self.source}: {field}: {name}'s {kind} energy comes from a hwcomponents "
                                      f"model; no energy model for paths through it")
                    return None
                e = 0
            e = Fraction(self.number(e, f"{a['_field']}.energy" if a else field)) * scale * Fraction(
                self.number((a or {}).get("energy_scale", 1), field))
            if bpv is not None:
                e = e * Fraction(bpv) / Fraction(self.bits_per_action(body, kind, field))
            out.append(e)
        leak = body.get("leak_power")
        if leak is None and not dummy:
            self.notes.append(f"{self.source}: {field}: {name}'s leak_power comes from a hwcomponents model; no "
                              f"energy model for paths through it")
            return None
        leak = Fraction(self.number(leak or 0, f"{field}.leak_power")) * Fraction(
            self.number(body.get("leak_power_scale", 1), f"{field}.leak_power_scale"))
        if leak and (self.clock_hz is None or self.clock_hz == math.inf):
            return None
        return (*out, leak / self.clock_hz if leak else Fraction(0))

    def bits_per_value(self, body: Mapping[str, Any], held: frozenset[str], field: str) -> int | None:
        own: dict[str, int] = {}
        for key, v in (body.get("bits_per_value") or {}).items():
            for t in self.tensor_set(key, f"{field}.bits_per_value"):
                own[t] = int(self.number(v, f"{field}.bits_per_value[{key!r}]"))
        widths = {own.get(t, self.view.bits.get(t)) for t in held}
        if None in widths:
            raise bad(self.source, f"{field}.bits_per_value", "bits per value for every tensor", sorted(held))
        if 0 in widths:
            zero = sorted(t for t in held if own.get(t, self.view.bits.get(t)) == 0)
            where = f"{field}.bits_per_value" if any(t in own for t in zero) else "workload bits_per_value"
            raise bad(self.source, where, f"bits per value >= 1 for {', '.join(zero)} (a word of 0 bits holds "
                      f"nothing)", 0)
        if len(widths) > 1:
            raise untranslatable(self.source, f"{field}.size", f"it may hold tensors of {sorted(widths)} bits; mapsearch "
                                 f"counts a capacity in words of one width")
        return widths.pop() if widths else None

    def residency(self, body: Mapping[str, Any], field: str) -> tuple[frozenset[str], frozenset[str]]:
        """``(keep, may hold)`` with AccelForge's defaults (``may_keep``: All when ``keep`` is not given)."""
        tensors = body.get("tensors") or {}
        if not isinstance(tensors, dict):
            raise bad(self.source, f"{field}.tensors", "a mapping with keep, may_keep", tensors)
        self.check_fields(tensors, _TENSOR_FIELDS, f"{field}.tensors", "memory's tensors")
        for key, default in (("no_refetch_from_above", "~All"), ("no_resend_to_below", "~All")):
            if key in tensors and self.tensor_set(tensors[key], f"{field}.tensors.{key}"):
                raise untranslatable(self.source, f"{field}.tensors.{key}", "a mapper restriction on refetches "
                                     "that mapsearch's constraints cannot say")
        for key in ("tile_shape", "tensor_order_options"):
            if tensors.get(key):
                raise untranslatable(self.source, f"{field}.tensors.{key}", "a mapper restriction that mapsearch's "
                                     "constraints cannot say")
        everything = frozenset(self.view.tensors)
        keep = self.tensor_set(tensors["keep"], f"{field}.tensors.keep") if "keep" in tensors else frozenset()
        back = self.tensor_set(tensors["back"], f"{field}.tensors.back") if "back" in tensors else frozenset()
        if "may_keep" in tensors:
            may = self.tensor_set(tensors["may_keep"], f"{field}.tensors.may_keep")
        else:
            may = everything if "keep" not in tensors else frozenset()
        return keep | back, (keep | back | may) & everything

    def capacity(self, body: Mapping[str, Any], field: str, name: str, bpv: int, top: bool) -> int | None:
        attrs = {k: v for k, v in body.items() if isinstance(k, str) and k != "size"}
        if "size" not in body:
            raise bad(self.source, f"{field}.size", "a size in bits", None)
        bits = self.number(body["size"], f"{field}.size", attrs)
        if bits == math.inf:
            if top:
                return None
            self.notes.append(f"{self.source}: {field}.size: {name} is unbounded; below the top mapsearch gives it "
                              f"{2 * self.view.total_words} words (every tensor twice: it never binds)")
            return 2 * self.view.total_words
        words = int(Fraction(bits) // bpv)
        if words < 1:
            raise untranslatable(self.source, f"{field}.size", f"{name} holds {bits} bits, less than one "
                                 f"{bpv}-bit word, but must keep a tensor")
        over_limit(self.source, f"{field}.size", limits.capacity_error(words) and
                   f"{limits.capacity_error(words)} ({bpv}-bit words)")
        return words
