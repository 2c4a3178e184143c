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

Mapping into mapsearch (decisions, see docs/fusion.md "Replay decisions"; the
operators and loop names are read in teaal_mapping.py):

- ``partitioning`` of an einsum (keyed by its output): per rank ``R`` a list
  of operators ``op_1 .. op_n`` (outer first) naming the loops ``R_n .. R_0``
  (``op_p`` makes loop ``R_{n-p+1}``), kept in ``partition_ops`` as
  :class:`PartitionOp`:

  - ``uniform_shape(N)``: parts of ``N`` coordinates. The ``p``-th operator
    limits dimension ``r``'s tile at level ``p`` below the top to exactly
    ``min(N, extent)``: a :class:`~mapsearch.spec.constraints.TileLimit` with
    ``lo == hi`` (its sizes are also in ``partitions``).
  - ``uniform_occupancy(L.N)`` (TeAAL): parts of ``N`` non-empty coordinates of
    ``R`` in each fiber of the leader ``L`` (an input of the einsum);
  - ``uniform_slice(N)`` or ``uniform_slice(L.N)`` (the Tensaurus notebook):
    ``N`` parts; whole slices of ``R`` to the least-loaded part (nonzeros).

  The last two depend on the data: only as a rank's first operator (TeAAL
  splits by occupancy before any other split); the dense solver leaves that
  level's tile free (noted in ``notes``) and the sparse replay uses them
  (:func:`mapsearch.sparse.teaal_partition.teaal_partition`). Other operators
  (``flatten``, ``nway_shape``) are noted and ignored; a malformed
  ``uniform_*`` operator is an error naming its field.
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
from mapsearch.spec import limits
from mapsearch.spec.constraints import Constraints, TileLimit
from mapsearch.spec.graph_load import graph_from_einsums
from mapsearch.spec.reading import _error, _note, read_yaml
from mapsearch.spec.teaal_mapping import _LOOP, PartitionOp, _loop, _loop_level, _partitioning
from mapsearch.spec.workload import AffineIndex, Einsum, TensorAccess, WorkloadGraph

__all__ = ["PartitionOp", "TeaalSpec", "TeaalSyntaxError", "parse_expression", "teaal_from_dict", "load_teaal"]

_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<int>\d+)|(?P<op>[\[\],*=+()\-/]))")


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
    # output -> dim -> every operator, outer first (``partitions`` keeps only the uniform_shape sizes)
    partition_ops: dict[str, dict[str, tuple[PartitionOp, ...]]] = field(default_factory=dict)

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

    def space_loops(self, output: str) -> tuple[tuple[str, int | None], ...]:
        """The ``space`` loops of the einsum writing ``output`` as ``(dim, k)`` (``k`` None: unsplit loop name)."""
        out = []
        for loop in self.space.get(output, ()):
            m = _LOOP.match(loop)
            out.append((m.group(1).lower(), int(m.group(2)) if m.group(2) else None))
        return tuple(out)

    def constraints(self, architecture) -> tuple:
        """One :class:`~mapsearch.spec.constraints.Constraints` per einsum (graph order), for ``architecture``."""
        depth = architecture.depth
        names = architecture.level_names
        ext = self.graph.extent
        out = []
        for e in self.graph.einsums:
            o = e.output.name
            parts = self.partition_ops.get(o, {})
            tiles = []
            for d, ops in parts.items():
                if len(ops) > depth - 1:
                    raise SpecError(architecture.name, f"partitioning.{o}.{d.upper()}",
                                    "", detail=f"{len(ops)} partitions need {len(ops) + 1} levels; {architecture.name} has {depth}")
                for p, op in enumerate(ops, start=1):
                    if op.data_dependent:  # its tile follows the data: left to the solver, applied by the sparse replay
                        continue
                    v = min(op.n, ext[d])
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
            raise _note(source, fld, f"{e} (in {limits.describe(text, 80)})") from None
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
    _check_every_rank_has_an_extent(decl, einsums, ext, source)
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
    partition_ops = _partitioning(mapping.get("partitioning") or {}, outputs, source, notes)
    partitions = {o: {d: tuple(op.n for op in ops if not op.data_dependent) for d, ops in per.items()
                      if any(not op.data_dependent for op in ops)} for o, per in partition_ops.items()}
    partitions = {o: per for o, per in partitions.items() if per}
    loop_order: dict[str, tuple[tuple[str, int | None], ...]] = {}
    for o, loops in (mapping.get("loop-order") or {}).items():
        fld = f"mapping.loop-order.{o}"
        if o not in outputs:
            raise _note(source, fld, f"unknown einsum; expected an output of {', '.join(outputs)}")
        loops = _upper_list(loops, source, fld)
        parsed = []
        for loop in loops:
            d, k = _loop(loop, outputs[o].dims, partition_ops.get(o, {}), source, fld)
            parsed.append((d, k))
        _check_every_loop_once(parsed, outputs[o].dims, partition_ops.get(o, {}), loops, source, fld)
        levels = [_loop_level(d, k, partition_ops.get(o, {})) for d, k in parsed]
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
        both, named = [], []
        for key, target in (("space", space), ("time", time)):
            loops = _upper_list(st.get(key, []) or [], source, f"{fld}.{key}") if st.get(key) else ()
            for loop in loops:
                both.append(_loop(loop, outputs[o].dims, partition_ops.get(o, {}), source, f"{fld}.{key}"))
                named.append(loop)
            target[o] = tuple(loops)
        # Space alone (the time loops left to the solver) may name fewer; both together name every loop once.
        _check_every_loop_once(both, outputs[o].dims, partition_ops.get(o, {}), named, source, f"{fld} (space and time)",
                               complete=bool(st.get("space")) and bool(st.get("time")))
    return TeaalSpec(graph, rank_order, partitions, loop_order, space, time, tuple(notes), partition_ops)


def _check_every_loop_once(parsed: list[tuple[str, int | None]], dims, parts: Mapping, written: list[str], source: str,
                           fld: str, complete: bool = True) -> None:
    """A loop order (or space and time together) names every loop of the einsum once: each rank's ``R_n .. R_0``
    where it is partitioned ``n`` times, else ``R`` (``R0`` is the same loop). A repeated or missing loop
    would silently drop a dimension from a level's order. ``complete=False``: only repeats are refused."""
    def key(d: str, k: int | None) -> tuple[str, int]:
        return d, 0 if k is None else k

    expected = [(d, k) for d in dims for k in range(len(parts.get(d, ())), -1, -1)]
    seen = [key(d, k) for d, k in parsed]

    def name(d: str, k: int) -> str:
        return d.upper() if not parts.get(d) else f"{d.upper()}{k}"
    repeated = [name(*x) for n, x in enumerate(seen) if x in seen[:n]]
    missing = [name(*x) for x in expected if x not in seen] if complete else []
    if repeated or missing:
        what = "; ".join(part for part in (f"{', '.join(repeated)} repeated" if repeated else "",
                                           f"{', '.join(missing)} missing" if missing else "") if part)
        raise _note(source, fld, f"expected every loop of the einsum once ({', '.join(name(*x) for x in expected)}), "
                    f"got {list(written)}: {what}")


def _check_every_rank_has_an_extent(decl: Mapping[str, list[str]], einsums: list[Einsum], ext: Mapping[str, object],
                                    source: str) -> None:
    """TeAAL itself takes rank extents from the tensors' data, so a file may have none: name what is missing, and how to give it."""
    used = {d for e in einsums for a in (e.output, *e.inputs) for d in a.dims}
    ranks = [r for t in decl for r in decl[t] if r.lower() in used]
    missing = list(dict.fromkeys(r for r in ranks if r.lower() not in ext))
    if missing:
        example = " ".join(f"--extent {r}=N" for r in missing)
        raise _note(source, "shape", f"expected an extent for every rank (TeAAL takes them from the data; add "
                    f"'shape: {{{', '.join(f'{r}: N' for r in missing)}}}' or pass {example}), "
                    f"got none for {', '.join(missing)}")


def load_teaal(path: str | Path, extents: Mapping[str, int] | None = None) -> TeaalSpec:
    """Read a TeAAL YAML file; ``extents`` (lowercase or uppercase rank -> int) fills or overrides ``shape``."""
    return teaal_from_dict(read_yaml(path), str(path), extents)
