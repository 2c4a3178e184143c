"""``mapsearch solve``: load, solve, replay, compare, report, and write the schedule.

A chain or TeAAL workload file goes to :mod:`mapsearch.solve.cli_chain`
(every fusion level and the unfused baseline).

Every solved schedule is replayed in the simulator (``--replay-mode``, default
``count``) before anything is reported as a result. If the replay disagrees
with the solver's prediction in any field, each differing field goes to
stderr under ``REPLAY MISMATCH``, the exit code is 1, and no schedule file is
written: a schedule file always carries figures the simulator reproduced.

With ``--density T=SPEC`` or a compressed ``--format T=FMT`` (single einsums
only) the search uses the sparse density model instead
(:func:`mapsearch.sparse.solve.solve_sparse`: expected time, then expected
words, of the tensors' nonzeros and metadata). The schedule's dense figures
are replayed as above, and its sparse words are replayed on inputs sampled
from their densities (``--sparse-seed``; ``--no-sparse-replay`` skips it):
with only fixed-structured densities (``NofM``, ``Banded``, ``Dense``) the
replayed payload and metadata words of every link and tensor, and the
effectual ops, must equal the model's, else ``REPLAY MISMATCH`` and exit 1;
under ``Uniform`` the report gives each link's relative error.

Exit codes: 0 ok; 1 replay mismatch or data check failed; 2 bad input or an
infeasible problem (one line that names the conflicting requirements); 3 no
schedule found within the time limit (one line with the best bound).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from fractions import Fraction
from typing import Any

from mapsearch.errors import InfeasibleError, MapsearchError, SolverTimeout
from mapsearch.model.problem import Problem
from mapsearch.report.solve_report import render_solve_text, solve_report_dict
from mapsearch.schedule.figures import differences
from mapsearch.schedule.json_io import save_schedule
from mapsearch.sim.errors import SimulatorError
from mapsearch.solve.constraints import Constraints, check_constraints, load_constraints
from mapsearch.solve.options import DRAM_ROWS, OBJECTIVES, SolveOptions
from mapsearch.report.dram_rows import dram_rows_check
from mapsearch.solve.run import solve
from mapsearch.spec.architecture import Architecture, as_fraction
from mapsearch.spec.load import load_problem

log = logging.getLogger(__name__)

REPLAY_MODES = ("count", "events", "data")
EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_TIMEOUT = 0, 1, 2, 3


class UsageError(MapsearchError):
    """A command-line value out of range; one line naming the option."""

    def __init__(self, option: str, expected: str, got: object):
        super().__init__(f"{option}: expected {expected}, got {got!r}")


# --------------------------------------------------------------------------
# Arguments -> options.
# --------------------------------------------------------------------------


def _fraction(option: str, text: object, expected: str) -> Fraction:
    try:
        return as_fraction(text)
    except (TypeError, ValueError, ZeroDivisionError):
        raise UsageError(option, expected, text) from None


def parse_link_energy(items: list[str] | None, arch: Architecture) -> tuple[tuple[str, Fraction], ...]:
    """``['L1->L0=1/2', ...]`` -> ``(('L1->L0', Fraction(1, 2)), ...)``; names must be links of ``arch``."""
    out: dict[str, Fraction] = {}
    for item in items or ():
        name, eq, cost = str(item).rpartition("=")
        if not eq or not name:
            raise UsageError("--link-energy", "NAME=COST, e.g. 'L1->L0=2'", item)
        if name not in arch.link_names:
            raise UsageError("--link-energy", f"a link of {arch.name} {list(arch.link_names)}", name)
        value = _fraction("--link-energy", cost, "a cost >= 0 (int, decimal or 'a/b')")
        if value < 0:
            raise UsageError("--link-energy", "a cost >= 0 (int, decimal or 'a/b')", cost)
        out[name] = value
    return tuple(out.items())


def options_from_args(args: argparse.Namespace, arch: Architecture) -> SolveOptions:
    """The :class:`SolveOptions` the arguments ask for; :class:`UsageError` names a bad one."""
    objective = _objective(args)
    kwargs: dict[str, Any] = {"objective": objective}
    if getattr(args, "time_limit", None) is not None:
        if not args.time_limit > 0:
            raise UsageError("--time-limit", "seconds > 0", args.time_limit)
        kwargs["time_limit"] = float(args.time_limit)
    if getattr(args, "work_limit", None) is not None:
        if not args.work_limit > 0:
            raise UsageError("--work-limit", "deterministic seconds > 0", args.work_limit)
        kwargs["work_limit"] = float(args.work_limit)
    if getattr(args, "min_utilization", None) is not None:
        u = _fraction("--min-utilization", args.min_utilization, "a number in (0, 1]")
        if not 0 < u <= 1:
            raise UsageError("--min-utilization", "a number in (0, 1]", args.min_utilization)
        kwargs["min_utilization"] = u
    if getattr(args, "workers", None) is not None:
        if args.workers < 1:
            raise UsageError("--workers", "an int >= 1", args.workers)
        kwargs["workers"] = args.workers
    if getattr(args, "seed", None) is not None:
        kwargs["seed"] = args.seed
    kwargs["link_energy"] = parse_link_energy(getattr(args, "link_energy", None), arch)
    if getattr(args, "op_energy", None) is not None:
        x = _fraction("--op-energy", args.op_energy, "a number >= 0 (int, decimal or 'a/b')")
        if x < 0:
            raise UsageError("--op-energy", "a number >= 0 (int, decimal or 'a/b')", args.op_energy)
        kwargs["op_energy"] = x
    rows = getattr(args, "dram_rows", None)
    if rows is not None:
        if rows not in DRAM_ROWS:
            raise UsageError("--dram-rows", "one of " + ", ".join(DRAM_ROWS), rows)
        kwargs["dram_rows"] = rows
    if getattr(args, "max_dram_rows", None) is not None:
        if args.max_dram_rows < 0:
            raise UsageError("--max-dram-rows", "an int >= 0", args.max_dram_rows)
        kwargs["max_dram_rows"] = args.max_dram_rows
    if getattr(args, "no_placement", False):
        kwargs["placement"] = False
    if objective != "energy" and (kwargs["link_energy"] or "op_energy" in kwargs):
        print("mapsearch: warning: --link-energy and --op-energy only apply to --objective energy; ignored", file=sys.stderr)
    return SolveOptions(**kwargs)


def _objective(args: argparse.Namespace) -> str:
    objective = getattr(args, "objective", None) or "time"
    if objective not in OBJECTIVES:
        raise UsageError("--objective", "one of " + ", ".join(OBJECTIVES), objective)
    return objective


def _replay_mode(args: argparse.Namespace) -> str:
    mode = getattr(args, "replay_mode", None) or "count"
    if mode not in REPLAY_MODES:
        raise UsageError("--replay-mode", "one of " + ", ".join(REPLAY_MODES), mode)
    return mode


def _constraints(args: argparse.Namespace, problem: Problem) -> Constraints:
    path = getattr(args, "constraints", None)
    if not path:
        return Constraints()
    c = load_constraints(path)
    check_constraints(c, problem.workload, problem.architecture, str(path))
    return c


def _multi_path_tree(path: str):
    """The tree when ``path`` is a tree file with several compute paths, else None."""
    from pathlib import Path

    from mapsearch.spec.tree import flatten, is_tree_file, load_tree

    if not Path(path).is_file() or not is_tree_file(path):
        return None
    tree = load_tree(path)
    return tree if len(flatten(tree)) > 1 else None


def _solve_tree(args: argparse.Namespace, tree) -> tuple:
    """Solve on every compute path of ``tree``; the best one is the result, the others are listed."""
    from mapsearch.spec.load import load_homes, load_workload

    workload = load_workload(args.workload)
    homes = load_homes(args.workload)
    constraints = load_constraints(args.constraints) if getattr(args, "constraints", None) else None
    return solve_paths(args, tree, workload, homes, constraints)


def solve_paths(args: argparse.Namespace, tree, workload, homes, constraints) -> tuple:
    """``(best SolveResult, options, lines)``: every compute path of ``tree`` solved, one line per path."""
    from mapsearch.spec.tree import flatten, path_architecture, solve_tree

    first = path_architecture(flatten(tree)[0], workload)
    options = options_from_args(args, first)
    best, result, outcomes = solve_tree(tree, workload, homes, options, constraints)
    lines = [f"compute paths of {args.architecture}:"]
    for o in outcomes:
        if o.result is None:
            lines.append(f"  {o.compute_name}: skipped ({o.skipped})")
        else:
            f = o.result.schedule.predicted
            mark = "  <- chosen" if o.compute_name == best else ""
            lines.append(f"  {o.compute_name}: {o.result.status}, time {_plain(f.time)}, words {f.words_total}{mark}")
    return result, options, lines


def _run_solver(args: argparse.Namespace, attempt):
    """``attempt()``, or ``EXIT_TIMEOUT`` after one line when the solver ran out of time.

    An infeasible problem is re-raised with the requirements that conflict
    (:func:`_with_core`); the CLI prints it as one line and exits 2.
    """
    try:
        return attempt()
    except InfeasibleError as e:
        raise _with_core(e) from e
    except SolverTimeout as e:
        if getattr(args, "debug", False):
            raise
        print(f"mapsearch: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_TIMEOUT


def _print_mismatches(what: str, mismatches, said: str = "predicted") -> None:
    """One line saying ``what`` and that nothing is written, then one line per ``(field, model, replayed)``."""
    print(f"mapsearch: REPLAY MISMATCH: {what} in {len(mismatches)} field(s); the schedule is not written", file=sys.stderr)
    for field, model, replayed_value in mismatches:
        print(f"mapsearch: REPLAY MISMATCH in {field}: {said} {_plain(model)}, replayed {_plain(replayed_value)}",
              file=sys.stderr)


def _data_check_failed(replayed, whose: str) -> bool:
    """True (after one line) when a data-mode replay's output differs from the NumPy reference."""
    if replayed.data_ok is not False:
        return False
    err = "" if replayed.max_abs_error is None else f" (max abs error {replayed.max_abs_error:.3g})"
    print(f"mapsearch: data check failed: the {whose} output differs from the reference{err}; "
          "the schedule is not written", file=sys.stderr)
    return True


def _replay_or_exit(args: argparse.Namespace, schedule, mode: str):
    """The simulator's replay of ``schedule``, or ``EXIT_MISMATCH`` after one line when it fails there."""
    from mapsearch.sim.replay import replay

    try:
        return replay(schedule, mode=mode)
    except SimulatorError as e:
        print(f"mapsearch: REPLAY MISMATCH: the solved schedule fails in the simulator ({mode} mode): "
              f"{' '.join(str(e).split())}", file=sys.stderr)
        if getattr(args, "debug", False):
            raise
        return EXIT_MISMATCH


def _with_core(e: InfeasibleError) -> InfeasibleError:
    """The error, its message naming every requirement of the core."""
    message = " ".join(str(e).split())
    missing = [name for name in e.core if name not in message]
    if missing or not e.core:
        message += f" (conflicting requirements: {', '.join(e.core) if e.core else 'none isolated'})"
    return InfeasibleError(message, e.core)


def _plain(value: object) -> str:
    if isinstance(value, Fraction):
        return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_plain(v) for v in value) + ")"
    return str(value)


def _with_dram_layouts(args: argparse.Namespace, options: SolveOptions, workload, architecture) -> SolveOptions:
    """``--dram-layouts FILE``: the ``layouts:`` mapping of a trace options file, fixed for the solve."""
    from dataclasses import replace

    path = getattr(args, "dram_layouts", None)
    if not path:
        return options
    from mapsearch.dram.options import layout_specs
    from mapsearch.spec.load import read_yaml

    data = read_yaml(path)
    specs = layout_specs(workload, data.get("layouts") if isinstance(data, dict) else data, str(path))
    if options.dram_rows == "off" and options.max_dram_rows is None:
        options = replace(options, dram_rows="tiebreak")  # layouts only matter to the row model
    return replace(options, dram_layouts=tuple(specs.items()))


# --------------------------------------------------------------------------
# The command.
# --------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Run ``mapsearch solve``; returns the exit code (errors of bad input raise :class:`MapsearchError`)."""
    from mapsearch.solve.cli_chain import is_chain_file
    from mapsearch.solve.cli_foreign import peer_format, solve_foreign, uses_foreign

    peer = peer_format(args)  # --format NAME names a peer's format; --format T=FMT a sparse tensor's
    foreign = uses_foreign(args, peer)
    flags = _sparse_flags(args)
    if foreign and flags:
        raise MapsearchError(f"{'/'.join(flags)}: the sparse solve takes mapsearch's own workload files")
    if foreign:
        from mapsearch.solve.cli_foreign import foreign_chain

        chain = foreign_chain(args, peer)
        if chain is not None:
            from mapsearch.solve import cli_chain

            return cli_chain.run(args, chain)
    if not foreign and is_chain_file(args.workload):  # a chain or a TeAAL file (load_workload_any makes a graph of it)
        if flags:
            raise MapsearchError(f"{'/'.join(flags)}: the sparse solve takes a single-einsum workload; "
                                 f"{args.workload} is a chain or TeAAL file")
        from mapsearch.solve import cli_chain

        return cli_chain.run(args)
    _objective(args)  # a bad objective fails before any file is read
    mode = _replay_mode(args)
    if flags:
        code = _run_sparse(args, mode, flags)
        if code is not None:
            return code
    else:
        _warn_sparse_only(args)

    def attempt() -> tuple:
        if foreign:
            return solve_foreign(args, peer)
        tree = _multi_path_tree(args.architecture)
        if tree is not None:
            return _solve_tree(args, tree)
        workload, architecture, homes = load_problem(args.workload, args.architecture)
        problem = Problem(workload, architecture, tuple(homes.items()))
        constraints = _constraints(args, problem)
        options = options_from_args(args, architecture)
        options = _with_dram_layouts(args, options, workload, architecture)
        return solve(problem, constraints, options), options, ""

    solved = _run_solver(args, attempt)
    if isinstance(solved, int):
        return solved
    result, options, paths_note = solved

    schedule = result.schedule
    if schedule.predicted is None:
        raise MapsearchError("the solver returned a schedule without predicted figures; nothing to check the replay against")

    replayed = _replay_or_exit(args, schedule, mode)
    if isinstance(replayed, int):
        return replayed

    mismatches = differences(schedule.predicted, replayed.figures)
    rows = dram_rows_check(schedule)
    if rows is not None:
        mismatches += rows.mismatches
    if args.json:
        report = solve_report_dict(result, replayed, mode=mode)
        if paths_note:
            report["compute_paths"] = paths_note
        if rows is not None:
            report["dram_rows"] = rows.to_dict()
        print(json.dumps(report, indent=2))
    else:
        if paths_note:
            print("\n".join(paths_note))
        print(render_solve_text(result, replayed, mode=mode), end="")
        if rows is not None:
            print(rows.text())

    code = EXIT_OK
    if mismatches:
        _print_mismatches(f"the {mode} replay disagrees with the solver's prediction", mismatches)
        code = EXIT_MISMATCH
    if _data_check_failed(replayed, "replayed"):
        code = EXIT_MISMATCH
    if code != EXIT_OK:
        return code

    if result.status == "FEASIBLE":
        print(f"mapsearch: warning: FEASIBLE, not proven optimal (time limit {options.time_limit:g} s): "
              f"{result.phases[-1].name} {_plain(result.objective_value)}, bound {_plain(result.objective_bound)}, "
              f"gap {result.gap:.2%}", file=sys.stderr)
    if args.output:
        save_schedule(schedule, args.output)
        log.info("wrote %s", args.output)
    return EXIT_OK


# --------------------------------------------------------------------------
# The sparse solve: --density / --format (mapsearch.sparse.solve).
# --------------------------------------------------------------------------

SPARSE_FIELDS = ("payload_down", "meta_down", "payload_up", "meta_up")
_DENSE_ONLY = (("min_utilization", "--min-utilization"), ("dram_rows", "--dram-rows"),
               ("max_dram_rows", "--max-dram-rows"), ("dram_layouts", "--dram-layouts"))


def _sparse_flags(args: argparse.Namespace) -> list[str]:
    """The sparse options given (``--density``, ``--format``), in that order."""
    return [flag for flag, dest in (("--density", "density"), ("--format", "sparse_format")) if getattr(args, dest, None)]


def _warn_sparse_only(args: argparse.Namespace) -> None:
    if getattr(args, "sparse_seed", None) is not None or getattr(args, "no_sparse_replay", False):
        print("mapsearch: warning: --sparse-seed and --no-sparse-replay only apply with --density or a compressed "
              "--format; ignored", file=sys.stderr)


def _refuse_dense_only(args: argparse.Namespace) -> None:
    """One-line errors for the options the sparse solve does not take (solve_sparse refuses them)."""
    objective = _objective(args)
    if objective not in ("time", "words"):
        raise UsageError("--objective", "time or words with --density/--format (the sparse solve minimises "
                         "expected time or expected words)", objective)
    for dest, flag in _DENSE_ONLY:
        value = getattr(args, dest, None)
        if value is not None and not (dest == "dram_rows" and value == "off"):
            raise MapsearchError(f"{flag}: a dense-model option; the sparse solve (--density/--format) takes "
                                 "--objective time|words, -c, --time-limit, --work-limit, --workers and --seed")


def sparse_mismatches(result: Any, replayed: Any) -> list[tuple[str, float, int]]:
    """``(field, expected, replayed)`` per link, tensor and word kind, and effectual ops, that differ.

    For fixed-structured densities the model is exact: equal up to the
    solver's stated tolerance (``result.tolerance``, relative; about 1e-9).
    """
    tol = result.tolerance
    out = []

    def check(field: str, a: float, b: int) -> None:
        if abs(a - b) > tol * max(abs(a), abs(b), 1.0):
            out.append((field, a, b))

    for mine, theirs in zip(result.links, replayed.links):
        for tm in mine.tensors:
            tr = theirs.tensor(tm.tensor)
            for name in SPARSE_FIELDS:
                check(f"{mine.name} {tm.tensor} {name}", getattr(tm, name), getattr(tr, name))
    check("effectual ops", result.effectual_ops, replayed.effectual_ops)
    return out


def _fmt_words(x: float) -> str:
    """``1,262`` for a whole number of words, ``1,261.85`` otherwise."""
    return f"{round(x):,}" if abs(x - round(x)) <= 1e-9 * max(1.0, abs(x)) else f"{x:,.2f}"


def _rel(replayed: float, expected: float) -> float | None:
    return None if expected == 0 else (replayed - expected) / expected


def _bound(links: Any, compute_time: float) -> str:
    slowest = max(links, key=lambda l: float(l.time), default=None)
    return "compute" if slowest is None or float(slowest.time) <= compute_time else slowest.name


def sparse_report_dict(result: Any, densities: dict, formats: dict, dense_replay: Any, dense_mismatches: list,
                       sparse_replay: Any, mismatches: list, seed: int, mode: str, nonzeros: dict) -> dict[str, Any]:
    """The ``--json`` report of a sparse solve (keys in docs; figures are JSON numbers, expected ones floats)."""
    from mapsearch.report.json_report import _number
    from mapsearch.schedule.json_io import schedule_to_dict
    from mapsearch.sparse.cli_args import all_exact, density_text

    s = result.schedule
    w = s.workload
    dense = result.dense
    dense_links = {l.name: l for l in dense.links}

    def links(ls) -> list[dict[str, Any]]:
        return [{"name": l.name, "words_down": l.words_down, "words_up": l.words_up, "words": l.words,
                 "metadata": l.metadata, "time": float(l.time),
                 "tensors": {t.tensor: {f: getattr(t, f) for f in SPARSE_FIELDS} for t in l.tensors}} for l in ls]

    expected_links = links(result.links)
    for row in expected_links:
        d = dense_links[row["name"]]
        row["dense_words"], row["dense_time"] = d.words, _number(d.time)
    out: dict[str, Any] = {
        "sparse": True,
        "status": result.status,
        "family_restrictions": list(result.family_restrictions),
        "objective": result.objective,
        "objective_value": _number(result.phases[-1].value),
        "objective_bound": _number(result.phases[-1].bound),
        "gap": max(p.gap for p in result.phases),
        "solve_seconds": float(result.solve_seconds),
        "phases": [{"name": p.name, "status": p.status, "value": _number(p.value), "bound": _number(p.bound),
                    "seconds": float(p.seconds), "gap": float(p.gap)} for p in result.phases],
        "densities": {t.name: density_text(densities.get(t.name)) for t in w.einsum.inputs},
        "formats": {t: (formats[t].text() if t in formats else "dense") for t in w.tensor_names},
        "exact_densities": all_exact(w, densities),
        "tolerance": float(result.tolerance),
        "links": expected_links,
        "words_total": result.words_total,
        "effectual_ops": result.effectual_ops,
        "macs": w.macs,
        "compute_time": result.compute_time,
        "time": result.time,
        "bound": _bound(result.links, result.compute_time),
        "dense": {"words_total": dense.words_total, "op_calls": dense.op_calls, "compute_time": _number(dense.compute_time),
                  "time": _number(dense.time)},
        "dense_replay": {"mode": mode, "predicted_equals_replayed": not dense_mismatches, "data_ok": dense_replay.data_ok,
                         "mismatches": [{"field": f, "predicted": _plain(a), "replayed": _plain(b)}
                                        for f, a, b in dense_mismatches]},
        "replay": None,
        "schedule": schedule_to_dict(s),
    }
    if sparse_replay is not None:
        r = sparse_replay
        out["replay"] = {
            "seed": seed,
            "nonzeros": dict(nonzeros),
            "links": links(r.links),
            "relative_error": {lm.name: _rel(lr.words, lm.words) for lm, lr in zip(result.links, r.links)},
            "words_total": r.words_total,
            "effectual_ops": r.effectual_ops,
            "compute_time": float(r.compute_time),
            "time": float(r.time),
            "data_ok": r.data_ok,
            "max_abs_error": r.max_abs_error,
            "equals_expected": not mismatches if out["exact_densities"] else None,
            "mismatches": [{"field": f, "expected": a, "replayed": b} for f, a, b in mismatches],
        }
    return out


def render_sparse_text(result: Any, densities: dict, formats: dict, dense_replay: Any, dense_mismatches: list,
                       sparse_replay: Any, mismatches: list, seed: int | None, mode: str, nonzeros: dict) -> str:
    """The readable report of a sparse solve: status, schedule, expected words per link, the replays."""
    from mapsearch.report.loopnest import loop_nest_lines
    from mapsearch.report.solve_report import BAD, OK, problem_line
    from mapsearch.report.text import _table
    from mapsearch.sparse.cli_args import all_exact, density_text

    s = result.schedule
    w, arch = s.workload, s.architecture
    exact = all_exact(w, densities)
    fmt = {t: (formats[t].text() if t in formats else "dense") for t in w.tensor_names}
    lines = [problem_line(w, arch)]
    ins = "; ".join(f"{t.name} {density_text(densities.get(t.name))} stored {fmt[t.name]}" for t in w.einsum.inputs)
    out = w.einsum.output.name
    lines.append(f"inputs: {ins}; output {out} stored {fmt[out]}")
    lines.append(f"objective: expected {result.objective}" + (", then expected words" if result.objective == "time" else "")
                 + " (density model; tiles must fit as if dense)")
    last = result.phases[-1]
    if result.status == "FEASIBLE":
        lines.append(f"*** FEASIBLE, NOT PROVEN OPTIMAL: the time limit stopped the search. Best {last.name} found "
                     f"{float(last.value):,.6g}, bound {float(last.bound):,.6g}, gap {last.gap:.2%} ***")
    unit = lambda name: "clocks" if name.endswith("time") else "words"  # noqa: E731
    phases = ", then ".join(f"{p.name} {float(p.value):,.6g} {unit(p.name)} (bound {float(p.bound):,.6g})"
                            for p in result.phases)
    lines.append(f"status: {result.status}: {phases}; solved in {result.solve_seconds:.3f} s")
    lines.append("phases: " + "; ".join(f"{p.name} {p.status} in {p.seconds:.3f} s" for p in result.phases))
    lines += [f"family restriction: {r}" for r in result.family_restrictions]
    lines += ["", "schedule (loops outer -> inner):"] + [f"  {l}" for l in loop_nest_lines(s)]

    kind = ("exact: every input's density is fixed-structure (NofM, Banded or dense)" if exact else
            "expectations over data drawn from the Uniform densities")
    lines += ["", f"expected words per link ({kind}), and the same schedule's dense words:"]
    rows = [["link", "tensor", "payload down", "meta down", "payload up", "meta up", "words", "dense words", "time (clocks)",
             "dense time"]]
    dense_links = {l.name: l for l in result.dense.links}
    for l in result.links:
        d = dense_links[l.name]
        dt = {t.tensor: t.words_down + t.words_up for t in d.tensors}
        for i, t in enumerate(l.tensors):
            rows.append([l.name if i == 0 else "", t.tensor] + [_fmt_words(getattr(t, f)) for f in SPARSE_FIELDS]
                        + [_fmt_words(t.words), f"{dt.get(t.tensor, 0):,}", "", ""])
        rows.append(["", "total", "", "", "", "", _fmt_words(l.words), f"{d.words:,}", f"{float(l.time):,.6g}",
                     f"{float(d.time):,.6g}"])
    lines += [f"  {r}" for r in _table(rows, {2, 3, 4, 5, 6, 7, 8, 9})]
    dense = result.dense
    share = result.effectual_ops / w.macs if w.macs else 0.0
    lines.append(f"effectual ops: {_fmt_words(result.effectual_ops)} {'exact' if exact else 'expected'} of "
                 f"{w.macs:,} dense MACs ({share:.2%}); compute time {result.compute_time:,.6g} clocks")
    lines.append(f"time: {result.time:,.6g} clocks {'exact' if exact else 'expected'} (bound by "
                 f"{_bound(result.links, result.compute_time)}); the same schedule on dense data: "
                 f"{float(dense.time):,.6g} clocks, {dense.words_total:,} words")

    if sparse_replay is None:
        lines += ["", "sparse replay on sampled data: skipped (--no-sparse-replay)"]
    else:
        r = sparse_replay
        nnz = ", ".join(f"{t} {n:,}" for t, n in nonzeros.items())
        head = "must equal the model" if exact else "relative error of the expectation"
        lines += ["", f"replayed on sampled data (seed {seed}; nonzeros {nnz}; {head}):"]
        rows = [["", "expected", "replayed", "error" if not exact else ""]]
        for lm, lr in zip(result.links, r.links):
            err = _rel(lr.words, lm.words)
            bad = any(f.startswith(lm.name + " ") for f, _, _ in mismatches)
            mark = (BAD if bad else OK) if exact else ("-" if err is None else f"{err:+.2%}")
            rows.append([f"{lm.name} words", _fmt_words(lm.words), f"{lr.words:,}", mark])
            rows.append(["  of which metadata", _fmt_words(lm.metadata), f"{lr.metadata:,}", ""])
        err = _rel(r.effectual_ops, result.effectual_ops)
        mark = (BAD if any(f == "effectual ops" for f, _, _ in mismatches) else OK) if exact else \
            ("-" if err is None else f"{err:+.2%}")
        rows.append(["effectual ops", _fmt_words(result.effectual_ops), f"{r.effectual_ops:,}", mark])
        rows.append(["time (clocks)", f"{result.time:,.6g}", f"{float(r.time):,.6g}", ""])
        lines += [f"  {x}" for x in _table(rows, {1, 2, 3})]
        if exact:
            lines.append(f"  REPLAY MISMATCH in {len(mismatches)} field(s): " + ", ".join(f for f, _, _ in mismatches)
                         if mismatches else "  the replay equals the model in every link, tensor and word kind")
        err = "" if r.max_abs_error is None else f" (max abs error {r.max_abs_error:.3g})"
        lines.append(f"  data check: {'ok' if r.data_ok else 'FAILED'}{err}")
    agree = (f"REPLAY MISMATCH in {len(dense_mismatches)} field(s)" if dense_mismatches
             else "the replay agrees with the model's dense figures")
    lines.append(f"dense figures of the schedule ({mode} replay): {agree}")
    if dense_replay.data_ok is not None:
        lines.append(f"  data check: {'ok' if dense_replay.data_ok else 'FAILED'}")
    return "\n".join(lines) + "\n"


def _run_sparse(args: argparse.Namespace, mode: str, flags: list[str]) -> int | None:
    """``solve`` with the density model; None when the flags ask for nothing sparse (only dense formats)."""
    from mapsearch.sparse.cli_args import all_exact, is_sparse, parse_densities, parse_formats
    from mapsearch.sparse.density import sample_inputs
    from mapsearch.sparse.replay import replay_sparse
    from mapsearch.sparse.solve import solve_sparse

    if _multi_path_tree(args.architecture) is not None:
        raise MapsearchError(f"{'/'.join(flags)}: the sparse solve takes an architecture with one compute path; "
                             f"{args.architecture} has several")
    workload, architecture, homes = load_problem(args.workload, args.architecture)
    densities = parse_densities(getattr(args, "density", None), workload)
    formats = parse_formats(getattr(args, "sparse_format", None), workload)
    if not is_sparse(densities, formats):
        _warn_sparse_only(args)
        return None  # only uncompressed formats: the dense solve is the same search
    _refuse_dense_only(args)
    seed = getattr(args, "sparse_seed", None) or 0
    if seed < 0:
        raise UsageError("--sparse-seed", "an int >= 0", seed)
    problem = Problem(workload, architecture, tuple(homes.items()))
    constraints = _constraints(args, problem)
    options = options_from_args(args, architecture)
    out = workload.einsum.output.name
    result = _run_solver(args, lambda: solve_sparse(problem, {t: d for t, d in densities.items() if t != out}, formats,
                                                    constraints, options, output_density=densities.get(out)))
    if isinstance(result, int):
        return result

    schedule = result.schedule
    # The dense figures go into the schedule file: the simulator reproduces them, as for a dense solve.
    dense_replay = _replay_or_exit(args, schedule, mode)
    if isinstance(dense_replay, int):
        return dense_replay
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

    code = EXIT_OK
    if dense_mismatches:
        _print_mismatches(f"the {mode} replay disagrees with the solver's dense figures", dense_mismatches)
        code = EXIT_MISMATCH
    if mismatches:
        _print_mismatches(f"the sparse replay on sampled data (seed {seed}) differs from the exact model", mismatches,
                          said="expected")
        code = EXIT_MISMATCH
    for name, rep in (("dense", dense_replay), ("sparse", sparse_replay)):
        if rep is not None and _data_check_failed(rep, f"{name} replay's"):
            code = EXIT_MISMATCH
    if code != EXIT_OK:
        return code

    if result.status == "FEASIBLE":
        last = result.phases[-1]
        print(f"mapsearch: warning: FEASIBLE, not proven optimal (time limit {options.time_limit:g} s): "
              f"{last.name} {float(last.value):.6g}, bound {float(last.bound):.6g}, gap {last.gap:.2%}", file=sys.stderr)
    if args.output:
        save_schedule(schedule, args.output)
        log.info("wrote %s", args.output)
    return EXIT_OK
