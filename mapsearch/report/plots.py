"""Plots of sweep results: against a swept parameter, on a roofline, against a lower bound.

Each function takes the sweep's result rows (dicts, one per case, as in the
sweep's JSON Lines export; :func:`load_rows` reads such a file) and writes
one PNG. matplotlib is an optional extra (``pip install 'mapsearch[plot]'``);
it is imported on first use, and its absence is one :class:`MapsearchError`
line.

A row's figures are read from the row itself or, failing that, from its
``report`` (the solve report dict the sweep stores): ``time``,
``utilization``, ``words_total``, ``compute_time``, ``op_calls``, ``macs``,
``block_macs``, ``links`` (each ``name``, ``words_down``, ``words_up``,
``time``). ``params`` is a dict of swept parameter -> value (a list of pairs
is accepted too). Only solved rows (status OPTIMAL or FEASIBLE) are plotted;
FEASIBLE ones (not proven optimal) are drawn hollow. The roofline is drawn in
roofline.py; what the plots share (matplotlib, reading a row, markers,
writing the PNG) is in plot_common.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from mapsearch.errors import MapsearchError, SpecError
from mapsearch.report import plot_common
from mapsearch.report.plot_common import check_plot_path, check_rows, row_problem, _get, _markers, _name, _num, _params, _pyplot, _save, _series_key, _solved, _wide
from mapsearch.report.roofline import plot_roofline, roof_of

__all__ = ["PLOT_KINDS", "load_rows", "plot_rows", "plot_vs_parameter", "plot_roofline", "plot_vs_lower_bound",
           "roof_of"]

SOLVED = plot_common.SOLVED  # the statuses plotted (defined in plot_common, which reads it; importable here as before)


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a JSON Lines file (blank lines skipped); a bad line (not JSON, not an object, a figure that is
    not a number: :func:`~mapsearch.report.plot_common.row_problem`) is one error naming it and the field."""
    rows = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise MapsearchError(f"{path}: cannot read: {e.strerror or e}") from None
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise MapsearchError(f"{path}: line {n}: malformed JSON: {e.msg}") from None
            except RecursionError:
                raise MapsearchError(f"{path}: line {n}: malformed JSON: nested too deep") from None
            problem = row_problem(row)
            if problem is not None:  # one line naming the line and the field, not a crash while drawing
                field, expected, got = problem
                raise SpecError(str(path), f"line {n}" + (f": {field}" if field else ""), expected, got)
            rows.append(row)
    return rows


# --------------------------------------------------------------------------
# Words and utilization against a swept parameter.
# --------------------------------------------------------------------------


def plot_vs_parameter(rows: Iterable[Mapping[str, Any]], param: str, out_png: str | Path) -> Path:
    """Words moved (top) and utilization (bottom) against ``param``; one line per workload on architecture.

    Hollow markers: FEASIBLE (not proven optimal). Log axes where the values
    span two decades or more (e.g. capacities from 1 KiB to 1 MiB).
    """
    plt = _pyplot()
    check_plot_path(out_png)
    points: dict[str, list[tuple[float, float, float, bool]]] = {}
    for r in _solved(rows):
        x = _num(_params(r).get(param))
        words, util = _num(_get(r, "words_total")), _num(_get(r, "utilization"))
        if x is None or words is None or util is None:
            continue
        points.setdefault(_series_key(r), []).append((x, words, util, r.get("status") == "FEASIBLE"))
    if not points:
        raise MapsearchError(f"no solved row has a numeric parameter {param!r} with words_total and utilization")
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(7.5, 6.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    all_x, all_words = [], []
    for n, (label, pts) in enumerate(sorted(points.items())):
        pts.sort()
        xs = [p[0] for p in pts]
        feasible = [p[3] for p in pts]
        color = colors[n % len(colors)]
        _markers(plt, top, xs, [p[1] for p in pts], feasible, color, label, True)
        _markers(plt, bottom, xs, [p[2] * 100 for p in pts], feasible, color, label, True)
        all_x += xs
        all_words += [p[1] for p in pts]
    if _wide(all_x):
        bottom.set_xscale("log", base=2 if all(float(x).is_integer() and x > 0 and (int(x) & (int(x) - 1)) == 0 for x in all_x) else 10)
    if _wide(all_words):
        top.set_yscale("log")
    top.set_ylabel("words moved (all links)")
    top.set_title(f"words and utilization against {param}")
    bottom.set_ylabel("utilization (%)")
    bottom.set_ylim(0, 105)
    bottom.set_xlabel(param)
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
    top.legend(fontsize=8, loc="best")
    if any(p[3] for pts in points.values() for p in pts):
        bottom.text(0.01, 0.02, "hollow: FEASIBLE, not proven optimal", transform=bottom.transAxes, fontsize=7)
    return _save(fig, out_png)


# --------------------------------------------------------------------------
# Against a lower bound.
# --------------------------------------------------------------------------


def _words_on(row: Mapping[str, Any], link: str | None) -> float | None:
    """Words down + up on ``link`` (the row's ``lower_bound_link`` first), else all links' words."""
    name = row.get("lower_bound_link") or link
    if name is None:
        return _num(_get(row, "words_total"))
    for l in _get(row, "links") or []:
        if l.get("name") == name:
            return float((_num(l.get("words_down")) or 0) + (_num(l.get("words_up")) or 0))
    return None


def plot_vs_lower_bound(
    rows: Iterable[Mapping[str, Any]], out_png: str | Path, bound_key: str = "lower_bound_words", link: str | None = None
) -> Path:
    """Solved words (y) against the lower bound ``bound_key`` (x), log-log, with y = x and y = 2x guides.

    A bound on one link's traffic (the link into the cache it is computed
    for) is compared with that link's words: the row's ``lower_bound_link``,
    else ``link``; with neither, with ``words_total``. One colour per
    architecture; rows without a bound are left out (an error when none has
    one). The median ratio words / bound is in the title.
    """
    plt = _pyplot()
    check_plot_path(out_png)
    series: dict[str, list[tuple[float, float, bool]]] = {}
    ratios = []
    for r in _solved(rows):
        bound, words = _num(_get(r, bound_key)), _words_on(r, link)
        if not bound or words is None or bound <= 0:
            continue
        series.setdefault(_name(r.get("architecture")), []).append((bound, max(words, bound * 1e-3), r.get("status") == "FEASIBLE"))
        ratios.append(words / bound)
    if not series:
        raise MapsearchError(f"no solved row has a positive {bound_key!r} to compare with")
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (label, pts) in enumerate(sorted(series.items())):
        _markers(plt, ax, [p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts], colors[k % len(colors)], label, False)
    values = [v for pts in series.values() for p in pts for v in p[:2]]
    lo, hi = min(values) / 2, max(values) * 2
    ax.plot([lo, hi], [lo, hi], "k-", lw=1, label="words = bound")
    ax.plot([lo, hi], [2 * lo, 2 * hi], "k--", lw=0.8, label="words = 2 x bound")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi * 2)
    ratios.sort()
    mid = len(ratios) // 2
    median = ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2
    ax.set_title(f"solved words against the lower bound ({len(ratios)} cases; median ratio {median:.3g})")
    ax.set_xlabel(f"lower bound ({bound_key})")
    ax.set_ylabel(f"solved words ({'on ' + link if link else 'on the bound link, else all links'})")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="upper left")
    return _save(fig, out_png)


# --------------------------------------------------------------------------
# One entry point: the plot a kind of rows asks for.
# --------------------------------------------------------------------------

PLOT_KINDS = ("parameter", "roofline", "lower-bound")


def swept_parameters(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The parameters the rows vary, in first-seen order."""
    seen: dict[str, set] = {}
    for r in rows:
        for k, v in _params(r).items():
            seen.setdefault(k, set()).add(json.dumps(v, sort_keys=True))
    return [k for k, values in seen.items() if len(values) > 1]


def plot_rows(rows: Sequence[Mapping[str, Any]], out_png: str | Path, kind: str | None = None,
              param: str | None = None, link: str | None = None) -> Path:
    """The plot of ``kind`` (:data:`PLOT_KINDS`) for a sweep's rows, written to ``out_png``.

    No kind: against the swept parameter when the rows vary exactly one (or
    ``param`` names it), else a roofline. ``parameter`` without ``param``
    takes the only swept one; ``lower-bound`` reads ``lower_bound_words``
    (on ``link`` when given).
    """
    check_rows(rows)  # a row the plots cannot read is one error, and the format is checked, before drawing
    check_plot_path(out_png)
    swept = swept_parameters(rows)
    if kind is None:
        kind = "parameter" if param is not None or len(swept) == 1 else "roofline"
    if kind not in PLOT_KINDS:
        raise MapsearchError(f"plot kind: expected one of {', '.join(PLOT_KINDS)}, got {kind!r}")
    if kind == "parameter":
        if param is None:
            if len(swept) != 1:
                raise MapsearchError("plot against a parameter: name it (the rows vary "
                                     + (", ".join(swept) if swept else "no parameter") + ")")
            param = swept[0]
        return plot_vs_parameter(rows, param, out_png)
    if kind == "roofline":
        return plot_roofline(rows, out_png)
    return plot_vs_lower_bound(rows, out_png, link=link)
