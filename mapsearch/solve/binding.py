"""What binds a schedule: tight capacities, saturated links, block-op losses, and the slack of the rest."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from mapsearch.schedule.schedule import Schedule


@dataclass(frozen=True)
class Binding:
    kind: str  # capacity | link | compute | alignment
    name: str
    value: Fraction  # words, clocks or MACs
    limit: Fraction | None  # the capacity, the run's time, ...
    tight: bool

    @property
    def slack(self) -> Fraction | None:
        return None if self.limit is None else self.limit - self.value

    def describe(self) -> str:
        if self.kind == "capacity":
            return (f"capacity of {self.name}: {self.value} of {self.limit} words"
                    + (" (full)" if self.tight else f", {self.slack} free"))
        if self.kind == "link":
            share = self.value / self.limit if self.limit else Fraction(0)
            return f"link {self.name}: {self.value} clocks, {float(share):.1%} of the time" + (" (bottleneck)" if self.tight else "")
        if self.kind == "compute":
            return f"compute: {self.value} clocks of {self.limit}" + (" (the bound: 100% utilization)" if self.tight else "")
        return (f"block-op alignment: {self.value} padded MACs ({float(1 - self.value / self.limit):.1%} MAC efficiency)"
                if self.limit else "block-op alignment")


def binding_report(s: Schedule) -> tuple[Binding, ...]:
    f = s.predicted
    if f is None:
        return ()
    out: list[Binding] = []
    for lv, (_, occ) in zip(s.architecture.levels, f.occupancy):
        if lv.capacity is not None:
            out.append(Binding("capacity", lv.name, Fraction(occ), Fraction(lv.capacity), occ == lv.capacity))
    total = f.time
    for link in f.links:
        out.append(Binding("link", link.name, Fraction(link.time), total, link.time == total and link.time > 0))
    out.append(Binding("compute", "op", Fraction(f.compute_time), total, f.compute_time == total))
    padded = f.op_calls * f.block_macs
    if padded != f.macs:
        out.append(Binding("alignment", "op", Fraction(padded - f.macs), Fraction(padded), True))
    return tuple(out)
