"""The public Python API: load specs, solve, replay, sweep, characterize (docs/tutorial.md).

    >>> import mapsearch
    >>> result = mapsearch.api.solve("examples/matmul-4x4x4.yaml", "examples/arch-worked-example.yaml")
    >>> result.status, result.time, result.words, result.utilization
    ('OPTIMAL', Fraction(80, 1), 80, Fraction(4, 5))

Every spec argument takes the object itself, a ``dict`` in the file format,
a file path, or (for an architecture) a preset name. Every result is a frozen
dataclass with exact figures (``Fraction``); sweeps and characterizations
give ``to_dataframe()`` (pandas, which ortools installs, is imported on first
use). Bad input raises one :class:`~mapsearch.errors.MapsearchError` whose
message is the line the command line would print.

The verbs live here rather than on the ``mapsearch`` package because
``mapsearch.solve``, ``mapsearch.sweep`` and ``mapsearch.characterize`` are
sub-packages; every other name below is also on the package
(``mapsearch.replay``, ``mapsearch.load_workload``, ``mapsearch.SolveResult``, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Union, overload

from mapsearch.characterize.graph import Model
from mapsearch.characterize.models import builtin_names as model_names, load_model
from mapsearch.characterize.profiles import Profile, load_profile, profile_names
from mapsearch.characterize.report import WRITTEN as CHARACTERIZE_WRITTEN
from mapsearch.characterize.run import Characterization
from mapsearch.characterize.session import CharacterizeStart, characterize
from mapsearch.dram.layout import placed_layouts
from mapsearch.dram.tracing import TraceResult, trace
from mapsearch.budget import Budget, stopped
from mapsearch.errors import (
    InfeasibleError,
    Interrupted,
    MapsearchError,
    NoScheduleInFamily,
    ReplayMismatch,
    ScheduleError,
    SolverTimeout,
    SpecError,
    UsageError,
)
from mapsearch.model.options import SolveOptions
from mapsearch.report.solve_report import render_solve_text
from mapsearch.schedule.figures import Figures, differences
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.fused_json import save_fused
from mapsearch.schedule.json_io import dumps_schedule, save_schedule as save_schedule_file
from mapsearch.schedule.schedule import Schedule
from mapsearch.schedule.unfused_json import ChainPlan, UnfusedChain, load_schedule_file
from mapsearch.sim.counters import ReplayResult
from mapsearch.sim.errors import SimulatorError, WalkTooLong
from mapsearch.sim.fused import UnfusedResult
from mapsearch.sim.replay import MODES as _REPLAY_MODES, replay as replay_schedule, replay_stages
from mapsearch.solve.chain import ChainResult
from mapsearch.solve.chain_files import save_best
from mapsearch.solve.chain_replay import ChainReplay, replay_checks
from mapsearch.solve.entry import Number, solve as solve_checked, solve_chain as solve_chain_checked
from mapsearch.solve.entry import solve_options
from mapsearch.solve.run import SolveResult
from mapsearch.sparse.density_text import check_output_density, parse_densities, parse_formats
from mapsearch.sparse.entry import solve_sparse as solve_sparse_checked
from mapsearch.sparse.solve import SparseSolveResult
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.constraints import Constraints
from mapsearch.spec.foreign import FORMATS as PEER_FORMATS, parse_var
from mapsearch.spec.foreign.problem import LoadedProblem, load_problem, peer_format_of
from mapsearch.spec.inputs import (
    ArchitectureSource,
    ConstraintsSource,
    LoadedWorkload,
    WorkloadSource,
    architecture_of,
    constraints_of,
    workload_of,
)
from mapsearch.spec.load import preset_names
from mapsearch.spec.tree_nodes import Tree
from mapsearch.spec.workload import Workload, WorkloadGraph
from mapsearch.spec.workload_files import is_chain_file
from mapsearch.solve.interrupt import Interruptible
from mapsearch.solve.progress import FINISHED, SolveProgress, listening
from mapsearch.sweep.export import WRITTEN as SWEEP_WRITTEN
from mapsearch.sweep.lock import DirectoryBusy, check_out_directory
from mapsearch.sweep.runner import Progress, check_scheduler
from mapsearch.solve.named_options import MAX_WORKERS, check_seconds
from mapsearch.sweep.session import SweepResult, SweepStart, run_sweep_file as sweep

__all__ = [
    # loading
    "load_workload", "load_architecture", "load_constraints", "load_schedule", "preset_names", "is_chain_file",
    "parse_densities", "parse_formats", "check_output_density", "load_model", "load_profile", "model_names", "profile_names",
    # the peers' files (AccelForge, Timeloop v0.4, ZigZag; docs/peer-formats.md)
    "PEER_FORMATS", "peer_format_of", "load_problem", "parse_var", "LoadedProblem",
    # solving and replaying
    "solve_options", "solve", "solve_chain", "solve_sparse", "replay", "compare", "report", "save_schedule",
    "dumps_schedule",
    "trace",
    # many at once
    "sweep", "characterize", "check_out_directory", "check_scheduler", "check_seconds", "MAX_WORKERS",
    "SWEEP_WRITTEN", "CHARACTERIZE_WRITTEN",  # what each writes in its output directory (a name ending in / a folder)
    # limits, Ctrl-C and progress (mapsearch/budget.py, mapsearch/solve/interrupt.py, mapsearch/solve/progress.py)
    "Budget", "Interruptible", "stopped", "listening", "SolveProgress", "FINISHED", "REPLAY_MODES",
    # the objects
    "Workload", "WorkloadGraph", "Architecture", "Tree", "Constraints", "SolveOptions", "Schedule", "FusedSchedule",
    "UnfusedChain", "ChainPlan", "Figures", "SolveResult", "ChainResult", "ChainReplay", "SparseSolveResult", "ReplayResult",
    "SweepResult", "SweepStart", "Progress", "TraceResult", "Characterization", "CharacterizeStart", "Model", "Profile",
    "LoadedWorkload",
    # the errors
    "MapsearchError", "SpecError", "UsageError", "ScheduleError", "InfeasibleError", "NoScheduleInFamily",
    "SolverTimeout", "ReplayMismatch", "SimulatorError", "WalkTooLong", "Interrupted", "DirectoryBusy",
]

REPLAY_MODES: tuple[str, ...] = tuple(sorted(_REPLAY_MODES))  # every mode replay() takes

ScheduleSource = Union[Schedule, FusedSchedule, SolveResult, str, Path]


# --------------------------------------------------------------------------
# Loading.
# --------------------------------------------------------------------------


def load_workload(source: WorkloadSource) -> Workload | WorkloadGraph:
    """One einsum (:class:`Workload`) or a chain (:class:`WorkloadGraph`), from an object, a dict or a file.

    The file's homes and a TeAAL file's mapping are kept when the file itself
    is passed to :func:`solve` or :func:`solve_chain`.
    """
    return workload_of(source).workload


def load_architecture(source: ArchitectureSource) -> Architecture | Tree:
    """An architecture from an object, a dict, a file (flat or tree) or a preset name (:func:`preset_names`).

    A tree file with several computes stays a :class:`Tree`; :func:`solve`
    solves every path and keeps the best.
    """
    return architecture_of(source)


def load_constraints(source: ConstraintsSource) -> Constraints:
    """Mapping constraints from an object, a dict or a file (``constraints/*.yaml``); None: none."""
    return constraints_of(source)


def load_schedule(source: str | Path) -> Schedule | FusedSchedule | UnfusedChain | ChainPlan:
    """A schedule file written by ``mapsearch solve -o`` (one einsum, a fused chain, a chain run einsum by
    einsum: :class:`~mapsearch.schedule.unfused_json.UnfusedChain`, or a partly fused chain's plan, group by
    group: :class:`~mapsearch.schedule.unfused_json.ChainPlan`), checked."""
    return load_schedule_file(source)


# --------------------------------------------------------------------------
# Solving.
# --------------------------------------------------------------------------


def _options(options: SolveOptions | None, architecture: Architecture | Tree | None, workload: Any,
             given: Mapping[str, Any]) -> SolveOptions:
    values = {k: v for k, v in given.items() if v is not None}
    if not values:
        return options or SolveOptions()
    w = workload if isinstance(workload, Workload) else None
    return solve_options(base=options, architecture=architecture, workload=w, **values)


def solve(workload: WorkloadSource, architecture: ArchitectureSource, constraints: ConstraintsSource = None, *,
          homes: Mapping[str, str] | None = None, objective: str | None = None, time_limit: float | None = None,
          work_limit: float | None = None, min_utilization: Number | None = None, workers: int | None = None,
          seed: int | None = None, link_energy: Mapping[str, Number] | None = None, op_energy: Number | None = None,
          dram_rows: str | None = None, max_dram_rows: int | None = None,
          dram_layouts: Mapping[str, Any] | str | Path | None = None, placement: bool | None = None,
          block_binding: Mapping[str, str] | str | None = None, start: Schedule | str | Path | None = None,
          options: SolveOptions | None = None, replay_mode: str | None = "count", strict: bool = True) -> SolveResult:
    """The proven-best schedule of one einsum on an architecture, replayed in the simulator.

    Options not given keep their defaults (:class:`SolveOptions`; ``options``
    is the base the given ones replace): ``objective`` ``time`` (the shortest
    time, then the fewest words), ``words`` or ``energy``; ``time_limit`` in
    seconds (default 60) or ``work_limit`` in CP-SAT deterministic seconds;
    ``workers`` and ``seed`` for determinism; ``min_utilization``,
    ``link_energy`` (``{"L1->L0": "1/2"}``), ``op_energy``; ``dram_rows``,
    ``max_dram_rows``, ``dram_layouts`` for a DRAM top level;
    ``block_binding`` (``"m=q,k=c"``) fixes roles of an op given in GEMM
    roles to dimensions (otherwise every binding is searched and the best
    is ``block_binding`` of the result, each one's outcome in
    ``block_bindings``; docs/architecture.md). ``start`` (a schedule or a
    schedule file) is a warm start: it hints the search where the model has
    it and never changes the optimum (docs/solver.md, "Warm starts").

    The result says ``status`` (``OPTIMAL``; ``OPTIMAL_IN_FAMILY`` with the
    ``family_restrictions`` it was proven over; ``FEASIBLE`` with its
    ``objective_bound`` and ``gap`` when the limit cut it short), the
    ``schedule`` and its ``figures`` (``time``, ``words``, ``utilization``),
    what binds (``binding``) and the replay (``replayed``; ``mismatches`` is
    empty, or with ``strict`` a :class:`ReplayMismatch` was raised).
    ``replay_mode=None`` skips the replay.
    """
    loaded = workload_of(workload)
    arch = architecture_of(architecture)
    opts = _options(options, arch, loaded.workload, dict(
        objective=objective, time_limit=time_limit, work_limit=work_limit, min_utilization=min_utilization,
        workers=workers, seed=seed, link_energy=link_energy, op_energy=op_energy, dram_rows=dram_rows,
        max_dram_rows=max_dram_rows, dram_layouts=dram_layouts, placement=placement, block_binding=block_binding,
        start=start))
    if dram_layouts is None and opts.dram_layouts and getattr(arch, "dram", None) is not None \
            and isinstance(loaded.workload, Workload):
        # Layouts fixed in a SolveOptions passed as it is: placed as solve_options places those given by name.
        placed_layouts(loaded.workload, arch.dram, dict(opts.dram_layouts), "options.dram_layouts")
    # A file keeps its path: errors name it, and a tree of one path keeps its tensors rules.
    source = architecture if isinstance(architecture, (str, Path)) else arch
    return solve_checked(loaded, source, constraints, homes=homes, options=opts, replay_mode=replay_mode, strict=strict)


def solve_chain(workload: WorkloadSource, architecture: ArchitectureSource, *, homes: Mapping[str, str] | None = None,
                time_limit: float | None = None, work_limit: float | None = None, workers: int | None = None,
                seed: int | None = None, placement: bool | None = None, options: SolveOptions | None = None,
                replay_mode: str | None = "count", strict: bool = True,
                extents: Mapping[str, int] | None = None) -> ChainResult:
    """A chain of einsums (or a TeAAL specification) fused at every level, unfused and materialized; the best
    replayed.

    ``result.best`` names the best option (the shortest time, then the fewest
    words), ``result.candidates()`` lists every option with its time and
    words, ``result.replay`` holds the replay checks (docs/fusion.md).
    ``extents``: the ranks of a TeAAL file without ``shape:``.
    """
    loaded = workload_of(workload, extents=extents)
    arch = architecture_of(architecture)
    opts = _options(options, arch, None, dict(time_limit=time_limit, work_limit=work_limit, workers=workers,
                                               seed=seed, placement=placement))
    source = architecture if isinstance(architecture, (str, Path)) else arch  # errors name the file
    return solve_chain_checked(loaded, source, homes=homes, options=opts, replay_mode=replay_mode, strict=strict)


def solve_sparse(workload: WorkloadSource, architecture: ArchitectureSource, densities: Mapping[str, Any],
                 formats: Mapping[str, Any] | None = None, constraints: ConstraintsSource = None, *,
                 homes: Mapping[str, str] | None = None, objective: str | None = None, time_limit: float | None = None,
                 work_limit: float | None = None, workers: int | None = None, seed: int | None = None,
                 options: SolveOptions | None = None, replay_mode: str = "count", sample_seed: int | None = 0,
                 strict: bool = True) -> SparseSolveResult:
    """The schedule of fewest expected time (then words) of tensors with these densities and formats
    (docs/sparse-solver.md), replayed on dense figures and on inputs sampled from the densities.

    ``densities``: ``{tensor: Uniform/NofM/Banded/Dense or text}``, e.g.
    ``{"A": "uniform:0.9,0.04"}``; ``formats``: ``{tensor: Format or name}``,
    e.g. ``{"A": "CSR"}``.
    """
    loaded = workload_of(workload)
    arch = architecture_of(architecture)
    opts = _options(options, arch, loaded.workload, dict(objective=objective, time_limit=time_limit,
                                                          work_limit=work_limit, workers=workers, seed=seed))
    return solve_sparse_checked(loaded, arch, densities, formats, constraints, homes=homes, options=opts,
                                replay_mode=replay_mode, sample_seed=sample_seed, strict=strict)


def save_schedule(result: SolveResult | ChainResult | Schedule | FusedSchedule, path: str | Path) -> None:
    """Write a schedule file (atomically) that ``mapsearch replay --check`` and :func:`replay` read.

    A chain result writes its best option in the format that option needs
    (:mod:`mapsearch.solve.chain_files`).
    """
    if isinstance(result, ChainResult):
        save_best(result, path)
    elif isinstance(result, FusedSchedule):
        save_fused(result, path)
    else:
        save_schedule_file(result.schedule if isinstance(result, SolveResult) else result, path)


# --------------------------------------------------------------------------
# Replaying.
# --------------------------------------------------------------------------


@overload
def replay(schedule: ScheduleSource, mode: str = "count") -> ReplayResult: ...


@overload
def replay(schedule: UnfusedChain | ChainPlan, mode: str = "count") -> UnfusedResult: ...


@overload
def replay(schedule: ChainResult, mode: str = "count") -> ChainReplay: ...


def replay(schedule: ScheduleSource | UnfusedChain | ChainPlan | ChainResult,
           mode: str = "count") -> ReplayResult | UnfusedResult | ChainReplay:
    """Run a schedule in the explicit-cache simulator and count what it moves and takes.

    ``schedule``: a :class:`Schedule` or :class:`FusedSchedule`, a schedule
    file, or a solve's result (its schedule). ``mode``: ``count`` (the
    vectorised walk, default), ``data`` (also computes with real values and
    checks them against numpy), ``events`` (every load, store and run in the
    simulator). A chain's result gives the replay checks of its best option.
    An unfused chain (:class:`~mapsearch.schedule.unfused_json.UnfusedChain`,
    or its file) replays each stage alone and gives an ``UnfusedResult``:
    ``stages`` one result per einsum, ``time`` the sum of their times; a
    partly fused chain's plan (:class:`~mapsearch.schedule.unfused_json.ChainPlan`)
    likewise, one result per group.
    Compare with the prediction: :func:`compare`.
    """
    if isinstance(schedule, ChainResult):
        return replay_checks(schedule, mode)
    if isinstance(schedule, SolveResult):
        schedule = schedule.schedule
    if isinstance(schedule, (str, Path)):
        schedule = load_schedule_file(schedule)
    if isinstance(schedule, (UnfusedChain, ChainPlan)):
        return replay_stages(schedule.graph, schedule.stages, mode)
    return replay_schedule(schedule, mode=mode)


def report(result: SolveResult) -> str:
    """The readable report of a solve, as ``mapsearch solve`` prints it: status, bound and gap, the loop nest,
    predicted and replayed figures side by side, what binds and the slack of the rest."""
    replayed = result.replayed if result.replayed is not None else replay_schedule(result.schedule, mode="count")
    return render_solve_text(result, replayed)


def compare(predicted: Figures, replayed: Figures | ReplayResult) -> list[tuple[str, object, object]]:
    """``(field, predicted, replayed)`` for every figure that differs; empty when the replay agrees."""
    return differences(predicted, replayed.figures if isinstance(replayed, ReplayResult) else replayed)
