"""The least occupancy any schedule of the contract needs at a level, and the infeasibility where it overflows.

Used wherever a search finds nothing, to tell "infeasible" (no legal
schedule exists: shared/spec/cost-model.md) from "no schedule in the
searched family" (a restricted family is empty, a legal schedule outside it
may exist): model/build.py before any search, solve/run.py and
solve/explain.py after one.
"""

from __future__ import annotations

from mapsearch.errors import InfeasibleError
from mapsearch.model.problem import Problem


def least_need(p: Problem, i: int, pinned: frozenset[str] = frozenset()) -> tuple[int, list[str]]:
    """``(words, parts)``: the least occupancy of level ``i`` when the dims in ``pinned`` are held whole.

    Homes count whole; L0 keeps every tensor homed above it, at least its tile of extent 1 along every
    dim not pinned, twice with double buffering unless that tile is the whole tensor (it must move) or
    holding the whole tensor once is less. ``parts``: ``"X words"`` per such tensor.
    """
    arch, w = p.architecture, p.workload
    need = home_words_of(p, i)
    parts = []
    if i == arch.depth - 1:
        for t in w.tensor_names:
            if p.home(t) < i:
                smallest = w.tensor(t).words({d: w.extent[d] if d in pinned else 1 for d in w.dims})
                whole = w.tensor_words(t)
                if arch.double_buffering and smallest < whole:
                    smallest = min(2 * smallest, whole)
                parts.append(f"{t} {smallest}")
                need += smallest
    return need, parts


def overflow_text(p: Problem, i: int, need: int, parts: list[str]) -> str:
    """Why level ``i`` overflows: its capacity against the least occupancy ``need`` (``parts``: least_need's)."""
    name = p.architecture.levels[i].name
    homes = home_words_of(p, i)
    what = f"the smallest tiles ({', '.join(parts)} words)" if parts else "what must be kept there"
    if p.architecture.double_buffering and parts:
        what = what.replace("the smallest tiles", "the smallest tiles, double-buffered,")
    if homes:
        what += f" plus {homes} words of homes"
    return f"{name} holds {p.architecture.levels[i].capacity} words but {what} need {need}"


def contract_overflow(p: Problem) -> InfeasibleError | None:
    """The infeasibility of a level that no schedule of the contract fits (tiles of one element, any position,
    any split), or None.

    A restricted search that finds nothing reports "no schedule in the searched family"; when even
    the contract's least occupancy overflows a level, no legal schedule exists and it is infeasible.
    Not claimed for a fused stage (its homes and buffers are the group's).
    """
    if p.fusion_level is not None:
        return None
    for i, lv in enumerate(p.architecture.levels):
        need, parts = least_need(p, i)
        if lv.capacity is not None and need > lv.capacity:
            return InfeasibleError(f"infeasible: capacity of {lv.name} conflict: {overflow_text(p, i, need, parts)}",
                                   (f"capacity of {lv.name}",))
    return None


def home_words_of(p: Problem, i: int) -> int:
    """Words of the tensors homed at level ``i`` (whole, for the whole run)."""
    return sum(p.workload.tensor_words(t) for t in p.workload.tensor_names if p.home(t) == i)
