"""The CP-SAT model under construction and the small algebra the families share.

Quantities are carried as :class:`Q` (an int or a linear expression with its
bounds) so that products of constants stay linear and only products of real
decisions become ``add_multiplication_equality`` constraints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import numpy as np
from ortools.sat.python import cp_model

from mapsearch.budget import checkpoint
from mapsearch.model.chains import DimChains, Footprint
from mapsearch.model.problem import Problem

Literal = Union[cp_model.IntVar, bool]


@dataclass(frozen=True)
class Q:
    """An integer quantity: ``expr`` (int or linear expression) within ``[lo, hi]``."""

    expr: object
    lo: int
    hi: int

    @property
    def is_const(self) -> bool:
        return isinstance(self.expr, (int, np.integer))

    @staticmethod
    def const(v: int) -> "Q":
        return Q(int(v), int(v), int(v))


@dataclass
class Encoding:
    """Everything ``build`` creates; ``decode`` and ``explain`` read it back."""

    model: cp_model.CpModel
    problem: Problem
    chains: dict[str, DimChains]
    pinned: frozenset[str]
    scale: int  # clocks are multiplied by this to be integers
    choice: dict[str, cp_model.IntVar | int] = field(default_factory=dict)
    tile: dict[tuple[str, int], Q] = field(default_factory=dict)  # (dim, j) -> T_j
    count: dict[tuple[str, int], Q] = field(default_factory=dict)  # (dim, j) -> N_j
    before: dict[tuple[int, str, str], Literal] = field(default_factory=dict)  # (level, d, e) -> d outer to e
    kept: dict[tuple[str, int], Literal] = field(default_factory=dict)
    words: dict[tuple[str, int], Q] = field(default_factory=dict)  # region-run words of (tensor, level)
    link_tensor_down: dict[tuple[str, int], Q] = field(default_factory=dict)  # (tensor, child level)
    link_tensor_up: dict[tuple[str, int], Q] = field(default_factory=dict)
    link_time: dict[int, Q] = field(default_factory=dict)  # child level -> scaled time
    occupancy: dict[int, Q] = field(default_factory=dict)
    capacity_guard: dict[int, cp_model.IntVar] = field(default_factory=dict)
    guards: dict[str, cp_model.IntVar] = field(default_factory=dict)  # family name -> assumption literal
    calls: Q | None = None
    compute_time: Q | None = None  # scaled
    time: Q | None = None  # scaled
    words_total: Q | None = None
    counter: int = 0
    cache: dict = field(default_factory=dict)
    spatial_levels: tuple[int, ...] = ()  # the meshed levels (more than one instance), outermost first
    factor: dict[tuple[str, int], Q] = field(default_factory=dict)  # (split dim, meshed level number) -> its parts
    on_axis: dict[tuple[str, int, int], Literal] = field(default_factory=dict)  # (dim, meshed level number, axis) -> mapped there
    link_tensor_down_busiest: dict[tuple[str, int, int], Q] = field(default_factory=dict)  # per link copy class (time)
    link_tensor_up_busiest: dict[tuple[str, int, int], Q] = field(default_factory=dict)
    busiest_calls: Q | None = None
    rows: object = None  # model/dram_rows.RowTerms when DRAM rows are modelled
    at: dict = field(default_factory=dict)  # (tensor, level) -> {cut: literal}: the buffer's position (model/placement.py)
    windows: tuple = ()  # split filter windows (model/windows.Window)

    def name(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}_{self.counter}"

    # -- element lookups -------------------------------------------------
    def lookup(self, dim: str, values: np.ndarray, stem: str) -> Q:
        """``values[choice[dim]]`` as a quantity (a constant when all values agree)."""
        values = np.asarray(values, dtype=np.int64)
        lo, hi = int(values.min()), int(values.max())
        if lo == hi:
            return Q.const(lo)
        # An element over a large table takes milliseconds to add: hundreds of them outlasted a solve's time
        # limit by seconds on a 128x128 array (the build checked its budget only between its parts).
        checkpoint("building the model's tables")
        var = self.model.new_int_var(lo, hi, self.name(f"{stem}_{dim}"))
        self.model.add_element(self.choice[dim], values.tolist(), var)
        return Q(var, lo, hi)

    # -- algebra ---------------------------------------------------------
    def product(self, factors: list[Q], stem: str) -> Q:
        """Exact product; constants fold into a coefficient."""
        coeff = 1
        vars_: list[Q] = []
        for f in factors:
            if f.is_const:
                coeff *= int(f.expr)
            else:
                vars_.append(f)
        if coeff == 0:
            return Q.const(0)
        if not vars_:
            return Q.const(coeff)
        if len(vars_) == 1:
            v = vars_[0]
        else:
            lo, hi = _product_bounds(vars_)
            target = self.model.new_int_var(lo, hi, self.name(stem))
            self.model.add_multiplication_equality(target, [_as_var(self, v) for v in vars_])
            v = Q(target, lo, hi)
        a, b = coeff * v.lo, coeff * v.hi
        return Q(coeff * v.expr, min(a, b), max(a, b))

    def select(self, lit: Literal, if_true: Q, if_false: Q, stem: str) -> Q:
        """``if_true`` when ``lit`` holds, else ``if_false``."""
        if lit is True:
            return if_true
        if lit is False:
            return if_false
        if if_true.is_const and if_false.is_const and int(if_true.expr) == int(if_false.expr):
            return if_true
        lo, hi = min(if_true.lo, if_false.lo), max(if_true.hi, if_false.hi)
        v = self.model.new_int_var(lo, hi, self.name(stem))
        self.model.add(v == if_true.expr).only_enforce_if(lit)
        self.model.add(v == if_false.expr).only_enforce_if(~lit)
        return Q(v, lo, hi)

    def total(self, parts: list[Q]) -> Q:
        if not parts:
            return Q.const(0)
        if all(p.is_const for p in parts):
            return Q.const(sum(int(p.expr) for p in parts))
        return Q(sum(p.expr for p in parts), sum(p.lo for p in parts), sum(p.hi for p in parts))

    def linear(self, terms: list[tuple[int, Q]], floor: int | None = None) -> Q:
        """``sum(coeff * q)``; ``floor`` is a lower bound the caller knows holds (it tightens ``lo``)."""
        const = sum(c * int(q.expr) for c, q in terms if q.is_const)
        live = [(c, q) for c, q in terms if not q.is_const and c]
        lo = const + sum(min(c * q.lo, c * q.hi) for c, q in live)
        hi = const + sum(max(c * q.lo, c * q.hi) for c, q in live)
        if floor is not None:
            lo = max(lo, floor)
        if not live:
            return Q.const(const)
        return Q(sum(c * q.expr for c, q in live) + const, lo, hi)

    def scaled(self, q: Q, k: int) -> Q:
        if q.is_const:
            return Q.const(int(q.expr) * k)
        return Q(q.expr * k, q.lo * k, q.hi * k)

    def var_of(self, q: Q, stem: str) -> cp_model.IntVar | int:
        """A variable equal to ``q`` (or the int), for constraints that need one."""
        return _as_var(self, q, stem) if not q.is_const else int(q.expr)

    def bool_and(self, lits: list[Literal], stem: str) -> Literal:
        """A literal equal to the conjunction."""
        if any(l is False for l in lits):
            return False
        lits = [l for l in lits if l is not True]
        if not lits:
            return True
        if len(lits) == 1:
            return lits[0]
        b = self.model.new_bool_var(self.name(stem))
        self.model.add_bool_and(lits).only_enforce_if(b)
        self.model.add_bool_or([~l for l in lits] + [b])
        return b

    def bool_or(self, lits: list[Literal], stem: str) -> Literal:
        if any(l is True for l in lits):
            return True
        lits = [l for l in lits if l is not False]
        if not lits:
            return False
        if len(lits) == 1:
            return lits[0]
        b = self.model.new_bool_var(self.name(stem))
        self.model.add_bool_or(lits).only_enforce_if(b)
        for l in lits:
            self.model.add_implication(l, b)
        return b


def negate(lit: Literal) -> Literal:
    if lit is True:
        return False
    if lit is False:
        return True
    return ~lit


def _product_bounds(qs: list[Q]) -> tuple[int, int]:
    lo, hi = 1, 1
    for q in qs:
        cands = [lo * q.lo, lo * q.hi, hi * q.lo, hi * q.hi]
        lo, hi = min(cands), max(cands)
    return lo, hi


def _as_var(enc: Encoding, q: Q, stem: str = "v") -> cp_model.IntVar:
    if isinstance(q.expr, cp_model.IntVar):
        return q.expr
    v = enc.model.new_int_var(q.lo, q.hi, enc.name(stem))
    enc.model.add(v == q.expr)
    return v


def footprint_key(f: Footprint) -> str:
    return f"{f[0]}x+{f[1]}"
