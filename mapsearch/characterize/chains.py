"""Chain fusion of consecutive einsum layers, decided by the fusion solver (:func:`mapsearch.solve.chain.solve_chain`).

A **pair** is two einsum layers where the first's output (after the
elementwise epilogues fused into it: bias, activation, an inference
batch-norm, a scale) is read directly, and only, by the second: linear ->
GELU -> linear in a transformer's FFN, a chain of 1x1 convolutions. Views
(which may transpose), bandwidth-only steps (softmax, layer norm, a residual
add: each needs its own pass or a reduction) and a second reader of the
intermediate all break a pair. The second einsum must read the intermediate
with plain indices in the first's output layout (a 1x1 stride-1 conv, a
linear, a matmul operand), so that the two lowered einsums share one tensor.

:func:`pair_graph` renames the two lowered einsums into one two-einsum
:class:`~mapsearch.spec.workload.WorkloadGraph`: the first's output becomes
the intermediate ``T``, the second reads ``T`` with the first's output
dimensions, every other tensor gets a suffix (``X1``, ``W1``, ``W2``,
``Y2``) and the second's other dimensions a fresh name. The graph's text and
extents hash to the pair's key, so identical pairs (BERT's 12 FFNs) are
solved once per profile.

:func:`solve_pair` solves the graph on a profile (every fused level,
unfused, materialized below the top), replays the best option in count mode
and compares it with the prediction, and returns a JSON-ready record, cached
in ``DIR/chain_cache.json`` by the pair key, the architecture and the solver
settings (a rerun reuses it).

:func:`choose` decides which pairs are fused, from the solver's figures
only: a pair is a candidate when the chain solve's best option is not
``unfused`` (fused at a level, or the intermediate materialized below the
top), its replay agrees, and its (time, words) beats the two layers' own
solves (the sweep's figures the totals would otherwise use) -- time first,
then words. Overlapping candidates (a layer can be in one pair) are chosen
to maximise the total saving (time, then words) exactly, by dynamic
programming over the pair forest.
"""

from __future__ import annotations

import hashlib
import json
import time as _time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence

from mapsearch.characterize.graph import Layer, Node, op_kind

__all__ = ["Pair", "find_pairs", "pair_graph", "solve_pair", "choose", "ChainCache", "CACHE_NAME",
           "EPILOGUE_KINDS"]

CACHE_NAME = "chain_cache.json"

# Epilogues a pair may look through: elementwise per output word (no reduction over the intermediate).
EPILOGUE_KINDS = ("activation", "elementwise")
EPILOGUE_OPS = ("batchnorm",)  # inference batch norm: a per-channel scale and shift


@dataclass(frozen=True)
class Pair:
    """Two einsum layers, the first's output read only by the second; ``texts`` share the intermediate ``T``."""

    first: str
    second: str
    texts: tuple[str, str]
    extents: tuple[tuple[str, int], ...]

    @property
    def key(self) -> str:
        text = " ; ".join(self.texts) + "|" + ",".join(f"{d}={e}" for d, e in sorted(self.extents))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def graph(self):
        from mapsearch.spec.workload import WorkloadGraph

        return WorkloadGraph.from_texts(f"pair-{self.key}", list(self.texts), dict(self.extents))


def _fresh(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name}{i}" in taken:
        i += 1
    return f"{name}{i}"


def pair_graph(first: Layer, second: Layer, operand: int) -> tuple[tuple[str, str], tuple[tuple[str, int], ...]] | None:
    """The two einsum texts sharing the intermediate ``T`` and their extents, or None when the second
    does not read input ``operand`` with plain indices in the first's output layout."""
    from mapsearch.spec.einsum_text import parse_einsum

    e1, e2 = parse_einsum(first.einsum), parse_einsum(second.einsum)
    if operand >= len(e2.inputs):
        return None
    x1, x2 = first.extents, second.extents
    out1, read = e1.output, e2.inputs[operand]
    if len(out1.indices) != len(read.indices) or not all(ix.is_plain for ix in read.indices + out1.indices):
        return None
    dmap: dict[str, str] = {}
    for a, b in zip(out1.indices, read.indices):
        d1, d2 = a.terms[0][0], b.terms[0][0]
        if x1[d1] != x2[d2] or d2 in dmap:
            return None
        dmap[d2] = d1
    taken = set(x1)
    for d in e2.dims:
        if d not in dmap:
            dmap[d] = _fresh(d, taken)
            taken.add(dmap[d])

    def access(t, name: str, dims: Mapping[str, str] | None = None) -> str:
        parts = []
        for ix in t.indices:
            parts.append("+".join((dims[d] if dims else d) + ("" if c == 1 else f"*{c}") for d, c in ix.terms))
        return f"{name}[{','.join(parts)}]"

    text1 = f"{access(out1, 'T')} += " + " * ".join(access(t, t.name + "1") for t in e1.inputs)
    ins2 = [access(t, "T", dmap) if i == operand else access(t, t.name + "2", dmap) for i, t in enumerate(e2.inputs)]
    text2 = f"{access(e2.output, e2.output.name + '2', dmap)} += " + " * ".join(ins2)
    extents = dict(x1)
    for d, e in x2.items():
        extents[dmap[d]] = e
    return (text1, text2), tuple(sorted(extents.items()))


def _epilogue_ok(node: Node) -> bool:
    return op_kind(node.op) in EPILOGUE_KINDS or node.op in EPILOGUE_OPS


def find_pairs(nodes: Sequence[Node], layers: Sequence[Layer]) -> list[Pair]:
    """Every pair of einsum layers where the first's output (after its fused epilogues) feeds only the second."""
    by_name = {n.name: n for n in nodes}
    layer_of = {l.name: l for l in layers}
    readers: dict[str, list[Node]] = {}
    for n in nodes:
        for s in n.srcs:
            readers.setdefault(s, []).append(n)
    pairs = []
    for layer in layers:
        if layer.einsum is None or layer.fused_into is not None:
            continue
        if not all(_epilogue_ok(by_name[e]) for e in layer.epilogues):
            continue
        out = layer.epilogues[-1] if layer.epilogues else layer.name
        rs = readers.get(out, [])
        if len(rs) != 1 or rs[0].srcs.count(out) != 1:
            continue
        nxt = layer_of.get(rs[0].name)
        if nxt is None or nxt.einsum is None:  # a view, a bandwidth-only step, ...
            continue
        got = pair_graph(layer, nxt, rs[0].srcs.index(out))
        if got is not None:
            pairs.append(Pair(layer.name, nxt.name, got[0], got[1]))
    return pairs


# --------------------------------------------------------------------------
# Solving a pair on a profile, replaying its best option, caching the record.
# --------------------------------------------------------------------------


def _plain(x: Fraction) -> str:
    return str(Fraction(x))


def _figures_record(figs: Sequence[Any]) -> dict[str, Any]:
    """Links (summed over schedules), op calls, compute time and time of one or more schedules' figures."""
    links: dict[str, dict[str, Any]] = {}
    for f in figs:
        for l in f.links:
            d = links.setdefault(l.name, {"words_down": 0, "words_up": 0, "words": 0, "time": Fraction(0)})
            d["words_down"] += l.words_down
            d["words_up"] += l.words_up
            d["words"] += l.words
            d["time"] += Fraction(l.time)
    for d in links.values():
        d["time"] = _plain(d["time"])
    return {"links": links, "op_calls": sum(f.op_calls for f in figs),
            "compute_time": _plain(sum((Fraction(f.compute_time) for f in figs), Fraction(0)))}


def _replay(schedules: Sequence[Any], mode: str = "count") -> str:
    """``"ok"`` when every schedule's replay equals its prediction, else the first differences."""
    from mapsearch.schedule.figures import differences
    from mapsearch.sim.errors import SimulatorError
    from mapsearch.sim.replay import replay

    for s in schedules:
        try:
            r = replay(s, mode=mode)
        except SimulatorError as e:
            return "MISMATCH: " + " ".join(str(e).split())
        diffs = differences(s.predicted, r.figures)
        if diffs:
            return "MISMATCH: " + "; ".join(f"{f}: predicted {a}, replayed {b}" for f, a, b in diffs[:4])
    return "ok"


def solve_pair(pair: Pair, profile: Any, time_limit: float, work_limit: float | None = None,
               schedule_dir: Path | None = None, separate: tuple[Fraction, int] | None = None) -> dict[str, Any]:
    """Solve ``pair`` on ``profile`` (:func:`mapsearch.solve.entry.solve_chain`, as :func:`mapsearch.api.solve_chain`);
    the record of its best option, whose schedules alone are replayed.

    ``separate``: the two layers' own (time, words). A best option that does
    not beat it is never fused, so it is not replayed (``replay`` None): on
    ``tpu-v4i-like`` a pair's materialized option found in a 10 s solve ran
    43.6 M clocks, and its replay took 400 s of a characterize run whose
    24 layers had taken 2.5 minutes.
    """
    from mapsearch.errors import MapsearchError
    from mapsearch.model.options import SolveOptions
    from mapsearch.solve.entry import solve_chain
    from mapsearch.spec.inputs import architecture_of

    start = _time.perf_counter()
    rec: dict[str, Any] = {"pair": pair.key, "profile": profile.name, "texts": list(pair.texts),
                           "extents": dict(pair.extents), "best": None, "status": "ERROR", "error": None,
                           "candidates": [], "replay": None, "schedule": None}
    try:
        arch = architecture_of(profile.architecture, source_name=profile.name)
        options = SolveOptions(time_limit=time_limit, work_limit=work_limit, workers=1, seed=0)
        result = solve_chain(pair.graph(), arch, options=options, replay_mode=None)
        rec["candidates"] = [[name, _plain(t), int(w)] for name, t, w in result.candidates()]
        best = result.best
    except MapsearchError as e:
        rec["error"] = " ".join(str(e).split())
        rec["solve_seconds"] = _time.perf_counter() - start
        return rec
    rec["best"] = best
    rec["levels"] = {f"fused at {o.level}": o.status if o.schedule is not None else f"{o.status}: "
                     + " ".join(o.reason.split())[:200] for o in result.fused}
    fused = {f"fused at {o.level}": o for o in result.fused if o.schedule is not None}
    options = {"unfused": result.unfused}
    options.update({f"materialized at {lv}": o for lv, o, _ in result.materialized if o is not None})
    if best in fused:
        o = fused[best]
        schedules = [o.schedule]
        phases = list(o.phases)
        status = o.status
    else:
        u = options[best]
        schedules = [s.schedule for s in u.stages]
        phases = [p for s in u.stages for p in s.phases]
        status = u.status
    rec.update(_figures_record([s.predicted for s in schedules]))
    rec["status"] = status
    time = sum((s.predicted.time for s in schedules), Fraction(0))  # materialized: runs add up
    rec["time"] = _plain(time)
    rec["words"] = sum(s.predicted.words_total for s in schedules)
    rec["gap"] = max((p.gap for p in phases), default=None)
    time_phases = [p.gap for p in phases if p.name == "time"]
    rec["time_gap"] = max(time_phases) if time_phases else None
    if best == "unfused":
        rec["replay"] = "ok"
    elif separate is None or _beats((time, rec["words"]), separate):
        rec["replay"] = _replay(schedules)
    else:
        rec["replay"] = None  # never fused, so not checked
    import mapsearch.budget as budget

    stopped = budget.stopped()  # cut short by Ctrl-C: the caller drops it
    if schedule_dir is not None and best != "unfused" and not stopped:
        schedule_dir.mkdir(parents=True, exist_ok=True)
        path = schedule_dir / f"{pair.key}-{profile.name}.json"
        _save(result, best, fused, options, path)
        rec["schedule"] = str(path.relative_to(schedule_dir.parent))
    rec["solve_seconds"] = _time.perf_counter() - start
    return rec


def _save(result, best: str, fused: dict, options: dict, path: Path) -> None:
    from mapsearch.atomic import write_text_atomic
    from mapsearch.schedule.fused_json import save_fused
    from mapsearch.schedule.json_io import _pretty
    from mapsearch.solve.chain_files import unfused_to_dict

    if best in fused:
        save_fused(fused[best].schedule, path)
    else:
        write_text_atomic(path, _pretty(unfused_to_dict(result, options[best])) + "\n")


class ChainCache:
    """Pair records by (pair key, architecture, solver settings), kept in ``DIR/chain_cache.json``."""

    def __init__(self, out_dir: str | Path | None) -> None:
        self.path = None if out_dir is None else Path(out_dir) / CACHE_NAME
        self.records: dict[str, dict[str, Any]] = {}
        if self.path is not None and self.path.exists():
            try:
                self.records = json.loads(self.path.read_text())
            except (OSError, ValueError):
                self.records = {}

    @staticmethod
    def key(pair: Pair, profile: Any, time_limit: float, work_limit: float | None = None) -> str:
        arch = json.dumps(profile.architecture, sort_keys=True, default=str)
        work = "" if work_limit is None else f"|work_limit={float(work_limit)}"
        text = f"{pair.key}|{arch}|time_limit={time_limit}{work}|workers=1|seed=0|replay=count"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def get(self, pair: Pair, profile: Any, time_limit: float,
            work_limit: float | None = None) -> dict[str, Any] | None:
        return self.records.get(self.key(pair, profile, time_limit, work_limit))

    def put(self, pair: Pair, profile: Any, time_limit: float, work_limit: float | None = None, *,
            record: dict[str, Any]) -> None:
        self.records[self.key(pair, profile, time_limit, work_limit)] = record
        if self.path is not None:
            from mapsearch.atomic import write_text_atomic

            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(self.path, json.dumps(self.records, indent=1, sort_keys=True) + "\n")


# --------------------------------------------------------------------------
# The decision.
# --------------------------------------------------------------------------


def gain(record: Mapping[str, Any] | None, separate: tuple[Fraction, int] | None) -> tuple[Fraction, int] | None:
    """(time saved, words saved) of fusing a pair, when its chain solve beats the separate layers; else None."""
    if record is None or separate is None or record.get("best") in (None, "unfused"):
        return None
    if record.get("replay") != "ok":
        return None
    chain = (Fraction(record["time"]), int(record["words"]))
    return (separate[0] - chain[0], separate[1] - chain[1]) if _beats(chain, separate) else None


def _beats(chain: tuple[Fraction, int], separate: tuple[Fraction, int]) -> bool:
    """The chain's (time, words) is better than the separate layers', time first: the only case where fusing
    can pay (:func:`gain`), and so the only one whose schedules :func:`solve_pair` replays."""
    return (chain[0], chain[1]) < (separate[0], separate[1])


def choose(pairs: Sequence[Pair], gains: Mapping[str, tuple[Fraction, int] | None]) -> list[Pair]:
    """The pairs to fuse: no layer in two, the largest total (time, words) saving.

    ``gains`` by ``pair.first`` (a layer is the first of at most one pair).
    Each layer's output feeds at most one pair, so the pairs form a forest
    (a producer's parent is its consumer): a maximum-weight matching on it
    by dynamic programming.
    """
    edges = [p for p in pairs if gains.get(p.first) is not None]
    children: dict[str, list[Pair]] = {}
    has_parent = set()
    for p in edges:
        children.setdefault(p.second, []).append(p)
        has_parent.add(p.first)
    zero = (Fraction(0), 0)

    def add(a, b):
        return (a[0] + b[0], a[1] + b[1])

    def sub(a, b):
        return (a[0] - b[0], a[1] - b[1])

    memo: dict[str, tuple] = {}

    def solve(v: str):
        """(best with v unmatched below, best overall, the pair v is matched with or None)."""
        if v in memo:
            return memo[v]
        free = zero
        for p in children.get(v, []):
            free = add(free, solve(p.first)[1])
        best, pick = free, None
        for p in children.get(v, []):
            c_free, c_best, _ = solve(p.first)
            cand = add(add(sub(free, c_best), c_free), gains[p.first])
            if cand > best:
                best, pick = cand, p
        memo[v] = (free, best, pick)
        return memo[v]

    chosen: list[Pair] = []

    def collect(v: str, matched_above: bool) -> None:
        _, _, pick = solve(v)
        if matched_above:
            pick = None
        if pick is not None:
            chosen.append(pick)
        for p in children.get(v, []):
            collect(p.first, p is pick)

    roots = {p.second for p in edges} - has_parent
    for r in sorted(roots):
        collect(r, False)
    order = {p.first: i for i, p in enumerate(pairs)}
    return sorted(chosen, key=lambda p: order[p.first])
