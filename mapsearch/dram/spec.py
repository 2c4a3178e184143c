"""The ``dram:`` entry of an architecture YAML, read and written (docs/dram.md).

    dram: {preset: ddr4-3200, element_bytes: 2, mapping: RoBaRaCoCh, policy: open}

Any :class:`~mapsearch.dram.geometry.DramSpec` field may be given next to (or
instead of) a preset: ``row_bytes``, ``burst_bytes``, ``channels``, ``ranks``,
``bank_groups``, ``banks``, ``rows``, ``tck_ns``, ``cl``, ``rcd``, ``rp`` and
``costs: {hit, miss, conflict}`` in clocks. Every error is one SpecError line
naming the field, e.g. ``arch.yaml: dram.policy: expected 'open' or 'closed', got 'lazy'``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping

from mapsearch.dram.geometry import PRESETS, DramSpec, DramSpecError
from mapsearch.errors import SpecError

_INT_FIELDS = ("element_bytes", "row_bytes", "burst_bytes", "channels", "ranks", "bank_groups", "banks", "rows", "cl", "rcd", "rp")
_KNOWN = ("preset", "name", "mapping", "policy", "tck_ns", "costs", "source") + _INT_FIELDS
_COSTS = {"hit": "hit_clocks", "miss": "miss_clocks", "conflict": "conflict_clocks"}


def _err(source: str, field: str, detail: str) -> SpecError:
    return SpecError(source, field, "", None, detail=" ".join(detail.split()))


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _number(value: object, source: str, field: str) -> Fraction:
    if isinstance(value, bool):
        raise _err(source, field, f"expected a number >= 0, got {value!r}")
    try:
        x = Fraction(str(value)) if isinstance(value, float) else Fraction(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, ZeroDivisionError):
        raise _err(source, field, f"expected a number >= 0 (int, decimal or 'a/b'), got {value!r}") from None
    if x < 0:
        raise _err(source, field, f"expected a number >= 0, got {value!r}")
    return x


def dram_from_dict(data: object, source: str = "<dram>", prefix: str = "dram") -> DramSpec | None:
    """The :class:`DramSpec` of a ``dram:`` mapping (``None`` when ``data`` is None)."""
    if data is None:
        return None
    if isinstance(data, str):
        data = {"preset": data}
    if not isinstance(data, Mapping):
        raise _err(source, prefix, f"expected a mapping such as {{preset: ddr4-3200}}, got {data!r}")
    for key in data:
        if key not in _KNOWN:
            raise _err(source, _join(prefix, str(key)), f"unknown field; expected one of {', '.join(_KNOWN)}")
    base = DramSpec()
    if "preset" in data:
        name = data["preset"]
        if not isinstance(name, str) or name.lower() not in PRESETS:
            raise _err(source, _join(prefix, "preset"), f"expected one of {', '.join(sorted(PRESETS))}, got {name!r}")
        base = PRESETS[name.lower()]
    changes: dict[str, Any] = {}
    for key in _INT_FIELDS:
        if key in data:
            v = data[key]
            if not isinstance(v, int) or isinstance(v, bool):
                raise _err(source, _join(prefix, key), f"expected an int, got {v!r}")
            changes[key] = v
    for key in ("name", "mapping", "policy", "source"):
        if key in data:
            if not isinstance(data[key], str):
                raise _err(source, _join(prefix, key), f"expected text, got {data[key]!r}")
            changes[key] = data[key]
    if "tck_ns" in data:
        changes["tck_ns"] = _number(data["tck_ns"], source, _join(prefix, "tck_ns"))
    costs = data.get("costs")
    if costs is not None:
        if not isinstance(costs, Mapping):
            raise _err(source, _join(prefix, "costs"), f"expected a mapping with hit, miss, conflict, got {costs!r}")
        for key, value in costs.items():
            if key not in _COSTS:
                raise _err(source, _join(prefix, f"costs.{key}"), "unknown field; expected one of hit, miss, conflict")
            x = _number(value, source, _join(prefix, f"costs.{key}"))
            changes[_COSTS[key]] = int(x) if x.denominator == 1 else x
    try:
        out = base.with_(**changes)
    except DramSpecError as e:
        raise _err(source, _join(prefix, e.field), e.detail) from None
    if "preset" in data and "name" not in changes and out != base:
        out = out.with_(name=f"{base.name} (modified)")
    return out


def dram_to_dict(spec: DramSpec | None) -> dict[str, Any] | None:
    """Every field written out, so that ``dram_from_dict(dram_to_dict(s)) == s``."""
    if spec is None:
        return None
    out: dict[str, Any] = {"name": spec.name}
    for key in _INT_FIELDS:
        out[key] = getattr(spec, key)
    out["mapping"] = spec.mapping
    out["policy"] = spec.policy
    t = Fraction(spec.tck_ns)
    out["tck_ns"] = t.numerator if t.denominator == 1 else f"{t.numerator}/{t.denominator}"
    costs = {k: getattr(spec, attr) for k, attr in _COSTS.items() if getattr(spec, attr) is not None}
    if costs:
        out["costs"] = {k: (int(v) if Fraction(v).denominator == 1 else f"{Fraction(v).numerator}/{Fraction(v).denominator}") for k, v in costs.items()}
    if spec.source:
        out["source"] = spec.source
    return out


def architecture_dram(architecture: object) -> DramSpec | None:
    """The DRAM spec an architecture carries (``architecture.dram``), or None."""
    return getattr(architecture, "dram", None)
