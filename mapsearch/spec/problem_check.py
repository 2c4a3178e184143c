"""A workload and an architecture checked together, before anything is solved: every home names a tensor and a
level (:func:`check_homes`); the compute block names the workload's dimensions (or binds by GEMM role), a mesh
axis's ``may_reuse`` names its tensors or roles, and the largest figure fits the solver's integers
(:func:`check_problem`). Re-exported by load.py, which runs them on the files it reads.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Iterable, Mapping

from mapsearch.spec import limits
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.block_roles import ROLES, bindable_blocks
from mapsearch.spec.einsum import Einsum, TensorAccess
from mapsearch.spec.reading import _error, _note, join_path
from mapsearch.spec.workload import Workload

__all__ = ["check_homes", "check_problem", "span_factor"]


def check_homes(homes: Mapping[str, str], workload: Workload, architecture: Architecture, source: str) -> None:
    """Every home names a tensor of the workload and a level of the architecture."""
    names = workload.tensor_names
    levels = architecture.level_names
    for tensor, level in homes.items():
        if tensor not in names:
            raise _note(source, join_path(["homes", tensor]), f"unknown tensor; expected one of {', '.join(names)}")
        if level not in levels:
            raise _error(source, join_path(["homes", tensor]), f"a level of {architecture.name!r} ({', '.join(levels)})", level)


def check_problem(extents: Iterable[tuple[str, int]], tensors: Iterable[str], architecture: Architecture, source: str,
                  architecture_source: str, einsums: Iterable[Einsum], *, fields: tuple[str, str] = ("", "")) -> None:
    """The workload (``extents``, tensor names) and the architecture together: names and the size of figures.

    The compute block may name only the workload's dimensions, a block in
    GEMM roles must find a dimension for each role in each of ``einsums``
    (:mod:`mapsearch.spec.block_roles`), a mesh axis's ``may_reuse`` names
    only its tensors (or the roles); the largest figure must fit the
    solver's integers (:func:`limits.einsum_figures`, summed over ``einsums``).
    ``fields``: where the workload and the architecture sit in their files
    (a schedule file embeds both: ``("workload", "architecture")``).
    """
    at_workload, at_arch = fields
    extents = tuple(extents)
    tensors = tuple(tensors)
    einsums = tuple(einsums)
    dims = [d for d, _ in extents]
    for d, _ in architecture.compute.block:
        if d not in dims:
            hint = ("; to bind the block to the workload's dimensions by GEMM role, give it as compute.block_roles"
                    if d in ROLES else "")
            raise _note(architecture_source, join_path(["compute", "block", d], at_arch),
                        f"unknown dimension; the workload {source} uses {', '.join(dims)}{hint}")
    blocks = bindable_blocks(architecture.compute, einsums, source, architecture_source)
    for i, lv in enumerate(architecture.levels):
        for j, axis in enumerate(lv.mesh):
            for k, name in enumerate(axis.may_reuse):
                if name not in _REUSE_ROLES and name not in tensors:
                    raise _error(architecture_source, join_path(["levels", i, "mesh", j, "may_reuse", k], at_arch),
                                 f"a tensor of {source} ({', '.join(tensors)}) or a role ({', '.join(_REUSE_ROLES)})", name)
    link_costs = [x for lv in architecture.levels if lv.link is not None
                  for x in (lv.link.input_clocks_per_word, lv.link.output_clocks_per_word)]
    ext = dict(extents)
    links = len(architecture.levels) - 1
    macs = sum(math.prod(ext[d] for d in e.dims) for e in einsums)
    for block in blocks:  # each einsum's model, added up for a chain (limits.einsum_figures)
        problem = limits.figures_error(*_chain_figures(einsums, ext, block, links,
                                                       architecture.compute.clocks_per_call, link_costs), macs)
        alone = limits.figures_error(*_chain_figures(einsums, ext, block, links, Fraction(1), []), macs)
        if problem is None:
            continue
        if alone is not None:  # the extents alone are too big
            raise _note(source, join_path(["extents"], at_workload), f"{problem} (on {architecture_source})")
        raise _note(architecture_source, at_arch, problem if source == architecture_source else f"with {source}: {problem}")


def _chain_figures(einsums: tuple[Einsum, ...], extents: Mapping[str, int], block: dict[str, int], links: int,
                   clocks_per_call: Fraction, link_costs: list[Fraction]) -> tuple[int, int]:
    """``(largest, scale)``: the einsums' estimates (limits.einsum_figures) added up, and the clock unit."""
    parts = [limits.einsum_figures([(d, extents[d]) for d in e.dims], block, [span_factor(t, extents) for t in e.tensors],
                                   links, clocks_per_call, link_costs) for e in einsums]
    return sum(p[0] for p in parts), parts[0][1]


def span_factor(tensor: TensorAccess, extents: Mapping[str, int]) -> int:
    """The most words per MAC a region of ``tensor`` can hold (limits.einsum_figures): per axis the sum of its
    index coefficients (a stride or dilation leaves holes inside a region), times ``E_d^(k-1)`` for a
    dimension in ``k`` axes (``A[m, m]`` spans ``T_m^2`` words for ``T_m`` MACs)."""
    factor = 1
    axes: dict[str, int] = {}
    for ix in tensor.indices:
        factor *= max(1, sum(c for _, c in ix.terms))
        for d, _ in ix.terms:
            axes[d] = axes.get(d, 0) + 1
    return factor * math.prod(extents[d] ** (k - 1) for d, k in axes.items())


_REUSE_ROLES = ("input", "output", "all", "none")
