"""What a script may pass where mapsearch wants a workload, an architecture or constraints.

Each ``*_of`` function takes any of:

- the spec object itself (returned as it is);
- a ``dict`` in the file format (``docs/`` and ``examples/``), checked like a file;
- a path to a file: a workload (one einsum, a chain, a TeAAL specification),
  an architecture (flat, or a tree with one or several computes), constraints;
- for an architecture, also a preset name (``edge-3level``; a file of that name wins).

Bad input is one :class:`~mapsearch.errors.SpecError` line naming the file
(or ``<dict>``) and the field, as for the command line.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Union

from mapsearch.errors import SpecError, UsageError
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.constraints import Constraints, constraints_from_dict, load_constraints
from mapsearch.spec.graph_load import graph_and_homes_from_dict
from mapsearch.spec.load import architecture_from_dict, homes_from_dict, resolve_architecture, workload_from_dict
from mapsearch.spec.teaal import TeaalSpec, teaal_from_dict
from mapsearch.spec.tree import is_tree_file, load_tree
from mapsearch.spec.tree_nodes import Tree
from mapsearch.spec.tree_paths import flatten, single_architecture
from mapsearch.spec.workload import Workload, WorkloadGraph
from mapsearch.spec.reading import read_yaml
from mapsearch.spec.workload_files import load_workload_any

__all__ = ["WorkloadSource", "ArchitectureSource", "ConstraintsSource", "LoadedWorkload", "workload_of",
           "architecture_of", "constraints_of"]

PathLike = Union[str, Path]
WorkloadSource = Union[Workload, WorkloadGraph, Mapping[str, Any], PathLike, "LoadedWorkload"]
ArchitectureSource = Union[Architecture, Tree, Mapping[str, Any], PathLike]
ConstraintsSource = Union[Constraints, Mapping[str, Any], PathLike, None]


@dataclass(frozen=True)
class LoadedWorkload:
    """A workload with what its file said besides the einsums: the homes, and a TeAAL file's mapping."""

    workload: Workload | WorkloadGraph
    homes: Mapping[str, str] = field(default_factory=dict)
    teaal: TeaalSpec | None = None
    source: str = "workload"  # the file (or <dict>) it came from, for error messages

    @property
    def is_chain(self) -> bool:
        return isinstance(self.workload, WorkloadGraph)


def _is_teaal_file(path: str | Path) -> bool:
    data = read_yaml(path)
    return isinstance(data, Mapping) and isinstance(data.get("einsum"), Mapping)


def _is_chain_dict(data: Mapping[str, Any]) -> bool:
    return "einsums" in data or isinstance(data.get("einsum"), Mapping)


def workload_of(source: WorkloadSource, *, source_name: str | None = None,
                extents: Mapping[str, int] | None = None) -> LoadedWorkload:
    """The workload (one einsum or a chain), its homes and its TeAAL mapping, from any source above.

    ``extents`` gives the ranks of a TeAAL specification that has no ``shape:``
    (TeAAL takes them from the data); other workloads carry their extents.
    """
    if extents and not (isinstance(source, Mapping) and isinstance(source.get("einsum"), Mapping)) \
            and not (isinstance(source, (str, Path)) and _is_teaal_file(source)):
        raise UsageError("--extent", "a TeAAL workload (other workloads give their extents in the file)", str(source))
    if isinstance(source, LoadedWorkload):
        return source
    if isinstance(source, (Workload, WorkloadGraph)):
        return LoadedWorkload(source)
    if isinstance(source, Mapping):
        name = source_name or "<dict>"
        if isinstance(source.get("einsum"), Mapping):
            spec = teaal_from_dict(dict(source), name, extents)
            return LoadedWorkload(spec.graph, {}, spec, name)
        if "einsums" in source:
            graph, homes = graph_and_homes_from_dict(dict(source), name)
            return LoadedWorkload(graph, homes, None, name)
        return LoadedWorkload(workload_from_dict(dict(source), name), homes_from_dict(dict(source), name), None, name)
    if isinstance(source, (str, Path)):
        with _peer_hint(source):
            data = read_yaml(source)
            if isinstance(data, Mapping) and (_is_chain_dict(data) or "einsum" in data):
                return workload_of(data, source_name=str(source), extents=extents)
            return LoadedWorkload(load_workload_any(source), source=str(source))  # its one-line error otherwise
    raise UsageError("workload", "a Workload, a WorkloadGraph, a dict in the workload format or a file path",
                     type(source).__name__)


def architecture_of(source: ArchitectureSource, *, source_name: str | None = None) -> Architecture | Tree:
    """The architecture from any source above; a tree with several computes stays a :class:`Tree`."""
    if isinstance(source, (Architecture, Tree)):
        return source
    if isinstance(source, Mapping):
        return architecture_from_dict(dict(source), source_name or "<dict>")
    if isinstance(source, (str, Path)):
        path = Path(source)
        with _peer_hint(source):
            if path.is_file() and is_tree_file(path):
                tree = load_tree(path)
                return tree if len(flatten(tree)) > 1 else single_architecture(tree)
            architecture, _ = resolve_architecture(source)
            return architecture
    raise UsageError("architecture", "an Architecture, a tree, a dict in the architecture format, a file path or "
                     "a preset name", type(source).__name__)


@contextmanager
def _peer_hint(source: str | Path) -> Iterator[None]:
    """A peer's file that fails as one of mapsearch's own: say which loader reads it (looked at only on failure)."""
    try:
        yield
    except SpecError as e:
        from mapsearch.spec.foreign import is_foreign_file

        peer = is_foreign_file(source) if Path(source).is_file() else None
        if peer is None:
            raise
        raise SpecError(str(source), "", "", None, detail=f"a {peer} file: a peer's files are translated by "
                        f"mapsearch.api.load_problem(workload, architecture) (docs/peer-formats.md)") from e


def constraints_of(source: ConstraintsSource, *, source_name: str | None = None) -> Constraints:
    """Mapping constraints from any source above; ``None`` is no constraints."""
    if source is None:
        return Constraints()
    if isinstance(source, Constraints):
        return source
    if isinstance(source, Mapping):
        return constraints_from_dict(dict(source), source_name or "<dict>")
    if isinstance(source, (str, Path)):
        return load_constraints(source)
    raise UsageError("constraints", "Constraints, a dict in the constraints format, a file path or None",
                     type(source).__name__)
