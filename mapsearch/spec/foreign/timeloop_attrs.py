"""timeloopfe's attribute values: the expressions of a Timeloop v0.4 file evaluated, and a node's sizes,
bandwidths and meshes read from them (for timeloop.py, which translates the architecture).

timeloopfe (Timeloop v4's front end) writes attribute values as Python expressions: a name of the top-level
``variables:`` (of the architecture's file, of a variables file given with ``-c``, or a ``--var``), the
component's other attributes and its containers' attributes, ``spec.problem.instance``. :class:`_Evaluator`
evaluates each value once with expr.py's whitelisted ``ast`` walk; :func:`_scopes` gives each node the names it
sees, as timeloopfe's symbol table does. :func:`_words`, :func:`_port` and :func:`_mesh` read a storage's words
(as Timeloop's buffer model counts them), its bandwidths and a container's mesh axes.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any, Iterator, Mapping

from mapsearch.spec.foreign.accelforge_parts import FREE, Port
from mapsearch.spec import limits
from mapsearch.spec.foreign.common import ForeignSpecError, bad, over_limit, untranslatable
from mapsearch.spec.foreign.expr import ExprError, evaluate_expr
from mapsearch.spec.set_expr import parse_set_expr
from mapsearch.spec.tree_nodes import SetRule, SpatialAxis
from mapsearch.spec.tree_yaml import Where

_SPARSE = ("Sparseloop's sparse optimizations (representation_format, action_optimization, compute_optimization) "
           "change the words moved and stored and the ops done; mapsearch reads a Timeloop architecture dense: "
           "remove them to solve the dense design, or use mapsearch's sparse solve (--density, --format T=FMT) with "
           "a mapsearch workload")
# Storage attributes that only a compressed representation format uses (Timeloop's buffer model: no format, no
# metadata): inert without sparse_optimizations.
_METADATA = ("compression_supported", "decompression_supported", "concordant_compressed_tile_traversal")


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
        over_limit(scope.field(key)[0], f, limits.instances_error(n))
        if n > 1:
            everything = SetRule("All", parse_set_expr("All"), where)
            axes.append((axis, SpatialAxis(f"{name}_{axis}", n, everything,
                                           SetRule("Nothing", parse_set_expr("Nothing"), where), where)))
    return axes


def _port(scope: _Scope) -> Port:
    costs = []
    for key in ("read_bandwidth", "write_bandwidth"):
        found = _number(scope, (key,), "words per cycle > 0", whole=False)
        if found is None or found[0] == math.inf:
            costs.append(Fraction(0))
            continue
        bw = found[0] if isinstance(found[0], (int, Fraction)) else Fraction(str(found[0]))
        over_limit(scope.field(key)[0], found[1], limits.exact_error(Fraction(bw)) and
                   f"expected words per cycle whose numerator and denominator are at most 2^62 (the solver's "
                   f"integers hold 1/{key} exactly), got {limits.describe(found[0])}")
        costs.append(1 / Fraction(bw))
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
    over_limit(scope.field(field.rsplit(".", 1)[1])[0], field, limits.capacity_error(size))
    return size
