"""The characterization's tables and files: per layer, per chain pair and per profile (docs/characterize.md).

Text tables for the terminal (:func:`layers_table`, :func:`chains_table`,
:func:`totals_table`), and the files of ``--out DIR`` (:func:`write_outputs`):
``layers.csv``/``.json``, ``totals.csv``/``.json``, ``chains.csv``/``.json``
and the roofline plot (:func:`roofline`, with matplotlib).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from mapsearch.atomic import write_text_atomic
from mapsearch.characterize.chains import CACHE_NAME
from mapsearch.characterize.run import CHAIN_KEYS, LAYER_KEYS, TOTAL_KEYS, Characterization
from mapsearch.report.plots import plot_roofline
from mapsearch.sweep.export import WRITTEN as SWEEP_WRITTEN

__all__ = ["totals_table", "layers_table", "chains_table", "write_outputs", "roofline", "TABLES", "ROOFLINE_NAME",
           "WRITTEN"]

# The tables :func:`write_outputs` writes, by the key of the paths it returns.
TABLES = {"layers_csv": "layers.csv", "layers_json": "layers.json", "totals_csv": "totals.csv",
          "totals_json": "totals.json", "chains_csv": "chains.csv", "chains_json": "chains.json"}
ROOFLINE_NAME = "roofline.png"  # ``mapsearch characterize`` draws :func:`roofline` there (unless --no-plot)
# Everything a characterization writes in its output directory (a name ending in / is a folder of files): the
# sweep's files (its layers are solved as a sweep), the tables, the chain pairs' cache and schedule files
# (mapsearch/characterize/run.py: DIR/chains/<pair>-<profile>.json) and the roofline.
# ``mapsearch characterize`` refuses an --out that would replace an input.
WRITTEN: tuple[str, ...] = SWEEP_WRITTEN + tuple(TABLES.values()) + (CACHE_NAME, "chains/", ROOFLINE_NAME)


def _num(x: Any, kind: str = "g") -> str:
    if x is None:
        return "-"
    if kind == "pct":
        return f"{100 * x:.1f}%"
    if kind == "int":
        return f"{int(round(x)):,}"
    if kind == "e":
        return f"{x:.3g}"
    return f"{x:.4g}"


def _table(header: list[str], body: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))]
    lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in body]
    return "\n".join(lines) + "\n"


def totals_table(totals: list[dict[str, Any]]) -> str:
    header = ["profile", "time (clocks)", "time (ms)", "words", "top-link words", "util", "of peak", "energy (mJ)",
              "solved", "time gap", "gap", "fused pairs"]
    body = []
    for t in totals:
        solved = (f"{t['optimal']} opt + {t['optimal_in_family']} in-family + {t['feasible']} feas"
                  + (f", {t['failed']} FAILED" if t["failed"] else ""))
        pairs = f"{t['fused_pairs']}/{t['chain_pairs']}" if t.get("chain_pairs") else "-"
        body.append([t["profile"], _num(t["time_clocks"], "int"), _num(t["seconds"] * 1e3), _num(t["words_total"], "int"),
                     _num(t["words_top"], "int"), _num(t["utilization"], "pct"), _num(t["peak_fraction"], "pct"),
                     _num(t["energy_pj"] / 1e9), solved, _num(t["max_time_gap"]), _num(t["max_gap"]), pairs])
    return _table(header, body)


def layers_table(rows: list[dict[str, Any]], top: int) -> str:
    shown = [r for r in rows if r["status"] != "FUSED"]
    shown.sort(key=lambda r: -(r["share"] or 0))
    if top:
        shown = shown[:top]
    header = ["layer", "op", "status", "time gap", "gap", "time (clocks)", "share", "words", "util", "array util",
              "energy (uJ)", "fused", "fused_with"]
    body = [[r["layer"], r["op"], r["status"], _num(r["time_gap"]), _num(r["gap"]), _num(r["time_clocks"], "int"), _num(r["share"], "pct"),
             _num(r["words_total"], "int"), _num(r["utilization"], "pct"), _num(r.get("array_utilization"), "pct"),
             _num(None if r["energy_pj"] is None else r["energy_pj"] / 1e6), r["pattern"] or "", _fused_with(r)]
            for r in shown]
    return _table(header, body)


def _fused_with(r: dict[str, Any]) -> str:
    """The chain-fused partner: the first row of a pair carries the pair's figures, the second's are in it."""
    if not r.get("fused_with"):
        return ""
    if r["time_clocks"] == 0 and r["words_total"] == 0:
        return f"{r['fused_with']} (figures there)"
    return f"{r['fused_with']} ({r['chain']}, pair figures)"


def chains_table(rows: list[dict[str, Any]]) -> str:
    """The chain solve's best option against the two layers solved separately: one line per profile, distinct
    pair and decision (identical pairs are solved once: ``(x12)``)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for c in rows:
        groups.setdefault((c["profile"], c["pair"], c["fused"], c["decision"]), []).append(c)
    header = ["profile", "pair", "chain best", "time (clocks)", "separate", "words", "separate", "decision"]
    body = []
    for cs in groups.values():
        c = cs[0]
        more = f" (x{len(cs)})" if len(cs) > 1 else ""
        body.append([c["profile"], f"{c['first']} -> {c['second']}{more}", c["best"] or "-",
                     _num(c["chain_clocks"], "int"), _num(c["separate_clocks"], "int"), _num(c["chain_words"], "int"),
                     _num(c["separate_words"], "int"), "FUSED" if c["fused"] else c["decision"].split(": ", 1)[-1]])
    return _table(header, body)


_FLAT = ("links", "extents")


def _csv(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> str:
    link_names = list(dict.fromkeys(n for r in rows for n in (r.get("links") or {})))
    header = [k for k in keys if k not in _FLAT] + [f"link:{n}:words" for n in link_names]
    if "extents" in keys:
        header.append("extents")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        line = ["" if r.get(k) is None else r[k] for k in keys if k not in _FLAT]
        for n in link_names:
            link = (r.get("links") or {}).get(n)
            line.append("" if link is None else (link["words"] if isinstance(link, dict) else link))
        if "extents" in keys:
            line.append("" if not r.get("extents") else json.dumps(r["extents"], separators=(",", ":")))
        w.writerow(line)
    return buf.getvalue()


def write_outputs(result: Characterization, out: Path) -> dict[str, Path]:
    """The CSV and JSON tables in ``out``; the roofline is :func:`roofline` (it needs matplotlib)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {key: out / name for key, name in TABLES.items()}
    chains = [{**c, "candidates": json.dumps(c["candidates"], separators=(",", ":"))
               if c["candidates"] is not None else None} for c in result.chains]
    write_text_atomic(paths["chains_csv"], _csv(chains, CHAIN_KEYS))
    write_text_atomic(paths["chains_json"], json.dumps(result.chains, indent=1) + "\n")
    write_text_atomic(paths["layers_csv"], _csv(result.layers, LAYER_KEYS))
    write_text_atomic(paths["layers_json"], json.dumps(result.layers, indent=1) + "\n")
    write_text_atomic(paths["totals_csv"], _csv(result.totals, TOTAL_KEYS))
    write_text_atomic(paths["totals_json"], json.dumps(result.totals, indent=1) + "\n")
    return paths


def roofline(result: Characterization, profiles: list[Any], out_png: Path) -> Path:
    """Each solved einsum layer on its profile's roofline (mapsearch.report.plots.plot_roofline), series by op."""
    rows = []
    macs = {(r["profile"], r["layer"]): r["macs"] for r in result.layers}
    for r in result.layers:
        if r["kind"] != "einsum" or r["status"] not in ("OPTIMAL", "OPTIMAL_IN_FAMILY", "FEASIBLE") or not r["time_clocks"]:
            continue  # the second layer of a chain-fused pair: its figures are in the first's
        links = [{"name": n, **l} for n, l in r["links"].items()]
        pair = r.get("fused_with")
        rows.append({"workload": f"{r['op']} pair" if pair else r["op"], "architecture": r["profile"],
                     "status": r["status"], "macs": r["macs"] + (macs[(r["profile"], pair)] if pair else 0),
                     "time": r["time_clocks"], "links": links})
    return plot_roofline(rows, out_png, architectures={p.name: p.architecture for p in profiles})
