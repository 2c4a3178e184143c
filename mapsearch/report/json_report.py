"""A JSON summary of one schedule's figures, for scripts and sweeps.

Numbers are JSON numbers (ints where integral, floats otherwise); the exact
values of every non-count number are repeated under ``"exact"`` as ``'a/b'``
text, so nothing is lost.

Keys: ``utilization``, ``mac_efficiency`` (floats in [0, 1]), ``time``,
``compute_time``, ``op_calls``, ``macs``, ``block_macs``, ``words_total``,
``compute_instances``, ``busiest_calls`` (the busiest instance's calls summed
over steps), ``array_utilization`` (``op_calls / (instances * busiest)``),
``bound`` (``'compute'`` or the slowest link), ``links`` (each ``name``,
``words_down``, ``words_up``, ``words``, ``time``, ``tensors`` {name:
{``words_down``, ``words_up``}}), ``occupancy`` (each ``level``, ``words``,
``capacity`` with ``null`` for unbounded) and ``exact``.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

from mapsearch.report.text import bottleneck
from mapsearch.schedule.figures import Figures
from mapsearch.spec.architecture import Architecture


def _number(value: Fraction | int) -> int | float:
    x = Fraction(value)
    return x.numerator if x.denominator == 1 else float(x)


def _exact(value: Fraction | int) -> str:
    x = Fraction(value)
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def report_dict(
    figures: Figures,
    architecture: Architecture,
    *,
    data_ok: bool | None = None,
    max_abs_error: float | None = None,
) -> dict[str, Any]:
    """The figures as a JSON-ready dict (see the module docstring for the keys)."""
    capacity = {lv.name: lv.capacity for lv in architecture.levels}
    out: dict[str, Any] = {
        "utilization": float(figures.utilization),
        "mac_efficiency": float(figures.mac_efficiency),
        "time": _number(figures.time),
        "compute_time": _number(figures.compute_time),
        "op_calls": figures.op_calls,
        "macs": figures.macs,
        "block_macs": figures.block_macs,
        "words_total": figures.words_total,
        "compute_instances": figures.compute_instances,
        "busiest_calls": figures.op_calls if figures.busiest_calls is None else figures.busiest_calls,
        "array_utilization": float(figures.array_utilization),
        "bound": bottleneck(figures),
        "links": [
            {
                "name": link.name,
                "words_down": link.words_down,
                "words_up": link.words_up,
                "words": link.words,
                "time": _number(link.time),
                "tensors": {t.tensor: {"words_down": t.words_down, "words_up": t.words_up} for t in link.tensors},
            }
            for link in figures.links
        ],
        "occupancy": [
            {"level": level, "words": words, "capacity": capacity.get(level)} for level, words in figures.occupancy
        ],
        "exact": {
            "utilization": _exact(figures.utilization),
            "mac_efficiency": _exact(figures.mac_efficiency),
            "time": _exact(figures.time),
            "compute_time": _exact(figures.compute_time),
            "array_utilization": _exact(figures.array_utilization),
            "link_times": {link.name: _exact(link.time) for link in figures.links},
        },
    }
    if data_ok is not None:
        out["data_ok"] = data_ok
        out["max_abs_error"] = max_abs_error
    return out


def report_json(figures: Figures, architecture: Architecture, **kwargs: Any) -> str:
    """:func:`report_dict` as indented JSON text."""
    return json.dumps(report_dict(figures, architecture, **kwargs), indent=2)
