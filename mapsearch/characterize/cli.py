"""``mapsearch characterize MODEL PROFILE [PROFILE ...]``: solve every layer, print tables, write CSV/JSON/plot.

Writes to ``--out DIR`` (default ``./characterize-<model>``): the sweep's
``results.sqlite`` (resumable: rerun to skip what is finished),
``results.jsonl``/``results.csv``/``summary.txt``/``schedules/`` for the
distinct cases, and ``layers.csv``, ``layers.json`` (one row per profile
and layer), ``totals.csv``, ``totals.json`` (one row per profile),
``chains.csv``, ``chains.json`` (one row per profile and chain pair: the
fusion decision), ``chain_cache.json`` and ``chains/`` (the pairs' solved
records and chosen schedules) and ``roofline.png`` (with matplotlib).

Exit codes: 0 done (failed layers are listed and counted); 1 some replay
(of a layer or of a chain pair's best option) disagreed with its prediction; 2 bad input; 130 interrupted (rerun).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
from pathlib import Path
from typing import Any

from mapsearch.errors import MapsearchError

__all__ = ["add_parser", "run", "totals_table", "layers_table", "chains_table", "write_outputs"]


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
        solved = f"{t['optimal']} opt + {t['feasible']} feas" + (f", {t['failed']} FAILED" if t["failed"] else "")
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
    header = ["layer", "op", "status", "time gap", "gap", "time (clocks)", "share", "words", "util", "energy (uJ)", "fused",
              "fused_with"]
    body = [[r["layer"], r["op"], r["status"], _num(r["time_gap"]), _num(r["gap"]), _num(r["time_clocks"], "int"), _num(r["share"], "pct"),
             _num(r["words_total"], "int"), _num(r["utilization"], "pct"),
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


def write_outputs(result: Any, profiles: list[Any], out: Path, plot: bool = True) -> dict[str, Path]:
    from mapsearch.characterize.run import CHAIN_KEYS, LAYER_KEYS, TOTAL_KEYS

    out.mkdir(parents=True, exist_ok=True)
    paths = {"layers_csv": out / "layers.csv", "layers_json": out / "layers.json", "totals_csv": out / "totals.csv",
             "totals_json": out / "totals.json", "chains_csv": out / "chains.csv", "chains_json": out / "chains.json"}
    paths["chains_csv"].write_text(_csv([{**c, "candidates": json.dumps(c["candidates"], separators=(",", ":"))
                                          if c["candidates"] is not None else None} for c in result.chains],
                                        CHAIN_KEYS))
    paths["chains_json"].write_text(json.dumps(result.chains, indent=1) + "\n")
    paths["layers_csv"].write_text(_csv(result.layers, LAYER_KEYS))
    paths["layers_json"].write_text(json.dumps(result.layers, indent=1) + "\n")
    paths["totals_csv"].write_text(_csv(result.totals, TOTAL_KEYS))
    paths["totals_json"].write_text(json.dumps(result.totals, indent=1) + "\n")
    if plot:
        try:
            paths["roofline"] = roofline(result, profiles, out / "roofline.png")
        except MapsearchError as e:
            print(f"mapsearch: characterize: no roofline: {e}", file=sys.stderr)
    return paths


def roofline(result: Any, profiles: list[Any], out_png: Path) -> Path:
    """Each solved einsum layer on its profile's roofline (mapsearch.report.plots.plot_roofline), series by op."""
    from mapsearch.report.plots import plot_roofline

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


def _made(out: Path) -> Path:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MapsearchError(f"--out: cannot create {out}: {e.strerror or e}") from None
    return out


def run(args: argparse.Namespace) -> int:
    from mapsearch.characterize.models import load_model
    from mapsearch.characterize.profiles import load_profile
    from mapsearch.characterize.run import characterize
    from mapsearch.solve.interrupt import Interruptible
    from mapsearch.sweep.cli_sweep import _progress_printer, check_out_directory, check_scheduler
    from mapsearch.sweep.lock import DirectoryLock

    if args.workers is not None and args.workers < 1:
        raise MapsearchError(f"--workers: expected an int >= 1, got {args.workers}")
    if not (math.isfinite(args.time_limit) and args.time_limit > 0):
        raise MapsearchError(f"--time-limit: expected seconds > 0, got {args.time_limit}")
    if args.top < 0:
        raise MapsearchError(f"--top: expected an int >= 0 (0: all layers), got {args.top}")
    check_scheduler(args.scheduler)
    shapes = None
    if args.input_shape:
        try:
            shapes = [tuple(int(x) for x in s.split(",")) for s in args.input_shape]
        except ValueError:
            raise MapsearchError(f"--input-shape: expected comma-separated ints, got {args.input_shape}") from None
    model = load_model(args.model, shapes)
    profiles = [load_profile(p) for p in args.profiles]
    out = Path(args.out) if args.out else Path(f"characterize-{model.name}")
    check_out_directory(out, "--out")
    from mapsearch.characterize.run import layer_cases
    from mapsearch.characterize.graph import lower_all

    from mapsearch.characterize.chains import find_pairs

    layers = lower_all(model.nodes)
    cases, _ = layer_cases(layers, profiles, args.time_limit)
    einsums = [l for l in layers if l.einsum]
    pairs = [] if args.no_chain_fusion else find_pairs(model.nodes, layers)
    distinct_pairs = len({p.key for p in pairs})
    print(f"characterize {model.name}: {len(layers)} layers ({len(einsums)} einsums, "
          f"{len({l.shape_key() for l in einsums})} distinct shapes) on {len(profiles)} profile(s): "
          f"{len(cases)} case(s) in {out}" + (f"; {len(pairs)} chain pair(s), {distinct_pairs} distinct, "
                                               "solved as chains after the layers" if pairs else ""),
          file=sys.stderr)
    update, close = _progress_printer(len(cases), args.quiet)

    def chain_progress(profile: Any, pair: Any, rec: dict[str, Any]) -> None:
        if not args.quiet:
            print(f"chain {pair.first} -> {pair.second} on {profile.name}: best {rec.get('best') or rec.get('error')}"
                  f" ({rec.get('solve_seconds', 0):.1f} s)", file=sys.stderr)

    try:
        # Ctrl-C: the layer cases running are recorded as interrupted, a chain solve cut short is not kept.
        with DirectoryLock(_made(out), "characterize"), Interruptible() as it:
            result = it.call(lambda: characterize(
                model, profiles, out, workers=args.workers, scheduler=args.scheduler, time_limit=args.time_limit,
                retry_failed=args.retry_failed, progress=update, chain_fusion=not args.no_chain_fusion,
                chain_progress=chain_progress))
    finally:
        close()
    paths = write_outputs(result, profiles, out, plot=not args.no_plot)
    by_profile: dict[str, list] = {}
    for r in result.layers:
        by_profile.setdefault(r["profile"], []).append(r)
    for p in profiles:
        what = "all layers" if args.top == 0 else f"top {args.top} layers by time"
        print(f"\n{model.name} on {p.name} ({p.architecture['name']}, {p.clock_hz / 1e9:g} GHz): {what}")
        print(layers_table(by_profile[p.name], args.top), end="")
    if result.chains:
        print(f"\n{model.name}: chain fusion (solve_chain per distinct pair and profile; fused when its best "
              "option beats the two layers' own schedules, time then words)")
        print(chains_table(result.chains), end="")
    print(f"\n{model.name}: totals per profile ({sum(l.macs for l in einsums):,} MACs)")
    print(totals_table(result.totals), end="")
    failed = [r for r in result.layers if r["kind"] == "einsum" and r["status"] not in ("OPTIMAL", "OPTIMAL_IN_FAMILY", "FEASIBLE")]
    groups: dict[tuple, list] = {}
    for r in failed:  # one line per profile and distinct shape
        groups.setdefault((r["profile"], r["case_id"]), []).append(r)
    for (profile, _), rs in groups.items():
        more = f" (and {len(rs) - 1} more of its shape)" if len(rs) > 1 else ""
        print(f"  {profile} {rs[0]['layer']}{more}: {rs[0]['status']} {rs[0].get('error') or ''}")
    if failed:
        print("  failed layers are left out of the totals; rerun with --retry-failed and a longer --time-limit")
    print(f"wrote {', '.join(str(p) for p in paths.values())} and the sweep's exports in {out}", file=sys.stderr)
    if it.interrupted or (result.outcome is not None and result.outcome.interrupted):
        print(f"mapsearch: interrupted: what finished is stored in {out}; rerun the same command to finish",
              file=sys.stderr)
        return 130
    bad = [c for c in result.chains if c["replay"] not in (None, "ok")]
    for c in bad:
        print(f"mapsearch: REPLAY MISMATCH: chain {c['first']} -> {c['second']} on {c['profile']}: {c['replay']}",
              file=sys.stderr)
    return 1 if bad or any(r["status"] == "MISMATCH" for r in result.layers) else 0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    from mapsearch.characterize.models import builtin_names
    from mapsearch.characterize.profiles import profile_names

    p = sub.add_parser(
        "characterize",
        parents=[common],
        help="solve every layer of a DNN on architecture profiles; per-layer and per-model time, words, energy",
        description="Lower MODEL to einsums (conv, linear, attention matmuls) and bandwidth-only steps, fuse "
        "epilogues, solve each distinct einsum once per profile through the sweep machinery (resumable), and "
        "report per layer and per model time, words per link, utilization and energy.",
        epilog="MODEL: a built-in table (" + ", ".join(builtin_names()) + "), a .yaml layer table, a .onnx file "
        "(pip install 'mapsearch[onnx]') or package.module:callable returning a torch module or (module, inputs) "
        "(pip install 'mapsearch[torch]'). PROFILE: " + ", ".join(profile_names()) + " or a profile YAML file. "
        "exit codes: 0 ok; 1 a replay disagreed; 2 bad input; 130 interrupted (rerun to continue)",
    )
    p.add_argument("model", metavar="MODEL")
    p.add_argument("profiles", metavar="PROFILE", nargs="+")
    p.add_argument("--out", metavar="DIR", help="results directory (default ./characterize-<model>)")
    p.add_argument("--workers", metavar="N", type=int, help="local worker processes (default: the usable cores)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on this Dask distributed scheduler instead")
    p.add_argument("--time-limit", metavar="S", type=float, default=60.0, help="solver time limit per distinct layer (default 60)")
    p.add_argument("--retry-failed", action="store_true", help="rerun layers stored as failed")
    p.add_argument("--input-shape", metavar="N,C,H,W", action="append", help="input shape for a torch module (repeatable)")
    p.add_argument("--top", metavar="N", type=int, default=10, help="layers shown per profile, by share of time (0: all)")
    p.add_argument("--no-plot", action="store_true", help="skip the roofline plot")
    p.add_argument("--no-chain-fusion", action="store_true",
                   help="solve every einsum layer alone: no pair of consecutive einsums is solved as a fused chain")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return p
