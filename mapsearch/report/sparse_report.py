"""The report of a sparse solve (``mapsearch solve --density/--format``): text and the ``--json`` dict.

The expected words per link and tensor under the densities, the same
schedule's dense figures, and the replays: the dense one (which must equal
the prediction) and the one on sampled data (:mod:`mapsearch.sparse.replay`;
equal to the model for fixed-structured densities, an error per link under
``Uniform``).
"""

from __future__ import annotations

from typing import Any

import mapsearch.budget as budget
from mapsearch.report.json_report import _number
from mapsearch.report.loopnest import loop_nest_lines
from mapsearch.report.solve_report import BAD, OK, problem_line
from mapsearch.report.text import _table, exact_text
from mapsearch.schedule.json_io import schedule_to_dict
from mapsearch.sparse.density_text import all_exact, density_text
from mapsearch.sparse.replay import SPARSE_FIELDS

__all__ = ["sparse_report_dict", "render_sparse_text"]


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
                         "mismatches": [{"field": f, "predicted": exact_text(a), "replayed": exact_text(b)}
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
        why = "Ctrl-C stopped the search" if budget.stopped() else "the time limit stopped the search"
        lines.append(f"*** FEASIBLE, NOT PROVEN OPTIMAL: {why}. Best {last.name} found "
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
