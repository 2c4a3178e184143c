"""AccelForge workload YAML (1.0.x) -> a mapsearch :class:`Workload` or :class:`WorkloadGraph`.

Read as AccelForge reads it (``accelforge/frontend/workload.py``)::

    workload:
      rank_sizes: {M: 128, N0: 128}             # rank -> size; or per einsum
      iteration_space_shape: {m: 0 <= m < 128}  # rank variable -> ISL bound; or a list per einsum
      bits_per_value: {All: 8}                  # set expression -> bits
      persistent_tensors: weight - Intermediates
      einsums:
      - name: Matmul1
        tensor_accesses:
        - {name: T0, projection: [m, n0]}       # list: rank M indexed by m, N0 by n0
        - {name: TA0, projection: {P0: p1 + r0}}  # dict: rank -> affine expression
        - {name: T1, projection: [m, n1], output: True}
        renames: {input: T0}
      - "Z[m, n] = A[m, k] * B[k, n]"           # or the einsum string form (also {einsum: "..."})
    renames:                                     # optional: names the architecture may use
      einsums: [{name: default, tensor_accesses: [{name: input, source: Inputs & Intermediates}]}]

A rank variable's extent comes from its ``iteration_space_shape``
(``0 <= v < N``), else from the size of the rank it indexes directly. A
projection that reaches beyond its rank's size is padding in AccelForge
(out-of-range accesses are skipped): mapsearch has no padding, so that is
:class:`~mapsearch.spec.foreign.common.Untranslatable`, as is a copy
operation (``is_copy_operation``), which has no MACs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from mapsearch.spec import limits
from mapsearch.spec.foreign.common import bad, over_limit, untranslatable
from mapsearch.spec.foreign.expr import ExprError, evaluate_expr
from mapsearch.spec.foreign.sets import TensorSet
from mapsearch.spec.workload import AffineIndex, Einsum, TensorAccess, Workload, WorkloadGraph

__all__ = ["AccelForgeWorkload", "accelforge_workload", "is_accelforge_workload"]

_VAR = re.compile(r"^[a-z_][A-Za-z0-9_]*\Z")  # \Z: "$" also matches before a final newline
_RANK = re.compile(r"^[A-Z][A-Za-z0-9_]*\Z")
_BOUND = re.compile(r"^\s*0\s*<=\s*([A-Za-z_]\w*)\s*<\s*(\d+)\s*$")
_STRING = re.compile(r"^\s*([A-Za-z_]\w*)\s*\[([^\]]*)\]\s*=(.*)$")
_ACCESS = re.compile(r"([A-Za-z_]\w*)\s*\[([^\]]*)\]")


@dataclass(frozen=True)
class AccelForgeWorkload:
    """The translated workload and what the architecture's expressions need to know about it."""

    workload: Workload | WorkloadGraph
    bits_per_value: Mapping[str, int]  # tensor -> bits
    renames: Mapping[str, Mapping[str, frozenset[str]]]  # einsum name -> rename -> tensors
    einsum_names: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def outputs(self) -> frozenset[str]:
        if isinstance(self.workload, Workload):
            return frozenset({self.workload.einsum.output.name})
        return frozenset(e.output.name for e in self.workload.einsums)


def is_accelforge_workload(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("workload"), dict) and "einsums" in data["workload"]


def accelforge_workload(data: Mapping[str, Any], source: str, name: str) -> AccelForgeWorkload:
    """Translate the rendered document (a mapping with ``workload:``)."""
    known = {"workload", "renames", "variables"}
    for key in data:
        if key not in known:
            raise bad(source, str(key), f"one of {', '.join(sorted(known))} at the top of an AccelForge workload", key)
    w = data["workload"]
    if not isinstance(w, dict):
        raise bad(source, "workload", "a mapping with einsums", w)
    allowed = {"einsums", "rank_sizes", "iteration_space_shape", "bits_per_value", "persistent_tensors", "n_instances",
               "version", "shape"}
    if "shape" in w:  # the 0.5 format's name of iteration_space_shape
        if "iteration_space_shape" in w:
            raise bad(source, "workload.shape", "shape or iteration_space_shape, not both", "both")
        w = {**w, "iteration_space_shape": w["shape"]}
    for key in w:
        if key not in allowed:
            raise bad(source, f"workload.{key}", f"one of {', '.join(sorted(allowed))}", key)
    if w.get("n_instances", 1) != 1:
        raise untranslatable(source, "workload.n_instances", "mapsearch solves one instance of the workload")
    raw_einsums = w.get("einsums")
    if not isinstance(raw_einsums, list) or not raw_einsums:
        raise bad(source, "workload.einsums", "a non-empty list of einsums", raw_einsums)
    global_sizes = _sizes(w.get("rank_sizes") or {}, source, "workload.rank_sizes")
    global_bounds = _bounds_dict(w.get("iteration_space_shape") or {}, source, "workload.iteration_space_shape")
    parsed = [_einsum(e, source, f"workload.einsums[{i}]") for i, e in enumerate(raw_einsums)]
    extents: dict[str, int] = {}
    einsums: list[Einsum] = []
    for i, (ename, accesses, out_name, local_bounds, local_sizes, _) in enumerate(parsed):
        where = f"workload.einsums[{i}]"
        sizes = {**global_sizes, **local_sizes}
        bounds = {**global_bounds, **local_bounds}
        einsum = _to_einsum(accesses, out_name, source, where)
        for d in einsum.dims:
            extent = bounds.get(d) or _direct_size(d, accesses, sizes)
            if extent is None:
                raise bad(source, f"{where}.iteration_space_shape", f"a bound '0 <= {d} < N' or a rank size for {d}", None)
            at = (f"{where}.iteration_space_shape.{d}" if d in local_bounds else f"workload.iteration_space_shape.{d}"
                  if d in global_bounds else f"{where}.shape ({d})")
            over_limit(source, at, limits.extent_error(extent))
            if extents.setdefault(d, extent) != extent:
                raise untranslatable(source, where, f"rank variable {d} has extent {extent} here but {extents[d]} in "
                                     f"another einsum; mapsearch has one extent per dimension")
        _check_ranks(accesses, sizes, extents, source, where)
        einsums.append(einsum)
    names = tuple(p[0] for p in parsed)
    if len(einsums) == 1:
        workload: Workload | WorkloadGraph = Workload(name, einsums[0], tuple((d, extents[d]) for d in einsums[0].dims))
    else:
        from mapsearch.spec.graph_load import graph_from_einsums

        workload = graph_from_einsums(name, einsums, extents, source, [f"workload.einsums[{i}]" for i in range(len(einsums))],
                                      "workload.iteration_space_shape")
    tensors = {t.name: t.name == e.output.name for e in einsums for t in e.tensors}
    outputs = {e.output.name for e in einsums}
    inputs = {t.name for e in einsums for t in e.inputs}
    universe = frozenset(tensors)
    table = {"All": TensorSet(universe, universe), "Tensors": TensorSet(universe, universe),
             "Nothing": TensorSet(frozenset(), universe),
             "Intermediates": TensorSet(frozenset(outputs & inputs), universe),
             "Inputs": TensorSet(frozenset(inputs - outputs), universe),
             "Outputs": TensorSet(frozenset(outputs - inputs), universe),
             **{t: TensorSet(frozenset({t}), universe) for t in universe}}
    bits = _bits(w.get("bits_per_value") or {}, parsed, table, source)
    renames = _renames(data.get("renames"), parsed, einsums, universe, source)
    return AccelForgeWorkload(workload, bits, renames, names)


# --------------------------------------------------------------------------


def _sizes(raw: Any, source: str, where: str) -> dict[str, int]:
    if not isinstance(raw, dict):
        raise bad(source, where, "a mapping from rank name to size", raw)
    out = {}
    for rank, size in raw.items():
        if isinstance(size, str):  # sizes may be expressions ('96*128')
            try:
                size = evaluate_expr(size, {})
            except ExprError:
                pass
            size = int(size) if not isinstance(size, str) and size == int(size) else size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise bad(source, f"{where}.{rank}", "int >= 1 (or an expression of ints)", size)
        out[str(rank)] = size
    return out


def _bound(text: Any, source: str, where: str) -> tuple[str, int]:
    m = _BOUND.match(str(text))
    if m is None:
        raise untranslatable(source, where, f"{text!r}: mapsearch reads bounds of the form '0 <= v < N' only")
    if len(m.group(2).lstrip("0")) > 18:  # past any extent (and past what int() converts, at 4,300 digits)
        over_limit(source, where, f"expected an extent <= {limits.MAX_EXTENT:,} (the largest the "
                   f"tile enumeration supports), got a bound of {len(m.group(2).lstrip('0'))} digits")
    return m.group(1), int(m.group(2))


def _bounds_dict(raw: Any, source: str, where: str) -> dict[str, int]:
    if not isinstance(raw, dict):
        raise bad(source, where, "a mapping from rank variable to '0 <= v < N'", raw)
    out = {}
    for var, text in raw.items():
        v, n = _bound(text, source, f"{where}.{var}")
        if v != var:
            raise bad(source, f"{where}.{var}", f"a bound on {var}", text)
        out[v] = n
    return out


def _projection(raw: Any, source: str, where: str) -> list[tuple[str, str]]:
    """``[(rank, index expression), ...]`` from a list of rank variables or a rank -> expression mapping."""
    if isinstance(raw, list):
        out = []
        for i, v in enumerate(raw):
            if not isinstance(v, str) or not _VAR.match(v):
                raise bad(source, f"{where}[{i}]", "a lowercase rank variable", v)
            out.append((v.upper(), v))
        return out
    if isinstance(raw, dict):
        out = []
        for rank, expr in raw.items():
            if not isinstance(rank, str) or not _RANK.match(rank):
                raise bad(source, f"{where}.{rank}", "an uppercase rank name", rank)
            out.append((rank, str(expr)))
        return out
    raise bad(source, where, "a list of rank variables or a mapping from rank to expression", raw)


def _from_string(text: str, source: str, where: str) -> tuple[str, list[dict], str]:
    m = _STRING.match(text)
    if m is None:
        raise bad(source, where, "an einsum such as 'Z[m, n] = A[m, k] * B[k, n]'", text)
    out_name = m.group(1)
    operators = sorted(set(re.findall(r"[^\w\s*]", re.sub(r"\[[^\]]*\]", "", m.group(3)))))
    if operators:
        raise untranslatable(source, where, f"{text!r} is not a product of tensors (it has {' '.join(operators)}); "
                             f"mapsearch's einsums multiply and accumulate")
    accesses = []
    for acc in _ACCESS.finditer(m.group(3)):
        accesses.append({"name": acc.group(1), "projection": _string_projection(acc.group(2), source, where)})
    if not accesses:
        raise bad(source, where, "an einsum with at least one input", text)
    accesses.append({"name": out_name, "projection": _string_projection(m.group(2), source, where), "output": True})
    return out_name, accesses, out_name


def _string_projection(text: str, source: str, where: str) -> Any:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if all(":" not in p for p in parts):
        return parts
    out = {}
    for p in parts:
        rank, _, expr = p.partition(":") if ":" in p else (p.upper(), "", p)
        out[rank.strip()] = (expr or p).strip()
    return out


def _einsum(raw: Any, source: str, where: str) -> tuple:
    """``(name, [(tensor, [(rank, expr)], is_output)], output name, bounds, sizes, renames)``."""
    if isinstance(raw, str):
        raw = {"einsum": raw}
    if not isinstance(raw, dict):
        raise bad(source, where, "an einsum string or a mapping with name and tensor_accesses", raw)
    allowed = {"name", "einsum", "tensor_accesses", "iteration_space_shape", "rank_sizes", "renames",
               "is_copy_operation", "n_instances"}
    for key in raw:
        if key not in allowed:
            raise bad(source, f"{where}.{key}", f"one of {', '.join(sorted(allowed))}", key)
    if raw.get("is_copy_operation"):
        raise untranslatable(source, f"{where}.is_copy_operation", "a copy operation moves data without MACs; "
                             "mapsearch schedules einsums of multiply-accumulates")
    if raw.get("n_instances", 1) != 1:
        raise untranslatable(source, f"{where}.n_instances", "mapsearch solves one instance of each einsum")
    accesses_raw = list(raw.get("tensor_accesses") or [])
    name = raw.get("name")
    if "einsum" in raw:
        out_name, from_text, _ = _from_string(str(raw["einsum"]), source, f"{where}.einsum")
        name = name or out_name
        extra = {a.get("name"): a for a in accesses_raw if isinstance(a, dict)}
        accesses_raw = [{**a, **{k: v for k, v in extra.get(a["name"], {}).items() if k != "name"}} for a in from_text]
    if not isinstance(name, str):
        raise bad(source, f"{where}.name", "an einsum name", name)
    accesses = []
    for i, a in enumerate(accesses_raw):
        at = f"{where}.tensor_accesses[{i}]"
        if not isinstance(a, dict) or not isinstance(a.get("name"), str):
            raise bad(source, at, "a mapping with name and projection", a)
        extra = set(a) - {"name", "projection", "output", "persistent", "bits_per_value", "backing_storage_size_scale"}
        if extra:
            raise bad(source, f"{at}.{sorted(extra)[0]}", "one of name, projection, output, persistent, bits_per_value", sorted(extra)[0])
        accesses.append((a["name"], _projection(a.get("projection"), source, f"{at}.projection"), bool(a.get("output")),
                         a.get("bits_per_value")))
    outs = [a[0] for a in accesses if a[2]]
    if len(outs) != 1:
        raise untranslatable(source, f"{where}.tensor_accesses", f"{len(outs)} outputs; mapsearch's einsums have one")
    shape = raw.get("iteration_space_shape") or []
    if isinstance(shape, str):
        shape = [shape]
    if not isinstance(shape, list):
        raise bad(source, f"{where}.iteration_space_shape", "a list of bounds '0 <= v < N'", shape)
    bounds = dict(_bound(t, source, f"{where}.iteration_space_shape[{j}]") for j, t in enumerate(shape))
    sizes = _sizes(raw.get("rank_sizes") or {}, source, f"{where}.rank_sizes")
    return name, accesses, outs[0], bounds, sizes, raw.get("renames") or {}


def _affine(expr: str, source: str, where: str) -> AffineIndex:
    terms: dict[str, int] = {}
    for part in expr.replace(" ", "").split("+"):
        m = re.fullmatch(r"(?:(\d+)\*)?([a-z_]\w*)(?:\*(\d+))?", part)
        if m is None or (m.group(1) and m.group(3)):
            raise untranslatable(source, where, f"index {expr!r}: mapsearch reads sums of rank variables with "
                                 f"positive integer coefficients only")
        terms[m.group(2)] = terms.get(m.group(2), 0) + int(m.group(1) or m.group(3) or 1)
    return AffineIndex(tuple(terms.items()))


def _to_einsum(accesses: list, out_name: str, source: str, where: str) -> Einsum:
    built = {}
    for i, (tname, proj, _, _) in enumerate(accesses):
        built[tname] = TensorAccess(tname, tuple(_affine(e, source, f"{where}.tensor_accesses[{i}].projection.{r}")
                                                 for r, e in proj))
    out = built[out_name]
    if not all(ix.is_plain for ix in out.indices):
        raise untranslatable(source, where, f"output {out_name} is indexed by an expression; mapsearch's outputs "
                             f"are indexed by plain rank variables")
    return Einsum(out, tuple(built[a[0]] for a in accesses if a[0] != out_name))


def _direct_size(var: str, accesses: list, sizes: Mapping[str, int]) -> int | None:
    found = {sizes[r] for _, proj, _, _ in accesses for r, e in proj if e.strip() == var and r in sizes}
    return min(found) if len(found) == 1 else None if not found else -1


def _check_ranks(accesses: list, sizes: Mapping[str, int], extents: Mapping[str, int], source: str, where: str) -> None:
    for i, (tname, proj, _, _) in enumerate(accesses):
        for rank, expr in proj:
            if rank not in sizes:
                continue
            span = _affine(expr, source, where).span(extents)
            if span > sizes[rank]:
                raise untranslatable(source, f"{where}.tensor_accesses[{i}].projection.{rank}",
                                     f"{expr} reaches {span} values of rank {rank} of {tname}, which has "
                                     f"{sizes[rank]}; AccelForge skips the accesses beyond (padding), mapsearch "
                                     f"has no padding")
    for var, n in extents.items():
        if n < 0:
            raise untranslatable(source, where, f"rank variable {var} indexes ranks of different sizes")


def _eval_set(text: Any, table: Mapping[str, Any], source: str, where: str) -> frozenset[str]:
    try:
        value = evaluate_expr(str(text), table)
    except ExprError as e:
        raise bad(source, where, "a set expression over the workload's tensors", f"{text} ({e})") from None
    if not isinstance(value, TensorSet):
        raise bad(source, where, "a set expression over the workload's tensors", text)
    return value.names


def _bits(raw: Any, parsed: list, table: Mapping[str, Any], source: str) -> dict[str, int]:
    if not isinstance(raw, dict):
        raise bad(source, "workload.bits_per_value", "a mapping from set expression to bits", raw)
    bits: dict[str, int] = {}
    for key, value in raw.items():
        for t in _eval_set(key, table, source, f"workload.bits_per_value[{key!r}]"):
            bits[t] = _bits_value(value, source, f"workload.bits_per_value[{key!r}]")
    for i, (_, accesses, _, _, _, _) in enumerate(parsed):
        for tname, _, _, b in accesses:
            if b is not None:
                bits[tname] = _bits_value(b, source, f"workload.einsums[{i}].tensor_accesses.{tname}.bits_per_value")
    return bits


def _bits_value(value: Any, source: str, field: str) -> int:
    """Bits per value: a whole number >= 1 (a word of 0 bits holds nothing; mapsearch counts capacities in words)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise bad(source, field, "bits: int >= 1", value)
    return value


def _renames(raw: Any, parsed: list, einsums: list[Einsum], universe: frozenset[str], source: str) -> dict:
    """Per einsum: every rename the workload defines (default ones, then the einsum's own) -> its tensors."""
    default: dict[str, str] = {}
    per: dict[str, dict[str, str]] = {}
    for i, e in enumerate((raw or {}).get("einsums", []) if isinstance(raw, dict) else []):
        target = default if e.get("name") == "default" else per.setdefault(str(e.get("name")), {})
        items = e.get("tensor_accesses", [])
        items = [{"name": k, "source": v} for k, v in items.items()] if isinstance(items, dict) else items
        for r in items:
            target[str(r["name"])] = str(r["source"])
    out = {}
    for (name, _, _, _, _, own), einsum in zip(parsed, einsums):
        tensors = frozenset(t.name for t in einsum.tensors)
        inputs = frozenset(t.name for t in einsum.inputs)
        outputs = frozenset({einsum.output.name})
        other_outputs = {e.output.name for e in einsums}
        table: dict[str, Any] = {
            "All": TensorSet(tensors, tensors), "Tensors": TensorSet(tensors, tensors),
            "Nothing": TensorSet(frozenset(), tensors),
            "Inputs": TensorSet(inputs - other_outputs, tensors), "Outputs": TensorSet(outputs, tensors),
            "Intermediates": TensorSet(frozenset(t for t in tensors if t in other_outputs and any(
                t in {x.name for x in e2.inputs} for e2 in einsums)), tensors),
            **{t: TensorSet(frozenset({t}), tensors) for t in tensors},
            **{t: TensorSet(frozenset(), tensors) for t in universe - tensors},
        }
        own = own if isinstance(own, dict) else {r["name"]: r["source"] for r in own}
        resolved = {}
        for rname, text in {**default, **per.get(name, {}), **{str(k): str(v) for k, v in own.items()}}.items():
            names = _eval_set(text, table, source, f"renames[{rname}] of {name}")
            resolved[rname] = names
            table[rname] = TensorSet(names, tensors)
        out[name] = resolved
    return out
