"""Build small legal schedules by hand for tests."""

from __future__ import annotations

from mapsearch.schedule.legality import violations
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import Workload


def build_schedule(w: Workload, a: Architecture, below: list[tuple[dict, str, str]], homes=()) -> Schedule:
    """``below``: per level under the top, (tile, order as one-letter dims, kept tensors as letters).

    >>> from mapsearch.spec.architecture import Level, Link
    >>> w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 2, "n": 2, "k": 2})
    >>> a = Architecture("t", (Level("L1", None), Level("L0", 12, Link())))
    >>> build_schedule(w, a, [({"m": 1, "n": 2, "k": 2}, "mnk", "ABZ")]).levels[1].tile
    (('m', 1), ('n', 2), ('k', 2))
    """
    top = LevelMapping(a.levels[0].name, tuple(w.extent.items()))
    rest = tuple(
        LevelMapping(a.levels[i + 1].name, tuple((d, tile[d]) for d in w.dims), tuple(order), frozenset(keep))
        for i, (tile, order, keep) in enumerate(below)
    )
    s = Schedule(w, a, (top,) + rest, tuple(homes))
    assert violations(s) == []
    return s
