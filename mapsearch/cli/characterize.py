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
import sys
from pathlib import Path
from typing import Any

from mapsearch import api
from mapsearch.characterize.report import ROOFLINE_NAME, chains_table, layers_table, roofline, totals_table
from mapsearch.cli.exits import EXIT_INTERRUPTED, EXIT_MISMATCH, CommandFailed
from mapsearch.cli.paths import output_directory, refuse_inputs_in_directory
from mapsearch.cli.progress import progress_printer
from mapsearch.errors import MapsearchError, UsageError

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> None:
    if args.workers is not None and args.workers < 1:
        raise MapsearchError(f"--workers: expected an int >= 1, got {args.workers}")
    if args.workers is not None and args.workers > api.MAX_WORKERS:  # as solve's --workers
        raise UsageError("--workers", f"an int between 1 and {api.MAX_WORKERS:,}", args.workers)
    api.check_seconds("--time-limit", args.time_limit)  # as solve's --time-limit
    if args.work_limit is not None:
        api.check_seconds("--work-limit", args.work_limit, "deterministic seconds > 0")
    if args.top < 0:
        raise MapsearchError(f"--top: expected an int >= 0 (0: all layers), got {args.top}")
    api.check_scheduler(args.scheduler, "--scheduler")
    shapes = None
    if args.input_shape:
        try:
            shapes = [tuple(int(x) for x in s.split(",")) for s in args.input_shape]
        except ValueError:
            raise MapsearchError(f"--input-shape: expected comma-separated ints, got {args.input_shape}") from None
    for what, value in [("MODEL", args.model)] + [("PROFILE", p) for p in args.profiles]:
        if not value.strip():
            raise MapsearchError(f"{what}: expected a name or a file, got {value!r}")
    model = api.load_model(args.model, shapes)
    profiles = [api.load_profile(p) for p in args.profiles]
    out = Path(args.out) if args.out else Path(f"characterize-{model.name}")
    inputs = [("MODEL", args.model)] + [("PROFILE", p) for p in args.profiles]
    refuse_inputs_in_directory(out, api.CHARACTERIZE_WRITTEN, inputs)  # --out must replace no input
    api.check_out_directory(out, "--out")
    bar: dict[str, Any] = {"update": None, "close": lambda: None}
    plan: list[api.CharacterizeStart] = []

    def started(s: api.CharacterizeStart) -> None:
        plan.append(s)
        print(f"characterize {s.model}: {s.layers} layers ({s.einsums} einsums, {s.distinct_shapes} distinct shapes) "
              f"on {s.profiles} profile(s): {s.cases} case(s) in {s.out_dir}"
              + (f"; {s.pairs} chain pair(s), {s.distinct_pairs} distinct, solved as chains after the layers"
                 if s.pairs else ""), file=sys.stderr)
        bar["update"], bar["close"] = progress_printer(s.cases, args.quiet)

    def progress(p: api.Progress) -> None:
        if bar["update"] is not None:
            bar["update"](p)

    def chain_progress(profile: Any, pair: Any, rec: dict[str, Any]) -> None:
        if not args.quiet:
            print(f"chain {pair.first} -> {pair.second} on {profile.name}: best {rec.get('best') or rec.get('error')}"
                  f" ({rec.get('solve_seconds', 0):.1f} s)", file=sys.stderr)

    try:
        # Ctrl-C: the layer cases running are recorded as interrupted, a chain solve cut short is not kept.
        with api.Interruptible() as it:
            result = it.call(lambda: api.characterize(
                model, profiles, out, workers=args.workers, scheduler=args.scheduler, time_limit=args.time_limit,
                work_limit=args.work_limit, retry_failed=args.retry_failed, chain_fusion=not args.no_chain_fusion,
                on_start=started, progress=progress, chain_progress=chain_progress))
    finally:
        bar["close"]()
    paths = dict(result.tables)
    if not args.no_plot:
        try:
            paths["roofline"] = roofline(result, profiles, out / ROOFLINE_NAME)
        except MapsearchError as e:
            print(f"mapsearch: characterize: no roofline: {e}", file=sys.stderr)
    by_profile: dict[str, list] = {}
    for r in result.layers:
        by_profile.setdefault(r["profile"], []).append(r)
    for p in profiles:
        what = "all layers" if args.top == 0 else f"top {args.top} layers by time"
        print(f"\n{model.name} on {p.name} ({p.architecture['name']}, {p.clock_hz / 1e9:g} GHz): {what}\n"
              f"  {p.name}: {p.hardware}")
        print(layers_table(by_profile[p.name], args.top), end="")
    if result.chains:
        print(f"\n{model.name}: chain fusion (solve_chain per distinct pair and profile; fused when its best "
              "option beats the two layers' own schedules, time then words)")
        print(chains_table(result.chains), end="")
    print(f"\n{model.name}: totals per profile ({plan[0].macs:,} MACs)")
    print(totals_table(result.totals), end="")
    failed = [r for r in result.layers if r["kind"] == "einsum" and r["status"] not in ("OPTIMAL", "OPTIMAL_IN_FAMILY", "FEASIBLE")]
    groups: dict[tuple, list] = {}
    for r in failed:  # one line per profile and distinct shape
        groups.setdefault((r["profile"], r["shape_key"]), []).append(r)
    for (profile, _), rs in groups.items():
        more = f" (and {len(rs) - 1} more of its shape)" if len(rs) > 1 else ""
        print(f"  {profile} {rs[0]['layer']}{more}: {rs[0]['status']} {rs[0].get('error') or ''}")
    if failed:
        print("  failed layers are left out of the totals; rerun with --retry-failed and a longer --time-limit")
    print(f"wrote {', '.join(str(p) for p in paths.values())} and the sweep's exports in {out}", file=sys.stderr)
    if it.interrupted or (result.outcome is not None and result.outcome.interrupted):
        raise CommandFailed(EXIT_INTERRUPTED, [f"interrupted: what finished is stored in {out}; rerun the same "
                                               "command to finish"])
    bad = [c for c in result.chains if c["replay"] not in (None, "ok")]
    if bad or any(r["status"] == "MISMATCH" for r in result.layers):
        raise CommandFailed(EXIT_MISMATCH, [f"REPLAY MISMATCH: chain {c['first']} -> {c['second']} on {c['profile']}: "
                                            f"{c['replay']}" for c in bad])


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "characterize",
        parents=[common],
        help="solve every layer of a DNN on architecture profiles; per-layer and per-model time, words, energy",
        description="Lower MODEL to einsums (conv, linear, attention matmuls) and bandwidth-only steps, fuse "
        "epilogues, solve each distinct einsum once per profile through the sweep machinery (resumable), and "
        "report per layer and per model time, words per link, utilization and energy.",
        epilog="MODEL: a built-in table (" + ", ".join(api.model_names()) + "), a .yaml layer table, a .onnx file "
        "(pip install 'mapsearch[onnx]') or package.module:callable returning a torch module or (module, inputs) "
        "(pip install 'mapsearch[torch]'). PROFILE: " + ", ".join(api.profile_names()) + " or a profile YAML file. "
        "exit codes: 0 ok; 1 a replay disagreed; 2 bad input; 130 interrupted (rerun to continue)",
    )
    p.add_argument("model", metavar="MODEL")
    p.add_argument("profiles", metavar="PROFILE", nargs="+")
    p.add_argument("--out", metavar="DIR", type=output_directory, help="results directory (default ./characterize-<model>)")
    p.add_argument("--workers", metavar="N", type=int, help="local worker processes (default: the usable cores)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on this Dask distributed scheduler instead")
    p.add_argument("--time-limit", metavar="S", type=float, default=60.0, help="solver time limit per distinct layer (default 60)")
    p.add_argument("--work-limit", metavar="D", type=float,
                   help="CP-SAT deterministic seconds per solver phase of each layer and chain (statuses then do not "
                   "depend on the machine's load; --time-limit still applies)")
    p.add_argument("--retry-failed", action="store_true", help="rerun layers stored as failed")
    p.add_argument("--input-shape", metavar="N,C,H,W", action="append", help="input shape for a torch module (repeatable)")
    p.add_argument("--top", metavar="N", type=int, default=10, help="layers shown per profile, by share of time (0: all)")
    p.add_argument("--no-plot", action="store_true", help="skip the roofline plot")
    p.add_argument("--no-chain-fusion", action="store_true",
                   help="solve every einsum layer alone: no pair of consecutive einsums is solved as a fused chain")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return p
