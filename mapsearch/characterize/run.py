"""Characterize a model on profiles: solve each distinct einsum once per profile, add up per layer and model.

:func:`characterize` lowers the model (:func:`~mapsearch.characterize.graph.lower_all`,
fused patterns applied), makes one sweep case per distinct (einsum text,
extents, architecture) with :func:`mapsearch.sweep.spec.expand` -- the
workload is named by its shape key, so the case id, a hash of the resolved
content, is the same for every layer of that shape and for every model that
has it -- runs them with :func:`mapsearch.sweep.runner.run_sweep` (local
pool or Dask, stored in ``DIR/results.sqlite`` as each ends, so a rerun
skips what is finished) and exports the sweep's own files
(:func:`mapsearch.sweep.export.export`). Bandwidth-only steps are computed
from the profile (no solve); fused epilogues cost nothing.

Per layer and profile (:data:`LAYER_KEYS`): status, gap, time in clocks and
seconds, words per link, utilization, MACs, energy. Per model and profile
(:data:`TOTAL_KEYS`): the sums, the utilization of the whole model
(compute time / time), and each layer's share of the time.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Sequence

from mapsearch.characterize.graph import Layer, lower_all
from mapsearch.characterize.models import Model
from mapsearch.characterize.profiles import Profile

__all__ = ["characterize", "Characterization", "LAYER_KEYS", "TOTAL_KEYS", "layer_cases"]

LAYER_KEYS = ("model", "profile", "layer", "op", "kind", "pattern", "fused_into", "shape_key", "case_id", "status",
              "gap", "time_gap", "macs", "time_clocks", "seconds", "compute_clocks", "utilization", "words_total",
              "words_top", "links", "energy_pj", "share", "einsum", "extents")
TOTAL_KEYS = ("model", "profile", "architecture", "layers", "einsum_layers", "distinct_shapes", "bandwidth_steps",
              "fused_epilogues", "optimal", "feasible", "failed", "max_gap", "max_time_gap", "macs", "time_clocks", "seconds",
              "compute_clocks", "utilization", "peak_fraction", "words_total", "words_top", "links", "energy_pj",
              "energy_mac_pj", "energy_links_pj", "solve_seconds")


@dataclass
class Characterization:
    model: str
    layers: list[dict[str, Any]]  # one row per (profile, layer), LAYER_KEYS
    totals: list[dict[str, Any]]  # one row per profile, TOTAL_KEYS
    cases: list[Any] = field(default_factory=list)
    outcome: Any = None
    paths: dict[str, Path] = field(default_factory=dict)


def _workload_doc(layer: Layer) -> tuple[str, dict[str, Any]]:
    name = f"{layer.op}-{layer.shape_key()}"
    return name, {"name": name, "einsum": layer.einsum, "extents": dict(layer.extents), "homes": {}}


def layer_cases(layers: Sequence[Layer], profiles: Sequence[Profile], time_limit: float, source: str = "characterize"):
    """The distinct sweep cases and ``{(profile name, shape key): case}``."""
    from mapsearch.sweep.spec import expand

    workloads: dict[str, tuple[str, dict]] = {}
    for layer in layers:
        if layer.einsum is not None:
            workloads.setdefault(layer.shape_key(), _workload_doc(layer))
    cases, index = [], {}
    for profile in profiles:
        arch = (profile.architecture["name"], profile.architecture)
        for key, wl in workloads.items():
            (case,) = expand([wl], [arch], ["time"], [("", None)], [], "grid", time_limit, source)
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
    row.update(shape_key=layer.shape_key(), case_id=case.case_id, einsum=layer.einsum, extents=dict(layer.extents))
    if stored is None:
        row["status"] = "PENDING"
        return row
    row["status"] = stored["status"]
    report = stored.get("report")
    if report is None or stored["status"] not in ("OPTIMAL", "FEASIBLE", "MISMATCH"):
        row["error"] = stored.get("error")
        return row
    links = {}
    energy = 0.0
    for link in report.get("links", []):
        words = (link.get("words_down") or 0) + (link.get("words_up") or 0)
        links[link["name"]] = {"words_down": link.get("words_down"), "words_up": link.get("words_up"),
                               "words": words, "time": _f(link.get("time"))}
        energy += words * profile.link_energy_pj.get(link["name"], 0.0)
    executed = (report.get("op_calls") or 0) * profile.block_macs
    energy += executed * profile.mac_energy_pj
    phases = report.get("phases") or []
    clocks = _f(report.get("time"))
    row.update(gap=report.get("gap"), time_gap=phases[0]["gap"] if phases else None, time_clocks=clocks,
               seconds=clocks / profile.clock_hz, compute_clocks=_f(report.get("compute_time")),
               utilization=_f(report.get("utilization")), words_total=report.get("words_total"),
               words_top=links.get(profile.top_link, {}).get("words"), links=links, energy_pj=energy,
               solve_seconds=stored.get("solve_seconds"))
    return row


def _totals(model: str, profile: Profile, rows: list[dict[str, Any]], layers: Sequence[Layer]) -> dict[str, Any]:
    solved = [r for r in rows if r["time_clocks"] is not None]
    einsum_rows = [r for r in rows if r["kind"] == "einsum"]
    failed = [r for r in einsum_rows if r["status"] not in ("OPTIMAL", "FEASIBLE")]
    time = sum(r["time_clocks"] for r in solved)
    compute = sum(r["compute_clocks"] or 0 for r in solved)
    links: dict[str, int] = {}
    for r in solved:
        for name, link in (r["links"] or {}).items():
            links[name] = links.get(name, 0) + (link["words"] or 0)
    for r in rows:
        r["share"] = (r["time_clocks"] / time) if time and r["time_clocks"] is not None else None
    energy_mac = sum((r["macs"] or 0) for r in solved if r["kind"] == "einsum") * profile.mac_energy_pj
    energy = sum(r["energy_pj"] or 0 for r in solved)
    macs = sum(l.macs for l in layers)
    solve_seconds = {r["case_id"]: r.get("solve_seconds") or 0 for r in einsum_rows if r["case_id"]}
    return {
        "model": model, "profile": profile.name, "architecture": profile.architecture["name"],
        "layers": len(rows), "einsum_layers": len(einsum_rows),
        "distinct_shapes": len({r["shape_key"] for r in einsum_rows}),
        "bandwidth_steps": sum(r["status"] == "BANDWIDTH" for r in rows),
        "fused_epilogues": sum(r["status"] == "FUSED" for r in rows),
        "optimal": sum(r["status"] == "OPTIMAL" for r in einsum_rows),
        "feasible": sum(r["status"] == "FEASIBLE" for r in einsum_rows),
        "failed": len(failed),
        "max_gap": max([r["gap"] or 0 for r in einsum_rows if r["gap"] is not None], default=None),
        "max_time_gap": max([r["time_gap"] or 0 for r in einsum_rows if r["time_gap"] is not None], default=None),
        "macs": macs, "time_clocks": time, "seconds": time / profile.clock_hz, "compute_clocks": compute,
        "utilization": compute / time if time else None,
        "peak_fraction": macs / (time * profile.peak_macs_per_clock) if time and not failed else None,
        "words_total": sum(links.values()), "words_top": links.get(profile.top_link, 0), "links": links,
        "energy_pj": energy, "energy_mac_pj": energy_mac, "energy_links_pj": energy - energy_mac,
        "solve_seconds": sum(solve_seconds.values()),
    }


def characterize(model: Model, profiles: Sequence[Profile], out_dir: str | Path, *, workers: int | None = None,
                 scheduler: str | None = None, time_limit: float = 60.0, retry_failed: bool = False,
                 fusion_decider: Callable | None = None, registry: Any = None,
                 progress: Callable | None = None, run: bool = True) -> Characterization:
    """Solve and add up; writes ``DIR/results.sqlite`` and the sweep's exports (see :mod:`mapsearch.sweep`)."""
    from mapsearch.sweep.export import export
    from mapsearch.sweep.runner import run_sweep
    from mapsearch.sweep.store import DB_NAME, ResultStore

    layers = lower_all(model.nodes, registry, fusion_decider)
    cases, index = layer_cases(layers, profiles, time_limit, model.source)
    out = Path(out_dir)
    outcome = None
    with ResultStore(out / DB_NAME) as store:
        if run and cases:
            outcome = run_sweep(cases, store, sweep=f"characterize {model.name}", workers=workers,
                                scheduler=scheduler, retry_failed=retry_failed, progress=progress)
        stored = store.rows(c.case_id for c in cases)
        paths = export(f"characterize-{model.name}", cases, store, out) if cases else {}
    layer_rows, totals = [], []
    for profile in profiles:
        rows = []
        for layer in layers:
            case = index.get((profile.name, layer.shape_key())) if layer.einsum else None
            rows.append(_layer_row(model.name, profile, layer, case, stored.get(case.case_id) if case else None))
        totals.append(_totals(model.name, profile, rows, layers))
        layer_rows += rows
    return Characterization(model.name, layer_rows, totals, cases, outcome, dict(paths))
