"""TeAAL-style specifications (as in the Tensaurus notebook) as chains and mapping constraints.

Accepted YAML::

    einsum:
      declaration: {A: [I, J], B: [J, K], Y: [I, K]}      # ranks uppercase, per axis
      expressions: ["Y[i, k] = A[i, j] * B[j, k]"]        # indices lowercase
    mapping:                                               # optional
      rank-order: {A: [I, J], ...}                         # recorded (layouts are not modelled)
      partitioning: {Y: {I: [uniform_shape(8)], K: [uniform_shape(32), uniform_shape(4)]}}
      loop-order: {Y: [I1, I0, K2, J, K1, K0]}
      spacetime: {Y: {space: [I1, K1, K0], time: [I0, K2, J]}}
    shape: {I: 4, J: 4, K: 4}                              # optional (alias: rank); else pass extents

Expressions are parsed by a small grammar of this module (never ``eval``)::

    expr   := access '=' access ('*' access)*
    access := NAME '[' [index (',' index)*] ']'
    index  := lowercase NAME

Each expression's indices must be the lowercase names of the tensor's
declared ranks, axis by axis. Sums of tensors and other TeAAL operators are
rejected with one line. Extents are keyed by lowercase dimension names.

Mapping into mapsearch (decisions, see docs/fusion.md "Replay decisions"):

- ``partitioning`` of an einsum (keyed by its output) with ``uniform_shape``
  sizes ``N_1 > ... > N_n`` (outer first) for rank ``R`` names the loops
  ``R_n .. R_0``; the ``p``-th size limits dimension ``r``'s tile at level
  ``p`` below the top to exactly ``min(N_p, extent)``: a
  :class:`~mapsearch.solve.constraints.TileLimit` with ``lo == hi``. Other
  partitioning operators (``uniform_occupancy``, ``flatten``...) are recorded
  in ``notes`` and ignored (they depend on sparsity).
- ``loop-order`` gives each level a fixed order: loop ``R_k`` of a rank split
  ``n`` times runs at level ``n - k + 1`` for ``k >= 1``; ``R_0`` and ranks
  never split run at the innermost level. Each level's order lists its loops
  in the order they appear in ``loop-order`` (a TeAAL order that interleaves
  levels is projected per level, noted in ``notes``).
- ``spacetime``: the ``space`` loops are recorded as spatial hints (dimension
  and loop name) for the solver.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from mapsearch.errors import SpecError
from mapsearch.spec.load import _error, _note, join_path, read_yaml
from mapsearch.spec.workload import AffineIndex, Einsum, TensorAccess, WorkloadGraph

__all__ = ["TeaalSpec", "TeaalSyntaxError", "parse_expression", "teaal_from_dict", "load_teaal"]

_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<int>\d+)|(?P<op>[\[\],*=+()\-/]))")
_SHAPE = re.compile(r"^\s*uniform_shape\s*\(\s*(\d+)\s*\)\s*$")
_LOOP = re.compile(r"^([A-Z][A-Z_]*?)(\d*)$")


class TeaalSyntaxError(ValueError):
    """A TeAAL expression this grammar does not accept (message names the column)."""


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, pos, text = [], 0, text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise TeaalSyntaxError(f"unexpected character {text[pos:].strip()[:1]!r} at column {pos + 1}")
        out.append((m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup) + 1))
        pos = m.end()
    return out


def parse_expression(text: str) -> tuple[tuple[str, tuple[str, ...]], tuple[tuple[str, tuple[str, ...]], ...]]:
    """``"Z[m,n] = A[k,m] * B[k,n]"`` -> ``(("Z", ("m","n")), (("A", ("k","m")), ("B", ("k","n"))))``."""
    toks = _tokens(text)
    i = 0

    def peek():
        return toks[i] if i < len(toks) else None

    def take(kind: str, value: str | None = None) -> str:
        nonlocal i
        tok = peek()
        if tok is None or tok[0] != kind or (value is not None and tok[1] != value):
            got = "end of text" if tok is None else f"{tok[1]!r} at column {tok[2]}"
            raise TeaalSyntaxError(f"expected {value or kind!r}, got {got}")
        i += 1
        return tok[1]

    def access() -> tuple[str, tuple[str, ...]]:
        name = take("name")
        take("op", "[")
        idx: list[str] = []
        if not (peek() and peek()[1] == "]"):
            while True:
                tok = peek()
                d = take("name")
                if d != d.lower():
                    raise TeaalSyntaxError(f"index {d!r} at column {tok[2]} must be lowercase (ranks are uppercase only in declarations)")
                nxt = peek()
                if nxt is not None and nxt[1] in "+*-/(":
                    raise TeaalSyntaxError(f"index expressions are not supported ({nxt[1]!r} at column {nxt[2]}); use plain rank names")
                idx.append(d)
                if peek() and peek()[1] == ",":
                    take("op", ",")
                    continue
                break
        take("op", "]")
        return name, tuple(idx)

    out = access()
    take("op", "=")
    inputs = [access()]
    while peek() is not None:
        tok = peek()
        if tok[1] != "*":
            raise TeaalSyntaxError(f"only products of tensors are supported; got {tok[1]!r} at column {tok[2]}")
        take("op", "*")
        inputs.append(access())
    return out, tuple(inputs)


@dataclass(frozen=True)
class TeaalSpec:
    """A parsed TeAAL specification: the chain and what its mapping says."""

    graph: WorkloadGraph
    rank_order: dict[str, tuple[str, ...]] = field(default_factory=dict)  # tensor -> ranks (recorded)
    partitions: dict[str, dict[str, tuple[int, ...]]] = field(default_factory=dict)  # output -> dim -> sizes outer first
    loop_order: dict[str, tuple[tuple[str, int | None], ...]] = field(default_factory=dict)  # output -> (dim, k); None: unsplit
    space: dict[str, tuple[str, ...]] = field(default_factory=dict)  # output -> space loop names (spatial hints)
    time: dict[str, tuple[str, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def einsum_index(self, output: str) -> int:
        return [e.output.name for e in self.graph.einsums].index(output)

    def spatial_hints(self, output: str) -> tuple[str, ...]:
        """Dimensions of the einsum writing ``output`` that its ``spacetime`` maps to space."""
        dims: dict[str, None] = {}
        for loop in self.space.get(output, ()):
            m = _LOOP.match(loop)
            if m:
                dims.setdefault(m.group(1).lower(), None)
        return tuple(dims)

    def constraints(self, architecture) -> tuple:
        """One :class:`~mapsearch.solve.constraints.Constraints` per einsum (graph order), for ``architecture``."""
        from mapsearch.solve.constraints import Constraints, TileLimit

        depth = architecture.depth
        names = architecture.level_names
        ext = self.graph.extent
        out = []
        for e in self.graph.einsums:
            o = e.output.name
            parts = self.partitions.get(o, {})
            tiles = []
            for d, sizes in parts.items():
                if len(sizes) > depth - 1:
                    raise SpecError(architecture.name, f"partitioning.{o}.{d.upper()}",
                                    "", detail=f"{len(sizes)} partitions need {len(sizes) + 1} levels; {architecture.name} has {depth}")
                for p, n in enumerate(sizes, start=1):
                    v = min(n, ext[d])
                    tiles.append(TileLimit(names[p], d, v, v))
            orders: dict[int, list[str]] = {}
            for d, k in self.loop_order.get(o, ()):
                n = len(parts.get(d, ()))
                level = depth - 1 if (k is None or k == 0) else n - k + 1
                if d not in orders.setdefault(level, []):
                    orders[level].append(d)
            out.append(Constraints(f"teaal:{o}", tuple(tiles), tuple((names[lv], tuple(ds)) for lv, ds in sorted(orders.items()))))
        return tuple(out)


def _upper_list(value: object, source: str, fld: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(r, str) and r for r in value):
        raise _error(source, fld, "a list of rank names", value)
    return tuple(value)


def teaal_from_dict(data: object, source: str = "<teaal>", extents: Mapping[str, int] | None = None) -> TeaalSpec:
    """Validate a TeAAL document and build the chain, the mapping records and notes."""
    from mapsearch.spec.graph_load import graph_from_einsums

    if not isinstance(data, Mapping):
        raise _error(source, "", "a TeAAL specification (einsum, mapping)", data)
    for key in data:
        if key not in {"einsum", "mapping", "shape", "rank", "name", "format", "architecture", "bindings"}:
            raise _note(source, str(key), "unknown field; expected einsum, mapping, shape (or rank), name")
    ein = data.get("einsum")
    if not isinstance(ein, Mapping):
        raise _error(source, "einsum", "a mapping with declaration and expressions", ein)
    decl_raw = ein.get("declaration")
    if not isinstance(decl_raw, Mapping) or not decl_raw:
        raise _error(source, "einsum.declaration", "a mapping tensor -> [RANKS]", decl_raw)
    decl = {str(t): _upper_list(r, source, f"einsum.declaration.{t}") for t, r in decl_raw.items()}
    for t, ranks in decl.items():
        for r in ranks:
            if r != r.upper():
                raise _note(source, f"einsum.declaration.{t}", f"rank {r!r} must be uppercase")
    exprs = ein.get("expressions")
    if not isinstance(exprs, list) or not exprs:
        raise _error(source, "einsum.expressions", "a non-empty list of expressions", exprs)
    einsums = []
    for n, text in enumerate(exprs):
        fld = f"einsum.expressions[{n}]"
        if not isinstance(text, str):
            raise _error(source, fld, "an expression such as 'Z[m,n] = A[k,m] * B[k,n]'", text)
        try:
            (oname, oidx), ins = parse_expression(text)
        except TeaalSyntaxError as e:
            raise _note(source, fld, f"{e} (in {text!r})") from None
        accesses = []
        for name, idx in ((oname, oidx),) + ins:
            if name not in decl:
                raise _note(source, fld, f"tensor {name} is not declared in einsum.declaration")
            want = tuple(r.lower() for r in decl[name])
            if idx != want:
                raise _note(source, fld, f"{name}[{', '.join(idx)}] must index the declared ranks {list(decl[name])} "
                            f"as [{', '.join(want)}]")
            accesses.append(TensorAccess(name, tuple(AffineIndex(((d, 1),)) for d in idx)))
        names = [a.name for a in accesses]
        if len(set(names)) != len(names):
            raise _note(source, fld, "a tensor appears twice; each operand needs its own name")
        einsums.append(Einsum(accesses[0], tuple(accesses[1:])))
    # Extents: shape/rank section, then the argument (which wins).
    ext: dict[str, int] = {}
    for key in ("shape", "rank"):
        if key in data:
            sec = data[key]
            if not isinstance(sec, Mapping):
                raise _error(source, key, "a mapping RANK -> int >= 1", sec)
            for r, v in sec.items():
                ext[str(r).lower()] = v
            ext_field = key
            break
    else:
        ext_field = "extents"
    for r, v in (extents or {}).items():
        ext[str(r).lower()] = v
        ext_field = "extents"
    name = str(data.get("name") or Path(source).stem or "teaal")
    graph = graph_from_einsums(name, einsums, ext, source, [f"einsum.expressions[{n}]" for n in range(len(einsums))],
                               extents_field=ext_field)
    notes: list[str] = []
    mapping = data.get("mapping") or {}
    if not isinstance(mapping, Mapping):
        raise _error(source, "mapping", "a mapping (rank-order, partitioning, loop-order, spacetime)", mapping)
    known = {"rank-order", "partitioning", "loop-order", "spacetime", "bindings"}
    for key in mapping:
        if key not in known:
            raise _note(source, f"mapping.{key}", f"unknown field; expected one of {', '.join(sorted(known))}")
    outputs = {e.output.name: e for e in graph.einsums}
    rank_order = {}
    for t, ranks in (mapping.get("rank-order") or {}).items():
        fld = f"mapping.rank-order.{t}"
        if t not in decl:
            raise _note(source, fld, "unknown tensor; expected a declared tensor")
        ranks = _upper_list(ranks, source, fld)
        if sorted(ranks) != sorted(decl[t]):
            raise _note(source, fld, f"expected a permutation of {list(decl[t])}, got {list(ranks)}")
        rank_order[t] = ranks
    partitions: dict[str, dict[str, tuple[int, ...]]] = {}
    for o, per_rank in (mapping.get("partitioning") or {}).items():
        fld = f"mapping.partitioning.{o}"
        if o not in outputs:
            raise _note(source, fld, f"unknown einsum; expected an output of {', '.join(outputs)}")
        if not isinstance(per_rank, Mapping):
            raise _error(source, fld, "a mapping RANK -> [uniform_shape(N), ...]", per_rank)
        dims = outputs[o].dims
        for r, ops in per_rank.items():
            rf = join_path([r], fld)
            d = str(r).lower()
            if d not in dims:
                notes.append(f"{rf}: {r} is not a rank of the einsum writing {o}; ignored")
                continue
            if not isinstance(ops, list):
                raise _error(source, rf, "a list of partitioning operators", ops)
            sizes = []
            for q, op in enumerate(ops):
                m = _SHAPE.match(str(op))
                if not m:
                    notes.append(f"{rf}[{q}]: {op} is not uniform_shape(N); ignored (only dense tile shapes are modelled)")
                    continue
                n = int(m.group(1))
                if n < 1:
                    raise _error(source, f"{rf}[{q}]", "uniform_shape(N) with N >= 1", op)
                if sizes and n > sizes[-1]:
                    raise _note(source, f"{rf}[{q}]", f"uniform_shape({n}) must not exceed the outer shape {sizes[-1]}")
                sizes.append(n)
            if sizes:
                partitions.setdefault(o, {})[d] = tuple(sizes)
    loop_order: dict[str, tuple[tuple[str, int | None], ...]] = {}
    for o, loops in (mapping.get("loop-order") or {}).items():
        fld = f"mapping.loop-order.{o}"
        if o not in outputs:
            raise _note(source, fld, f"unknown einsum; expected an output of {', '.join(outputs)}")
        loops = _upper_list(loops, source, fld)
        parsed = []
        for loop in loops:
            d, k = _loop(loop, outputs[o].dims, partitions.get(o, {}), source, fld)
            parsed.append((d, k))
        levels = [_loop_level(d, k, partitions.get(o, {})) for d, k in parsed]
        if any(a > b for a, b in zip(levels, levels[1:])):
            notes.append(f"{fld}: the order interleaves levels; projected per level")
        loop_order[o] = tuple(parsed)
    space, time = {}, {}
    for o, st in (mapping.get("spacetime") or {}).items():
        fld = f"mapping.spacetime.{o}"
        if o not in outputs:
            raise _note(source, fld, f"unknown einsum; expected an output of {', '.join(outputs)}")
        if not isinstance(st, Mapping):
            raise _error(source, fld, "a mapping with space and time", st)
        for key, target in (("space", space), ("time", time)):
            loops = _upper_list(st.get(key, []) or [], source, f"{fld}.{key}") if st.get(key) else ()
            for loop in loops:
                _loop(loop, outputs[o].dims, partitions.get(o, {}), source, f"{fld}.{key}")
            target[o] = tuple(loops)
    return TeaalSpec(graph, rank_order, partitions, loop_order, space, time, tuple(notes))


def _loop(loop: str, dims, parts: Mapping[str, tuple[int, ...]], source: str, fld: str) -> tuple[str, int | None]:
    m = _LOOP.match(loop)
    if not m:
        raise _note(source, fld, f"loop {loop!r} is not RANK or RANK<k>")
    d = m.group(1).lower()
    if d not in dims:
        raise _note(source, fld, f"loop {loop}: {m.group(1)} is not a rank of this einsum")
    if not m.group(2):
        return d, None
    k = int(m.group(2))
    n = len(parts.get(d, ()))
    if k > n:
        raise _note(source, fld, f"loop {loop}: rank {m.group(1)} is partitioned {n} times, so its loops are "
                    f"{', '.join(f'{m.group(1)}{j}' for j in range(n, -1, -1)) or m.group(1)}")
    return d, k


def _loop_level(d: str, k: int | None, parts) -> int:
    n = len(parts.get(d, ()))
    return 10**6 if (k is None or k == 0) else n - k + 1


def load_teaal(path: str | Path, extents: Mapping[str, int] | None = None) -> TeaalSpec:
    """Read a TeAAL YAML file; ``extents`` (lowercase or uppercase rank -> int) fills or overrides ``shape``."""
    return teaal_from_dict(read_yaml(path), str(path), extents)
