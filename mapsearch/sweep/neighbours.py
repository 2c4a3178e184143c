"""Which solved case warm-starts which, in a sweep with ``warm_start: true``.

A case's *neighbour* is the case before it, in the sweep's case order, with
the same content but for the levels' capacities: the same workload, homes,
objective, constraints, solver settings and hierarchy (level names, links,
meshes, compute). Its schedule is the case's start
(mapsearch/solve/warm_start.py): legal on a larger buffer, and ignored by
the solve where it does not fit. Neighbours follow from the sweep file
alone, never from the order in which workers finish, so a sweep gives the
same results run on one worker or many, locally or on Dask, at once or
resumed: a case runs once its neighbour has a stored result (the runner
holds it back until then), and a neighbour that failed gives no start.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Mapping, Sequence

from mapsearch.sweep.case import Case

__all__ = ["neighbours", "warm_starts"]


def warm_starts(case: Case) -> bool:
    """True when the case's sweep asked for warm starts (``warm_start: true``, part of its content)."""
    return bool(case.content["solver"].get("warm_start"))


def _shape(content: Mapping[str, Any]) -> str:
    """The case's content with every capacity blanked: equal for cases that differ only in capacities."""
    shape = copy.deepcopy(dict(content))
    for level in shape["architecture"].get("levels", []):
        level["capacity"] = None
    shape["architecture"].pop("name", None)
    return json.dumps(shape, sort_keys=True)


def neighbours(cases: Sequence[Case]) -> dict[str, str]:
    """``case_id -> the case_id of its neighbour`` for every warm-started case that has one."""
    last: dict[str, str] = {}
    out: dict[str, str] = {}
    for case in cases:
        if not warm_starts(case):
            continue
        key = _shape(case.content)
        if key in last:
            out[case.case_id] = last[key]
        last[key] = case.case_id
    return out
