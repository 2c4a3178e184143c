"""Which part of the contract's schedule family a model searches.

"OPTIMAL" must mean optimal among every schedule the contract allows
(shared/spec/cost-model.md). Where the encoding covers less, the result
names each restriction that applied to *this* problem, the status becomes
``OPTIMAL_IN_FAMILY``, and an empty family is reported as such, never as
"infeasible" (docs/solver.md, "The family covered").
"""

from __future__ import annotations

from mapsearch.model.encoding import Encoding
from mapsearch.model.placement import placement_disabled_reason
from mapsearch.model.windows import spatial_restriction



def family_restrictions(enc: Encoding) -> tuple[str, ...]:
    """One readable line per restriction of the searched family that can matter for this problem."""
    p = enc.problem
    w = p.workload
    out: list[str] = []
    held = sorted(d for d in enc.pinned if w.extent[d] > 1)
    if held:
        why = enc.cache.get("windows_off") or "an axis over three or more dimensions"
        out.append(f"filter windows held whole: {', '.join(held)} ({why}: such an axis is split only along its "
                   "largest dimension)")
    reduced = [(d, c.family) for d, c in enc.chains.items() if c.reduced]
    if reduced:
        out.append("reduced tile candidates: " + "; ".join(f"{d} {family}" for d, family in reduced))
    cut = [(d, c.parts_family) for d, c in enc.chains.items() if c.parts_family not in (None, "all parts")]
    if cut:  # model/spatial_chains.py: beyond its row limit, fewer part extents are cut
        out.append("spatial parts: " + "; ".join(f"{d} {family}" for d, family in cut))
    spatial_windows = spatial_restriction(enc)
    if spatial_windows:
        out.append(spatial_windows)
    reason = placement_disabled_reason(enc)
    if reason is not None:
        out.append(f"buffer placement: default positions only ({reason})")
    return tuple(out)


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
