"""An architecture's energy model: energy per word read and written at each level, per MAC, and leakage.

It is optional (``Architecture.energy``). The peers' files carry one
(AccelForge ``actions`` energies, ZigZag ``r_cost``/``w_cost``/``unit_energy``,
Accelergy tables); mapsearch's own architecture YAML writes it back::

    energy:
      unit: pJ                          # a label only; every figure is in this unit
      levels:
        DRAM: {read: 700, write: 750}   # per word, per access
        GLB:  {read: 6, write: 6, leakage: 1/100}   # leakage per clock, per instance
      mac: 1/2                          # per multiply-accumulate
      compute_leakage: 0                # per clock, per compute instance

How a schedule's energy is counted (mapsearch/solve/energy_objective.py and
the report): a word of tensor ``t`` that moves down the link into level
``j`` is a read at the level it leaves and a write at the level it enters,
both only where ``t`` is held (its home, or a buffer); a word moving up is a
read below and a write above. Bypassed levels on the way are not charged: the
word passes them. Words are counted as the solver counts them on each link
(a multicast word once). An op call costs ``mac * prod(block)``: a block op
is charged per MAC it covers, padding included. Leakage is
``sum(level leakage * instances) + compute_leakage * compute instances``
per clock, times the schedule's time.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

from mapsearch.spec import limits
from mapsearch.spec.reading import _note, fraction_from_json, fraction_to_json, join_path

__all__ = ["LevelEnergy", "EnergyModel", "energy_from_dict", "energy_to_dict", "leakage_per_clock"]


@dataclass(frozen=True)
class LevelEnergy:
    """Energy per word read from and written to one level; leakage per clock per instance."""

    level: str
    read: Fraction = Fraction(0)
    write: Fraction = Fraction(0)
    leakage: Fraction = Fraction(0)


@dataclass(frozen=True)
class EnergyModel:
    levels: tuple[LevelEnergy, ...]
    mac: Fraction = Fraction(0)  # per multiply-accumulate
    compute_leakage: Fraction = Fraction(0)  # per clock, per compute instance
    unit: str = ""

    def level(self, name: str) -> LevelEnergy:
        """The entry of a level; a level without one costs nothing."""
        for e in self.levels:
            if e.level == name:
                return e
        return LevelEnergy(name)


def leakage_per_clock(model: EnergyModel, arch: Any) -> Fraction:
    """Leakage of a whole architecture per clock: every instance of every level, and of the compute."""
    total = Fraction(0)
    instances = 1
    for lv in arch.levels:
        instances *= lv.instances  # a level's instances are per instance of its parent
        total += model.level(lv.name).leakage * instances
    return total + model.compute_leakage * instances


def energy_from_dict(data: Mapping[str, Any] | None, source: str, field: str, level_names: tuple[str, ...]) -> EnergyModel | None:
    """The ``energy:`` entry of an architecture (already checked by the schema); None when absent."""
    if data is None:
        return None
    levels = []
    for name, entry in (data.get("levels") or {}).items():
        if name not in level_names:
            raise _note(source, join_path([field, "levels", name]),
                        f"unknown level; expected one of {', '.join(level_names)}")
        values = {k: _energy(entry.get(k, 0), source, join_path([field, "levels", name, k]))
                  for k in ("read", "write", "leakage")}
        levels.append(LevelEnergy(name, **values))
    mac = _energy(data.get("mac", 0), source, join_path([field, "mac"]))
    leak = _energy(data.get("compute_leakage", 0), source, join_path([field, "compute_leakage"]))
    return EnergyModel(tuple(levels), mac, leak, str(data.get("unit", "")))


def _energy(value: object, source: str, field: str) -> Fraction:
    """An energy: an exact number >= 0 the energy objective can scale to integers."""
    x = fraction_from_json(value, source, field, nonnegative=True)
    problem = limits.exact_error(x)
    if problem is not None:
        raise _note(source, field, problem)
    return x


def energy_to_dict(model: EnergyModel) -> dict[str, Any]:
    return {
        "unit": model.unit,
        "levels": {e.level: {"read": fraction_to_json(e.read), "write": fraction_to_json(e.write),
                             "leakage": fraction_to_json(e.leakage)} for e in model.levels},
        "mac": fraction_to_json(model.mac),
        "compute_leakage": fraction_to_json(model.compute_leakage),
    }
