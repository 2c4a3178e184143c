"""The architecture: memory levels, the links between them, and the compute op.

Levels are listed outermost first (index 0 is the top, e.g. DRAM or L2) down
to the innermost (L0, next to compute). ``levels[i].link`` is the link from
``levels[i-1]`` (parent) down to ``levels[i]`` (child); the top has none.

Units: capacities in words; link costs in clocks per word; compute in clocks
per call. Costs may be rational (``Fraction``) so that, e.g., 2 words per
clock is exactly ``1/2`` clock per word.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from mapsearch.spec.energy import EnergyModel

SHARED = "shared"
SEPARATE = "separate"


@dataclass(frozen=True)
class Link:
    """Parent -> child link.

    shared line:    ``time = (words_down + words_up) * input_clocks_per_word``
    separate lines: ``time = max(words_down * input_clocks_per_word, words_up * output_clocks_per_word)``
    """

    input_clocks_per_word: Fraction = Fraction(1)
    output_clocks_per_word: Fraction = Fraction(1)
    lines: str = SHARED

    def time(self, words_down: int, words_up: int) -> Fraction:
        if self.lines == SHARED:
            return (words_down + words_up) * self.input_clocks_per_word
        return max(words_down * self.input_clocks_per_word, words_up * self.output_clocks_per_word)


# The comparisons of a split bound (AccelForge's ``loop_bounds`` operators): per dimension, or on the product.
SPLIT_BOUND_OPERATORS = ("==", "<=", ">=", "<", ">", "product==", "product<=", "product>=", "product<", "product>")


# The plain comparisons, for ints and for the solver's linear expressions alike (CP-SAT overloads them).
COMPARISONS = {"==": operator.eq, "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt}


@dataclass(frozen=True)
class SplitBound:
    """A bound on the splits along one mesh axis (AccelForge's ``Spatial.loop_bounds``).

    The *bound* of dimension ``d`` on the axis is its factor there (the
    number of parts it is split in) when ``d`` is split on this axis, else 1
    (no spatial loop is a loop of one iteration). ``operator`` compares each
    of ``dims``' bounds with ``value`` (``==``, ``<=``, ``>=``, ``<``,
    ``>``), or their product (``product==`` ...). A mapping constraint: the
    solver searches only the splits that satisfy it; the replay counts any.
    """

    dims: tuple[str, ...]
    operator: str
    value: int

    def __post_init__(self) -> None:
        if self.operator not in SPLIT_BOUND_OPERATORS:
            raise ValueError(f"split bound operator {self.operator!r}: expected one of {', '.join(SPLIT_BOUND_OPERATORS)}")

    def holds(self, bounds: Mapping[str, int]) -> bool:
        """Whether the bounds (dimension -> its factor on the axis; 1 when absent) satisfy this comparison."""
        values = [bounds.get(d, 1) for d in self.dims]
        op = self.operator.removeprefix("product")
        if self.operator.startswith("product"):
            return COMPARISONS[op](math.prod(values), self.value)
        return all(COMPARISONS[op](v, self.value) for v in values)

    def __str__(self) -> str:
        what = f"product of ({', '.join(self.dims)})" if self.operator.startswith("product") else f"each of ({', '.join(self.dims)})"
        return f"{what} {self.operator.removeprefix('product')} {self.value}"


@dataclass(frozen=True)
class MeshAxis:
    """One named axis of a level's spatial fanout (see docs/spatial.md).

    ``may_reuse`` names the tensors (or roles ``input``, ``output``, ``all``,
    ``none``) that instances along this axis may share: an input tile they
    all need crosses the parent link once (multicast), output partial sums
    are reduced on the way up.
    """

    name: str
    size: int
    may_reuse: tuple[str, ...] = ("all",)
    # Tensors (or roles) every instance along the axis must share: a split on this axis may not
    # be on a dimension that indexes one of them (docs/spatial.md, "must_reuse"). Empty: nothing.
    must_reuse: tuple[str, ...] = ()
    # Bounds on the factors of the dimensions split on this axis (AccelForge's loop_bounds): a mapping constraint.
    split_bounds: tuple[SplitBound, ...] = ()

    def reuses(self, tensor: str, is_output: bool) -> bool:
        return _names(self.may_reuse, tensor, is_output)

    def must_share(self, tensor: str, is_output: bool) -> bool:
        return _names(self.must_reuse, tensor, is_output)


def _names(names: tuple[str, ...], tensor: str, is_output: bool) -> bool:
    """``tensor`` is among ``names`` (tensor names or the roles ``input``, ``output``, ``all``, ``none``)."""
    found = set(names)
    if "none" in found:
        return False
    return "all" in found or tensor in found or ("output" if is_output else "input") in found


@dataclass(frozen=True)
class Level:
    """A memory level; ``capacity`` in words per instance, ``None`` for unbounded.

    ``mesh`` gives a spatial fanout of one or two named axes; then
    ``instances`` is the product of their sizes.
    """

    name: str
    capacity: int | None
    link: Link | None = None  # None only for the top level
    instances: int = 1
    mesh: tuple[MeshAxis, ...] = ()

    def __post_init__(self) -> None:
        # ``instances`` alone is one axis ``x`` that may reuse all tensors; a mesh alone sets ``instances``.
        if not self.mesh and self.instances > 1:
            object.__setattr__(self, "mesh", (MeshAxis("x", self.instances, ("all",)),))
        elif self.mesh:
            n = math.prod(a.size for a in self.mesh)
            if self.instances == 1 and n != 1:
                object.__setattr__(self, "instances", n)
            elif self.instances != n:
                raise ValueError(f"level {self.name}: instances {self.instances} != {n}, the product of its mesh sizes")

    def axis(self, name: str) -> MeshAxis:
        for a in self.mesh:
            if a.name == name:
                return a
        raise KeyError(name)


@dataclass(frozen=True)
class Compute:
    """The op under L0: covers a block of ``block[d]`` per dimension, costs ``clocks_per_call``.

    A scalar MAC has every block extent 1 (dimensions not named are 1).
    ``block_roles`` gives the block by GEMM role instead (``m``, ``n``,
    ``k``; :mod:`mapsearch.spec.block_roles`): such an op is not yet bound
    to the workload's dimensions, and the solver binds it
    (:mod:`mapsearch.solve.block_roles`) before anything is modelled or
    replayed. ``block`` and ``block_roles`` are never both given.
    """

    block: tuple[tuple[str, int], ...] = ()
    clocks_per_call: Fraction = Fraction(1)
    block_roles: tuple[tuple[str, int], ...] = ()

    def block_extent(self, dim: str) -> int:
        return dict(self.block).get(dim, 1)

    @property
    def block_macs(self) -> int:
        return math.prod(b for _, b in self.block + self.block_roles)


@dataclass(frozen=True)
class Architecture:
    name: str
    levels: tuple[Level, ...]
    compute: Compute = field(default_factory=Compute)
    double_buffering: bool = False
    dram: object | None = None  # a mapsearch.dram.DramSpec of the top level (docs/dram.md), or None
    energy: "EnergyModel | None" = None  # per-word read/write, per-MAC and leakage energies (spec/energy.py)

    @property
    def level_names(self) -> tuple[str, ...]:
        return tuple(lv.name for lv in self.levels)

    @property
    def depth(self) -> int:
        return len(self.levels)

    def index(self, level_name: str) -> int:
        return self.level_names.index(level_name)

    def link_name(self, child: int) -> str:
        """Name of the link into ``levels[child]``, e.g. ``'L1->L0'``."""
        return f"{self.levels[child - 1].name}->{self.levels[child].name}"

    @property
    def link_names(self) -> tuple[str, ...]:
        return tuple(self.link_name(i) for i in range(1, self.depth))


def as_fraction(value: object) -> Fraction:
    """Exact value of an int, a decimal float such as 0.5, or text such as '1/3'."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(value, float):
        return Fraction(str(value))
    return Fraction(value)  # type: ignore[arg-type]


def block_from_mapping(block: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple((d, int(b)) for d, b in block.items())
