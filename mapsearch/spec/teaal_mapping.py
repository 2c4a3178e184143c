"""The mapping section of a TeAAL specification, read for teaal.py: a rank's ``partitioning`` operators
(:class:`PartitionOp`: ``uniform_shape``, ``uniform_occupancy``, ``uniform_slice``; others noted and ignored) and
the loop names of ``loop-order`` and ``spacetime`` (``RANK`` or ``RANK<k>``), each checked against the einsum it
maps. How they map into mapsearch: teaal.py's docstring.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from mapsearch.spec.reading import _error, _note, join_path
from mapsearch.spec.workload import Einsum

_OP_CALL = re.compile(r"^\s*(?P<kind>[A-Za-z_]\w*)\s*\((?P<args>.*)\)\s*$")
_OP_ARGS = re.compile(r"^\s*(?:(?P<leader>[A-Za-z_]\w*)\s*\.\s*)?(?P<n>[+-]?\d+)\s*$")
_OP_KINDS = ("uniform_shape", "uniform_occupancy", "uniform_slice")
_OP_SYNTAX = "uniform_shape(N), uniform_occupancy(LEADER.N), uniform_slice(N) or uniform_slice(LEADER.N) with N >= 1"
_LOOP = re.compile(r"^([A-Z][A-Z_]*?)(\d*)\Z")


@dataclass(frozen=True)
class PartitionOp:
    """One operator of a rank's ``partitioning`` list, as written."""

    kind: str  # "uniform_shape", "uniform_occupancy" or "uniform_slice"
    n: int  # shape: coordinates per part; occupancy: fiber elements per part; slice: number of parts
    leader: str | None = None  # the tensor whose nonzeros decide the split (required for occupancy)

    @property
    def data_dependent(self) -> bool:
        """Whether the split depends on where the nonzeros are (so only the sparse replay can apply it)."""
        return self.kind != "uniform_shape"

    def text(self) -> str:
        return f"{self.kind}({self.leader + '.' if self.leader else ''}{self.n})"


def _partitioning(section: object, outputs: Mapping[str, Einsum], source: str,
                  notes: list[str]) -> dict[str, dict[str, tuple[PartitionOp, ...]]]:
    """``mapping.partitioning`` -> output -> dim -> operators (outer first), validated."""
    if not isinstance(section, Mapping):
        raise _error(source, "mapping.partitioning", "a mapping OUTPUT -> {RANK: [operators]}", section)
    out: dict[str, dict[str, tuple[PartitionOp, ...]]] = {}
    for o, per_rank in section.items():
        fld = f"mapping.partitioning.{o}"
        if o not in outputs:
            raise _note(source, fld, f"unknown einsum; expected an output of {', '.join(outputs)}")
        if not isinstance(per_rank, Mapping):
            raise _error(source, fld, "a mapping RANK -> [uniform_shape(N), ...]", per_rank)
        einsum = outputs[o]
        for r, ops in per_rank.items():
            rf = join_path([r], fld)
            d = str(r).lower()
            if d not in einsum.dims:
                notes.append(f"{rf}: {r} is not a rank of the einsum writing {o}; ignored")
                continue
            if not isinstance(ops, list):
                raise _error(source, rf, "a list of partitioning operators", ops)
            parsed: list[PartitionOp] = []
            for q, text in enumerate(ops):
                op = _operator(text, einsum, d, source, f"{rf}[{q}]", notes)
                if op is None:
                    continue
                if op.data_dependent and parsed:
                    raise _note(source, f"{rf}[{q}]", f"{op.text()} must be the first operator of rank {r} "
                                "(TeAAL splits a rank by its nonzeros before any other split)")
                shapes = [p.n for p in parsed if not p.data_dependent]
                if not op.data_dependent and shapes and op.n > shapes[-1]:
                    raise _note(source, f"{rf}[{q}]", f"uniform_shape({op.n}) must not exceed the outer shape {shapes[-1]}")
                if op.data_dependent:
                    notes.append(f"{rf}[{q}]: {op.text()} depends on the data: the dense solver leaves this level's "
                                 f"tile of {d} free; the sparse replay applies it (mapsearch.sparse.teaal_partition)")
                parsed.append(op)
            if parsed:
                out.setdefault(o, {})[d] = tuple(parsed)
    return out


def _operator(text: object, einsum: Einsum, d: str, source: str, fld: str, notes: list[str]) -> PartitionOp | None:
    """One operator; None (noted) for TeAAL operators mapsearch does not model (flatten, nway_shape)."""
    m = _OP_CALL.match(str(text)) if isinstance(text, str) else None
    if m is None or not m.group("kind").startswith("uniform_"):
        if m is None:
            raise _error(source, fld, _OP_SYNTAX, text)
        notes.append(f"{fld}: {text} is not one of {', '.join(_OP_KINDS)}; ignored")
        return None
    kind = m.group("kind")
    if kind not in _OP_KINDS:
        raise _note(source, fld, f"unknown operator {kind}; expected {_OP_SYNTAX}")
    a = _OP_ARGS.match(m.group("args"))
    if a is None or int(a.group("n")) < 1:
        raise _error(source, fld, _OP_SYNTAX, text)
    leader, n = a.group("leader"), int(a.group("n"))
    if kind == "uniform_shape" and leader:
        raise _note(source, fld, f"{text}: uniform_shape(N) takes no leader (it splits coordinates, not nonzeros)")
    if kind == "uniform_occupancy" and not leader:
        raise _note(source, fld, f"{text}: expected uniform_occupancy(LEADER.N), e.g. uniform_occupancy(A.{n}): "
                    "the leader's nonzeros are counted")
    if leader is not None:
        inputs = {t.name: t for t in einsum.inputs}
        if leader not in inputs:
            raise _note(source, fld, f"{text}: leader {leader} is not an input of {einsum.output.name}'s einsum; "
                        f"expected one of {', '.join(inputs)}")
        if d not in inputs[leader].dims_in_order():
            raise _note(source, fld, f"{text}: leader {leader} has no rank {d.upper()}")
    return PartitionOp(kind, n, leader)


def _loop(loop: str, dims, parts: Mapping[str, tuple[PartitionOp, ...]], source: str, fld: str) -> tuple[str, int | None]:
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
