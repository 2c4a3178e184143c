"""``mapsearch solve`` on a peer's files (AccelForge, Timeloop v0.4, ZigZag; mapsearch/spec/foreign/).

Either file may be a peer's, found by content or named with ``--format
accelforge|timeloop|zigzag``; Jinja variables come from ``--var NAME=VALUE``.
The workload is read first, then the architecture is translated for it (a
mapsearch architecture or preset is used as is). The translated
architecture is a tree: :func:`mapsearch.spec.tree.solve_tree` solves every
compute path and keeps the best. What the model expresses differently is
printed first, one ``mapsearch: note:`` line each.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from mapsearch.errors import MapsearchError
from mapsearch.spec.foreign import FORMATS, ForeignWorkload, is_foreign_file, load_foreign_arch, load_foreign_workload, \
    parse_var

__all__ = ["peer_format", "variables", "uses_foreign", "solve_foreign", "foreign_chain"]


def peer_format(args: argparse.Namespace) -> str | None:
    """The ``--format`` value that names a peer's format (the others are sparse ``T=FMT`` items)."""
    names = [f for f in getattr(args, "sparse_format", None) or [] if "=" not in f]
    for f in names:
        if f not in FORMATS:
            raise MapsearchError(f"--format: expected a peer's format ({', '.join(FORMATS)}) or T=FMT for a sparse "
                                 f"tensor, got {f!r}")
    if len(set(names)) > 1:
        raise MapsearchError(f"--format: one peer's format at a time, got {', '.join(names)}")
    args.sparse_format = [f for f in getattr(args, "sparse_format", None) or [] if "=" in f]
    return names[0] if names else None


def variables(args: argparse.Namespace) -> dict[str, Any]:
    return dict(parse_var(v) for v in getattr(args, "var", None) or [])


def uses_foreign(args: argparse.Namespace, fmt: str | None) -> bool:
    from pathlib import Path

    values = variables(args)
    files = [p for p in (args.workload, args.architecture) if Path(p).is_file()]
    return any(is_foreign_file(p, values) for p in files) or (fmt is not None and bool(files))


def _workload(args: argparse.Namespace, fmt: str | None, values: dict) -> tuple[Any, dict, ForeignWorkload | None]:
    from mapsearch.spec.load import load_homes, load_workload

    if is_foreign_file(args.workload, values) or fmt is not None and _try_foreign(args.workload, values, fmt):
        fw = load_foreign_workload(args.workload, values, fmt)
        return fw.workload, dict(fw.homes), fw
    return load_workload(args.workload), load_homes(args.workload), None


def _try_foreign(path: str, values: dict, fmt: str) -> bool:
    from mapsearch.spec.foreign import detect_format
    from mapsearch.spec.foreign.common import parse_tagged_yaml, render_jinja
    from mapsearch.spec.load import read_text

    try:
        data = parse_tagged_yaml(render_jinja(read_text(path), path, values), path, duplicate_keys="last")
    except MapsearchError:
        return True  # let the foreign reader report it
    return detect_format(data) is not None or (isinstance(data, dict) and "levels" not in data and "einsum" not in data)


def solve_foreign(args: argparse.Namespace, fmt: str | None) -> tuple:
    """``(SolveResult, options, lines about the compute paths)``, as cli_solve's own attempt returns."""
    from mapsearch.solve.constraints import load_constraints

    values = variables(args)
    workload, homes, fw = _workload(args, fmt, values)
    notes: list[str] = []
    from pathlib import Path

    arch_path = Path(args.architecture)
    if is_foreign_file(arch_path, values) or (fmt is not None and arch_path.is_file()
                                              and _try_foreign(args.architecture, values, fmt)):
        peer_constraints = getattr(args, "constraints", None)
        if peer_constraints and is_foreign_file(peer_constraints, values) == "timeloop":
            args.constraints = None  # read with the architecture it constrains
        else:
            peer_constraints = None
        fa = load_foreign_arch(args.architecture, fw or workload, values, fmt, peer_constraints)
        tree, extra, notes = fa.tree, fa.constraints, list(fa.notes)
    else:
        from mapsearch.presets import resolve_architecture
        from mapsearch.spec.tree import is_tree_file, load_tree

        if is_tree_file(args.architecture):
            tree, extra = load_tree(args.architecture), None
        else:
            arch, _ = resolve_architecture(args.architecture)
            tree, extra = _one_path_tree(arch), None
    for n in (fw.notes if fw else ()):
        notes.append(n)
    for n in dict.fromkeys(notes):
        print(f"mapsearch: note: {' '.join(n.split())}", file=sys.stderr)
    if getattr(args, "constraints", None):
        user = load_constraints(args.constraints)
        extra = user if extra is None else replace(user, tiles=extra.tiles + user.tiles, orders=extra.orders + user.orders,
                                                   keep=extra.keep + user.keep, stationary=extra.stationary + user.stationary)
    from mapsearch.solve.cli_solve import solve_paths

    return solve_paths(args, tree, workload, homes, extra)


def _one_path_tree(arch: Any) -> Any:
    """A flat architecture as a one-path tree (no rules), so that every solve here goes through solve_tree."""
    from mapsearch.spec.tree import ComputeNode, HierarchicalNode, MemoryNode, Tree, Where

    where = Where(arch.name, 1, 1, "")
    e = arch.energy
    nodes = [MemoryNode(lv.name, lv.capacity, lv.link, (), None, None, None, where, e and e.level(lv.name))
             for lv in arch.levels]
    if any(lv.mesh for lv in arch.levels):
        raise MapsearchError(f"{arch.name}: a meshed mapsearch architecture with a peer's workload: give it as a "
                             f"tree file")
    nodes.append(ComputeNode("compute", arch.compute.block, arch.compute.clocks_per_call, where,
                             e and (e.mac, e.compute_leakage)))
    return Tree(arch.name, HierarchicalNode(tuple(nodes), where), arch.double_buffering, arch.name, "",
                e.unit if e else "")


def foreign_chain(args: argparse.Namespace, fmt: str | None) -> tuple | None:
    """``(graph, homes, architecture, notes)`` when the workload is a peer's chain, else None.

    A chain is solved on one flat architecture (mapsearch.solve.chain), so the
    translated tree must have one compute path, and its keep/bypass rules
    must leave every decision to the solver for every einsum (AccelForge's
    ``keep: ~Intermediates, may_keep: All`` at the top does): rules that force
    or forbid a buffer per einsum have no place in the chain solve.
    """
    from mapsearch.spec.foreign.common import untranslatable
    from mapsearch.spec.tree import UnusablePath, flatten, path_architecture, path_constraints
    from mapsearch.spec.workload import WorkloadGraph

    values = variables(args)
    workload, homes, fw = _workload(args, fmt, values)
    if not isinstance(workload, WorkloadGraph):
        return None
    fa = load_foreign_arch(args.architecture, fw or workload, values, fmt)
    paths = flatten(fa.tree)
    if len(paths) != 1:
        raise untranslatable(args.architecture, "arch", f"{len(paths)} compute paths; mapsearch solves a chain on one")
    for i in range(len(workload.einsums)):
        stage = workload.stage(i)
        try:
            rules = path_constraints(paths[0], stage, homes) if i == 0 else None
        except UnusablePath as e:
            raise untranslatable(args.architecture, "arch", str(e)) from None
        forced = [k for k in (rules.keep if rules is not None else ()) if k[1] not in workload.intermediates]
        if forced:  # where an intermediate lives is the chain solve's own choice (fused or not)
            level, tensor, flag = forced[0]
            raise untranslatable(args.architecture, f"{level}.tensors", f"it {'keeps' if flag else 'bypasses'} "
                                 f"{tensor} for this chain's einsums; the chain solve takes no keep/bypass rules yet: "
                                 f"solve the einsums one at a time")
    notes = list(fa.notes) + list(fw.notes if fw else ())
    for n in dict.fromkeys(notes):
        print(f"mapsearch: note: {' '.join(n.split())}", file=sys.stderr)
    arch = replace(path_architecture(paths[0], workload.stage(0)), name=fa.tree.name)
    return workload, homes, arch, []
