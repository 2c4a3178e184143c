"""The figures of a run: what the solver predicts and what the replay counts.

Both sides fill the same :class:`Figures`, and :func:`differences` compares
them field by field, exactly (integers and ``Fraction``, never floats).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class TensorTraffic:
    """Words of one tensor that crossed one link."""

    tensor: str
    words_down: int
    words_up: int


@dataclass(frozen=True)
class LinkFigures:
    """One parent -> child link: its words and its time per its line model."""

    name: str
    words_down: int
    words_up: int
    time: Fraction
    tensors: tuple[TensorTraffic, ...] = ()

    @property
    def words(self) -> int:
        return self.words_down + self.words_up


@dataclass(frozen=True)
class Figures:
    """Words, calls, clocks and occupancy of one schedule.

    ``time = max(compute_time, max link time)``;
    ``utilization = compute_time / time``;
    ``mac_efficiency = macs / (op_calls * block_macs)``;
    with a spatial fanout, ``compute_time`` is the busiest instance's calls
    times the clocks per call and ``op_calls`` counts every instance's calls.
    """

    links: tuple[LinkFigures, ...]
    op_calls: int
    compute_time: Fraction
    macs: int
    block_macs: int
    occupancy: tuple[tuple[str, int], ...]  # peak words per level (per instance), outermost first
    compute_instances: int = 1  # instances of the innermost level (each with its own compute)
    busiest_calls: int | None = None  # sum over steps of the busiest instance's calls; None: op_calls

    @property
    def time(self) -> Fraction:
        return max([Fraction(self.compute_time)] + [Fraction(l.time) for l in self.links])

    @property
    def utilization(self) -> Fraction:
        t = self.time
        return Fraction(1) if t == 0 else Fraction(self.compute_time) / t

    @property
    def mac_efficiency(self) -> Fraction:
        padded = self.op_calls * self.block_macs
        return Fraction(1) if padded == 0 else Fraction(self.macs, padded)

    @property
    def array_utilization(self) -> Fraction:
        """``op_calls / (instances * busiest calls)``: how much of the array does work."""
        busiest = self.op_calls if self.busiest_calls is None else self.busiest_calls
        return Fraction(1) if busiest == 0 else Fraction(self.op_calls, self.compute_instances * busiest)

    @property
    def words_total(self) -> int:
        return sum(l.words for l in self.links)

    def link(self, name: str) -> LinkFigures:
        for l in self.links:
            if l.name == name:
                return l
        raise KeyError(name)


def differences(predicted: Figures, replayed: Figures) -> list[tuple[str, object, object]]:
    """Every field where the two disagree, as ``(field, predicted, replayed)``."""
    out: list[tuple[str, object, object]] = []

    def check(field: str, a: object, b: object) -> None:
        if a != b:
            out.append((field, a, b))

    check("op_calls", predicted.op_calls, replayed.op_calls)
    check("compute_time", predicted.compute_time, replayed.compute_time)
    check("macs", predicted.macs, replayed.macs)
    check("compute_instances", predicted.compute_instances, replayed.compute_instances)
    check("busiest_calls", predicted.busiest_calls if predicted.busiest_calls is not None else predicted.op_calls,
          replayed.busiest_calls if replayed.busiest_calls is not None else replayed.op_calls)
    check("occupancy", predicted.occupancy, replayed.occupancy)
    check("links", [l.name for l in predicted.links], [l.name for l in replayed.links])
    for a, b in zip(predicted.links, replayed.links):
        check(f"links[{a.name}].words_down", a.words_down, b.words_down)
        check(f"links[{a.name}].words_up", a.words_up, b.words_up)
        check(f"links[{a.name}].time", a.time, b.time)
        ta = {t.tensor: (t.words_down, t.words_up) for t in a.tensors}
        tb = {t.tensor: (t.words_down, t.words_up) for t in b.tensors}
        for name in sorted(set(ta) | set(tb)):
            check(f"links[{a.name}].tensors[{name}]", ta.get(name, (0, 0)), tb.get(name, (0, 0)))
    check("time", predicted.time, replayed.time)
    return out
