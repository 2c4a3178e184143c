"""Solve every layer of a benchmark suite, replay it, and compare its words with a valid I/O lower bound.

    python benchmarks/run_suite.py SUITE.yaml ARCH_OR_PRESET [--time-limit S] [--limit N]
                                   [--objective time|words] [--replay-max-tiles N] [--jsonl FILE]

``SUITE.yaml`` is a file of ``benchmarks/suites/`` (``layers: [{name, einsum,
extents, count}]``). ``ARCH_OR_PRESET`` is an architecture YAML path, or a
preset name where ``mapsearch.presets.resolve_architecture`` exists.

Per layer it prints: the solve time, the status (OPTIMAL = every phase proved;
FEASIBLE = a phase hit ``--time-limit``, with the gap of that phase; TIMEOUT =
no schedule within the limit; INFEASIBLE), the total words over all links,
the utilization, the replay check (``ok`` = the count-mode replay agrees with
the prediction in every figure; ``skip`` when the walk would walk more
cells than ``--replay-max-tiles``: with a mesh, lockstep steps times the
instance classes walked, after folding repeated loop bodies; without one,
L0 tiles, folded above 4M; the walk is about linear in them),
and the ratio of words to the solver's own floor of that link
(:func:`mapsearch.model.bounds.link_floors`, built on
:mod:`mapsearch.model.lower_bound`).

Which link the ratio is about, and why: the **innermost link** (into L0,
the cache next to compute). Its floor treats L0 as one cache of S words
(per instance, summed over the link's copies where an array fans out) in
which every operand must sit when its MAC runs, fed from anything above,
whatever the levels above do (bypassing L1 or not, every operand crosses
into L0). The link just below the top sees every level under it as one
(non-inclusive) cache; it is printed as a second ratio (``ratio_top``). Note that the solver
minimises time first, then the words summed over all links, not the
innermost link's words, so the ratio measures the schedule (and the
bound's looseness), not the solver's objective. For convolutions with a
filter window the bound's segment term is weaker by ``sqrt(R S)`` (the
filter's taps, see the module), so their ratios are larger by construction.

Totals: the number of layers, the total solve time, the layers that hit the
time limit, the median ratio over layers, and the count-weighted words and
bound of the whole network (``count`` = occurrences of the layer).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mapsearch.errors import InfeasibleError, MapsearchError, SolverTimeout  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.model.bounds import link_floors  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.sim.errors import WalkTooLong  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import Architecture  # noqa: E402
from mapsearch.spec.load import workload_from_dict  # noqa: E402
from mapsearch.spec.reading import _error, _note, read_yaml  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402


@dataclass(frozen=True)
class Layer:
    name: str
    workload: Workload
    count: int


def load_suite(path: str | Path) -> list[Layer]:
    """The layers of a suite file; errors name the file and the field (``layers[3].extents``)."""
    source = str(path)
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("layers"), list) or not data["layers"]:
        raise _error(source, "layers", "a non-empty list of {name, einsum, extents, count}", data)
    layers, seen = [], set()
    for i, raw in enumerate(data["layers"]):
        where = f"layers[{i}]"
        if not isinstance(raw, dict):
            raise _error(source, where, "a mapping {name, einsum, extents, count}", raw)
        unknown = set(raw) - {"name", "einsum", "extents", "count"}
        if unknown:
            raise _note(source, f"{where}.{sorted(unknown)[0]}", "unknown field; expected name, einsum, extents, count")
        count = raw.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise _error(source, f"{where}.count", "int >= 1", count)
        try:
            w = workload_from_dict({k: raw.get(k) for k in ("name", "einsum", "extents")}, source)
        except MapsearchError as e:
            raise MapsearchError(f"{source}: {where} ({raw.get('name')!r}): {e}") from None
        if w.name in seen:
            raise _error(source, f"{where}.name", "a name not used by another layer", w.name)
        seen.add(w.name)
        layers.append(Layer(w.name, w, count))
    return layers


def resolve_architecture(name_or_path: str) -> Architecture:
    """An architecture YAML file, or a preset by name (``mapsearch.spec.load.resolve_architecture``)."""
    from mapsearch.spec.load import resolve_architecture as resolve

    return resolve(name_or_path)[0]


def walk_cells(schedule) -> int:
    """The cells the count replay walks: L0 tiles, or lockstep steps x walked instances with a mesh.

    The walk is about linear in them. With spatial splits the replay walks
    the lockstep steps of one instance per class of every split
    (``mapsearch.sim.spatial.Layout(collapse=True)``), not every instance,
    so a 128x128 array whose PEs do the same work costs what one PE does.
    """
    from mapsearch.sim.pieces import piece_tables
    from mapsearch.sim.spatial import Layout, has_splits, virtual_tables

    last = len(schedule.levels) - 1
    if has_splits(schedule):
        layout = Layout(schedule, collapse=True)
        steps = virtual_tables(schedule, layout)
        return math.prod(len(steps.start[last][k]) for k in range(len(steps.dims))) * layout.count[last]
    tables = piece_tables(schedule)
    return math.prod(tables.count(last, k) for k in range(len(tables.dims)))


@dataclass
class Row:
    name: str
    count: int
    macs: int
    status: str
    solve_s: float
    gap: float | None = None
    clocks: float | None = None  # the schedule's time
    time_gap: float | None = None  # the time phase's gap (``gap`` is the largest over the phases)
    words: int | None = None
    inner_words: int | None = None
    top_words: int | None = None
    utilization: float | None = None
    replay: str = "-"
    replay_s: float | None = None
    bound: int | None = None
    bound_kind: str = ""
    top_bound: int | None = None
    error: str = ""

    @property
    def ratio(self) -> float | None:
        return None if self.inner_words is None or not self.bound else self.inner_words / self.bound

    @property
    def ratio_top(self) -> float | None:
        return None if self.top_words is None or not self.top_bound else self.top_words / self.top_bound

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d.update(ratio=self.ratio, ratio_top=self.ratio_top)
        return d


def run_layer(layer: Layer, arch: Architecture, options: SolveOptions, replay_max_tiles: int) -> Row:
    row = Row(layer.name, layer.count, layer.workload.macs, "", 0.0)
    # The solver's own per-link floors (model/bounds.py): summed over a link's copies where the array fans out.
    floors = link_floors(Problem(layer.workload, arch))
    inner = floors[arch.depth - 1]
    row.bound, row.bound_kind = inner.total, "matmul" if inner.io > inner.down + inner.up else "compulsory"
    if arch.depth >= 3:
        row.top_bound = floors[1].total
    t0 = time.perf_counter()
    try:
        result = solve(Problem(layer.workload, arch), options=options)
    except SolverTimeout as e:
        row.status, row.solve_s, row.error = "TIMEOUT", time.perf_counter() - t0, str(e)
        return row
    except InfeasibleError as e:
        row.status, row.solve_s, row.error = "INFEASIBLE", time.perf_counter() - t0, str(e)
        return row
    except MapsearchError as e:
        row.status, row.solve_s, row.error = "ERROR", time.perf_counter() - t0, f"{type(e).__name__}: {e}"
        return row
    row.solve_s = time.perf_counter() - t0
    row.status, row.gap = result.status, result.gap
    fig = result.schedule.predicted
    row.clocks = float(fig.time)
    row.time_gap = next((p.gap for p in result.phases if p.name == "time"), None)
    row.words, row.utilization = fig.words_total, float(fig.utilization)
    row.inner_words = fig.links[-1].words
    row.top_words = fig.links[0].words if len(fig.links) >= 2 else None
    t1 = time.perf_counter()
    try:
        replayed = replay(result.schedule, "count", max_cells=replay_max_tiles).figures
    except WalkTooLong:
        row.replay = f"skip (walks > {replay_max_tiles:.1e} cells; {walk_cells(result.schedule):.1e} unfolded)"
        return row
    diff = differences(fig, replayed)
    row.replay_s = time.perf_counter() - t1
    row.replay = "ok" if not diff else "MISMATCH " + "; ".join(f"{f}: {a} != {b}" for f, a, b in diff[:3])
    return row


def _f(x, spec: str, width: int) -> str:
    return f"{'-':>{width}}" if x is None else f"{x:{width}{spec}}"


HEADER = (f"{'layer':32} {'count':>5} {'status':10} {'solve s':>8} {'gap':>6} {'clocks':>10} {'t gap':>6} "
          f"{'words':>12} {'util':>6} "
          f"{'L0 words':>12} {'bound':>12} {'ratio':>6} {'ratio_top':>9}  replay")


def format_row(r: Row) -> str:
    if r.words is None:
        return f"{r.name:32} {r.count:5d} {r.status:10} {r.solve_s:8.2f}  {r.error}"
    gap = "" if r.gap is None else f"{r.gap:6.1%}"
    time_gap = "" if r.time_gap is None else f"{r.time_gap:6.1%}"
    return (f"{r.name:32} {r.count:5d} {r.status:10} {r.solve_s:8.2f} {gap:>6} {r.clocks:10.0f} {time_gap:>6} "
            f"{r.words:12d} {r.utilization:6.3f} "
            f"{r.inner_words:12d} {r.bound:12d}{'*' if r.bound_kind == 'compulsory' else ' '}"
            f"{_f(r.ratio, '.2f', 5)} {_f(r.ratio_top, '.2f', 9)}  {r.replay}"
            + (f" ({r.replay_s:.1f}s)" if r.replay_s is not None else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", help="a suite YAML (benchmarks/suites/*.yaml)")
    ap.add_argument("arch", help="an architecture YAML or a preset name")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per layer (default 60)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N layers")
    ap.add_argument("--objective", default="time", choices=("time", "words"))
    ap.add_argument("--replay-max-tiles", type=float, default=3e7,
                    help="stop the replay of a schedule when its walk passes this many cells (after "
                         "folding): lockstep steps x instance classes with a mesh (default 3e7, ~1 min)")
    ap.add_argument("--jsonl", help="also write one JSON object per layer to this file")
    args = ap.parse_args(argv)

    try:
        layers = load_suite(args.suite)
        arch = resolve_architecture(args.arch)
    except MapsearchError as e:
        print(f"run_suite: {e}", file=sys.stderr)
        return 2
    if args.limit is not None:
        layers = layers[: args.limit]
    options = SolveOptions(objective=args.objective, time_limit=args.time_limit, workers=1, seed=0)
    caps = ", ".join(f"{lv.name} {lv.capacity if lv.capacity is not None else 'inf'}" for lv in arch.levels)
    print(f"suite {args.suite}: {len(layers)} layers; architecture {arch.name} ({caps} words); "
          f"objective {args.objective}; time limit {args.time_limit:g} s per layer")
    print(f"ratio = words on the link into {arch.levels[-1].name} / its floor (model/bounds.link_floors); "
          f"'*' = compulsory-traffic bound only (the segment bound is lower or does not apply)")
    print(HEADER)
    print("-" * len(HEADER))
    rows = []
    out = open(args.jsonl, "w", encoding="utf-8") if args.jsonl else None
    for layer in layers:
        row = run_layer(layer, arch, options, int(args.replay_max_tiles))
        rows.append(row)
        print(format_row(row), flush=True)
        if out:
            out.write(json.dumps(row.as_dict()) + "\n")
            out.flush()
    if out:
        out.close()

    solved = [r for r in rows if r.words is not None]
    limited = [r.name for r in rows if r.status in ("FEASIBLE", "TIMEOUT")]
    failed = [f"{r.name} ({r.status})" for r in rows if r.status in ("INFEASIBLE", "ERROR")]
    mismatched = [r.name for r in rows if r.replay.startswith("MISMATCH")]
    ratios = [r.ratio for r in solved if r.ratio is not None]
    mm_ratios = [r.ratio for r in solved if r.ratio is not None and r.bound_kind == "matmul"]
    print()
    print(f"layers: {len(rows)} ({len(solved)} solved, {sum(r.status == 'OPTIMAL' for r in rows)} proven optimal)")
    print(f"total solve time: {sum(r.solve_s for r in rows):.1f} s "
          f"(replay {sum(r.replay_s or 0 for r in rows):.1f} s, {sum(r.replay == 'ok' for r in rows)} replayed ok, "
          f"{sum(r.replay.startswith('skip') for r in rows)} skipped)")
    print(f"hit the time limit: {len(limited)}" + (f" ({', '.join(limited)})" if limited else ""))
    if failed:
        print(f"failed: {', '.join(failed)}")
    if mismatched:
        print(f"REPLAY MISMATCH: {', '.join(mismatched)}")
    if ratios:
        print(f"median ratio to the bound (L0 link): {statistics.median(ratios):.2f} over {len(ratios)} layers "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f})"
              + (f"; segment-bound layers only: median {statistics.median(mm_ratios):.2f} over {len(mm_ratios)}"
                 if mm_ratios and len(mm_ratios) != len(ratios) else ""))
        inner = sum(r.inner_words * r.count for r in solved)
        bound = sum(r.bound * r.count for r in solved)
        print(f"network (count-weighted): {sum(r.clocks * r.count for r in solved):,.0f} clocks, "
              f"{sum(r.words * r.count for r in solved):,} words on all links, "
              f"{inner:,} on the L0 link vs bound {bound:,} (ratio {inner / bound:.2f})")
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
