"""User mapping constraints: fixed or limited tile extents, loop orders, keep/bypass, stationarity.

YAML (all sections optional; levels by name, or ``innermost`` / ``outermost``)::

    name: weight-stationary
    tiles:                      # tile extent per level and dim: an int fixes it
      innermost: {k: 1, m: {max: 16}, n: {min: 2}}
    orders:                     # outer -> inner; dims not listed are free
      innermost: [m, n, k]
    keep:                       # force keep (true) or bypass (false)
      L1: {A: true, B: false}
    stationary:                 # the tensor's tile stays across the level's innermost loop
      - {tensor: weights, level: innermost}
    spatial:                    # bounds on the splits over a level's mesh axes (AccelForge's loop_bounds)
      PE:
        x: [{expression: ~p, operator: ==, value: 1}]     # only p is split along x
        y: [{expression: r, operator: <=, value: 3}]      # r in at most 3 parts along y

Tensor roles usable instead of names: ``output``, ``weights`` (the last
input), ``inputs`` (the first input).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

from mapsearch.errors import SpecError
from mapsearch.spec import limits
from mapsearch.spec.architecture import SPLIT_BOUND_OPERATORS, Architecture, SplitBound
from mapsearch.spec.workload import Workload


@dataclass(frozen=True)
class TileLimit:
    level: str
    dim: str
    lo: int
    hi: int


@dataclass(frozen=True)
class SpatialLimit:
    """A bound on the splits along one mesh axis of a level: ``expression`` (a set of the workload's
    dimensions) ``operator`` ``value``, as :class:`~mapsearch.spec.architecture.SplitBound` once bound."""

    level: str
    axis: str
    expression: str
    operator: str
    value: int


@dataclass(frozen=True)
class Constraints:
    name: str = ""
    tiles: tuple[TileLimit, ...] = ()
    orders: tuple[tuple[str, tuple[str, ...]], ...] = ()
    keep: tuple[tuple[str, str, bool], ...] = ()  # (level, tensor or role, keep?)
    stationary: tuple[tuple[str, str], ...] = ()  # (tensor or role, level)
    spatial: tuple[SpatialLimit, ...] = ()


def resolve_level(level: str, arch: Architecture, source: str, field: str) -> int:
    if level == "innermost":
        return arch.depth - 1
    if level == "outermost":
        return 0
    if level not in arch.level_names:
        raise SpecError(source, field, f"a level of {arch.name} {list(arch.level_names)} or innermost/outermost", level)
    return arch.index(level)


def resolve_tensor(tensor: str, w: Workload, source: str, field: str) -> str:
    roles = {"output": w.einsum.output.name, "weights": w.einsum.inputs[-1].name, "inputs": w.einsum.inputs[0].name}
    if tensor in roles:
        return roles[tensor]
    if tensor not in w.tensor_names:
        raise SpecError(source, field, f"a tensor of {w.name} {list(w.tensor_names)} or a role (output, weights, inputs)", tensor)
    return tensor


def load_constraints(path: str | Path) -> Constraints:
    """Read a constraints file as the specs are read (UTF-8, no key given twice, bounded nesting)."""
    from mapsearch.spec.reading import read_yaml

    data = read_yaml(path)
    return constraints_from_dict({} if data is None else data, str(path))


def _mapping(value: object, source: str, field: str) -> dict:
    if not isinstance(value, dict):
        raise SpecError(source, field, "a mapping", value)
    return value


def _positive_int(value: object, source: str, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(source, field, "int >= 1", limits.describe(value))
    too_big = limits.extent_error(value)
    if too_big is not None:
        raise SpecError(source, field, "", detail=too_big)
    return value


def constraints_from_dict(data: dict, source: str) -> Constraints:
    data = _mapping(data, source, "")
    known = {"name", "description", "tiles", "orders", "keep", "stationary", "spatial"}
    for key in data:
        if key not in known:
            raise SpecError(source, str(key), f"one of {sorted(known)}", key)
    for key in ("name", "description"):  # text: a mapping or a list here is a misplaced section, not a name
        if key in data and not isinstance(data[key], str):
            raise SpecError(source, key, "text", data[key])
    tiles = []
    for level, per_dim in _mapping(data.get("tiles", {}), source, "tiles").items():
        for dim, spec in _mapping(per_dim, source, f"tiles.{level}").items():
            field = f"tiles.{level}.{dim}"
            if isinstance(spec, dict):
                extra = set(spec) - {"min", "max"}
                if extra or not spec:
                    raise SpecError(source, field, "keys min and/or max", sorted(extra, key=str) if extra else spec)
                lo = _positive_int(spec.get("min", 1), source, f"{field}.min")
                hi = _positive_int(spec["max"], source, f"{field}.max") if "max" in spec else limits.MAX_EXTENT
                if lo > hi:
                    raise SpecError(source, field, "min <= max", spec)
            else:
                lo = hi = _positive_int(spec, source, field)
            tiles.append(TileLimit(str(level), str(dim), lo, hi))
    orders = []
    for level, dims in _mapping(data.get("orders", {}), source, "orders").items():
        if not isinstance(dims, list) or not all(isinstance(d, str) for d in dims):
            raise SpecError(source, f"orders.{level}", "a list of dimension names", dims)
        if len(set(dims)) != len(dims):
            raise SpecError(source, f"orders.{level}", "a list of distinct dimension names", dims)
        orders.append((str(level), tuple(dims)))
    keep = []
    for level, per_tensor in _mapping(data.get("keep", {}), source, "keep").items():
        for tensor, flag in _mapping(per_tensor, source, f"keep.{level}").items():
            if not isinstance(flag, bool):
                raise SpecError(source, f"keep.{level}.{tensor}", "true or false", flag)
            keep.append((str(level), str(tensor), flag))
    stationary = []
    items = data.get("stationary", [])
    if not isinstance(items, list):
        raise SpecError(source, "stationary", "a list of {tensor, level}", items)
    for n, item in enumerate(items):
        item = _mapping(item, source, f"stationary[{n}]")
        if set(item) != {"tensor", "level"}:
            raise SpecError(source, f"stationary[{n}]", "keys tensor and level", sorted(item))
        stationary.append((str(item["tensor"]), str(item["level"])))
    spatial = _spatial_limits(data.get("spatial", {}), source)
    # The checks above name each field as users write it; the schema (which docs and editors read) must agree
    # with them, and anything it refuses that they let through is refused here, in one line.
    from mapsearch.spec.schema import validate_against

    validate_against(data, "constraints", source)
    return Constraints(str(data.get("name", "")), tuple(tiles), tuple(orders), tuple(keep), tuple(stationary), spatial)


def _spatial_limits(data: object, source: str) -> tuple[SpatialLimit, ...]:
    """``spatial: {level: {axis: [{expression, operator, value}, ...]}}``."""
    from mapsearch.spec.set_expr import SetExprError, parse_set_expr

    out = []
    for level, per_axis in _mapping(data, source, "spatial").items():
        for axis, items in _mapping(per_axis, source, f"spatial.{level}").items():
            field = f"spatial.{level}.{axis}"
            if not isinstance(items, list):
                raise SpecError(source, field, "a list of {expression, operator, value}", items)
            for n, item in enumerate(items):
                f = f"{field}[{n}]"
                item = _mapping(item, source, f)
                if set(item) != {"expression", "operator", "value"}:
                    raise SpecError(source, f, "keys expression, operator and value", sorted(item))
                expression = item["expression"]
                if isinstance(expression, list) and expression and all(isinstance(d, str) for d in expression):
                    expression = " | ".join(expression)
                if not isinstance(expression, str):
                    raise SpecError(source, f"{f}.expression", "a set of dimensions (names, ~, |, &, -, All)", expression)
                try:
                    parse_set_expr(expression)
                except SetExprError as e:
                    raise SpecError(source, f"{f}.expression", "a set of dimensions (names, ~, |, &, -, All)",
                                    f"{expression} ({e.reason})") from None
                if item["operator"] not in SPLIT_BOUND_OPERATORS:
                    raise SpecError(source, f"{f}.operator", "one of " + ", ".join(SPLIT_BOUND_OPERATORS), item["operator"])
                value = item["value"]
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise SpecError(source, f"{f}.value", "int >= 0", limits.describe(value))
                out.append(SpatialLimit(str(level), str(axis), expression, item["operator"], value))
    return tuple(out)


def spatial_bound(limit: SpatialLimit, w: Workload, source: str = "constraints") -> SplitBound:
    """``limit`` bound to ``w``'s dimensions; a name that is not one of them is a SpecError."""
    from mapsearch.spec.set_expr import SetExprError, evaluate_dims, parse_set_expr

    field = f"spatial.{limit.level}.{limit.axis}"
    try:
        names = evaluate_dims(parse_set_expr(limit.expression), w.dims, limit.expression)
    except SetExprError as e:
        raise SpecError(source, field, f"a set of the dimensions of {w.name} {list(w.dims)}",
                        f"{limit.expression} ({e.reason})") from None
    return SplitBound(tuple(d for d in w.dims if d in names), limit.operator, limit.value)


def with_spatial_limits(arch: Architecture, c: Constraints, w: Workload, source: str = "constraints") -> Architecture:
    """``arch`` with the constraints' spatial limits added to its mesh axes' split bounds (the solver, its
    infeasibility checks and the brute forces read them there)."""
    if not c.spatial:
        return arch
    extra: dict[tuple[int, str], list[SplitBound]] = {}
    for limit in c.spatial:
        i = resolve_level(limit.level, arch, source, f"spatial.{limit.level}")
        extra.setdefault((i, limit.axis), []).append(spatial_bound(limit, w, source))
    levels = list(arch.levels)
    for (i, axis), bounds in extra.items():
        names = [a.name for a in levels[i].mesh]
        if axis not in names:
            raise SpecError(source, f"spatial.{levels[i].name}.{axis}",
                            f"a mesh axis of {levels[i].name} {names}" if names else
                            f"a level with mesh axes ({levels[i].name} has none)", axis)
        mesh = tuple(replace(a, split_bounds=a.split_bounds + tuple(bounds)) if a.name == axis else a
                     for a in levels[i].mesh)
        levels[i] = replace(levels[i], mesh=mesh)
    return replace(arch, levels=tuple(levels))


def check_constraints(c: Constraints, w: Workload, arch: Architecture, source: str = "constraints",
                      homes: Mapping[str, str] | None = None) -> None:
    """Names in the constraints must exist in this workload and architecture; keep/bypass must be decisions.

    ``homes`` (tensor -> level name; a tensor not named lives at the top
    level) lets :func:`check_keep` also refuse rules that contradict a home;
    without it only what holds for any homes is checked.
    """
    for t in c.tiles:
        resolve_level(t.level, arch, source, f"tiles.{t.level}")
        if t.dim not in w.dims:
            raise SpecError(source, f"tiles.{t.level}.{t.dim}", f"a dimension of {w.name} {list(w.dims)}", t.dim)
    for level, dims in c.orders:
        if resolve_level(level, arch, source, f"orders.{level}") == 0 and dims:
            raise SpecError(source, f"orders.{level}", "", detail=f"{arch.levels[0].name} is the top level, which has "
                            "no loops (its tile is the whole workload); give the order of a level below it")
        for d in dims:
            if d not in w.dims:
                raise SpecError(source, f"orders.{level}", f"dimensions of {w.name} {list(w.dims)}", d)
    for level, tensor, _ in c.keep:
        resolve_level(level, arch, source, f"keep.{level}")
        resolve_tensor(tensor, w, source, f"keep.{level}.{tensor}")
    check_keep(c, w, arch, source, homes)
    for n, (tensor, level) in enumerate(c.stationary):
        if resolve_level(level, arch, source, f"stationary[{n}].level") == 0:  # it would be dropped silently
            raise SpecError(source, f"stationary[{n}].level", "", detail=f"{arch.levels[0].name} is the top level, "
                            "which has no loops (its tile is the whole workload); give a level below it")
        resolve_tensor(tensor, w, source, f"stationary[{n}].tensor")
    with_spatial_limits(arch, c, w, source)


def check_keep(c: Constraints, w: Workload, arch: Architecture, source: str = "constraints",
               homes: Mapping[str, str] | None = None) -> None:
    """Refuse keep/bypass rules the solver cannot honour (it would drop them silently).

    - one tensor (by name or by role) both kept and bypassed at one level;
    - a bypass at the innermost level: every tensor is kept next to compute;
    - with ``homes``: a bypass at the tensor's home (it lives there), a keep
      above its home (nothing is kept above the home).
    """
    seen: dict[tuple[int, str], tuple[str, bool]] = {}
    innermost = arch.depth - 1
    top = arch.levels[0].name
    for level, tensor, flag in c.keep:
        i = resolve_level(level, arch, source, f"keep.{level}")
        t = resolve_tensor(tensor, w, source, f"keep.{level}.{tensor}")
        field = f"keep.{level}.{tensor}"
        name = arch.levels[i].name
        said = f"{tensor}: {str(flag).lower()}"
        if (i, t) in seen and seen[(i, t)][1] != flag:
            other, other_flag = seen[(i, t)]
            raise SpecError(source, field, "", detail=f"{t} is both kept and bypassed at {name} "
                            f"({other}: {str(other_flag).lower()}, {said}); give one")
        seen[(i, t)] = (tensor, flag)
        home = arch.index(homes.get(t, top)) if homes is not None and homes.get(t, top) in arch.level_names else None
        if not flag and i == innermost:
            raise SpecError(source, field, "", detail=f"cannot bypass {t} at {name}, the innermost level: every "
                            "tensor is kept next to compute")
        if home is None:
            continue
        if not flag and i == home:
            raise SpecError(source, field, "", detail=f"cannot bypass {t} at {name}: it is {t}'s home")
        if flag and i < home:
            raise SpecError(source, field, "", detail=f"cannot keep {t} at {name}: it is above {t}'s home "
                            f"{arch.levels[home].name}")
