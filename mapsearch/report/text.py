"""A readable text report of one schedule's figures.

Exact numbers print as integers, finite decimals (``0.5``) or fractions with
an approximation (``2/3 (~0.6667)``); ratios also print as percentages.
"""

from __future__ import annotations

from fractions import Fraction

from mapsearch.schedule.figures import Figures
from mapsearch.spec.architecture import Architecture


def format_exact(value: Fraction | int) -> str:
    """``80``, ``0.25`` or ``2/3 (~0.6667)``: exact, and readable."""
    x = Fraction(value)
    if x.denominator == 1:
        return str(x.numerator)
    d = x.denominator
    while d % 2 == 0:
        d //= 2
    while d % 5 == 0:
        d //= 5
    if d == 1:  # a finite decimal
        text = f"{float(x):.12f}".rstrip("0").rstrip(".")
        if Fraction(text) == x:
            return text
    return f"{x.numerator}/{x.denominator} (~{float(x):.4g})"


def exact_text(value: object) -> str:
    """A figure as exact text: ``80``, ``2/3``, ``(48, 12)`` for a tuple (mismatch lines, reports)."""
    if isinstance(value, Fraction):
        return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(exact_text(v) for v in value) + ")"
    return str(value)


def _percent(x: Fraction) -> str:
    return f"{float(x) * 100:.2f}%"


def bottleneck(figures: Figures) -> str:
    """``'compute'`` or the name of the slowest link when it sets the time."""
    slowest = max(figures.links, key=lambda l: Fraction(l.time), default=None)
    if slowest is None or Fraction(slowest.time) <= Fraction(figures.compute_time):
        return "compute"
    return slowest.name


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.append("  ".join(cells).rstrip())
    return out


def render_text(
    figures: Figures,
    architecture: Architecture,
    *,
    title: str | None = None,
    data_ok: bool | None = None,
    max_abs_error: float | None = None,
) -> str:
    """The figures as a report: links and tensors, compute, time, utilization, occupancy."""
    lines: list[str] = []
    if title:
        lines += [title, ""]

    rows = [["link / tensor", "words down", "words up", "words", "time"]]
    for link in figures.links:
        rows.append([link.name, str(link.words_down), str(link.words_up), str(link.words), format_exact(link.time)])
        for t in link.tensors:
            rows.append([f"  {t.tensor}", str(t.words_down), str(t.words_up), str(t.words_down + t.words_up), ""])
    down = sum(l.words_down for l in figures.links)
    up = sum(l.words_up for l in figures.links)
    rows.append(["total", str(down), str(up), str(figures.words_total), ""])
    lines += _table(rows, {1, 2, 3, 4}) + [""]

    bound = bottleneck(figures)
    summary = [
        ["op calls", f"{figures.op_calls} ({figures.block_macs} MAC{'s' if figures.block_macs != 1 else ''} per call)"],
        ["MACs", str(figures.macs)],
        ["compute time", format_exact(figures.compute_time)],
        ["time", f"{format_exact(figures.time)} (bound by {bound})"],
        ["utilization", f"{format_exact(figures.utilization)} = {_percent(figures.utilization)}"],
        ["MAC efficiency", f"{format_exact(figures.mac_efficiency)} = {_percent(figures.mac_efficiency)}"],
    ]
    if figures.compute_instances != 1:
        busiest = figures.op_calls if figures.busiest_calls is None else figures.busiest_calls
        au = figures.array_utilization
        summary[1:1] = [
            ["compute instances", str(figures.compute_instances)],
            ["busiest calls", f"{busiest} (the busiest instance, summed over steps; compute time = busiest calls x clocks per call)"],
        ]
        idle = Fraction(1) - au
        loss = f"; {_percent(idle)} of the instance-steps idle" if idle else ""
        summary.append(["array utilization", f"{format_exact(au)} = {_percent(au)} (op calls / (instances x busiest calls){loss})"])
    if data_ok is not None:
        verdict = "ok" if data_ok else "FAILED"
        if max_abs_error is not None:
            verdict += f" (max abs error {max_abs_error:.3g})"
        summary.append(["data check", verdict])
    lines += _table(summary, set()) + [""]

    capacity = {lv.name: lv.capacity for lv in architecture.levels}
    rows = [["level", "occupancy", "capacity", "use"]]
    for level, words in figures.occupancy:
        cap = capacity.get(level)
        if cap is None:
            rows.append([level, str(words), "unbounded", "-"])
        else:
            flag = "  OVER CAPACITY" if words > cap else ""
            rows.append([level, str(words), str(cap), f"{100 * words / cap:.1f}%{flag}"])
    lines += _table(rows, {1, 2, 3})
    return "\n".join(lines) + "\n"
