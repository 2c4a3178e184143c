"""The sparse solve in one call: densities and formats by object or by text, the two replays checked.

:func:`solve_sparse` loads its inputs as :func:`mapsearch.solve.entry.solve`
does, searches with the density model (:func:`mapsearch.sparse.solve.solve_sparse`),
replays the schedule's dense figures (which must equal the prediction) and,
unless ``sample_seed`` is None, replays it on inputs sampled from their
densities: with only fixed-structured densities (``NofM``, ``Banded``,
``Dense``) the replayed payload and metadata words of every link and tensor,
and the effectual ops, must equal the model's; under ``Uniform`` the model
gives expectations and the replay one draw.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Mapping, Union

from mapsearch.errors import ReplayMismatch, SpecError, UsageError
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import differences
from mapsearch.sim.replay import replay
from mapsearch.solve.entry import predicted_figures, solve_inputs
from mapsearch.sparse.density_text import Density, all_exact, check_output_density, parse_density, parse_format
from mapsearch.sparse.density import sample_inputs
from mapsearch.sparse.format import Format
from mapsearch.sparse.replay import replay_sparse
from mapsearch.sparse.solve import SparseSolveResult, solve_sparse as solve_sparse_problem, sparse_mismatches
from mapsearch.spec.inputs import ArchitectureSource, ConstraintsSource, WorkloadSource
from mapsearch.spec.workload import Workload

__all__ = ["solve_sparse", "densities_of", "formats_of"]


def densities_of(densities: Mapping[str, Union[Density, str]] | None, workload: Workload) -> dict[str, Density]:
    """Density objects, or their text (``uniform:0.9,0.04``, ``nofm:2/4,4/4``, ``banded:1,1``, ``dense``)."""
    out: dict[str, Density] = {}
    for t, d in dict(densities or {}).items():
        if t not in workload.tensor_names:
            raise UsageError(f"densities[{t!r}]", f"a tensor of {workload.einsum.text()}", t)
        access = workload.tensor(t)
        out[t] = parse_density(d, len(access.indices), f"densities[{t!r}]", access.text()) if isinstance(d, str) else d
    return out


def formats_of(formats: Mapping[str, Union[Format, str]] | None, workload: Workload) -> dict[str, Format]:
    """Format objects, or their names (``CSR``, ``CSF``, ``COO``, ``CISS``, ``dense``, or ``U``/``C`` per rank)."""
    out: dict[str, Format] = {}
    for t, f in dict(formats or {}).items():
        if t not in workload.tensor_names:
            raise UsageError(f"formats[{t!r}]", f"a tensor of {workload.einsum.text()}", t)
        out[t] = parse_format(f, workload.tensor(t), f"formats[{t!r}]") if isinstance(f, str) else f
    return out


def solve_sparse(workload: WorkloadSource, architecture: ArchitectureSource,
                 densities: Mapping[str, Union[Density, str]], formats: Mapping[str, Union[Format, str]] | None = None,
                 constraints: ConstraintsSource = None, *, homes: Mapping[str, str] | None = None,
                 options: SolveOptions | None = None, replay_mode: str = "count", sample_seed: int | None = 0,
                 strict: bool = True) -> SparseSolveResult:
    """The schedule of fewest expected time (then words) under the densities, replayed twice (module docstring).

    ``densities`` may name the output: its pattern is then assumed when
    pricing a compressed output format. Input ``i`` is sampled with seed
    ``sample_seed + i``. With ``strict``, a replay that disagrees raises
    :class:`~mapsearch.errors.ReplayMismatch`.
    """
    w, arch, all_homes, c = solve_inputs(workload, architecture, constraints, homes)
    if arch.compute.block_roles:  # the search over bindings (solve/block_roles.py) runs the dense solver only
        raise SpecError(str(architecture) if isinstance(architecture, (str, Path)) else arch.name, "compute.block_roles",
                        "", detail="the sparse solve needs the op's block by dimension (compute.block); GEMM roles "
                        "are bound by the dense solve only")
    dens = densities_of(densities, w)
    fmts = formats_of(formats, w)
    out = w.einsum.output.name
    check_output_density(w, dens, fmts)
    result = solve_sparse_problem(Problem(w, arch, tuple(all_homes.items())), {t: d for t, d in dens.items() if t != out},
                                  fmts, c, options or SolveOptions(), output_density=dens.get(out))
    dense = replay(result.schedule, mode=replay_mode)
    result = replace(result, replayed=dense,
                     dense_mismatches=tuple(differences(predicted_figures(result.schedule), dense.figures)))
    if sample_seed is not None:
        if sample_seed < 0:
            raise UsageError("sample_seed", "an int >= 0", sample_seed)
        tensors = sample_inputs(w, dens, sample_seed)
        sampled = replay_sparse(result.schedule, tensors, fmts)
        mismatches: tuple[tuple[str, float, int], ...] = ()
        if all_exact(w, dens):
            # An output density is an assumption; the replay counts the result's real pattern.
            mismatches = tuple(m for m in sparse_mismatches(result, sampled) if out not in dens or f" {out} " not in m[0])
        result = replace(result, sparse_replay=sampled, mismatches=mismatches, seed=sample_seed,
                         nonzeros={t: x.nnz for t, x in tensors.items()})
    if strict:
        for found in (result.dense_mismatches, result.mismatches):
            if found:
                raise ReplayMismatch(*found[0], mismatches=found)
        for rep in (result.replayed, result.sparse_replay):
            if rep is not None and rep.data_ok is False:
                raise ReplayMismatch("data", "the numpy reference", f"an output off by {rep.max_abs_error:.3g}")
    return result
