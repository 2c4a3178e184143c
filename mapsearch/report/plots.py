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
FEASIBLE ones (not proven optimal) are drawn hollow.
"""

from __future__ import annotations

import json
import logging
import math
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from mapsearch.atomic import atomic_open
from mapsearch.errors import MapsearchError

__all__ = ["PLOT_KINDS", "load_rows", "plot_rows", "plot_vs_parameter", "plot_roofline", "plot_vs_lower_bound",
           "roof_of"]

log = logging.getLogger(__name__)

SOLVED = ("OPTIMAL", "OPTIMAL_IN_FAMILY", "FEASIBLE")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise MapsearchError("plots need matplotlib, which is not installed: pip install 'mapsearch[plot]'") from None
    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    return plt


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a JSON Lines file (blank lines skipped); a bad line is one error naming it."""
    rows = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise MapsearchError(f"{path}: cannot read: {e.strerror or e}") from None
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise MapsearchError(f"{path}: line {n}: malformed JSON: {e.msg}") from None
    return rows


# --------------------------------------------------------------------------
# Reading rows.
# --------------------------------------------------------------------------


def _get(row: Mapping[str, Any], key: str) -> Any:
    if row.get(key) is not None:
        return row[key]
    report = row.get("report")
    return report.get(key) if isinstance(report, Mapping) else None


def _num(x: Any) -> float | None:
    """A number from a JSON value: int, float or exact text ``'a/b'``."""
    if x is None or isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        return float(x)
    try:
        return float(Fraction(str(x)))
    except (ValueError, ZeroDivisionError):
        return None


def _params(row: Mapping[str, Any]) -> dict[str, Any]:
    p = row.get("params") or {}
    return dict(p) if isinstance(p, Mapping) else {k: v for k, v in p}


def _solved(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in rows if r.get("status") in SOLVED]


def _name(x: Any) -> str:
    if isinstance(x, Mapping):
        return str(x.get("name", "?"))
    return str(x)


def _series_key(row: Mapping[str, Any]) -> str:
    return f"{_name(row.get('workload'))} on {_name(row.get('architecture'))}"


def _save(fig: Any, out_png: str | Path) -> Path:
    out = Path(out_png)
    try:
        with atomic_open(out, binary=True) as f:  # never a half-written PNG; a FIFO or a device is refused
            fig.savefig(f, format=out.suffix[1:].lower() or None, dpi=120, bbox_inches="tight")
    except OSError as e:
        raise MapsearchError(f"{out}: cannot write: {e.strerror or e}") from None
    finally:
        _pyplot().close(fig)
    return out


def _markers(plt: Any, ax: Any, xs: list, ys: list, feasible: list[bool], color: Any, label: str, line: bool) -> None:
    if line:
        ax.plot(xs, ys, "-", color=color, alpha=0.7, label=label)
    else:
        ax.plot([], [], "o", color=color, label=label)
    solid = [(x, y) for x, y, f in zip(xs, ys, feasible) if not f]
    hollow = [(x, y) for x, y, f in zip(xs, ys, feasible) if f]
    if solid:
        ax.plot(*zip(*solid), "o", color=color, ms=5)
    if hollow:
        ax.plot(*zip(*hollow), "o", color=color, ms=6, mfc="none")


def _wide(values: Sequence[float]) -> bool:
    """True when positive values span two decades or more (then a log axis reads better)."""
    pos = [v for v in values if v > 0]
    return len(pos) == len(values) and len(pos) > 1 and max(pos) / min(pos) >= 100


# --------------------------------------------------------------------------
# Words and utilization against a swept parameter.
# --------------------------------------------------------------------------


def plot_vs_parameter(rows: Iterable[Mapping[str, Any]], param: str, out_png: str | Path) -> Path:
    """Words moved (top) and utilization (bottom) against ``param``; one line per workload on architecture.

    Hollow markers: FEASIBLE (not proven optimal). Log axes where the values
    span two decades or more (e.g. capacities from 1 KiB to 1 MiB).
    """
    plt = _pyplot()
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
# The roofline.
# --------------------------------------------------------------------------


def _arch_dict(arch: Any) -> Mapping[str, Any] | None:
    """An architecture as the YAML's dict, from a dict or an :class:`Architecture`."""
    if arch is None:
        return None
    if isinstance(arch, Mapping):
        return arch
    from mapsearch.spec.load import architecture_to_dict

    return architecture_to_dict(arch)


def roof_of(arch: Any) -> dict[str, Any]:
    """The roofline of an architecture (dict as in the YAML, or an ``Architecture``).

    ``peak``: MACs per clock of the op (block MACs / clocks per call);
    ``link``: the slowest link's name; ``bandwidth``: its words per clock
    (``1/c`` on a shared line of ``c`` clocks per word, ``1/c_in + 1/c_out``
    on separate lines, each line carrying its own direction).
    """
    a = _arch_dict(arch)
    assert a is not None
    compute = a.get("compute") or {}
    block = compute.get("block") or {}
    block_macs = math.prod(int(v) for v in block.values()) if block else 1
    peak = block_macs / _num(compute.get("clocks_per_call", 1))
    slowest, bandwidth = None, math.inf
    levels = a.get("levels") or []
    for parent, child in zip(levels, levels[1:]):
        link = child.get("link") or {}
        cin = _num(link.get("input_clocks_per_word", 1))
        cout = _num(link.get("output_clocks_per_word", link.get("input_clocks_per_word", 1)))
        per = lambda c: math.inf if c == 0 else 1 / c  # noqa: E731 - a free link (0 clocks per word) never binds
        bw = per(cin) if link.get("lines", "shared") == "shared" else per(cin) + per(cout)
        if bw < bandwidth:
            slowest, bandwidth = f"{parent['name']}->{child['name']}", bw
    return {"name": a.get("name"), "peak": peak, "link": slowest, "bandwidth": bandwidth}


def _row_arch(row: Mapping[str, Any], architectures: Mapping[str, Any] | None) -> Any:
    name = _name(row.get("architecture"))
    if architectures and name in architectures:
        return architectures[name]
    if isinstance(row.get("architecture"), Mapping):
        return row["architecture"]
    spec = row.get("spec")
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError:
            spec = None
    if isinstance(spec, Mapping) and isinstance(spec.get("architecture"), Mapping):
        return spec["architecture"]
    return None


def _inferred_roof(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A roof read off the rows where no architecture is known: clocks per call from
    compute_time / op_calls, and each link's clocks per word as time / words (exact on shared lines)."""
    peak, per_link = 0.0, {}
    for r in rows:
        calls, ct, bm = _num(_get(r, "op_calls")), _num(_get(r, "compute_time")), _num(_get(r, "block_macs")) or 1
        if calls and ct:
            peak = max(peak, bm * calls / ct)
        for link in _get(r, "links") or []:
            words = (link.get("words_down") or 0) + (link.get("words_up") or 0)
            t = _num(link.get("time"))
            if words and t:
                per_link[link["name"]] = max(per_link.get(link["name"], 0.0), t / words)
    if not per_link:
        return {"name": None, "peak": peak or None, "link": None, "bandwidth": math.inf}
    name = max(per_link, key=per_link.get)
    return {"name": None, "peak": peak or None, "link": name, "bandwidth": 1 / per_link[name], "inferred": True}


def plot_roofline(
    rows: Iterable[Mapping[str, Any]], out_png: str | Path, architectures: Mapping[str, Any] | None = None
) -> Path:
    """One roofline per architecture, with its solved cases on it.

    x: arithmetic intensity, MACs per word crossing the architecture's
    slowest link; y: achieved MACs per clock (MACs / time). The roof is
    ``min(peak, x * bandwidth)`` from :func:`roof_of`. The architecture comes
    from ``architectures[name]`` (a dict as in the YAML or an
    ``Architecture``), else from the row (an ``architecture`` dict, or the
    ``spec`` the sweep stores), else it is inferred from the rows and said so.
    """
    plt = _pyplot()
    by_arch: dict[str, list[Mapping[str, Any]]] = {}
    for r in _solved(rows):
        by_arch.setdefault(_name(r.get("architecture")), []).append(r)
    if not by_arch:
        raise MapsearchError("no solved rows to put on a roofline")
    n = len(by_arch)
    fig, axes = plt.subplots(1, n, figsize=(6.0 * n, 4.8), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (arch_name, arows) in zip(axes[0], sorted(by_arch.items())):
        arch = next((a for a in (_row_arch(r, architectures) for r in arows) if a is not None), None)
        roof = roof_of(arch) if arch is not None else _inferred_roof(arows)
        series: dict[str, list[tuple[float, float, bool]]] = {}
        skipped = 0
        for r in arows:
            macs, time = _num(_get(r, "macs")), _num(_get(r, "time"))
            link = next((l for l in (_get(r, "links") or []) if l.get("name") == roof["link"]), None)
            words = None if link is None else (link.get("words_down") or 0) + (link.get("words_up") or 0)
            if not macs or not time or not words:
                skipped += 1
                continue
            series.setdefault(_name(r.get("workload")), []).append((macs / words, macs / time, r.get("status") == "FEASIBLE"))
        if skipped:
            log.info("roofline of %s: %d row(s) without macs, time or words on %s left out", arch_name, skipped, roof["link"])
        xs_all = [p[0] for pts in series.values() for p in pts]
        for k, (label, pts) in enumerate(sorted(series.items())):
            _markers(plt, ax, [p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts], colors[k % len(colors)], label, False)
        if xs_all:
            lo, hi = min(xs_all) / 4, max(xs_all) * 4
        else:
            lo, hi = 0.1, 100.0
        peak, bw = roof["peak"], roof["bandwidth"]
        if peak and math.isfinite(bw):
            knee = peak / bw
            lo, hi = min(lo, knee / 4), max(hi, knee * 4)
            grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
            ax.plot(grid, [min(peak, x * bw) for x in grid], "k-", lw=1.5,
                    label=f"roof: {peak:g} MACs/clock, {roof['link']} {bw:g} words/clock")
            ax.axvline(knee, color="k", ls=":", lw=0.8)
        elif peak:
            ax.axhline(peak, color="k", lw=1.5, label=f"peak {peak:g} MACs/clock")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ys = [p[1] for pts in series.values() for p in pts]
        if peak:
            floor = min(ys + ([lo * bw] if math.isfinite(bw) else [peak]))
            ax.set_ylim(floor / 2, peak * 2)
        title = f"{arch_name}" + (" (roof inferred from the rows)" if roof.get("inferred") else "")
        ax.set_title(title)
        ax.set_xlabel(f"arithmetic intensity (MACs per word on {roof['link'] or 'the slowest link'})")
        ax.set_ylabel("achieved MACs per clock")
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
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
            return float((l.get("words_down") or 0) + (l.get("words_up") or 0))
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
