"""The row-buffer state machine: hits, misses, conflicts and activations per bank (docs/dram.md).

Each bank holds at most one open row. An access to bank ``b``, row ``r``:

- open page: a **hit** when ``r`` is open in ``b``; a **miss** when ``b`` is
  closed (its first access); a **conflict** when another row is open
  (precharge, then activate). The row stays open afterwards.
- closed page: the bank is precharged after every access, so every access
  is a **miss**.

Activations = misses + conflicts. Time is counted two ways, both in DRAM
clocks: ``clocks`` (every access's cost, one after another: a serial bound)
and ``busiest_bank_clocks`` (the largest per-bank sum: what perfect bank
parallelism would leave). A cycle-accurate figure needs a DRAM simulator on
the exported trace (:mod:`mapsearch.dram.trace`).

The machine is fed chunks of addresses (numpy arrays) and keeps one open row
per bank between chunks, so a trace of any length is counted in bounded memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Sequence

import numpy as np

from mapsearch.dram.geometry import CLOSED, DramSpec

_I64 = np.int64


@dataclass(frozen=True)
class TensorRowStats:
    tensor: str
    accesses: int
    reads: int
    writes: int
    hits: int
    misses: int
    conflicts: int

    @property
    def activations(self) -> int:
        return self.misses + self.conflicts


@dataclass(frozen=True)
class RowStats:
    """What the row-buffer machine counted over one address stream."""

    accesses: int
    reads: int
    writes: int
    hits: int
    misses: int
    conflicts: int
    per_bank: tuple[tuple[str, int, int, int, int], ...]  # (bank, accesses, hits, misses, conflicts), used banks only
    per_tensor: tuple[TensorRowStats, ...]
    clocks: Fraction
    busiest_bank_clocks: Fraction
    tck_ns: Fraction
    policy: str

    @property
    def activations(self) -> int:
        return self.misses + self.conflicts

    @property
    def time_ns(self) -> Fraction:
        return self.clocks * self.tck_ns

    def tensor(self, name: str) -> TensorRowStats:
        for t in self.per_tensor:
            if t.tensor == name:
                return t
        raise KeyError(name)

    def activations_per_bank(self) -> dict[str, int]:
        return {b: m + c for b, _, _, m, c in self.per_bank}

    def to_dict(self) -> dict:
        f = lambda x: int(x) if Fraction(x).denominator == 1 else str(Fraction(x))  # noqa: E731
        return {
            "policy": self.policy,
            "accesses": self.accesses,
            "reads": self.reads,
            "writes": self.writes,
            "hits": self.hits,
            "misses": self.misses,
            "conflicts": self.conflicts,
            "activations": self.activations,
            "clocks": f(self.clocks),
            "busiest_bank_clocks": f(self.busiest_bank_clocks),
            "time_ns": f(self.time_ns),
            "per_bank": {b: {"accesses": a, "hits": h, "misses": m, "conflicts": c, "activations": m + c}
                         for b, a, h, m, c in self.per_bank},
            "per_tensor": {t.tensor: {"accesses": t.accesses, "reads": t.reads, "writes": t.writes, "hits": t.hits,
                                      "misses": t.misses, "conflicts": t.conflicts, "activations": t.activations}
                           for t in self.per_tensor},
        }

    def text(self) -> str:
        lines = [
            f"{self.policy}-page: {self.accesses} accesses ({self.reads} reads, {self.writes} writes): "
            f"{self.hits} hits, {self.misses} misses, {self.conflicts} conflicts, {self.activations} activations",
            f"DRAM time: {float(self.clocks):.0f} clocks serial ({float(self.time_ns):.1f} ns), "
            f"{float(self.busiest_bank_clocks):.0f} clocks on the busiest bank",
        ]
        for t in self.per_tensor:
            if t.accesses:
                lines.append(f"  {t.tensor}: {t.accesses} accesses, {t.activations} activations "
                             f"({t.hits} hits, {t.misses} misses, {t.conflicts} conflicts)")
        return "\n".join(lines)


class RowBuffer:
    """One open row per bank; ``feed`` chunks in stream order, then ``stats``."""

    def __init__(self, dram: DramSpec, tensors: Sequence[str] = ()):
        self.dram = dram
        self.tensors = tuple(tensors)
        nb = dram.n_banks
        self.open_row = np.full(nb, -1, _I64)
        self.count = np.zeros((4, nb), _I64)  # accesses, hits, misses, conflicts per bank
        nt = max(1, len(self.tensors))
        self.by_tensor = np.zeros((6, nt), _I64)  # accesses, reads, writes, hits, misses, conflicts
        self.reads = 0
        self.writes = 0

    def classify(self, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bank id and outcome (0 hit, 1 miss, 2 conflict) of each address, updating the open rows."""
        bank, row = self.dram.bank_and_row(addresses)
        n = len(bank)
        if n == 0:
            return bank, np.zeros(0, np.int8)
        if self.dram.policy == CLOSED:
            return bank, np.ones(n, np.int8)
        order = np.argsort(bank, kind="stable")
        b, r = bank[order], row[order]
        prev = np.empty(n, _I64)
        prev[1:] = r[:-1]
        first = np.ones(n, bool)
        first[1:] = b[1:] != b[:-1]
        prev[first] = self.open_row[b[first]]
        outcome_sorted = np.where(prev == r, 0, np.where(prev < 0, 1, 2)).astype(np.int8)
        last = np.ones(n, bool)
        last[:-1] = b[1:] != b[:-1]
        self.open_row[b[last]] = r[last]
        outcome = np.empty(n, np.int8)
        outcome[order] = outcome_sorted
        return bank, outcome

    def feed(self, addresses: np.ndarray, is_write: np.ndarray | None = None, tensor: np.ndarray | None = None) -> np.ndarray:
        """Count one chunk (in stream order); returns the outcome of each access."""
        addresses = np.asarray(addresses, _I64)
        bank, outcome = self.classify(addresses)
        nb = self.dram.n_banks
        self.count[0] += np.bincount(bank, minlength=nb)[:nb]
        for k in range(3):
            self.count[k + 1] += np.bincount(bank[outcome == k], minlength=nb)[:nb]
        w = np.zeros(len(addresses), bool) if is_write is None else np.asarray(is_write, bool)
        nw = int(w.sum())
        self.writes += nw
        self.reads += len(addresses) - nw
        t = np.zeros(len(addresses), _I64) if tensor is None else np.asarray(tensor, _I64)
        nt = self.by_tensor.shape[1]
        self.by_tensor[0] += np.bincount(t, minlength=nt)[:nt]
        self.by_tensor[1] += np.bincount(t[~w], minlength=nt)[:nt]
        self.by_tensor[2] += np.bincount(t[w], minlength=nt)[:nt]
        for k in range(3):
            self.by_tensor[3 + k] += np.bincount(t[outcome == k], minlength=nt)[:nt]
        return outcome

    def stats(self) -> RowStats:
        d = self.dram
        acc, hit, miss, conf = (self.count[k] for k in range(4))
        per_bank_clocks = [hit[b] * d.hit + miss[b] * d.miss + conf[b] * d.conflict for b in range(d.n_banks)]
        used = [b for b in range(d.n_banks) if acc[b]]
        names = self.tensors or ("*",)
        return RowStats(
            accesses=int(acc.sum()),
            reads=self.reads,
            writes=self.writes,
            hits=int(hit.sum()),
            misses=int(miss.sum()),
            conflicts=int(conf.sum()),
            per_bank=tuple((d.bank_name(b), int(acc[b]), int(hit[b]), int(miss[b]), int(conf[b])) for b in used),
            per_tensor=tuple(
                TensorRowStats(name, *(int(self.by_tensor[k, i]) for k in range(6))) for i, name in enumerate(names)
            ),
            clocks=Fraction(sum(per_bank_clocks, Fraction(0))),
            busiest_bank_clocks=Fraction(max(per_bank_clocks, default=Fraction(0))),
            tck_ns=Fraction(d.tck_ns),
            policy=d.policy,
        )


def count_rows(dram: DramSpec, chunks: Iterable, tensors: Sequence[str] = ()) -> RowStats:
    """Feed ``(addresses, is_write[, tensor])`` chunks (or plain address arrays) and return the stats."""
    rb = RowBuffer(dram, tensors)
    for chunk in chunks:
        if isinstance(chunk, np.ndarray) or not isinstance(chunk, tuple):
            rb.feed(np.asarray(chunk))
        else:
            rb.feed(*chunk)
    return rb.stats()


