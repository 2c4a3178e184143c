"""The report of a chain solve: every fusion level and the unfused baseline side by side.

:func:`render_chain_text` gives the readable report printed by ``mapsearch
solve CHAIN.yaml ARCH``; :func:`chain_report_dict` the JSON-ready one
(``--json``). Both take the :class:`~mapsearch.solve.chain.ChainResult` and
a :class:`~mapsearch.solve.chain_replay.ChainReplay` (what was replayed), and only build text or data.

The text report has, in order: the chain and the architecture; notes (TeAAL
mapping, skipped levels); one row per option (fused at each level, unfused)
with its status, time, words and utilization, and the partly fused plans the
time limit left unsolved (``plans left out: ...``); the best option and what
the best fused schedule saves against the unfused baseline (words, time, and
the intermediates' words on the top link); the replay check of the best fused
schedule and of every unfused stage (agreed, a mismatch, refused by the
simulator, or not run: past its bound or stopped by Ctrl-C, neither checked
nor refuted); the best schedule's loop nest per stage.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

from mapsearch.report.loopnest import loop_nest_lines
from mapsearch.report.text import _table, format_exact
from mapsearch.spec.architecture import Architecture
from mapsearch.solve.chain_replay import ChainReplay
from mapsearch.spec.teaal import TeaalSpec

__all__ = ["render_chain_text", "teaal_notes", "chain_report_dict", "option_rows", "savings"]

OK, BAD, NOT_RUN = "\u2713", "\u2717", "-"


def _number(value: Fraction | int) -> int | float:
    x = Fraction(value)
    return x.numerator if x.denominator == 1 else float(x)


def _percent(x: Fraction | float) -> str:
    return f"{float(x) * 100:.2f}%"


def _util(compute: Fraction, time: Fraction) -> Fraction:
    return Fraction(1) if time == 0 else Fraction(compute) / Fraction(time)


# --------------------------------------------------------------------------
# The figures of each option.
# --------------------------------------------------------------------------


def option_rows(result: Any) -> list[dict[str, Any]]:
    """One dict per option: option, status, time, words, compute_time, utilization, seconds, reason."""
    rows = []
    for o in result.fused:
        row: dict[str, Any] = {"option": f"fused at {o.level}", "status": o.status, "seconds": o.seconds, "reason": o.reason,
                               "family_restrictions": list(o.family_restrictions)}
        if o.schedule is not None:
            p = o.schedule.predicted
            row.update(time=Fraction(p.time), words=p.words_total, compute_time=Fraction(p.compute_time),
                       utilization=p.utilization)
        rows.append(row)
    if result.unfused is not None:
        rows.append(_unfused_row("unfused", result.unfused))
    elif getattr(result, "unfused_reason", ""):
        rows.append({"option": "unfused", "status": "NONE", "seconds": 0.0, "reason": result.unfused_reason})
    for level, outcome, why in getattr(result, "materialized", ()):
        name = f"materialized at {level}"
        rows.append(_unfused_row(name, outcome) if outcome is not None
                    else {"option": name, "status": "NONE", "seconds": 0.0, "reason": why})
    for plan in getattr(result, "plans", ()):
        compute = sum((Fraction(p.schedule.predicted.compute_time) for p in plan.parts), Fraction(0))
        rows.append({"option": plan.name, "status": plan.status, "time": Fraction(plan.time), "words": plan.words,
                     "compute_time": compute, "utilization": _util(compute, plan.time),
                     "seconds": sum(getattr(p, "seconds", getattr(p, "solve_seconds", 0.0)) for p in plan.parts),
                     "reason": ""})
    return rows


def _unfused_row(name: str, u: Any) -> dict[str, Any]:
    compute = sum((Fraction(r.schedule.predicted.compute_time) for r in u.stages), Fraction(0))
    return {"option": name, "status": u.status, "time": Fraction(u.time), "words": u.words,
            "compute_time": compute, "utilization": _util(compute, u.time),
            "seconds": sum(r.solve_seconds for r in u.stages), "reason": ""}


def savings(result: Any) -> dict[str, Any] | None:
    """What the best fused schedule saves against the unfused baseline (None when either is missing)."""
    best = result.best_fused()
    if best is None or result.unfused is None:
        return None
    p = best.schedule.predicted
    u = result.unfused
    words_saved = u.words - p.words_total
    time_saved = Fraction(u.time) - Fraction(p.time)
    top = p.links[0].name if p.links else ""
    inter = set(result.graph.intermediates)
    fused_top = sum(t.words_down + t.words_up for t in p.links[0].tensors if t.tensor in inter) if p.links else 0
    unfused_top = 0
    for r in u.stages:
        links = r.schedule.predicted.links
        if links:
            unfused_top += sum(t.words_down + t.words_up for t in links[0].tensors if t.tensor in inter)
    return {
        "fused": f"fused at {best.level}",
        "words_saved": words_saved,
        "words_ratio": Fraction(u.words, p.words_total) if p.words_total else None,
        "time_saved": time_saved,
        "time_ratio": Fraction(u.time) / Fraction(p.time) if p.time else None,
        "top_link": top,
        "intermediate_words_top_fused": fused_top,
        "intermediate_words_top_unfused": unfused_top,
    }


def _best_stages(result: Any) -> tuple[str, list[Any]]:
    try:
        best = result.best
    except Exception:  # noqa: BLE001 - no schedule at all
        return "", []
    if best == "unfused":
        return best, [r.schedule for r in result.unfused.stages]
    for level, outcome, _ in getattr(result, "materialized", ()):
        if best == f"materialized at {level}":
            return best, [r.schedule for r in outcome.stages]
    for plan in getattr(result, "plans", ()):
        if best == plan.name:
            stages = []
            for part in plan.parts:
                sched = part.schedule
                stages += list(sched.stages) if hasattr(sched, "stages") else [sched]
            return best, stages
    o = next(o for o in result.fused if f"fused at {o.level}" == best)
    return best, list(o.schedule.stages)


def _graph_line(result: Any) -> list[str]:
    g, arch = result.graph, result.architecture
    extents = " ".join(f"{d}={e}" for d, e in g.extents)
    levels = ", ".join(f"{lv.name} {'unbounded' if lv.capacity is None else f'{lv.capacity} words'}" for lv in arch.levels)
    lines = [f"{g.name}: {len(g.einsums)} einsums, {g.macs:,} MACs ({extents}) on {arch.name} (levels outermost first: {levels})"]
    for i, e in enumerate(g.einsums):
        lines.append(f"  [{i}] {e.text()}")
    if g.intermediates:
        lines.append(f"  intermediates: {', '.join(g.intermediates)}; shared dims: {', '.join(g.shared_dims) or 'none'}")
    return lines


# --------------------------------------------------------------------------
# The two reports.
# --------------------------------------------------------------------------


def render_chain_text(result: Any, replay: ChainReplay, notes: Sequence[str] = ()) -> str:
    lines = _graph_line(result)
    for n in notes:
        lines.append(f"note: {n}")
    lines += ["", "options (objective: time, then words):"]
    best, stages = _best_stages(result)
    table = [["option", "status", "time", "words", "utilization", "solve s", ""]]
    for r in option_rows(result):
        if "time" in r:
            table.append([r["option"], r["status"], format_exact(r["time"]), f"{r['words']:,}", _percent(r["utilization"]),
                          f"{r['seconds']:.2f}", "<- best" if r["option"] == best else ""])
        else:
            table.append([r["option"], r["status"], "-", "-", "-", f"{r['seconds']:.2f}", ""])
    lines += [f"  {l}" for l in _table(table, {2, 3, 4, 5})]
    for r in option_rows(result):
        if "time" not in r and r["reason"]:
            lines.append(f"  {r['option']}: {' '.join(str(r['reason']).split())}")
    left_out = getattr(result, "plans_left_out", "")
    if left_out:
        lines.append(f"  plans left out: {' '.join(str(left_out).split())}")
    s = savings(result)
    if s is not None:
        ratio = "" if s["words_ratio"] is None else f" (unfused/fused = {float(s['words_ratio']):.3g}x)"
        tratio = "" if s["time_ratio"] is None else f" (unfused/fused = {float(s['time_ratio']):.3g}x)"
        lines += ["", f"best fused ({s['fused']}) vs unfused:",
                  f"  words saved: {s['words_saved']:,}{ratio}",
                  f"  time saved: {format_exact(s['time_saved'])} clocks{tratio}",
                  f"  intermediates' words on {s['top_link']}: fused {s['intermediate_words_top_fused']:,}, "
                  f"unfused {s['intermediate_words_top_unfused']:,}"]
    if best:
        lines.append(f"best: {best}")
    lines += ["", f"replay ({replay.mode} mode):"]
    for c in replay.checks:
        if c.not_run:  # past its bound, or stopped by Ctrl-C: no verdict, which the error says
            lines.append(f"  {c.name}: {NOT_RUN} the check did not run: {c.error}")
        elif c.error:
            lines.append(f"  {c.name}: {BAD} the simulator refused it: {c.error}")
        elif c.differences:
            lines.append(f"  {c.name}: {BAD} REPLAY MISMATCH in {len(c.differences)} field(s): "
                         + ", ".join(f for f, _, _ in c.differences))
        else:
            data = ""
            if c.data_ok is not None:
                err = "" if c.max_abs_error is None else f", max abs error {c.max_abs_error:.3g}"
                data = f"; data vs numpy {'ok' if c.data_ok else 'FAILED'}{err}"
            lines.append(f"  {c.name}: {OK} replay == prediction (time {format_exact(c.replayed.time)}, "
                         f"words {c.replayed.words_total:,}){data}")
    for n in replay.notes:
        lines.append(f"  note: {n}")
    if stages:
        lines += ["", f"best schedule ({best}), loops outer -> inner, per einsum:"]
        for i, st in enumerate(stages):
            lines.append(f"  [{i}] {st.workload.einsum.text()}")
            lines += [f"    {l}" for l in loop_nest_lines(st)]
    return "\n".join(lines) + "\n"


def chain_report_dict(result: Any, replay: ChainReplay, notes: Sequence[str] = ()) -> dict[str, Any]:
    from mapsearch.schedule.json_io import figures_to_dict
    from mapsearch.spec.graph_load import graph_to_dict

    best, stages = _best_stages(result)
    options = []
    for r in option_rows(result):
        d: dict[str, Any] = {"option": r["option"], "status": r["status"], "seconds": round(float(r["seconds"]), 3)}
        if "time" in r:
            d.update(time=_number(r["time"]), time_exact=format_exact(r["time"]), words=r["words"],
                     utilization=float(r["utilization"]))
        if r["reason"]:
            d["reason"] = " ".join(str(r["reason"]).split())
        if r.get("family_restrictions"):
            d["family_restrictions"] = r["family_restrictions"]
        options.append(d)
    s = savings(result)
    saved = None
    if s is not None:
        saved = {"fused": s["fused"], "words": s["words_saved"], "time": _number(s["time_saved"]),
                 "words_ratio": None if s["words_ratio"] is None else float(s["words_ratio"]),
                 "time_ratio": None if s["time_ratio"] is None else float(s["time_ratio"]),
                 "top_link": s["top_link"], "intermediate_words_top_fused": s["intermediate_words_top_fused"],
                 "intermediate_words_top_unfused": s["intermediate_words_top_unfused"]}
    checks = []
    for c in replay.checks:
        d = {"name": c.name, "ok": c.ok, "differences": [[f, str(a), str(b)] for f, a, b in c.differences]}
        if c.error:
            d["error"] = c.error
        if c.not_run:
            d["not_run"] = True
        if getattr(c, "interrupted", False):
            d["interrupted"] = True
        if c.replayed is not None:
            d["replayed"] = figures_to_dict(c.replayed)
        if c.data_ok is not None:
            d["data_ok"] = c.data_ok
            d["max_abs_error"] = c.max_abs_error
        checks.append(d)
    return {
        "workload": graph_to_dict(result.graph),
        "architecture": result.architecture.name,
        "notes": list(notes),
        "options": options,
        "best": best or None,
        "saved": saved,
        "replay": {"mode": replay.mode, "ok": replay.ok, "checks": checks, "notes": list(replay.notes)},
        "best_schedule": [{"einsum": st.workload.einsum.text(), "loop_nest": loop_nest_lines(st)} for st in stages],
    }


def teaal_notes(spec: TeaalSpec, arch: Architecture) -> list[str]:
    """The notes a TeAAL solve's report starts with: its mapping as constraints, the spatial hints left out."""
    out = ["TeAAL mapping constraints apply per einsum (partitioning -> tile sizes, loop-order -> loop orders); "
           "solve_chain takes no per-einsum constraints yet, so each einsum is solved UNFUSED with its own "
           "constraints and no fused level is solved"]
    for c in spec.constraints(arch):
        tiles = ", ".join(f"{t.dim}={t.lo} at {t.level}" for t in c.tiles) or "none"
        orders = "; ".join(f"{lv}: {' '.join(ds)}" for lv, ds in c.orders) or "none"
        out.append(f"{c.name}: tiles {tiles}; orders {orders}")
    hints = {o: spec.spatial_hints(o) for o in spec.space}
    if any(hints.values()):
        out.append("spacetime.space loops are spatial hints, not applied (no mesh in this solve): "
                   + "; ".join(f"{o}: {', '.join(ds)}" for o, ds in hints.items() if ds))
    out += list(spec.notes)
    return out
