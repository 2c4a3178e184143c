"""Characterize a model on profiles: solve each distinct einsum once per profile, add up per layer and model.

:func:`characterize` lowers the model (:func:`~mapsearch.characterize.fusion.lower_all`,
fused patterns applied), makes one sweep case per distinct (einsum text,
extents, architecture) with :func:`mapsearch.sweep.spec.expand` -- the
workload is named by its shape key, so the case id, a hash of the resolved
content, is the same for every layer of that shape and for every model that
has it -- runs them with :func:`mapsearch.sweep.runner.run_sweep` (local
pool or Dask, stored in ``DIR/results.sqlite`` as each ends, so a rerun
skips what is finished) and exports the sweep's own files
(:func:`mapsearch.sweep.export.export`). Bandwidth-only steps are computed
from the profile (no solve); fused epilogues cost nothing.

Then **chain fusion** (:mod:`mapsearch.characterize.chains`, unless
``chain_fusion=False``): every pair of einsum layers where the first's output
feeds only the second (through elementwise epilogues) is solved as a
two-einsum chain with :func:`mapsearch.solve.chain.solve_chain` on each
profile (identical pairs once; records cached in ``DIR/chain_cache.json``),
its best option replayed, and fused when the solver's figures beat the two
layers' own schedules (time, then words). A fused pair's first row carries
the pair's figures (``fused_with`` the second, ``chain`` the option), the
second's row zeros (``fused_with`` the first); both keep their own solve in
``separate_clocks`` / ``separate_words``. :data:`CHAIN_KEYS`: one decision
row per profile and pair.

Per layer and profile (:data:`LAYER_KEYS`): status, gap, time in clocks and
seconds, words per link, utilization, MACs, energy. Per model and profile
(:data:`TOTAL_KEYS`): the sums, the utilization of the whole model
(compute time / time), and each layer's share of the time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from mapsearch.budget import stopped
from mapsearch.characterize.chains import ChainCache, Pair, choose, find_pairs, gain, solve_pair
from mapsearch.characterize.fusion import lower_all
from mapsearch.characterize.graph import Layer
from mapsearch.characterize.models import Model
from mapsearch.characterize.profiles import Profile

if TYPE_CHECKING:  # pandas is imported by to_dataframe, on first use
    import pandas

__all__ = ["characterize", "Characterization", "LAYER_KEYS", "TOTAL_KEYS", "CHAIN_KEYS", "layer_cases", "Refused"]

LAYER_KEYS = ("model", "profile", "layer", "op", "kind", "pattern", "fused_into", "fused_with", "chain", "shape_key",
              "case_id", "status", "gap", "time_gap", "error", "family_restrictions", "macs", "executed_macs",
              "time_clocks", "seconds", "compute_clocks", "utilization", "array_utilization", "mac_efficiency",
              "block_binding", "words_total", "words_top", "links", "energy_pj", "share", "separate_clocks",
              "separate_words", "einsum", "extents")
TOTAL_KEYS = ("model", "profile", "architecture", "hardware", "stand_in_for", "layers", "einsum_layers",
              "distinct_shapes", "bandwidth_steps", "fused_epilogues", "optimal", "optimal_in_family", "feasible",
              "failed", "max_gap", "max_time_gap", "macs", "time_clocks", "seconds",
              "compute_clocks", "utilization", "peak_fraction", "words_total", "words_top", "links", "energy_pj",
              "energy_mac_pj", "energy_links_pj", "chain_pairs", "fused_pairs", "chain_saved_clocks",
              "chain_saved_words", "solve_seconds")
CHAIN_KEYS = ("model", "profile", "first", "second", "pair", "fused", "decision", "best", "status", "replay",
              "chain_clocks", "chain_words", "separate_clocks", "separate_words", "saved_clocks", "saved_words",
              "candidates", "schedule", "solve_seconds")


@dataclass
class Characterization:
    model: str
    layers: list[dict[str, Any]]  # one row per (profile, layer), LAYER_KEYS
    totals: list[dict[str, Any]]  # one row per profile, TOTAL_KEYS
    cases: list[Any] = field(default_factory=list)
    outcome: Any = None
    paths: dict[str, Path] = field(default_factory=dict)
    chains: list[dict[str, Any]] = field(default_factory=list)  # one row per (profile, pair), CHAIN_KEYS
    tables: dict[str, Path] = field(default_factory=dict)  # layers/totals/chains CSV and JSON (report.write_outputs)

    def to_dataframe(self, table: str = "layers") -> "pandas.DataFrame":
        """``layers`` (one row per profile and layer), ``totals`` (per profile) or ``chains`` (per profile and
        chain pair) as a DataFrame; ``links`` stays a dict per row. pandas is imported here, on first use."""
        rows = {"layers": (self.layers, LAYER_KEYS), "totals": (self.totals, TOTAL_KEYS),
                "chains": (self.chains, CHAIN_KEYS)}
        if table not in rows:
            from mapsearch.errors import UsageError

            raise UsageError("table", "one of " + ", ".join(rows), table)
        import pandas as pd

        data, keys = rows[table]
        return pd.DataFrame(data, columns=list(dict.fromkeys([*keys, *(k for r in data for k in r)])))


def _workload_doc(layer: Layer, compute: Any) -> tuple[str, dict[str, Any]]:
    """The workload solved for ``layer`` on an op ``compute``: its einsum, or, where the op is given in GEMM roles
    and that einsum has no dimension for one of them (a GEMV: batch 1 leaves no ``m``), the one with the GEMM
    dimensions of extent 1 kept (``Layer.gemm_einsum``): the op then runs padded on them, as the hardware does."""
    from mapsearch.spec.block_roles import roles_problem
    from mapsearch.spec.einsum_text import parse_einsum

    einsum, extents = layer.einsum, layer.extents
    if compute.block_roles and layer.gemm_einsum and roles_problem(parse_einsum(einsum), compute) is not None:
        einsum, extents = layer.gemm_einsum, layer.gemm_extents
    name = f"{layer.op}-{layer.shape_key()}"
    return name, {"name": name, "einsum": einsum, "extents": dict(extents), "homes": {}}


@dataclass(frozen=True)
class Refused:
    """A layer the solver cannot take on a profile (its figures pass the size guard, mapsearch/spec/limits.py):
    no case is made; its row is an ERROR with this reason, and the other layers go on."""

    reason: str
    workload: dict[str, Any]


def layer_cases(layers: Sequence[Layer], profiles: Sequence[Profile], time_limit: float, source: str = "characterize",
                work_limit: float | None = None):
    """The distinct sweep cases and ``{(profile name, shape key): case or Refused}``; a ``work_limit`` (CP-SAT
    deterministic seconds per phase) is part of each case, as in a sweep: it decides the result."""
    from mapsearch.errors import SpecError
    from mapsearch.spec.load import architecture_from_dict
    from mapsearch.sweep.spec import expand

    shapes = {layer.shape_key(): layer for layer in layers if layer.einsum is not None}
    cases, index = [], {}
    for profile in profiles:
        arch = (profile.architecture["name"], profile.architecture)
        compute = architecture_from_dict(profile.architecture, profile.name).compute
        for key, layer in shapes.items():
            wl = _workload_doc(layer, compute)
            try:
                (case,) = expand([wl], [arch], ["time"], [("", None)], [], "grid", time_limit, source, work_limit)
            except SpecError as e:
                index[(profile.name, key)] = Refused(f"SpecError: {' '.join(str(e).split())}", wl[1])
                continue
            index[(profile.name, key)] = case
            if all(c.case_id != case.case_id for c in cases):
                cases.append(case)
    return cases, index


def _f(x: Any) -> float | None:
    if x is None:
        return None
    return float(Fraction(x)) if isinstance(x, str) else float(x)


def _layer_row(model: str, profile: Profile, layer: Layer, case: Any, stored: dict | None) -> dict[str, Any]:
    row: dict[str, Any] = {k: None for k in LAYER_KEYS}
    row.update(model=model, profile=profile.name, layer=layer.name, op=layer.op, kind=layer.kind,
               pattern=layer.pattern, fused_into=layer.fused_into, macs=layer.macs, links={})
    if layer.fused_into is not None:
        row.update(status="FUSED", time_clocks=0.0, seconds=0.0, compute_clocks=0.0, words_total=0, words_top=0,
                   energy_pj=0.0)
        return row
    if layer.einsum is None:
        clocks = float(profile.top_link_clocks(layer.read_words, layer.write_words))
        words = layer.words
        row.update(status="BANDWIDTH", time_clocks=clocks, seconds=clocks / profile.clock_hz, compute_clocks=0.0,
                   utilization=0.0, words_total=words, words_top=words,
                   links={profile.top_link: {"words_down": layer.read_words, "words_up": layer.write_words,
                                             "words": words, "time": clocks}},
                   energy_pj=words * profile.link_energy_pj[profile.top_link])
        return row
    if isinstance(case, Refused):
        row.update(shape_key=layer.shape_key(), status="ERROR", error=case.reason, einsum=case.workload["einsum"],
                   extents=case.workload["extents"])
        return row
    solved = case.content["workload"]  # the einsum this profile solves (GEMM dims of extent 1 kept for a block op)
    row.update(shape_key=layer.shape_key(), case_id=case.case_id, einsum=solved["einsum"], extents=solved["extents"])
    if stored is None:
        row["status"] = "PENDING"
        return row
    row["status"] = stored["status"]
    report = stored.get("report")
    row["error"] = stored.get("error")  # why a layer has no schedule (TIMEOUT, INFEASIBLE, ERROR) or a mismatch
    if report is None or stored["status"] not in ("OPTIMAL", "OPTIMAL_IN_FAMILY", "FEASIBLE", "MISMATCH"):
        return row
    links = {}
    energy = 0.0
    for link in report.get("links", []):
        words = (link.get("words_down") or 0) + (link.get("words_up") or 0)
        links[link["name"]] = {"words_down": link.get("words_down"), "words_up": link.get("words_up"),
                               "words": words, "time": _f(link.get("time"))}
        energy += words * profile.link_energy_pj.get(link["name"], 0.0)
    # The op's MACs run, padding of a block op included (op calls x the bound block's MACs): what the MAC energy pays.
    executed = (report.get("op_calls") or 0) * (report.get("block_macs") or profile.block_macs)
    energy += executed * profile.mac_energy_pj
    phases = report.get("phases") or []
    clocks = _f(report.get("time"))
    row.update(gap=report.get("gap"), time_gap=phases[0]["gap"] if phases else None, time_clocks=clocks,
               seconds=clocks / profile.clock_hz, compute_clocks=_f(report.get("compute_time")), executed_macs=executed,
               utilization=_f(report.get("utilization")), words_total=report.get("words_total"),
               words_top=links.get(profile.top_link, {}).get("words"), links=links, energy_pj=energy,
               solve_seconds=stored.get("solve_seconds"), array_utilization=_f(report.get("array_utilization")),
               mac_efficiency=_f(report.get("mac_efficiency")),
               family_restrictions="; ".join(report.get("family_restrictions") or ()) or None,
               block_binding=", ".join(f"{r}={d}" for r, d in (report.get("block_binding") or {}).items()) or None)
    return row


def _totals(model: str, profile: Profile, rows: list[dict[str, Any]], layers: Sequence[Layer],
            chains: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    solved = [r for r in rows if r["time_clocks"] is not None]
    einsum_rows = [r for r in rows if r["kind"] == "einsum"]
    failed = [r for r in einsum_rows if r["status"] not in ("OPTIMAL", "OPTIMAL_IN_FAMILY", "FEASIBLE")]
    time = sum(r["time_clocks"] for r in solved)
    compute = sum(r["compute_clocks"] or 0 for r in solved)
    links: dict[str, int] = {}
    for r in solved:
        for name, link in (r["links"] or {}).items():
            links[name] = links.get(name, 0) + (link["words"] or 0)
    for r in rows:
        r["share"] = (r["time_clocks"] / time) if time and r["time_clocks"] is not None else None
    energy_mac = sum(r["executed_macs"] or 0 for r in solved) * profile.mac_energy_pj
    energy = sum(r["energy_pj"] or 0 for r in solved)
    macs = sum(l.macs for l in layers)
    solve_seconds = {r["case_id"]: r.get("solve_seconds") or 0 for r in einsum_rows if r["case_id"]}
    solve_seconds.update({("pair", c["pair"]): c["solve_seconds"] or 0 for c in chains})
    fused = [c for c in chains if c["fused"]]
    return {
        "model": model, "profile": profile.name, "architecture": profile.architecture["name"],
        "hardware": profile.hardware, "stand_in_for": profile.stand_in_for,
        "layers": len(rows), "einsum_layers": len(einsum_rows),
        "distinct_shapes": len({r["shape_key"] for r in einsum_rows}),
        "bandwidth_steps": sum(r["status"] == "BANDWIDTH" for r in rows),
        "fused_epilogues": sum(r["status"] == "FUSED" for r in rows),
        "optimal": sum(r["status"] == "OPTIMAL" for r in einsum_rows),
        "optimal_in_family": sum(r["status"] == "OPTIMAL_IN_FAMILY" for r in einsum_rows),
        "feasible": sum(r["status"] == "FEASIBLE" for r in einsum_rows),
        "failed": len(failed),
        "max_gap": max([r["gap"] or 0 for r in einsum_rows if r["gap"] is not None], default=None),
        "max_time_gap": max([r["time_gap"] or 0 for r in einsum_rows if r["time_gap"] is not None], default=None),
        "macs": macs, "time_clocks": time, "seconds": time / profile.clock_hz, "compute_clocks": compute,
        "utilization": compute / time if time else None,
        "peak_fraction": macs / (time * profile.peak_macs_per_clock) if time and not failed else None,
        "words_total": sum(links.values()), "words_top": links.get(profile.top_link, 0), "links": links,
        "energy_pj": energy, "energy_mac_pj": energy_mac, "energy_links_pj": energy - energy_mac,
        "chain_pairs": len(chains), "fused_pairs": len(fused),
        "chain_saved_clocks": sum(c["saved_clocks"] for c in fused), "chain_saved_words": sum(c["saved_words"] for c in fused),
        "solve_seconds": sum(solve_seconds.values()),
    }


def check_distinct(profiles: Sequence[Profile]) -> None:
    """Refuse two profiles of one name (their rows and tables would overwrite each other's)."""
    names = [p.name for p in profiles]
    if len(set(names)) != len(names):
        from mapsearch.errors import MapsearchError

        raise MapsearchError(f"profiles must have distinct names, got {', '.join(names)}")


def characterize(model: Model, profiles: Sequence[Profile], out_dir: str | Path, *, workers: int | None = None,
                 scheduler: str | None = None, time_limit: float = 60.0, work_limit: float | None = None,
                 retry_failed: bool = False, fusion_decider: Callable | None = None, registry: Any = None,
                 progress: Callable | None = None, run: bool = True, chain_fusion: bool = True,
                 chain_progress: Callable | None = None) -> Characterization:
    """Solve and add up; writes ``DIR/results.sqlite`` and the sweep's exports (see :mod:`mapsearch.sweep`)."""
    from mapsearch.sweep.export import export
    from mapsearch.sweep.runner import run_sweep
    from mapsearch.sweep.store import DB_NAME, ResultStore

    check_distinct(profiles)
    layers = lower_all(model.nodes, registry, fusion_decider)
    cases, index = layer_cases(layers, profiles, time_limit, model.source, work_limit)
    out = Path(out_dir)
    outcome = None
    with ResultStore(out / DB_NAME) as store:
        if run and cases:
            outcome = run_sweep(cases, store, sweep=f"characterize {model.name}", workers=workers,
                                scheduler=scheduler, retry_failed=retry_failed, progress=progress)
        stored = store.rows(c.case_id for c in cases)
        paths = export(f"characterize-{model.name}", cases, store, out) if cases else {}
    pairs = find_pairs(model.nodes, layers) if chain_fusion else []
    cache = ChainCache(out)
    layer_rows, totals, chain_rows = [], [], []
    for profile in profiles:
        rows, exact = [], {}
        for layer in layers:
            case = index.get((profile.name, layer.shape_key())) if layer.einsum else None
            got = stored.get(case.case_id) if case is not None and not isinstance(case, Refused) else None
            rows.append(_layer_row(model.name, profile, layer, case, got))
            if rows[-1]["status"] in ("OPTIMAL", "OPTIMAL_IN_FAMILY", "FEASIBLE") and got.get("report"):
                exact[layer.name] = (Fraction(got["report"]["time"]), int(rows[-1]["words_total"]))
        decided = _chain_fusion(model.name, profile, pairs, rows, exact, cache, out, (time_limit, work_limit),
                                run and outcome_ok(outcome), chain_progress)
        totals.append(_totals(model.name, profile, rows, layers, decided))
        layer_rows += rows
        chain_rows += decided
    return Characterization(model.name, layer_rows, totals, cases, outcome, dict(paths), chain_rows)


def outcome_ok(outcome: Any) -> bool:
    """Solve the pairs unless the sweep was interrupted."""
    return outcome is None or not getattr(outcome, "interrupted", False)


def _chain_fusion(model: str, profile: Profile, pairs: Sequence[Pair], rows: list[dict[str, Any]],
                  exact: dict[str, tuple[Fraction, int]], cache: ChainCache, out: Path,
                  limits: tuple[float, float | None], solve: bool, progress: Callable | None) -> list[dict[str, Any]]:
    """Solve each pair on ``profile`` (cached) within ``limits`` (time, work), decide
    (:func:`~mapsearch.characterize.chains.choose`) and rewrite the rows of the fused pairs: the first carries the
    pair's figures, the second zeros."""
    by_name = {r["layer"]: r for r in rows}
    decisions, gains, records = [], {}, {}
    for pair in pairs:
        separate = None
        if pair.first in exact and pair.second in exact:
            a, b = exact[pair.first], exact[pair.second]
            separate = (a[0] + b[0], a[1] + b[1])
        rec = cache.get(pair, profile, *limits)
        if rec is None and solve and separate is not None and not stopped():
            rec = solve_pair(pair, profile, *limits, schedule_dir=out / "chains", separate=separate)
            if stopped():  # Ctrl-C cut the chain solve short: not a result, not cached
                rec = None
            else:
                cache.put(pair, profile, *limits, record=rec)
                if progress is not None:
                    progress(profile, pair, rec)
        records[pair.first] = rec
        gains[pair.first] = gain(rec, separate)
        d = {k: None for k in CHAIN_KEYS}
        d.update(model=model, profile=profile.name, first=pair.first, second=pair.second, pair=pair.key, fused=False)
        if separate is not None:
            d.update(separate_clocks=float(separate[0]), separate_words=separate[1])
        if rec is not None:
            d.update(best=rec.get("best"), status=rec.get("status"), replay=rec.get("replay"),
                     candidates=rec.get("candidates"), schedule=rec.get("schedule"),
                     solve_seconds=rec.get("solve_seconds"))
            if rec.get("time") is not None:
                d.update(chain_clocks=float(Fraction(rec["time"])), chain_words=rec["words"])
        if separate is None:
            d["decision"] = "separate: a layer of the pair has no schedule of its own"
        elif rec is None:
            d["decision"] = "separate: not solved (interrupted run)"
        elif rec.get("best") is None:
            d["decision"] = f"separate: the chain solve failed: {rec.get('error')}"
        elif rec.get("replay") not in (None, "ok"):
            d["decision"] = f"separate: the chain's best option does not replay: {rec['replay']}"
        elif rec["best"] == "unfused":
            d["decision"] = "separate: the chain solve's best option is unfused"
        elif rec.get("replay") is None:
            d["decision"] = (f"separate: {rec['best']} was not replayed (it did not beat the layers' own schedules "
                             "when it was solved)")
        elif gains[pair.first] is None:
            d["decision"] = f"separate: {rec['best']} does not beat the layers' own schedules (time, then words)"
        else:
            d["decision"] = f"candidate: {rec['best']} beats the layers' own schedules"
        decisions.append(d)
    chosen = {p.first for p in choose(pairs, gains)}
    for pair, d in zip(pairs, decisions):
        if pair.first not in chosen:
            if d["decision"].startswith("candidate"):
                d["decision"] = "separate: an overlapping pair saves more"
            continue
        saved = gains[pair.first]
        d.update(fused=True, decision=f"fused: {records[pair.first]['best']}", saved_clocks=float(saved[0]),
                 saved_words=saved[1])
        _apply_pair(profile, by_name[pair.first], by_name[pair.second], records[pair.first])
    return decisions


def _apply_pair(profile: Profile, first: dict[str, Any], second: dict[str, Any], rec: dict[str, Any]) -> None:
    for row in (first, second):
        row.update(separate_clocks=row["time_clocks"], separate_words=row["words_total"], chain=rec["best"])
    first["fused_with"], second["fused_with"] = second["layer"], first["layer"]
    clocks = float(Fraction(rec["time"]))
    compute = float(Fraction(rec["compute_time"]))
    links = {n: {**l, "time": float(Fraction(l["time"]))} for n, l in rec["links"].items()}
    energy = sum(l["words"] * profile.link_energy_pj.get(n, 0.0) for n, l in links.items())
    executed = rec["op_calls"] * profile.block_macs
    energy += executed * profile.mac_energy_pj
    first.update(status=rec["status"], gap=rec.get("gap"), time_gap=rec.get("time_gap"), time_clocks=clocks,
                 seconds=clocks / profile.clock_hz, compute_clocks=compute, executed_macs=executed,
                 utilization=compute / clocks if clocks else None, words_total=rec["words"],
                 words_top=links.get(profile.top_link, {}).get("words", 0), links=links, energy_pj=energy)
    second.update(status=rec["status"], gap=None, time_gap=None, time_clocks=0.0, seconds=0.0, compute_clocks=0.0,
                  executed_macs=0, utilization=None, words_total=0, words_top=0, links={}, energy_pj=0.0)
