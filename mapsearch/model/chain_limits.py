"""Limits on the tile chains known before any enumeration: the user's tile limits, dimensions held whole, L0's room.

Split out of :mod:`mapsearch.model.build`. Each check either narrows a
dimension's bounds or says, in one line, why nothing can meet them:
infeasible where no schedule of the contract fits, "no schedule in the
searched family" where only a restriction of the family is to blame.
"""

from __future__ import annotations

import numpy as np

from mapsearch.errors import InfeasibleError, NoScheduleInFamily
from mapsearch.model.overflow import contract_overflow
from mapsearch.model.problem import Problem
from mapsearch.model.skew import region_at
from mapsearch.model.windows import held_whole_restriction


def admit_a_chain(extent: int, bounds: list[tuple[int, int]]) -> bool:
    """Some chain ``extent >= T_1 >= ... >= T_J >= 1`` meets the limits ``bounds[j-1] = (lo, hi)`` on ``T_j``.

    Taking each ``T_j`` as large as the limits and its parent allow leaves
    the most room below, so the chain exists iff that greedy one meets every
    lower limit.
    """
    parent = extent
    for lo, hi in bounds:
        parent = min(parent, hi)
        if parent < max(lo, 1):
            return False
    return True


def check_held_whole_limits(p: Problem, d: str, extent: int, bounds: list[tuple[int, int]], why: str | None) -> None:
    """A dimension held whole has its extent at every level: user tile limits that exclude it cannot be met.

    Extent-1 dimensions have no other tile, so that is a real conflict. A
    window dimension held whole (``why``: split_windows' reason) is
    a restriction of the searched family, so the error says so rather than
    "infeasible" (a split tile might meet the limit; the limits admit a
    chain, checked before), unless no schedule of the contract fits
    (:func:`outside_the_family`). Silently replacing the user's limit by
    the whole extent would report a schedule the user ruled out.
    """
    arch = p.architecture
    for j, (lo, hi) in enumerate(bounds, start=1):
        if lo <= extent <= hi:
            continue
        what = (f"the tile limit on {d} at {arch.levels[j].name} ({lo}..{hi}) excludes its extent {extent}, "
                f"at which {d} is held")
        if extent == 1:
            raise InfeasibleError(what, ("user tile limits",))
        raise outside_the_family(p, f"{what} whole", [d], why)


def outside_the_family(p: Problem, what: str, held: list[str], why: str | None,
                        core: tuple[str, ...] = ("user tile limits",)) -> InfeasibleError:
    """The error when the searched family, with ``held`` dimensions held whole, has no schedule before any search:
    infeasible where no schedule of the contract fits (model/overflow.contract_overflow), else
    "no schedule in the searched family" naming the restriction."""
    overflow = contract_overflow(p)
    if overflow is not None:
        return overflow
    restriction = held_whole_restriction(held, why)
    return NoScheduleInFamily(f"no schedule in the searched family: {what}; the family was restricted "
                              f"({restriction}), so a legal schedule outside it may exist", core, (restriction,))


def innermost_overflow(p: Problem, d: str, lo: int, fit: int, pinned: frozenset[str],
                        why: str | None) -> InfeasibleError:
    """``d``'s innermost tile must be at least ``lo`` but at most ``fit`` fits there (``innermost_fit``).

    Infeasible, unless dimensions held whole (``pinned``, a restriction of
    the family: ``why``) took part of the room: then the fit with every
    window split, which holds for every schedule of the contract, decides,
    and where ``lo`` is within it, no schedule in the searched family
    (:func:`outside_the_family`).
    """
    J = p.depth
    w = p.workload
    name = p.architecture.levels[J].name
    if p.fusion_level == J and d not in p.shared_dims and lo == w.extent[d]:
        need = f"{d} is whole ({lo}) at {name}, the fusion level (the outer nest does not tile it)"
    else:
        need = f"the tile limits on {d} at {name} need at least {lo}"
    held = sorted(e for e in pinned if w.extent[e] > 1)
    if held:
        fit_all = innermost_fit(p, d, frozenset(e for e, n in w.extents if n == 1))
        if lo > fit_all:
            held, fit = [], fit_all
    what = (f"capacity of {name} conflict: {need}, but at most {fit} fits its {p.architecture.levels[J].capacity} "
            f"words with every other tile at its smallest")
    if not held:
        return InfeasibleError(what, (f"capacity of {name}",))
    return outside_the_family(p, what, held, why, (f"capacity of {name}",))


def innermost_fit(p: Problem, d: str, pinned: frozenset[str]) -> int:
    """Largest innermost tile extent of ``d`` that can fit: every tensor not homed at L0 is kept there.

    Each such tensor ``X`` holds at least its box with every other piece at
    its smallest (L0's buffer of ``X`` holds at least ``X``'s L0 tile,
    wherever it is placed): 1, or the whole extent for a dimension held
    whole (``pinned``). Its words are ``prod_a (sum_{e in a} c_e (x_e - 1) +
    1)`` over its axes (model/skew.region_at), which is one formula for a
    plain axis, a split window (``c_d*(T-1) + 1`` with the window's others
    at 1), a window held whole (its other dimensions at their extents), a
    diagonal and a skewed axis. So ``sum_X words_X(T) <= capacity - homes``:
    every tensor at once, not one at a time.
    """
    w, arch = p.workload, p.architecture
    J = p.depth
    cap = arch.levels[J].capacity
    if cap is None:
        return w.extent[d]
    # Tensors homed whole at L0 take their words; a fused intermediate homed there holds only its tile.
    whole_at_l0 = [t for t in w.tensor_names if p.home(t) == J and t not in p.fused]
    room = cap - sum(w.tensor_words(t) for t in whole_at_l0)
    extent = np.arange(1, w.extent[d] + 1, dtype=np.int64)
    need = np.zeros_like(extent)
    for t in w.tensors:
        if t.name not in whole_at_l0:
            x = {e: extent if e == d else (w.extent[e] if e in pinned else 1) for e in t.dims}
            need += region_at(t, tuple(range(len(t.indices))), x)
    fits = np.flatnonzero(need <= room)
    return int(extent[fits[-1]]) if fits.size else 1
