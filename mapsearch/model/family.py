"""Which part of the contract's schedule family a model searches.

"OPTIMAL" must mean optimal among every schedule the contract allows
(shared/spec/cost-model.md). Where the encoding covers less, the result
names each restriction that applied to *this* problem, the status becomes
``OPTIMAL_IN_FAMILY``, and an empty family is reported as such, never as
"infeasible" (docs/solver.md, "The family covered").
"""

from __future__ import annotations

from fractions import Fraction
from typing import Iterable

from mapsearch.model.bounds import contract_floors
from mapsearch.model.encoding import Encoding
from mapsearch.model.placement import meshed_placement_restriction, placement_disabled_reason
from mapsearch.model.problem import Problem
from mapsearch.model.spatial_chains import ALL_PARTS, EQUAL_PARTS
from mapsearch.model.windows import held_whole_restriction, split_windows



def family_restrictions(enc: Encoding) -> tuple[str, ...]:
    """One readable line per restriction of the searched family that can matter for this problem."""
    p = enc.problem
    w = p.workload
    out: list[str] = []
    held = sorted(d for d in enc.pinned if w.extent[d] > 1)
    if held:
        out.append(held_whole_restriction(held, enc.cache.get("windows_off")))
    reduced = [(d, c.family) for d, c in enc.chains.items() if c.reduced]
    if reduced:
        out.append("reduced tile candidates: " + "; ".join(f"{d} {family}" for d, family in reduced))
    names = [p.architecture.levels[s].name for s in enc.spatial_levels]
    cut = [(d, family if len(names) == 1 else f"{family} at {name}")
           for d, c in enc.chains.items() for family, name in zip(c.parts_family or (), names) if family not in (ALL_PARTS, EQUAL_PARTS)]
    if cut:  # model/spatial_chains.py: beyond its row limit, fewer part extents are cut
        out.append("spatial parts: " + "; ".join(f"{d} {family}" for d, family in cut))
    spatial_windows = spatial_restriction(enc)  # window dimensions beyond their limits: equal parts above L0
    if spatial_windows:
        out.append(spatial_windows)
    reason = placement_disabled_reason(enc)
    if reason is not None:
        out.append(f"buffer placement: default positions only ({reason})")
    meshed = meshed_placement_restriction(enc)
    if meshed is not None:
        out.append(meshed)
    return tuple(out)


def spatial_restriction(enc: Encoding) -> str | None:
    """The family restriction a spatial fanout puts on split windows whose unequal parts above the innermost
    level would pass the limits of model/spatial_chains.py: their dimensions are split over mesh axes there in
    equal parts only (EQUAL_PARTS), named at the levels where an unequal part was left out."""
    levels = enc.problem.architecture.levels
    cut = {(d, levels[s].name) for win in enc.windows for d in win.dims
           for s, family in zip(enc.spatial_levels, enc.chains[d].parts_family or ()) if family == EQUAL_PARTS}
    if not cut:
        return None
    dims = sorted({d for d, _ in cut})
    at = [levels[s].name for s in enc.spatial_levels if any(name == levels[s].name for _, name in cut)]
    return (f"spatial splits: window dimensions ({', '.join(dims)}) split over mesh axes in equal parts only at "
            f"{', '.join(at)} (every instance the same part of every parent piece)")


def held_whole_restrictions(problems: Iterable[Problem]) -> tuple[str, ...]:
    """The restrictions of windows held whole in ``problems`` (a fused group's stages), without a model: one
    line per distinct restriction, as :func:`family_restrictions` names it."""
    out: dict[str, None] = {}
    for p in problems:
        _, pinned, why = split_windows(p, frozenset(), None)
        held = sorted(d for d in pinned if p.workload.extent[d] > 1)
        if held:
            out[held_whole_restriction(held, why)] = None
    return tuple(out)


def meets_contract_floors(enc: Encoding, optima: list[tuple[str, Fraction]]) -> bool:
    """Every phase's proven optimum ``(name, value)`` equals a floor valid for every schedule of the contract.

    Then no schedule outside the searched family is better, lexicographically:
    the time is the least any schedule has, and the words are the least any
    schedule has (at any time, so also at that one). Only the plain time,
    words objectives; a fused group's floors are not claimed
    (docs/solver.md, "The family covered").
    """
    if [name for name, _ in optima] not in (["time", "words"], ["words"]) or enc.rows is not None:
        return False
    floors = phase_floors(enc.problem, enc.scale)
    return all(value == floors[name] for name, value in optima)


def phase_floors(problem: Problem, scale: int) -> dict[str, Fraction]:
    """Per phase name, the floor every schedule of the contract meets (``model/bounds.contract_floors``):
    the time in clocks (``scale``: the model's clock scale) and the words."""
    time_floor, words_floor = contract_floors(problem, scale)
    return {"time": Fraction(time_floor, scale), "words": Fraction(words_floor)}


def proven_status(all_phases_optimal: bool, restrictions: tuple[str, ...]) -> str:
    """OPTIMAL over the whole family, OPTIMAL_IN_FAMILY over a restricted one, else FEASIBLE."""
    if not all_phases_optimal:
        return "FEASIBLE"
    return "OPTIMAL_IN_FAMILY" if restrictions else "OPTIMAL"


def combined_status(statuses) -> str:
    """The status of several proven parts together (stages of a chain, groups of a plan)."""
    statuses = list(statuses)
    if any(s not in ("OPTIMAL", "OPTIMAL_IN_FAMILY") for s in statuses):
        return "FEASIBLE"
    return "OPTIMAL_IN_FAMILY" if "OPTIMAL_IN_FAMILY" in statuses else "OPTIMAL"
