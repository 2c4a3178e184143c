"""Turn a CP-SAT solution back into a schedule with the model's predicted figures."""

from __future__ import annotations

import math
from fractions import Fraction

from ortools.sat.python import cp_model

from mapsearch.model.encoding import Encoding, Q
from mapsearch.model.order import decode_order
from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.schedule.schedule import DramPlan, LevelMapping, Schedule, SpatialSplit


def value(solver: cp_model.CpSolver, q: Q | object) -> int:
    if isinstance(q, Q):
        return int(q.expr) if q.is_const else int(solver.value(q.expr))
    if isinstance(q, bool):
        return int(q)
    return int(solver.value(q))


def decode(enc: Encoding, solver: cp_model.CpSolver) -> Schedule:
    p = enc.problem
    w, arch = p.workload, p.architecture
    dims = w.dims
    J = p.depth
    before = {k: bool(solver.boolean_value(v)) if not isinstance(v, bool) else v for k, v in enc.before.items()}
    levels = [LevelMapping(arch.levels[0].name, w.extents)]
    orders = {j: decode_order(before, j, dims) for j in range(1, J + 1)}
    positions = buffer_positions(enc, solver, orders)
    for j in range(1, J + 1):
        tile = tuple((d, value(solver, enc.tile[(d, j)])) for d in dims)
        keep = frozenset(t for t in w.tensor_names if value(solver, enc.kept[(t, j)]))
        spatial = spatial_splits(enc, solver, enc.spatial_levels.index(j)) if j in enc.spatial_levels else ()
        placed = tuple((t, pos) for (t, i), pos in sorted(positions.items()) if i == j and pos != j * len(dims))
        levels.append(LevelMapping(arch.levels[j].name, tile, orders[j], keep, spatial, placed))
    homes = tuple((t, arch.levels[p.home(t)].name) for t in w.tensor_names)
    return Schedule(w, arch, tuple(levels), homes, predicted_figures(enc, solver), dram_plan(enc, solver))


def buffer_positions(enc: Encoding, solver: cp_model.CpSolver, orders: dict[int, tuple[str, ...]]) -> dict[tuple[str, int], int]:
    """``(tensor, level) -> nest position`` of every kept buffer whose position the model searched."""
    from mapsearch.model.placement import decode_positions

    out = {}
    for t in enc.problem.workload.tensor_names:
        cuts = {i: next(c for c, lit in lits.items() if _holds(solver, lit))
                for (x, i), lits in enc.at.items() if x == t and _holds(solver, enc.kept[(t, i)])}
        if cuts:
            out.update({(t, i): pos for i, pos in decode_positions(enc, t, cuts, orders).items()})
    return out


def dram_plan(enc: Encoding, solver: cp_model.CpSolver) -> DramPlan | None:
    """The chosen layout and predicted row openings per DRAM tensor (model/dram_rows.py), if modelled."""
    rows = enc.rows
    if rows is None:
        return None
    layouts = []
    for t, cands in rows.candidates.items():
        chosen = [c for c, lit in zip(cands, rows.chosen[t]) if _holds(solver, lit)]
        layouts.append((t, chosen[0].spec))
    return DramPlan(tuple(layouts), "layout", tuple((t, value(solver, q)) for t, q in rows.openings.items()))


def spatial_splits(enc: Encoding, solver: cp_model.CpSolver, lv: int) -> tuple[SpatialSplit, ...]:
    """The dimensions split at meshed level number ``lv``, with their part extent and mesh axis, in dimension order."""
    mesh = enc.problem.architecture.levels[enc.spatial_levels[lv]].mesh
    out = []
    for (d, at), factor in enc.factor.items():
        if at == lv and value(solver, factor) > 1:
            row = value(solver, enc.choice[d]) if not isinstance(enc.choice[d], int) else 0
            axis = next(a for a in range(len(mesh)) if _holds(solver, enc.on_axis[(d, lv, a)]))
            out.append(SpatialSplit(d, int(enc.chains[d].parts[row, lv]), mesh[axis].name))
    return tuple(out)


def _holds(solver: cp_model.CpSolver, lit) -> bool:
    return lit if isinstance(lit, bool) else bool(solver.boolean_value(lit))


def link_figures(arch, tensors, down, up, link_time, scale: int, solver: cp_model.CpSolver) -> tuple[LinkFigures, ...]:
    """Per link into level ``a``: each tensor's words (``down[(t, a)]``, ``up[(t, a)]``) and the scaled time."""
    links = []
    for a in range(1, arch.depth):
        per = tuple(TensorTraffic(t, value(solver, down[(t, a)]), value(solver, up[(t, a)])) for t in tensors)
        links.append(LinkFigures(arch.link_name(a), sum(x.words_down for x in per), sum(x.words_up for x in per),
                                 Fraction(value(solver, link_time[a]), scale), per))
    return tuple(links)


def predicted_figures(enc: Encoding, solver: cp_model.CpSolver) -> Figures:
    p = enc.problem
    w, arch = p.workload, p.architecture
    return Figures(
        links=link_figures(arch, w.tensor_names, enc.link_tensor_down, enc.link_tensor_up, enc.link_time,
                           enc.scale, solver),
        op_calls=value(solver, enc.calls),
        compute_time=Fraction(value(solver, enc.compute_time), enc.scale),
        macs=w.macs,
        block_macs=arch.compute.block_macs,
        occupancy=tuple((lv.name, value(solver, enc.occupancy[i])) for i, lv in enumerate(arch.levels)),
        compute_instances=math.prod(lv.instances for lv in arch.levels),
        busiest_calls=value(solver, enc.busiest_calls),
    )
