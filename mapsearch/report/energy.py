"""A schedule's energy under its architecture's energy model (mapsearch/spec/energy.py), from replayed figures.

The same accounting as the solver's objective (mapsearch/solve/energy_objective.py):
per link and tensor, words down are a read where they leave and a write
where they arrive, words up the reverse, each only at a level holding the
tensor (its home or a buffer); ``mac * prod(block)`` per op call; leakage
per clock times the time. The report shows it whenever the architecture has
an energy model, whatever the objective.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mapsearch.spec.energy import leakage_per_clock

__all__ = ["EnergyBreakdown", "schedule_energy", "energy_lines", "energy_dict"]


@dataclass(frozen=True)
class EnergyBreakdown:
    unit: str
    reads: tuple[tuple[str, Fraction], ...]  # per level
    writes: tuple[tuple[str, Fraction], ...]
    compute: Fraction
    leakage: Fraction

    @property
    def total(self) -> Fraction:
        return sum((v for _, v in self.reads + self.writes), Fraction(0)) + self.compute + self.leakage


def schedule_energy(schedule: Any, figures: Any) -> EnergyBreakdown | None:
    """The energy of ``schedule`` with its ``figures`` (replayed or predicted); None without an energy model."""
    arch = schedule.architecture
    model = arch.energy
    if model is None:
        return None
    homes = dict(schedule.homes)
    top = arch.levels[0].name
    held = {(lv.level, t) for lv in schedule.levels for t in lv.keep}
    held |= {(homes.get(t, top), t) for t in schedule.workload.tensor_names}
    reads = {lv.name: Fraction(0) for lv in arch.levels}
    writes = dict(reads)
    for j, link in enumerate(figures.links, start=1):
        above, below = arch.levels[j - 1].name, arch.levels[j].name
        for tt in link.tensors:
            if (above, tt.tensor) in held:
                reads[above] += tt.words_down * model.level(above).read
                writes[above] += tt.words_up * model.level(above).write
            if (below, tt.tensor) in held:
                writes[below] += tt.words_down * model.level(below).write
                reads[below] += tt.words_up * model.level(below).read
    block = math.prod(b for _, b in arch.compute.block)
    compute = model.mac * block * figures.op_calls
    leakage = leakage_per_clock(model, arch) * Fraction(figures.time)
    return EnergyBreakdown(model.unit, tuple(reads.items()), tuple(writes.items()), compute, leakage)


def _fmt(x: Fraction, unit: str) -> str:
    text = str(x.numerator) if x.denominator == 1 else f"{float(x):.6g}"
    return f"{text} {unit}".rstrip()


def energy_lines(b: EnergyBreakdown) -> list[str]:
    lines = [f"energy (the architecture's energy model): {_fmt(b.total, b.unit)}"]
    for (level, r), (_, w) in zip(b.reads, b.writes):
        if r or w:
            lines.append(f"  {level}: reads {_fmt(r, b.unit)}, writes {_fmt(w, b.unit)}")
    lines.append(f"  compute (per MAC, a block op's padding included): {_fmt(b.compute, b.unit)}")
    lines.append(f"  leakage x time: {_fmt(b.leakage, b.unit)}")
    return lines


def energy_dict(b: EnergyBreakdown) -> dict[str, Any]:
    def num(x: Fraction) -> Any:
        return x.numerator if x.denominator == 1 else float(x)

    return {"unit": b.unit, "total": num(b.total), "total_exact": f"{b.total.numerator}/{b.total.denominator}",
            "reads": {k: num(v) for k, v in b.reads}, "writes": {k: num(v) for k, v in b.writes},
            "compute": num(b.compute), "leakage": num(b.leakage)}
