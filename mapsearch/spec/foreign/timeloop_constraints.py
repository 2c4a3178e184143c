"""Timeloop v0.4 mapping constraints -> keep rules and :class:`~mapsearch.spec.constraints.Constraints`.

What is exact (see timeloop.py): ``dataspace``/``bypass`` keep and bypass
lists; a temporal ``permutation`` that names every dimension (Timeloop lists
it inner to outer; it orders the loops that step through the level's
child's tiles, which in mapsearch are the child level's loops); temporal
``factors`` at the innermost storage (its tile extents, since the op covers
one point). The rest is a note: mapsearch searches a wider space.
"""

from __future__ import annotations

import re
from typing import Any

from mapsearch.spec.foreign.common import bad
from mapsearch.spec.workload import Workload

__all__ = ["node_targets", "apply_targets"]


def node_targets(flat: list) -> list[tuple[dict, str]]:
    """The ``constraints:`` written on the architecture's nodes, as ``(target dict, field)``."""
    out = []
    for kind, body, field, _ in flat:
        for ctype, c in (body.get("constraints") or {}).items():
            if isinstance(c, dict):
                out.append(({**c, "type": ctype, "target": body["name"]}, f"{field}.constraints.{ctype}"))
    return out


def _names(raw: Any, source: str, field: str) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        return [x for x in re.split(r"[\s,]+", raw) if x]
    if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        return list(raw)
    raise bad(source, field, "a list of names", raw)


def _factors(raw: Any, source: str, field: str) -> list[tuple[str, str, int]]:
    out = []
    for item in _names(raw, source, field):
        m = re.fullmatch(r"([A-Za-z_]\w*)\s*(=|<=|>=)\s*(\d+)", item)
        if m is None:
            raise bad(source, field, "factors such as C=1 or M<=4", item)
        out.append((m.group(1), m.group(2), int(m.group(3))))
    return out


def _permutation(raw: Any, dims: tuple[str, ...], source: str, field: str) -> list[str]:
    if isinstance(raw, str) and not re.search(r"[\s,]", raw.strip()) and all(c in dims for c in raw.strip()):
        return list(raw.strip())  # "NMC": one letter per dimension
    return _names(raw, source, field)


def apply_targets(targets: list[tuple[dict, str]], storages: list[str], w: Workload, source: str,
                  notes: list[str]) -> tuple[dict[str, tuple], Any]:
    """``({storage: (keep set, bypass set)}, Constraints or None)``; what is left out goes to ``notes``."""
    from mapsearch.spec.constraints import Constraints, TileLimit

    from mapsearch.spec.foreign.operands import window_dims

    tensors = set(w.tensor_names)
    dims = w.dims
    window = window_dims(w.einsum, w.extent)
    keep: dict[str, tuple[frozenset, frozenset]] = {}
    orders, tiles = [], []
    # ``storages`` ends with the operand level under the compute: the innermost storage's child.
    children = {s: storages[i + 1] for i, s in enumerate(storages[:-1])}
    innermost = storages[-2]
    storages = storages[:-1]
    for t, field in targets:
        if not isinstance(t, dict):
            raise bad(source, field, "a mapping with target and type", t)
        target, kind = t.get("target"), t.get("type")
        if kind in ("spatial", "utilization", "parallel"):
            notes.append(f"{source}: {field}: {kind} constraints restrict the mapper's fanout use; mapsearch "
                         f"searches every split: left out")
            continue
        if target not in storages:
            raise bad(source, f"{field}.target", f"a storage of the architecture ({', '.join(storages)})", target)
        if kind in ("dataspace", "bypass"):
            k = frozenset(_names(t.get("keep"), source, f"{field}.keep"))
            b = frozenset(_names(t.get("bypass"), source, f"{field}.bypass"))
            for name in k | b:
                if name not in tensors:
                    raise bad(source, field, f"data spaces of the problem ({', '.join(w.tensor_names)})", name)
            old = keep.get(target, (frozenset(), frozenset()))
            keep[target] = (old[0] | k, old[1] | b)
        elif kind == "temporal":
            child = children[target]
            perm = _permutation(t.get("permutation"), dims, source, f"{field}.permutation")
            wanted = [d for d in dims if dict(w.extents)[d] > 1]
            if perm and set(wanted) <= set(perm):
                orders.append((child, tuple(d for d in reversed(perm) if d in dims)))
            elif perm:
                notes.append(f"{source}: {field}.permutation: {''.join(perm)} names some dimensions only; "
                             f"mapsearch's orders cannot say 'these innermost': left out")
            dropped = []
            for d, op, v in _factors(t.get("factors"), source, f"{field}.factors"):
                if d not in dims or (v == 1 and dict(w.extents)[d] == 1):
                    continue  # a dimension this problem does not have, or one of extent 1
                if d in window and v != w.extent[d]:
                    notes.append(f"{source}: {field}.factors: {d}{op}{v}: mapsearch keeps the convolution window "
                                 f"dimension {d} whole at every level (its search family): left out")
                elif op == "=" and target == innermost:
                    tiles.append(TileLimit(target, d, v, v))
                else:
                    dropped.append(f"{d}{op}{v}")
            if dropped:
                notes.append(f"{source}: {field}.factors: {' '.join(dropped)} bound loops of {target} above the "
                             f"innermost storage; mapsearch fixes tile extents, not factors: left out")
        else:
            raise bad(source, f"{field}.type", "temporal, spatial, dataspace or bypass", kind)
    constraints = Constraints("timeloop constraints", tuple(tiles), tuple(orders)) if tiles or orders else None
    return keep, constraints
