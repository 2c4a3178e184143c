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

from mapsearch import api
from mapsearch.cli.exits import EXIT_MISMATCH, CommandFailed
from mapsearch.cli.solving import (
    data_check_line,
    mismatch_lines,
    objective_of,
    options_from_args,
    simulator_failure,
    stopped_by,
)
from mapsearch.errors import MapsearchError, UsageError
from mapsearch.report.sparse_report import render_sparse_text, sparse_report_dict

__all__ = ["run", "sparse_flags", "warn_sparse_only"]

log = logging.getLogger(__name__)
_DENSE_ONLY = (("min_utilization", "--min-utilization"), ("dram_rows", "--dram-rows"),
               ("max_dram_rows", "--max-dram-rows"), ("dram_layouts", "--dram-layouts"), ("start", "--start"))


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
    architecture = api.load_architecture(args.architecture)
    if isinstance(architecture, api.Tree):
        raise MapsearchError(f"{'/'.join(flags)}: the sparse solve takes an architecture with one compute path; "
                             f"{args.architecture} has several")
    workload = api.load_workload(args.workload)
    densities = api.parse_densities(getattr(args, "density", None), workload)
    formats = api.parse_formats(getattr(args, "sparse_format", None), workload)
    api.check_output_density(workload, densities, formats, cli=True)
    if not densities and not any(f.compressed for f in formats.values()):
        warn_sparse_only(args)
        return False  # only uncompressed formats: the dense solve is the same search
    _refuse_dense_only(args)
    seed = getattr(args, "sparse_seed", None) or 0
    if seed < 0:
        raise UsageError("--sparse-seed", "an int >= 0", seed)
    options = options_from_args(args, architecture)
    try:
        result = api.solve_sparse(args.workload, architecture, densities, formats,
                                  getattr(args, "constraints", None) or None, options=options, replay_mode=mode,
                                  sample_seed=None if getattr(args, "no_sparse_replay", False) else seed, strict=False)
    except api.SimulatorError as e:
        raise simulator_failure(e, mode) from e
    # The dense figures go into the schedule file: the simulator reproduces them, as for a dense solve.
    report = (result, densities, formats, result.replayed, list(result.dense_mismatches), result.sparse_replay,
              list(result.mismatches), seed, mode, dict(result.nonzeros))
    if args.json:
        print(json.dumps(sparse_report_dict(*report), indent=2))
    else:
        print(render_sparse_text(*report), end="")

    failures = []
    if result.dense_mismatches:
        failures += mismatch_lines(f"the {mode} replay disagrees with the solver's dense figures",
                                   result.dense_mismatches)
    if result.mismatches:
        failures += mismatch_lines(f"the sparse replay on sampled data (seed {seed}) differs from the exact model",
                                   result.mismatches, said="expected")
    for name, rep in (("dense", result.replayed), ("sparse", result.sparse_replay)):
        failures += data_check_line(rep, f"{name} replay's")
    if failures:
        raise CommandFailed(EXIT_MISMATCH, failures)

    if result.status == "FEASIBLE":
        last = result.phases[-1]
        print(f"mapsearch: warning: FEASIBLE, not proven optimal ({stopped_by(None, options)}): "
              f"{last.name} {float(last.value):.6g}, bound {float(last.bound):.6g}, gap {last.gap:.2%}", file=sys.stderr)
    if args.output:
        api.save_schedule(result.schedule, args.output)
        log.info("wrote %s", args.output)
    return True
