"""Chain workloads (several einsums sharing tensors) from YAML; see docs/fusion.md.

Native format::

    name: mm3
    einsums:
      - "T[m,n] += A[m,k] * B[k,n]"
      - "Y[m,p] += T[m,n] * C[n,p]"
    extents: {m: 4, n: 2, k: 3, p: 2}
    homes: {A: DRAM}          # optional, tensor -> level name

The einsums are put in an order where every tensor is written before it is
read (a stable topological order: among einsums that may go next, the one
listed first); a cycle is rejected. A tensor has one number of axes and one
shape across the einsums that use it, and at most one einsum writes it. Every
error is one :class:`~mapsearch.errors.SpecError` line naming the file and
the field, e.g. ``mm3.yaml: einsums[1]: tensor T has 3 axes here but 2 in einsums[0]``.

:func:`mapsearch.spec.workload_files.load_workload_any` reads any workload
file: one einsum, a chain, or a TeAAL specification.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from mapsearch.spec import limits
from mapsearch.spec.einsum_text import EinsumSyntaxError, parse_einsum
from mapsearch.spec.reading import _error, _note, join_path, read_yaml
from mapsearch.spec.workload import Einsum, WorkloadGraph

__all__ = ["graph_from_dict", "graph_and_homes_from_dict", "graph_from_einsums", "load_graph", "load_graph_homes",
           "graph_to_dict"]

_KEYS = {"name", "description", "einsums", "extents", "homes"}


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def graph_from_einsums(name: str, einsums: Sequence[Einsum], extents: Mapping[str, int], source: str,
                       fields: Sequence[str] | None = None, extents_field: str = "extents") -> WorkloadGraph:
    """Check parsed einsums (ranks, shapes, writers, cycles, extents) and build the graph in dependency order.

    ``fields[i]`` names einsum ``i`` in errors (default ``einsums[i]``).
    """
    fields = list(fields) if fields is not None else [f"einsums[{i}]" for i in range(len(einsums))]
    if not einsums:
        raise _note(source, "einsums", "expected at least one einsum, got none")
    # Extents: every dimension has one, no unknown ones.
    used: dict[str, None] = {}
    for e in einsums:
        for d in e.dims:
            used.setdefault(d, None)
    for d, v in extents.items():
        if d not in used:
            raise _note(source, join_path([extents_field, d]), f"unknown dimension; the einsums use {', '.join(used)}")
        if not _is_int(v) or v < 1:
            raise _error(source, join_path([extents_field, d]), "int >= 1", v)
        too_big = limits.extent_error(v)
        if too_big is not None:
            raise _note(source, join_path([extents_field, d]), too_big)
    for i, e in enumerate(einsums):
        for d in e.dims:
            if d not in extents:
                raise _note(source, join_path([extents_field, d]), f"missing; {fields[i]} uses dimension {d!r} (expected int >= 1)")
    # One rank and one shape per tensor; one writer per tensor.
    first: dict[str, tuple[int, int, tuple[int, ...]]] = {}
    writer: dict[str, int] = {}
    for i, e in enumerate(einsums):
        for acc in e.tensors:
            shape = tuple(ix.span(extents) for ix in acc.indices)
            if acc.name in first:
                j, rank, other = first[acc.name]
                if rank != len(acc.indices):
                    raise _note(source, fields[i], f"tensor {acc.name} has {len(acc.indices)} axes here but {rank} in {fields[j]}")
                if other != shape:
                    raise _note(source, fields[i], f"tensor {acc.name} has shape {list(shape)} here but {list(other)} in {fields[j]}")
            else:
                first[acc.name] = (i, len(acc.indices), shape)
        out = e.output.name
        if out in writer:
            raise _note(source, fields[i], f"tensor {out} is written again; {fields[writer[out]]} already writes it")
        writer[out] = i
    # Dependency order: producer before consumer (stable), cycles rejected.
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(range(len(einsums)))
    for i, e in enumerate(einsums):
        for acc in e.inputs:
            j = writer.get(acc.name)
            if j is not None:
                if j == i:
                    raise _note(source, fields[i], f"einsum reads its own output {acc.name}")
                g.add_edge(j, i, tensor=acc.name)
    try:
        order = list(nx.lexicographical_topological_sort(g))
    except nx.NetworkXUnfeasible:
        cycle = nx.find_cycle(g)
        through = ", ".join(g.edges[a, b]["tensor"] for a, b in cycle)
        where = ", ".join(fields[a] for a, _ in cycle)
        raise _note(source, "einsums", f"the einsums form a cycle ({where}) through tensors {through}; a chain must be acyclic") from None
    ordered = tuple(einsums[i] for i in order)
    dims: dict[str, None] = {}
    for e in ordered:
        for d in e.dims:
            dims.setdefault(d, None)
    return WorkloadGraph(name, ordered, tuple((d, int(extents[d])) for d in dims))


def graph_and_homes_from_dict(data: object, source: str = "<workload>") -> tuple[WorkloadGraph, dict[str, str]]:
    """Validate a native chain document and build the graph and its homes (tensor -> level name)."""
    if not isinstance(data, Mapping):
        raise _error(source, "", "a mapping with name, einsums and extents", data)
    for key in data:
        if key not in _KEYS:
            raise _note(source, str(key), f"unknown field; expected one of {', '.join(sorted(_KEYS))}")
    for key in ("name", "einsums", "extents"):
        if key not in data:
            raise _note(source, key, "missing (a chain needs name, einsums and extents)")
    name = data["name"]
    if not isinstance(name, str) or not name:
        raise _error(source, "name", "a non-empty string", name)
    texts = data["einsums"]
    if not isinstance(texts, list) or not texts:
        raise _error(source, "einsums", "a non-empty list of einsum texts", texts)
    einsums = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise _error(source, f"einsums[{i}]", "einsum text such as 'T[m,n] += A[m,k] * B[k,n]'", text)
        try:
            einsums.append(parse_einsum(text))
        except EinsumSyntaxError as e:
            raise _note(source, f"einsums[{i}]", f"{e} (in {limits.describe(text, 80)})") from None
    extents = data["extents"]
    if not isinstance(extents, Mapping):
        raise _error(source, "extents", "a mapping dimension -> int >= 1", extents)
    graph = graph_from_einsums(name, einsums, dict(extents), source)
    homes = data.get("homes") or {}
    if not isinstance(homes, Mapping):
        raise _error(source, "homes", "a mapping tensor -> level name", homes)
    names = {t.name for e in graph.einsums for t in e.tensors}
    for t, level in homes.items():
        if t not in names:
            raise _note(source, join_path(["homes", t]), f"unknown tensor; expected one of {', '.join(sorted(names))}")
        if not isinstance(level, str):
            raise _error(source, join_path(["homes", t]), "a level name", level)
    return graph, {str(t): str(level) for t, level in homes.items()}


def graph_from_dict(data: object, source: str = "<workload>") -> WorkloadGraph:
    return graph_and_homes_from_dict(data, source)[0]


def load_graph(path: str | Path) -> WorkloadGraph:
    """Read a native chain YAML file (see ``examples/chains/triple-matmul.yaml``)."""
    return graph_from_dict(read_yaml(path), str(path))


def load_graph_homes(path: str | Path) -> dict[str, str]:
    return graph_and_homes_from_dict(read_yaml(path), str(path))[1]


def graph_to_dict(graph: WorkloadGraph, homes: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The graph in its native file format."""
    out: dict[str, Any] = {"name": graph.name, "einsums": [e.text() for e in graph.einsums], "extents": dict(graph.extents)}
    if homes:
        out["homes"] = dict(homes)
    return out
