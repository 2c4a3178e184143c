"""``mapsearch solve --density T=SPEC --format T=FMT``: the sparse solve (docs/sparse-solver.md).

The search uses the density model (:func:`mapsearch.sparse.solve.solve_sparse`:
expected time, then expected words, of the tensors' nonzeros and metadata).
The schedule's dense figures are replayed as for a dense solve, and its
sparse words on inputs sampled from their densities (``--sparse-seed``;
``--no-sparse-replay`` skips it): with only fixed-structured densities
(``NofM``, ``Banded``, ``Dense``) the replayed payload and metadata words of
every link and tensor, and the effectual ops, must equal the model's, else
``REPLAY MISMATCH`` and exit 1; under ``Uniform`` the report gives each
link's relative error.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from mapsearch.cli.exits import EXIT_MISMATCH, CommandFailed
from mapsearch.cli.solving import (
    constraints_of,
    data_check_line,
    mismatch_lines,
    multi_path_tree,
    objective_of,
    options_from_args,
    replay_solved,
    run_solver,
)
from mapsearch.errors import MapsearchError, UsageError
from mapsearch.model.problem import Problem
from mapsearch.report.sparse_report import render_sparse_text, sparse_report_dict
from mapsearch.schedule.figures import differences
from mapsearch.schedule.json_io import save_schedule
from mapsearch.sparse.density import sample_inputs
from mapsearch.sparse.density_text import all_exact, is_sparse, parse_densities, parse_formats
from mapsearch.sparse.replay import replay_sparse
from mapsearch.sparse.solve import solve_sparse, sparse_mismatches
from mapsearch.spec.load import load_problem

__all__ = ["run", "sparse_flags", "warn_sparse_only"]

log = logging.getLogger(__name__)
_DENSE_ONLY = (("min_utilization", "--min-utilization"), ("dram_rows", "--dram-rows"),
               ("max_dram_rows", "--max-dram-rows"), ("dram_layouts", "--dram-layouts"))


def sparse_flags(args: argparse.Namespace) -> list[str]:
    """The sparse options given (``--density``, ``--format``), in that order."""
    return [flag for flag, dest in (("--density", "density"), ("--format", "sparse_format")) if getattr(args, dest, None)]


def warn_sparse_only(args: argparse.Namespace) -> None:
    if getattr(args, "sparse_seed", None) is not None or getattr(args, "no_sparse_replay", False):
        print("mapsearch: warning: --sparse-seed and --no-sparse-replay only apply with --density or a compressed "
              "--format; ignored", file=sys.stderr)


def _refuse_dense_only(args: argparse.Namespace) -> None:
    """One-line errors for the options the sparse solve does not take (solve_sparse refuses them)."""
    objective = objective_of(args)
    if objective not in ("time", "words"):
        raise UsageError("--objective", "time or words with --density/--format (the sparse solve minimises "
                         "expected time or expected words)", objective)
    for dest, flag in _DENSE_ONLY:
        value = getattr(args, dest, None)
        if value is not None and not (dest == "dram_rows" and value == "off"):
            raise MapsearchError(f"{flag}: a dense-model option; the sparse solve (--density/--format) takes "
                                 "--objective time|words, -c, --time-limit, --work-limit, --workers and --seed")


def run(args: argparse.Namespace, mode: str, flags: list[str]) -> bool:
    """``solve`` with the density model; False when the flags ask for nothing sparse (only dense formats)."""
    if multi_path_tree(args.architecture) is not None:
        raise MapsearchError(f"{'/'.join(flags)}: the sparse solve takes an architecture with one compute path; "
                             f"{args.architecture} has several")
    workload, architecture, homes = load_problem(args.workload, args.architecture)
    densities = parse_densities(getattr(args, "density", None), workload)
    formats = parse_formats(getattr(args, "sparse_format", None), workload)
    if not is_sparse(densities, formats):
        warn_sparse_only(args)
        return False  # only uncompressed formats: the dense solve is the same search
    _refuse_dense_only(args)
    seed = getattr(args, "sparse_seed", None) or 0
    if seed < 0:
        raise UsageError("--sparse-seed", "an int >= 0", seed)
    problem = Problem(workload, architecture, tuple(homes.items()))
    constraints = constraints_of(args, problem)
    options = options_from_args(args, architecture)
    out = workload.einsum.output.name
    result = run_solver(lambda: solve_sparse(problem, {t: d for t, d in densities.items() if t != out}, formats,
                                                    constraints, options, output_density=densities.get(out)))

    schedule = result.schedule
    # The dense figures go into the schedule file: the simulator reproduces them, as for a dense solve.
    dense_replay = replay_solved(schedule, mode)
    dense_mismatches = differences(schedule.predicted, dense_replay.figures)

    exact = all_exact(workload, densities)
    sparse_replay, mismatches, nonzeros = None, [], {}
    if not getattr(args, "no_sparse_replay", False):
        tensors = sample_inputs(workload, densities, seed)
        nonzeros = {t: x.nnz for t, x in tensors.items()}
        sparse_replay = replay_sparse(schedule, tensors, formats)
        if exact:
            # An output density is an assumption; the replay counts the result's real pattern.
            mismatches = [m for m in sparse_mismatches(result, sparse_replay)
                          if out not in densities or f" {out} " not in m[0]]

    if args.json:
        report = sparse_report_dict(result, densities, formats, dense_replay, dense_mismatches, sparse_replay,
                                    mismatches, seed, mode, nonzeros)
        print(json.dumps(report, indent=2))
    else:
        print(render_sparse_text(result, densities, formats, dense_replay, dense_mismatches, sparse_replay, mismatches,
                                 seed, mode, nonzeros), end="")

    failures = []
    if dense_mismatches:
        failures += mismatch_lines(f"the {mode} replay disagrees with the solver's dense figures", dense_mismatches)
    if mismatches:
        failures += mismatch_lines(f"the sparse replay on sampled data (seed {seed}) differs from the exact model",
                                   mismatches, said="expected")
    for name, rep in (("dense", dense_replay), ("sparse", sparse_replay)):
        if rep is not None:
            failures += data_check_line(rep, f"{name} replay's")
    if failures:
        raise CommandFailed(EXIT_MISMATCH, failures)

    if result.status == "FEASIBLE":
        last = result.phases[-1]
        print(f"mapsearch: warning: FEASIBLE, not proven optimal (time limit {options.time_limit:g} s): "
              f"{last.name} {float(last.value):.6g}, bound {float(last.bound):.6g}, gap {last.gap:.2%}", file=sys.stderr)
    if args.output:
        save_schedule(schedule, args.output)
        log.info("wrote %s", args.output)
    return True
