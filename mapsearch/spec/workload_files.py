"""Any workload file: one einsum, a chain of einsums, or a TeAAL specification.

- ``einsum: "Z[m,n] += ..."``: one einsum (:func:`mapsearch.spec.load.load_workload`);
- ``einsums: [...]``: a chain (:mod:`mapsearch.spec.graph_load`);
- ``einsum: {declaration, expressions}``: a TeAAL specification (:mod:`mapsearch.spec.teaal`),
  whose ``mapping:`` becomes per-einsum constraints.

This module sits above the three readers and picks one by the file's keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from mapsearch.errors import MapsearchError
from mapsearch.spec.graph_load import graph_and_homes_from_dict, graph_from_dict
from mapsearch.spec.load import workload_from_dict
from mapsearch.spec.reading import _note, read_yaml
from mapsearch.spec.teaal import TeaalSpec, teaal_from_dict
from mapsearch.spec.workload import Workload, WorkloadGraph

__all__ = ["load_workload_any", "is_chain_file", "load_chain"]


def load_workload_any(path: str | Path, extents: Mapping[str, int] | None = None) -> Workload | WorkloadGraph:
    """A single einsum (``einsum: "text"``) as a :class:`Workload`; a chain (``einsums:``) or a
    TeAAL specification (``einsum: {declaration, expressions}``) as a :class:`WorkloadGraph`.

    ``extents`` is only used by TeAAL files without a ``shape`` section.
    """
    source = str(path)
    data = read_yaml(path)
    if isinstance(data, Mapping) and "einsums" in data:
        return graph_from_dict(data, source)
    if isinstance(data, Mapping) and isinstance(data.get("einsum"), Mapping):
        return teaal_from_dict(data, source, extents).graph
    if isinstance(data, Mapping) and "einsum" in data:
        return workload_from_dict(data, source)
    raise _note(source, "", "expected a workload: 'einsum: <text>' (one einsum), 'einsums: [...]' (a chain) "
                "or a TeAAL specification ('einsum: {declaration, expressions}')")


def is_chain_file(path: str | Path) -> bool:
    """True when ``path`` reads as a chain or a TeAAL file (what :func:`load_workload_any` makes a graph of)."""
    p = Path(path)
    if not p.is_file():
        return False
    try:
        data = read_yaml(p)
    except MapsearchError:
        return False
    return isinstance(data, Mapping) and ("einsums" in data or isinstance(data.get("einsum"), Mapping))


def load_chain(path: str | Path, extents: Mapping[str, int] | None = None
               ) -> tuple[WorkloadGraph, dict[str, str], TeaalSpec | None]:
    """``(graph, homes, teaal_spec or None)`` of a chain or TeAAL file (``extents``: a TeAAL file's ranks)."""
    data = read_yaml(path)
    if isinstance(data, Mapping) and isinstance(data.get("einsum"), Mapping):
        spec = teaal_from_dict(data, str(path), extents)
        return spec.graph, {}, spec
    graph, homes = graph_and_homes_from_dict(data, str(path))
    return graph, homes, None
