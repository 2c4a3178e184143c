"""The report of a solve: what was solved, how well, the schedule, and its replay.

:func:`render_solve_text` gives the readable report printed by ``mapsearch
solve``; :func:`solve_report_dict` the JSON-ready one (``--json``). Both take
the :class:`~mapsearch.solve.run.SolveResult` and the
:class:`~mapsearch.sim.counters.ReplayResult` of its schedule, and only
build text or data: the CLI prints.

The text report has, in order: the problem, the status (a FEASIBLE result,
stopped by the time limit, says so in capitals with its bound and gap), the
phases, the search space, the schedule as a loop nest (spatial loops
marked as such) and its spatial fanout per meshed level, the predicted and
replayed figures side by side with a check mark per row, and what binds.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Iterable, Sequence

from mapsearch.report.energy import energy_dict, energy_lines, schedule_energy
from mapsearch.report.json_report import _exact, _number, report_dict
from mapsearch.report.loopnest import loop_nest_lines
from mapsearch.report.spatial import spatial_dict, spatial_lines
from mapsearch.report.text import _table, bottleneck, format_exact
from mapsearch.schedule.figures import Figures, differences
from mapsearch.schedule.json_io import schedule_to_dict
from mapsearch.schedule.schedule import Schedule
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import Workload

__all__ = ["render_solve_text", "solve_report_dict", "comparison_rows", "loop_nest_lines"]

_UNITS = {"time": "clocks", "words": "words", "energy": "energy units"}
OK, BAD = "\u2713", "\u2717"  # check mark, ballot x


def _percent(x: Fraction | float) -> str:
    return f"{float(x) * 100:.2f}%"


def _big(n: int) -> str:
    """``1,234`` up to a million, then ``about 1.2e+13``."""
    return f"{n:,}" if n < 10**6 else f"about {n:.2e}"


# --------------------------------------------------------------------------
# Pieces shared by both reports.
# --------------------------------------------------------------------------


def problem_line(w: Workload, arch: Architecture) -> str:
    extents = " ".join(f"{d}={e}" for d, e in w.extents)
    levels = ", ".join(f"{lv.name} {'unbounded' if lv.capacity is None else f'{lv.capacity} words'}" for lv in arch.levels)
    return f"{w.name} ({w.einsum.text()}; {extents}; {w.macs:,} MACs) on {arch.name} (levels outermost first: {levels})"


def status_lines(result: Any) -> list[str]:
    """The status, the objective's value, bound, gap and time; a loud banner when not proven optimal."""
    unit = _UNITS.get(result.objective, "")
    last = result.phases[-1]
    lines = []
    restrictions = getattr(result, "family_restrictions", ())
    if result.status == "OPTIMAL_IN_FAMILY":
        lines.append("*** OPTIMAL IN THE SEARCHED FAMILY ONLY: the search left out part of the contract's family; "
                     "a better schedule outside it may exist ***")
    elif result.status != "OPTIMAL":
        why = "Ctrl-C stopped the search" if getattr(result, "interrupted", False) else "the time limit stopped the search"
        lines.append(
            f"*** FEASIBLE, NOT PROVEN OPTIMAL: {why}. Best {last.name} found "
            f"{format_exact(result.objective_value)}, {_bound_text(result.objective_bound)}, "
            f"gap {_percent(result.gap)} ***"
        )
    if result.objective == "time" and len(result.phases) == 1:
        lines.append("*** WORDS NOT MINIMISED: the words phase found nothing within the time limit; "
                     "the schedule is the time phase's ***")
    results = ", then ".join(
        f"{p.name} {format_exact(p.value)} {_UNITS.get(p.name, unit)} ({_bound_text(p.bound, p.status == 'OPTIMAL')})"
        for p in result.phases
    )
    lines.append(f"status: {result.status}: {results}; gap {_percent(result.gap)}; solved in {result.solve_seconds:.3f} s")
    phases = "; ".join(f"{p.name} {p.status} in {p.seconds:.3f} s" for p in result.phases)
    lines.append(f"phases: {phases}")
    lines += [f"family restriction: {r}" for r in restrictions]
    return lines


def block_binding_lines(result: Any) -> list[str]:
    """For an op given in GEMM roles: the chosen binding, then each binding's outcome (mapsearch/solve/block_roles.py)."""
    chosen = getattr(result, "block_binding", ())
    if not chosen:
        return []
    block = ", ".join(f"{d}={b}" for d, b in result.schedule.architecture.compute.block)
    outcomes = getattr(result, "block_bindings", ())
    return [f"block binding: {', '.join(f'{r}={d}' for r, d in chosen)} (the op's block: {block}); "
            f"best of {len(outcomes)} binding(s) of its GEMM roles:"] + outcome_lines(
        ((o.binding.text(), o.result, o.skipped) for o in outcomes), result.schedule)


def outcome_lines(rows: Iterable[tuple[str, Any, str | None]], chosen: Schedule,
                  number: Callable[[Any], str] = format_exact) -> list[str]:
    """Per ``(name, result or None, why not)``: ``  NAME: STATUS, time T, words W`` (``  <- chosen`` for the
    result whose schedule is ``chosen``), or ``  NAME: WHY``."""
    lines = []
    for name, result, why in rows:
        if result is None:
            lines.append(f"  {name}: {why}")
        else:
            f = result.schedule.predicted
            mark = "  <- chosen" if result.schedule is chosen else ""
            lines.append(f"  {name}: {result.status}, time {number(f.time)}, words {f.words_total}{mark}")
    return lines


def block_binding_dict(result: Any) -> dict[str, Any]:
    """``block_binding`` (role -> dim) and ``block_bindings`` (each binding's floor and outcome); {} without roles."""
    chosen = getattr(result, "block_binding", ())
    if not chosen:
        return {}
    rows = []
    for o in getattr(result, "block_bindings", ()):
        row: dict[str, Any] = {"binding": dict(o.binding.pairs), "floor": _number(o.floor)}
        if o.result is None:
            row["skipped"] = o.skipped
        else:
            f = o.result.schedule.predicted
            row.update({"status": o.result.status, "time": _number(f.time), "words": f.words_total,
                        "chosen": o.result.schedule is result.schedule})
        rows.append(row)
    return {"block_binding": dict(chosen), "block_bindings": rows}


def _bound_text(bound: Any, proven: bool = False) -> str:
    """``bound X``; a bound of 0 on an unproven phase is no bound at all: "no bound yet"."""
    return "no bound yet" if bound == 0 and not proven else f"bound {format_exact(bound)}"


def space_lines(space: Any) -> list[str]:
    if not space.chains and not space.orders_per_level:  # solve/greedy_start.as_unproven
        return ["search space: no schedule found by the search in time; the greedy schedule is returned, unproven "
                "(docs/solver.md, \"A greedy first schedule\")"]
    chains = ", ".join(f"{d} {kept:,} of {raw:,} tile chains" for d, kept, raw in space.chains)
    lines = [
        f"search space: {_big(space.size)} schedules ({chains}; {space.orders_per_level:,} orders x keep choices)",
    ]
    if space.pinned:
        lines.append(f"  pinned: {', '.join(space.pinned)} held whole at every level (filter dimensions of affine axes, or extent 1)")
    if space.reduced:
        fams = "; ".join(f"{d}: {family}" for d, family in space.families)
        lines.append(f"  reduced tile candidates ({fams}); the optimum is proven over this reduced family")
    return lines


def comparison_rows(predicted: Figures, replayed: Figures, arch: Architecture) -> list[tuple[str, str, str, bool]]:
    """``(quantity, predicted, replayed, equal)`` for every reported figure."""
    rows: list[tuple[str, str, str, bool]] = []

    def row(name: str, a: object, b: object, fmt=str) -> None:
        rows.append((name, "-" if a is None else fmt(a), "-" if b is None else fmt(b), a == b))

    replayed_links = {l.name: l for l in replayed.links}
    for link in predicted.links:
        other = replayed_links.get(link.name)
        row(f"{link.name} words down", link.words_down, other and other.words_down)
        row(f"{link.name} words up", link.words_up, other and other.words_up)
        row(f"{link.name} time", link.time, other and other.time, format_exact)
        theirs = {t.tensor: t for t in (other.tensors if other else ())}
        names = [t.tensor for t in link.tensors] + sorted(set(theirs) - {t.tensor for t in link.tensors})
        mine = {t.tensor: t for t in link.tensors}
        for name in names:
            a, b = mine.get(name), theirs.get(name)
            pair = lambda t: (t.words_down, t.words_up) if t is not None else (0, 0)  # noqa: E731
            row(f"  {name} words down/up", pair(a), pair(b), lambda p: f"{p[0]} / {p[1]}")
    for name in sorted(set(replayed_links) - {l.name for l in predicted.links}):
        row(f"{name} (replay only)", None, replayed_links[name].words)
    row("words total", predicted.words_total, replayed.words_total)
    row("op calls", predicted.op_calls, replayed.op_calls)
    row("MACs", predicted.macs, replayed.macs)
    row("compute time", predicted.compute_time, replayed.compute_time, format_exact)
    row("time", predicted.time, replayed.time, format_exact)
    row("utilization", predicted.utilization, replayed.utilization, lambda x: f"{format_exact(x)} = {_percent(x)}")
    row("MAC efficiency", predicted.mac_efficiency, replayed.mac_efficiency, lambda x: f"{format_exact(x)} = {_percent(x)}")
    capacity = {lv.name: lv.capacity for lv in arch.levels}
    occ = dict(replayed.occupancy)
    for level, words in predicted.occupancy:
        cap = capacity.get(level)
        label = f"occupancy {level} (capacity {'unbounded' if cap is None else cap})"
        row(label, words, occ.get(level))
    return rows


def binding_lines(binding: Sequence[Any]) -> list[str]:
    """Tight ones first (what binds), then the slack of the rest."""
    tight = [b for b in binding if b.tight]
    slack = [b for b in binding if not b.tight]
    lines = ["what binds:"]
    lines += [f"  {b.describe()}" for b in tight] or ["  nothing is tight"]
    if slack:
        lines.append("slack of the rest:")
        for b in slack:
            extra = "" if b.kind == "capacity" or b.slack is None else f" (slack {format_exact(b.slack)} clocks)"
            lines.append(f"  {b.describe()}{extra}")
    return lines


def _binding_dict(b: Any) -> dict[str, Any]:
    slack = b.slack
    return {
        "kind": b.kind,
        "name": b.name,
        "value": _number(b.value),
        "limit": None if b.limit is None else _number(b.limit),
        "slack": None if slack is None else _number(slack),
        "tight": bool(b.tight),
        "describe": b.describe(),
    }


# --------------------------------------------------------------------------
# The two reports.
# --------------------------------------------------------------------------


def render_solve_text(result: Any, replayed: Any, *, mode: str | None = None, not_run: str = "") -> str:
    """The readable report of a solve and the replay of its schedule.

    ``replayed`` None: the replay did not run (``not_run`` says why, e.g. a
    Ctrl-C during the check); the report gives the predicted figures alone,
    marked as not checked.
    """
    s: Schedule = result.schedule
    if replayed is None:
        return _render_unchecked(result, mode, not_run)
    arch = s.architecture
    figures = replayed.figures
    lines = _head_lines(result, figures)

    rows = comparison_rows(s.predicted, figures, arch)
    title = "predicted vs replayed" + (f" ({mode} mode)" if mode else "")
    lines += ["", title + ":"]
    table = [["quantity", "predicted", "replayed", ""]] + [[q, a, b, OK if eq else BAD] for q, a, b, eq in rows]
    lines += [f"  {l}" for l in _table(table, {1, 2})]
    mismatches = differences(s.predicted, figures)
    if mismatches:
        lines.append(f"  REPLAY MISMATCH in {len(mismatches)} field(s): " + ", ".join(f for f, _, _ in mismatches))
    else:
        lines.append(f"  the replay agrees with the prediction ({len(rows)} figures); time bound by {bottleneck(figures)}")
    if replayed.data_ok is not None:
        err = "" if replayed.max_abs_error is None else f" (max abs error {replayed.max_abs_error:.3g})"
        lines.append(f"  data check: {'ok' if replayed.data_ok else 'FAILED'}{err}")

    return "\n".join(lines + _tail_lines(result, figures)) + "\n"


def _tail_lines(result: Any, figures: Figures) -> list[str]:
    """What binds, then the energy where the architecture prices it."""
    lines = [""] + binding_lines(result.binding)
    energy = schedule_energy(result.schedule, figures)
    if energy is not None:
        lines += [""] + energy_lines(energy)
    return lines


def _head_lines(result: Any, figures: Figures) -> list[str]:
    """The problem, the status, the search space and the schedule (with its spatial fanout)."""
    s: Schedule = result.schedule
    lines = [problem_line(s.workload, s.architecture)]
    lines.append(f"objective: {result.objective}" + (", then words" if result.objective == "time" else ""))
    lines += status_lines(result)
    lines += block_binding_lines(result)
    lines += space_lines(result.space)
    lines += ["", "schedule (loops outer -> inner):"]
    lines += [f"  {l}" for l in loop_nest_lines(s)]
    spatial = spatial_lines(s, figures)
    if spatial:
        lines += [""] + spatial
    return lines


def _render_unchecked(result: Any, mode: str | None, why: str) -> str:
    """The report of a solve whose replay did not run: the solver's figures, each marked as not checked."""
    s: Schedule = result.schedule
    predicted = s.predicted
    lines = _head_lines(result, predicted)
    rows = comparison_rows(predicted, predicted, s.architecture)
    title = "predicted, not replayed" + (f" (the {mode} replay did not run)" if mode else "")
    lines += ["", title + ":"]
    table = [["quantity", "predicted"]] + [[q, a] for q, a, _, _ in rows]
    lines += [f"  {l}" for l in _table(table, {1})]
    lines.append(f"  REPLAY NOT RUN: {why or 'the replay did not run'}; no figure above is checked")
    return "\n".join(lines + _tail_lines(result, predicted)) + "\n"


def solve_report_dict(result: Any, replayed: Any, *, mode: str | None = None, not_run: str = "") -> dict[str, Any]:
    """The replay report keys of :func:`~mapsearch.report.json_report.report_dict` plus the solve's.

    Added keys: ``status``, ``objective``, ``objective_value``,
    ``objective_bound`` (JSON numbers; exact text under ``exact``), ``gap``,
    ``solve_seconds``, ``phases``, ``binding`` (each ``kind``, ``name``,
    ``value``, ``limit``, ``slack``, ``tight``), ``space``,
    ``predicted_equals_replayed``, ``mismatches``, ``replay_mode``,
    ``schedule`` (the schedule file's dict, predicted figures included) and
    ``spatial`` (per meshed level: axes, splits, parts, idle instances,
    array utilization; :mod:`mapsearch.report.spatial`); for an op given
    in GEMM roles, ``block_binding`` and ``block_bindings``
    (:func:`block_binding_dict`).

    ``replayed`` None: the replay did not run (``not_run`` says why); the
    figure keys are then the predicted figures, ``replayed`` is false,
    ``replay_not_run`` says why and ``predicted_equals_replayed`` is null.
    """
    s: Schedule = result.schedule
    unchecked = replayed is None
    figures = s.predicted if unchecked else replayed.figures
    if unchecked:
        out = report_dict(figures, s.architecture)
    else:
        out = report_dict(figures, s.architecture, data_ok=replayed.data_ok, max_abs_error=replayed.max_abs_error)
    mismatches = [] if unchecked else differences(s.predicted, figures)
    out["exact"]["objective_value"] = _exact(result.objective_value)
    out["exact"]["objective_bound"] = _exact(result.objective_bound)
    space = result.space
    out.update(
        {
            "status": result.status,
            "interrupted": bool(getattr(result, "interrupted", False)),
            "family_restrictions": list(getattr(result, "family_restrictions", ())),
            "objective": result.objective,
            "objective_value": _number(result.objective_value),
            "objective_bound": _number(result.objective_bound),
            "gap": float(result.gap),
            "solve_seconds": float(result.solve_seconds),
            "phases": [
                {"name": p.name, "status": p.status, "value": _number(p.value), "bound": _number(p.bound),
                 "seconds": float(p.seconds), "gap": float(p.gap)}
                for p in result.phases
            ],
            "binding": [_binding_dict(b) for b in result.binding],
            "space": {
                "size": space.size,
                "chains": [{"dim": d, "kept": kept, "enumerated": raw} for d, kept, raw in space.chains],
                "orders_per_level": space.orders_per_level,
                "reduced": bool(space.reduced),
                "pinned": list(space.pinned),
                "families": {d: family for d, family in space.families},
            },
            "replay_mode": mode,
            "predicted_equals_replayed": None if unchecked else not mismatches,
            "mismatches": [{"field": f, "predicted": _plain(a), "replayed": _plain(b)} for f, a, b in mismatches],
            "schedule": schedule_to_dict(s),
            "spatial": spatial_dict(s, figures),
            **block_binding_dict(result),
        }
    )
    if unchecked:
        out["replayed"] = False  # the figure keys above are the solver's, not the replay's
        out["replay_not_run"] = not_run or "the replay did not run"
    energy = schedule_energy(s, figures)
    if energy is not None:
        out["energy"] = energy_dict(energy)
    return out


def _plain(value: object) -> object:
    if isinstance(value, Fraction):
        return _exact(value) if value.denominator != 1 else value.numerator
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value
