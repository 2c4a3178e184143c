"""The roofline plot of sweep rows: an architecture's roof (:func:`roof_of`: its op's peak MACs per clock, its
slowest link's words per clock; read off the rows when no architecture is known) and each solved case on it,
arithmetic intensity against achieved MACs per clock (:func:`plot_roofline`). Re-exported by plots.py.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from mapsearch.errors import MapsearchError
from mapsearch.report.plot_common import check_plot_path, _get, _markers, _name, _num, _pyplot, _save, _solved

__all__ = ["plot_roofline", "roof_of"]

log = logging.getLogger("mapsearch.report.plots")  # the name it logged under before it moved here


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
            words = (_num(link.get("words_down")) or 0) + (_num(link.get("words_up")) or 0)
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
    check_plot_path(out_png)
    plots = []  # (architecture, roof, series): all read before anything is drawn
    for arch_name, arows in sorted(by_arch.items()):
        arch = next((a for a in (_row_arch(r, architectures) for r in arows) if a is not None), None)
        roof = roof_of(arch) if arch is not None else _inferred_roof(arows)
        series: dict[str, list[tuple[float, float, bool]]] = {}
        skipped = 0
        for r in arows:
            macs, time = _num(_get(r, "macs")), _num(_get(r, "time"))
            link = next((l for l in (_get(r, "links") or []) if l.get("name") == roof["link"]), None)
            words = None if link is None else (_num(link.get("words_down")) or 0) + (_num(link.get("words_up")) or 0)
            if not macs or not time or not words:
                skipped += 1
                continue
            series.setdefault(_name(r.get("workload")), []).append((macs / words, macs / time, r.get("status") == "FEASIBLE"))
        if skipped:
            log.info("roofline of %s: %d row(s) without macs, time or words on %s left out", arch_name, skipped, roof["link"])
        plots.append((arch_name, roof, series))
    if not any(series for _, _, series in plots):
        raise MapsearchError("no solved row has macs, time and the words on its architecture's slowest link to put "
                             "on a roofline")
    n = len(plots)
    fig, axes = plt.subplots(1, n, figsize=(6.0 * n, 4.8), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (arch_name, roof, series) in zip(axes[0], plots):
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
