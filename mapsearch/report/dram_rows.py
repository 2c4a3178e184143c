"""The DRAM rows of a solved schedule: the solver's prediction against the replay's count.

The solver predicts the row openings (rows each transfer across the DRAM
link touches, model/dram_rows.py). The replay decodes every address of the
stream to its bank and row and counts them per transfer (must be equal), and
runs the row-buffer machine over the stream with each transfer in address
order (its activations can only be fewer: a row still open from an earlier
transfer is a hit).
"""

from __future__ import annotations

from dataclasses import dataclass

from mapsearch.schedule.schedule import Schedule


@dataclass(frozen=True)
class RowCheck:
    layouts: tuple[tuple[str, str], ...]  # tensor -> layout in words
    predicted: tuple[tuple[str, int], ...]
    replayed: tuple[tuple[str, int], ...]
    activations: tuple[tuple[str, int], ...]
    dram_clocks: int | str

    @property
    def mismatches(self) -> list[tuple[str, int, int]]:
        """``(field, predicted, replayed)`` per tensor whose openings differ, and activations above openings."""
        got = dict(self.replayed)
        out = [(f"dram.row_openings.{t}", n, got.get(t, 0)) for t, n in self.predicted if got.get(t, 0) != n]
        acts, total = sum(n for _, n in self.activations), sum(n for _, n in self.predicted)
        if acts > total:
            out.append(("dram.activations (at most the row openings)", total, acts))
        return out

    def to_dict(self) -> dict:
        return {"layouts": dict(self.layouts), "row_openings": {"predicted": dict(self.predicted),
                                                                 "replayed": dict(self.replayed)},
                "activations": dict(self.activations), "dram_clocks_serial": self.dram_clocks}

    def text(self) -> str:
        got, acts = dict(self.replayed), dict(self.activations)
        lines = ["DRAM rows (each transfer in address order):"]
        for t, desc in self.layouts:
            pred = dict(self.predicted).get(t)
            lines.append(f"  {t}: {desc}; row openings predicted {pred}, replayed {got.get(t, 0)}; "
                         f"activations {acts.get(t, 0)}")
        lines.append(f"  total: {sum(n for _, n in self.predicted)} openings predicted, "
                     f"{sum(got.values())} replayed, {sum(acts.values())} activations, "
                     f"{self.dram_clocks} DRAM clocks (serial)")
        return "\n".join(lines) + "\n"


def describe_layout(schedule: Schedule, tensor: str, spec) -> str:
    names = [ix.text() for ix in schedule.workload.tensor(tensor).indices]
    order = spec.order or tuple(range(len(names)))
    if spec.kind == "row_aligned":
        sliced = [names[a] for a in order[: spec.slice_axes]]
        inner = [names[a] for a in order[spec.slice_axes:]]
        return (f"row_aligned, a row per ({', '.join(sliced)}) holding [{', '.join(inner)}]" if sliced
                else f"one row holding [{', '.join(inner)}]")
    return f"{spec.kind} [{', '.join(names[a] for a in order)}]"


def dram_rows_check(schedule: Schedule) -> RowCheck | None:
    """Replay the schedule's DRAM stream against its predicted row openings; None when it predicts none."""
    plan = schedule.dram
    if plan is None or plan.row_openings is None:
        return None
    from mapsearch.sim.dram_trace import row_activations, row_openings

    layouts = dict(plan.layouts)
    got = row_openings(schedule, None, layouts)
    stats = row_activations(schedule, None, layouts, plan.element_order)
    names = [t for t, _ in plan.row_openings]
    clocks = stats.clocks
    return RowCheck(
        layouts=tuple((t, describe_layout(schedule, t, spec)) for t, spec in plan.layouts),
        predicted=plan.row_openings,
        replayed=tuple((t, got[t]) for t in names),
        activations=tuple((t, stats.tensor(t).activations) for t in names),
        dram_clocks=int(clocks) if clocks.denominator == 1 else str(clocks),
    )
