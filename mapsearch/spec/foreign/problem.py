"""A workload, an architecture and constraints read together, from files in any format mapsearch reads.

A peer's architecture is translated *for* a workload (AccelForge evaluates
sizes and keep rules per einsum, Timeloop and ZigZag fit the operand level
to the einsum's op), so a peer's files cannot be loaded one at a time the
way mapsearch's own are (:mod:`mapsearch.spec.inputs`). :func:`load_problem`
reads the workload first (a peer's or mapsearch's own), then the
architecture for it (a peer's is translated into a tree; a mapsearch file or
preset is read as it is), then the constraints (a Timeloop constraints file
goes with the Timeloop architecture it constrains; a mapsearch one is added
to what the peer's file said). What the model expresses differently is
kept in ``notes``, one line each; what it cannot express exactly is a
one-line :class:`~mapsearch.spec.foreign.common.Untranslatable`.

A chain (an AccelForge einsum list) is solved on one flat architecture
(:mod:`mapsearch.solve.chain`), so its translated tree must have one compute
path whose keep/bypass rules leave every decision to the solver.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from mapsearch.errors import MapsearchError, UsageError
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.constraints import Constraints
from mapsearch.spec.foreign import FORMATS, detect_format, is_foreign_file, load_foreign_arch, load_foreign_workload
from mapsearch.spec.foreign.common import parse_tagged_yaml, render_jinja, untranslatable
from mapsearch.spec.inputs import (ArchitectureSource, ConstraintsSource, LoadedWorkload, WorkloadSource,
                                   architecture_of, constraints_of, workload_of)
from mapsearch.spec.reading import read_text
from mapsearch.spec.tree import is_tree_file, load_tree
from mapsearch.spec.tree_nodes import Tree
from mapsearch.spec.tree_paths import UnusablePath, flatten, path_architecture, path_constraints
from mapsearch.spec.workload import WorkloadGraph

__all__ = ["LoadedProblem", "peer_format_of", "load_problem"]


@dataclass(frozen=True)
class LoadedProblem:
    """What :func:`load_problem` read: pass ``workload``, ``architecture`` and ``constraints`` to a solve.

    ``architecture`` is a :class:`Tree` (every compute path is solved and the
    best kept) or, for a chain, one flat :class:`Architecture`.
    ``formats`` names the peer format of the workload and of the
    architecture file (None: mapsearch's own). ``clock_hz``: the clock the
    architecture file gives (AccelForge: the compute's op rate), else None.
    """

    workload: LoadedWorkload
    architecture: Architecture | Tree
    constraints: Constraints | None = None
    notes: tuple[str, ...] = ()
    formats: tuple[str | None, str | None] = (None, None)
    clock_hz: Fraction | None = None
    variables: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_chain(self) -> bool:
        return self.workload.is_chain

    @property
    def is_peer(self) -> bool:
        """True when either file is a peer's."""
        return any(self.formats)


def _check_format(format: str | None) -> None:
    if format is not None and format not in FORMATS:
        raise UsageError("--format", f"a peer's format ({', '.join(FORMATS)})", format)


def _not_mapsearch(path: str | Path, variables: Mapping[str, Any]) -> bool:
    """Whether a file named as a peer's (``format=``) is not one of mapsearch's own formats."""
    try:
        data = parse_tagged_yaml(render_jinja(read_text(path), str(path), variables), str(path), duplicate_keys="last")
    except MapsearchError:
        return True  # the peer's reader says what is wrong with it, in one line
    return detect_format(data) is not None or (isinstance(data, dict) and "levels" not in data and "einsum" not in data)


def peer_format_of(source: object, variables: Mapping[str, Any] | None = None, format: str | None = None) -> str | None:
    """The peer format of a file (``accelforge``, ``timeloop``, ``zigzag``), None for mapsearch's own; never reads
    anything but a file.

    Found by content; ``format`` names it for a file whose content does not
    say (a file of mapsearch's own formats stays mapsearch's).
    """
    _check_format(format)
    if not isinstance(source, (str, Path)) or not Path(source).is_file():
        return None
    values = dict(variables or {})
    found = is_foreign_file(source, values)
    if found is not None:
        return format or found
    return format if format is not None and _not_mapsearch(source, values) else None


def load_problem(workload: WorkloadSource, architecture: ArchitectureSource, constraints: ConstraintsSource = None, *,
                 format: str | None = None, variables: Mapping[str, Any] | None = None) -> LoadedProblem:
    """Read a workload, an architecture and constraints in any format mapsearch reads (module docstring).

    ``format``: the peer format of the files whose content does not say it;
    ``variables``: the values of a Jinja-templated file's variables
    (AccelForge's ``{{M}}``; a variable the file sets itself is overridden).
    Bad input is one :class:`~mapsearch.errors.SpecError` line naming the
    file and the field.
    """
    values = dict(variables or {})
    w_format = peer_format_of(workload, values, format)
    fw = None
    notes: list[str] = []
    if w_format is not None:
        fw = load_foreign_workload(workload, values, format)
        loaded = LoadedWorkload(fw.workload, dict(fw.homes), None, str(workload))
    else:
        loaded = workload_of(workload)
    a_format = peer_format_of(architecture, values, format)
    peer_constraints = None
    clock = None
    extra: Constraints | None = None
    if a_format is not None:
        if isinstance(constraints, (str, Path)) and is_foreign_file(constraints, values) == "timeloop":
            peer_constraints, constraints = constraints, None  # read with the architecture it constrains
        fa = load_foreign_arch(architecture, fw or loaded.workload, values, format, peer_constraints)
        arch: Architecture | Tree = fa.tree
        extra, clock = fa.constraints, fa.clock_hz
        notes += fa.notes
    elif isinstance(architecture, (str, Path)) and Path(architecture).is_file() and is_tree_file(architecture):
        arch = load_tree(architecture)  # a tree stays a tree: its tensors rules are solved with it
    else:
        arch = architecture_of(architecture)
    if fw is not None:
        notes += fw.notes
    if constraints is not None:
        user = constraints_of(constraints)
        extra = user if extra is None else replace(user, tiles=extra.tiles + user.tiles, orders=extra.orders + user.orders,
                                                   keep=extra.keep + user.keep,
                                                   stationary=extra.stationary + user.stationary)
    if loaded.is_chain:
        arch = _chain_architecture(arch, loaded, str(architecture) if a_format else getattr(arch, "name", ""))
    return LoadedProblem(loaded, arch, extra, tuple(dict.fromkeys(" ".join(n.split()) for n in notes)),
                         (w_format, a_format), clock, values)


def _chain_architecture(arch: Architecture | Tree, loaded: LoadedWorkload, source: str) -> Architecture:
    """The one flat architecture a chain is solved on: a tree must have one path that leaves every decision to the
    solver (AccelForge's ``keep: ~Intermediates, may_keep: All`` at the top does).

    Where an intermediate lives is the chain solve's own choice (fused or
    not), so rules on intermediates are dropped; a rule that keeps or
    bypasses another tensor has no place in the chain solve yet.
    """
    if isinstance(arch, Architecture):
        return arch
    graph = loaded.workload
    assert isinstance(graph, WorkloadGraph)
    paths = flatten(arch)
    if len(paths) != 1:
        raise untranslatable(source, "arch", f"{len(paths)} compute paths; mapsearch solves a chain on one")
    try:
        rules = path_constraints(paths[0], graph.stage(0), dict(loaded.homes))
    except UnusablePath as e:
        raise untranslatable(source, "arch", str(e)) from None
    forced = [k for k in rules.keep if k[1] not in graph.intermediates]
    if forced:
        level, tensor, keep = forced[0]
        raise untranslatable(source, f"{level}.tensors", f"it {'keeps' if keep else 'bypasses'} {tensor} for this "
                             f"chain's einsums; the chain solve takes no keep/bypass rules yet: solve the einsums one "
                             f"at a time")
    return replace(path_architecture(paths[0], graph.stage(0)), name=arch.name)
