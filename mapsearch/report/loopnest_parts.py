"""The pieces the loop-nest code is built from: linear expressions, loops, buffer moves, names.

Used by :mod:`mapsearch.report.loopnest` (see its docstring for what the
code means); kept apart so each module stays small.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass, field
from typing import Iterable

from mapsearch.schedule.schedule import Schedule

__all__ = ["Lin", "NestLoop", "Move", "Names", "part_index", "may_repeat", "held_name", "seen_name", "via_note",
           "via_comment"]


# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Lin:
    """``const + sum(coef * var)``, rendered with the variables in first-use order."""

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0

    @staticmethod
    def of(x: "str | int") -> "Lin":
        return Lin((), x) if isinstance(x, int) else Lin(((x, 1),), 0)

    def __add__(self, other: "Lin") -> "Lin":
        terms = dict(self.terms)
        for v, c in other.terms:
            terms[v] = terms.get(v, 0) + c
        return Lin(tuple((v, c) for v, c in terms.items() if c), self.const + other.const)

    def scale(self, k: int) -> "Lin":
        return Lin(tuple((v, c * k) for v, c in self.terms), self.const * k)

    def text(self) -> str:
        parts: list[str] = []
        for v, c in self.terms:
            mag = v if abs(c) == 1 else f"{abs(c)}*{v}"
            parts.append(("- " if c < 0 else "+ ") + mag if parts else ("-" if c < 0 else "") + mag)
        if self.const or not parts:
            parts.append((f"- {-self.const}" if self.const < 0 else f"+ {self.const}") if parts else str(self.const))
        return " ".join(parts)


# --------------------------------------------------------------------------
# The pseudo-code.
# --------------------------------------------------------------------------


@dataclass
class NestLoop:
    level: int
    dim: str
    var: str  # tile start
    tile: int  # tile extent (the step)
    parent_start: Lin
    parent_size: "str | int"
    size: "str | int"  # the extent expression of the tiles this loop visits
    size_line: str | None  # 'tm1 = min(...)' when the extent varies
    one_trip_possible: bool  # some parent piece is no larger than the tile
    axis: str | None = None  # a spatial split: its iterations are instances along this mesh axis


@dataclass
class Move:
    """A (tensor, level) buffer: where its tile changes and how it moves."""

    tensor: str
    level: int
    at: int  # index of the loop it sits in; -1: before all loops
    guarded: bool
    slices: str = ""
    why: str = ""  # why the move is guarded
    first_visit: list[str] = field(default_factory=list)  # conditions: 'k1 == 0'
    instance: str = ""  # guarded buffers under spatial loops: the held tile is per instance, keyed by this
    digits: int = 0  # how many spatial loops that key has


class Names:
    """Unique Python identifiers: a later name that clashes gets a trailing underscore."""

    def __init__(self, taken: Iterable[str]):
        self.used = set(taken) | {"range", "min", "load", "store", "zero", "op", "None"}

    def new(self, want: str) -> str:
        name = want if want.isidentifier() else "v_" + "".join(ch if ch.isalnum() else "_" for ch in want)
        while name in self.used or keyword.iskeyword(name):
            name += "_"
        self.used.add(name)
        return name


def part_index(lp: NestLoop) -> str:
    """A spatial loop's instance digit: which part of its parent piece this is (``(m0_x - m1) // 2``)."""
    offset = lp.parent_start.text()
    digit = lp.var if offset == "0" else f"({lp.var} - {offset})"
    return digit if lp.tile == 1 else f"{digit} // {lp.tile}"


def may_repeat(loops: list[NestLoop], at: int, relevant: frozenset[str]) -> bool:
    """True when the tile can stay the same across an entry of loop ``at``'s body.

    That needs a loop outside that does not index the tensor, with every
    indexing loop from it in to ``at`` able to make a single trip (a
    remainder parent piece no larger than its tile).
    """
    if at < 0:
        return False
    for a in range(at):
        if loops[a].dim in relevant or loops[a].axis:  # another instance's tile is not a repeat
            continue
        # A spatial loop is one trip for each instance: only the temporal loops decide.
        if all(lp.one_trip_possible for lp in loops[a + 1: at + 1] if lp.dim in relevant and not lp.axis):
            return True
    return False


def held_name(mv: Move, level_names: tuple[str, ...]) -> str:
    return f"{mv.tensor}_{_ident(level_names[mv.level])}"


def seen_name(mv: Move, level_names: tuple[str, ...]) -> str:
    return f"{mv.tensor}_{_ident(level_names[mv.level])}seen_name"


def _ident(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text)


def via_note(s: Schedule, level: int, src: int) -> str:
    skipped = [s.architecture.levels[j].name for j in range(src + 1, level)]
    return f" (bypasses {', '.join(skipped)})" if skipped else ""


def via_comment(s: Schedule, level: int, src: int) -> str:
    via = via_note(s, level, src)
    return f"  #{via}" if via else ""
