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
from typing import Any, Mapping

from mapsearch.spec.architecture import SplitBound
from mapsearch.spec.foreign.common import bad
from mapsearch.spec.workload import Workload

__all__ = ["node_targets", "apply_targets"]


def node_targets(flat: list, source: str) -> list[tuple[dict, str, str]]:
    """The ``constraints:`` written on the architecture's nodes, as ``(target dict, field, source)``."""
    out = []
    for kind, body, field, _ in flat:
        for ctype, c in (body.get("constraints") or {}).items():
            if isinstance(c, dict):
                out.append(({**c, "type": ctype, "target": body["name"]}, f"{field}.constraints.{ctype}", source))
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


def _permutation(raw: Any, dims: tuple[str, ...], source: str, field: str,
                 known: frozenset[str] | None = None) -> list[str]:
    letters = set(dims) | set(known or ())
    text = raw.strip() if isinstance(raw, str) else ""
    if text and not re.search(r"[\s,]", text) and (all(c in letters for c in text) or
                                                   (known is not None and text not in known)):
        out = list(text)  # "NMC": one letter per dimension, as Timeloop reads it
        _check_known(out, known, source, field)
        return out
    out = _names(raw, source, field)
    _check_known([d for d in out], known, source, field)
    return out


def _check_known(names: list[str], known: frozenset[str] | None, source: str, field: str) -> None:
    """``known``: the dimensions of the Timeloop problem (None: the workload is not a Timeloop problem, whose
    dimension names a Timeloop constraint may not use). Timeloop refuses a constraint naming another."""
    if known is None:
        return
    unknown = [d for d in names if d not in known]
    if unknown:
        raise bad(source, field, f"dimensions of the problem ({', '.join(sorted(known))})", unknown[0])


def _known_factors(raw: Any, known: frozenset[str] | None, source: str, field: str) -> list[tuple[str, str, int]]:
    out = _factors(raw, source, field)
    _check_known([d for d, _, _ in out], known, source, field)
    return out


def spatial_bounds(t: dict, axes: tuple[str, ...], w: Workload, source: str, field: str,
                   notes: list[str], known: frozenset[str] | None = None) -> dict[str, list[SplitBound]]:
    """The split bounds per mesh axis (``"X"``, ``"Y"``: those with a fanout above 1) of a spatial constraint
    on a ``!Container``.

    Exact parts: ``permutation`` naming every dimension of extent above 1
    with ``split`` puts the first ``split`` dimensions on X and the rest on
    Y, so a dimension may not be split on the other axis (bound 1 there,
    also when that axis has no fanout); a factor ``d=1`` forbids splitting
    ``d`` here; ``d=v``, ``d<=v``, ``d>=v`` bound ``d``'s parts on its axis
    (the container's one axis, or the one ``split`` gives it). Left out with
    a note: a factor ``d=0`` (Timeloop's "the rest"), a factor whose axis is
    not known, other keys.
    """
    out: dict[str, list[SplitBound]] = {a: [] for a in axes}
    dims = w.dims
    perm = _permutation(t.get("permutation"), dims, source, f"{field}.permutation", known)
    factors = _known_factors(t.get("factors"), known, source, f"{field}.factors")
    if not axes:
        return out
    moving = [d for d in dims if w.extent[d] > 1]
    split = t.get("split")
    if split is not None and (isinstance(split, bool) or not isinstance(split, int) or split < 0):
        raise bad(source, f"{field}.split", "int >= 0", split)
    on: dict[str, str] = {}
    if perm and split is not None and set(moving) <= set(perm):
        on = {d: ("X" if k < split else "Y") for k, d in enumerate(perm) if d in dims}
        for a in axes:
            others = tuple(d for d in dims if d in on and on[d] != a)
            if others:
                out[a].append(SplitBound(others, "==", 1))
    elif perm or split is not None:
        notes.append(f"{source}: {field}: a spatial permutation/split that does not name every dimension: left out")
    dropped = []
    for d, op, v in factors:
        if d not in dims:
            continue
        if op == "=" and v == 1:
            for a in axes:
                out[a].append(SplitBound((d,), "==", 1))
            continue
        if v == 0 or (d not in on and len(axes) > 1):
            dropped.append(f"{d}{op}{v}")
            continue
        # d's axis; where the split puts it on an axis without fanout, the split rule holds its bound at 1 on
        # the container's other axis, so the comparison there is the one for a bound of 1.
        axis = on.get(d) if on.get(d) in out else axes[0]
        out[axis].append(SplitBound((d,), "==" if op == "=" else op, v))
    if dropped:
        notes.append(f"{source}: {field}.factors: {' '.join(dropped)}: a spatial factor of 0 (the rest) or on an "
                     f"axis the constraint does not fix: left out")
    for key in set(t) - {"target", "type", "factors", "permutation", "split"}:
        notes.append(f"{source}: {field}.{key}: left out")
    return out


def apply_targets(targets: list[tuple[dict, str, str]], storages: list[str], w: Workload,
                  notes: list[str], containers: Mapping[str, tuple[str, ...]] | None = None,
                  known: frozenset[str] | None = None) -> tuple[dict[str, tuple], Any, dict[tuple[str, str], list[SplitBound]]]:
    """``({storage: (keep set, bypass set)}, Constraints or None, {(container, axis): split bounds})``; what is
    left out goes to ``notes``. ``targets``: ``(target dict, field, the file that says it)``; ``containers``: per
    ``!Container`` name, its mesh axes with a fanout above 1."""
    from mapsearch.spec.constraints import Constraints, TileLimit

    tensors = set(w.tensor_names)
    dims = w.dims
    keep: dict[str, tuple[frozenset, frozenset]] = {}
    orders, tiles = [], []
    # ``storages`` ends with the operand level under the compute: the innermost storage's child.
    children = {s: storages[i + 1] for i, s in enumerate(storages[:-1])}
    innermost = storages[-2]
    storages = storages[:-1]
    containers = containers or {}
    bounds: dict[tuple[str, str], list[SplitBound]] = {}
    for t, field, source in targets:
        if not isinstance(t, dict):
            raise bad(source, field, "a mapping with target and type", t)
        target, kind = t.get("target"), t.get("type")
        if kind == "spatial" and target in containers:
            for axis, rules in spatial_bounds(t, containers[target], w, source, field, notes, known).items():
                bounds.setdefault((target, axis), []).extend(rules)
            continue
        if kind in ("spatial", "utilization", "parallel"):
            _permutation(t.get("permutation"), dims, source, f"{field}.permutation", known)
            _known_factors(t.get("factors"), known, source, f"{field}.factors")
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
            perm = _permutation(t.get("permutation"), dims, source, f"{field}.permutation", known)
            wanted = [d for d in dims if dict(w.extents)[d] > 1]
            if perm and set(wanted) <= set(perm):
                orders.append((child, tuple(d for d in reversed(perm) if d in dims)))
            elif perm:
                notes.append(f"{source}: {field}.permutation: {''.join(perm)} names some dimensions only; "
                             f"mapsearch's orders cannot say 'these innermost': left out")
            dropped = []
            for d, op, v in _known_factors(t.get("factors"), known, source, f"{field}.factors"):
                if d not in dims or (v == 1 and dict(w.extents)[d] == 1):
                    continue  # a dimension this problem does not have, or one of extent 1
                if op == "=" and target == innermost:
                    tiles.append(TileLimit(target, d, v, v))
                else:
                    dropped.append(f"{d}{op}{v}")
            if dropped:
                notes.append(f"{source}: {field}.factors: {' '.join(dropped)} bound loops of {target} above the "
                             f"innermost storage; mapsearch fixes tile extents, not factors: left out")
            for key in sorted(set(t) - {"target", "type", "factors", "permutation"}, key=str):
                if t[key] not in (None, [], {}, ""):  # factors_only, no_reuse, ...: restrictions of the mapper's
                    notes.append(f"{source}: {field}.{key}: a restriction of Timeloop's mapper: left out")
        else:
            raise bad(source, f"{field}.type", "temporal, spatial, dataspace or bypass", kind)
    constraints = Constraints("timeloop constraints", tuple(tiles), tuple(orders)) if tiles or orders else None
    return keep, constraints, bounds
