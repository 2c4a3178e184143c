"""The CP-SAT model of a fused group of einsums (docs/fusion.md).

Each einsum is a *stage*: a one-einsum encoding (``build_stage``) on the
same CP-SAT model, whose non-shared dimensions are whole at levels ``<= f``
and whose buffers below ``f`` are emptied between sub-nest runs (the traffic
family then counts reuse only from the sub-nest's own loops). The group
ties the stages together:

    T_j^s[d] == T_j^0[d]                     shared d, j <= f   (one outer nest)
    before_j^s[d, e] == before_j^0[d, e]     shared d, e, j <= f
    occupancy_i = sum_s occupancy_i^s <= C_i              i <= f (all buffers at once)
    occupancy_i^s <= C_i for every stage s                i >  f (sub-nests take turns)
    words on a link = sum over stages;  compute time = sum over stages
    time = max(compute time, max link time)

An intermediate is homed at ``f`` as a buffer of its level-``f`` tile,
counted once (in its producer).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ortools.sat.python import cp_model

from mapsearch.model.build import build_stage
from mapsearch.model.capacity import add_capacity
from mapsearch.model.decode import link_figures, value
from mapsearch.model.encoding import Encoding, Q
from mapsearch.model.order import decode_order
from mapsearch.model.problem import Problem, UnsupportedProblem
from mapsearch.schedule.figures import Figures
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.fused_json import chain_fusion_violations
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.spec.constraints import Constraints
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import WorkloadGraph


@dataclass
class FusedEncoding:
    model: cp_model.CpModel
    graph: WorkloadGraph
    architecture: Architecture
    fusion_level: int
    stages: list[Encoding]
    scale: int
    link_down: dict[tuple[str, int], Q] = field(default_factory=dict)  # (tensor, child level), summed over stages
    link_up: dict[tuple[str, int], Q] = field(default_factory=dict)
    link_time: dict[int, Q] = field(default_factory=dict)
    occupancy: dict[int, Q] = field(default_factory=dict)
    compute_time: Q | None = None
    calls: Q | None = None
    time: Q | None = None
    words_total: Q | None = None
    guards: dict = field(default_factory=dict)


def stage_problems(graph: WorkloadGraph, arch: Architecture, homes: dict[str, str], f: int) -> list[Problem]:
    if any(lv.mesh or lv.instances > 1 for lv in arch.levels):
        raise UnsupportedProblem("fused chains on meshed architectures are not supported by the solver yet")
    if not 1 <= f < arch.depth:
        raise UnsupportedProblem(f"fusion level must be below the top and exist: 1..{arch.depth - 1}, got {f}")
    inter = set(graph.intermediates)
    _check_fusable(graph)
    counted: set[str] = set()
    out = []
    tileable = outer_dims(graph)
    for i in range(len(graph.einsums)):
        w = graph.stage(i)
        names = w.tensor_names
        stage_homes = {t: h for t, h in homes.items() if t in names and t not in inter}
        stage_homes.update({t: arch.levels[f].name for t in names if t in inter})
        mine = frozenset(t for t in names if t not in counted)
        counted |= set(names)
        out.append(Problem(w, arch, tuple(stage_homes.items()), f, tileable,
                           tuple(t for t in names if t in inter), mine))
    return out


def _check_fusable(graph: WorkloadGraph) -> None:
    """The chain rules of the fused replay (schedule/fused_json.py, ``chain_fusion_violations``), so the solver
    never offers a fused schedule the replay refuses: a group that breaks one runs unfused, or cut where its
    intermediates are materialized."""
    for _, why in chain_fusion_violations(graph)[:1]:
        raise UnsupportedProblem(why)


def outer_dims(graph: WorkloadGraph) -> tuple[str, ...]:
    """Dimensions the outer nest may tile: shared by every einsum, and not summed over by a
    producer of an intermediate (else an intermediate tile would be produced in pieces)."""
    inter = set(graph.intermediates)
    summed = {d for e in graph.einsums if e.output.name in inter for d in e.dims if d not in e.output.dims}
    return tuple(d for d in graph.shared_dims if d not in summed)


def build_fused(graph: WorkloadGraph, arch: Architecture, homes: dict[str, str], f: int) -> FusedEncoding:
    model = cp_model.CpModel()
    stages = [build_stage(p, Constraints(), model) for p in stage_problems(graph, arch, homes, f)]
    fe = FusedEncoding(model, graph, arch, f, stages, stages[0].scale)
    _tie_outer_nest(fe)
    _add_capacity(fe)
    _add_links(fe)
    _add_time(fe)
    return fe


def _tie_outer_nest(fe: FusedEncoding) -> None:
    """One outer nest: equal tile extents and orders of the shared dimensions at levels 1..f."""
    first = fe.stages[0]
    shared = outer_dims(fe.graph)
    for enc in fe.stages[1:]:
        for d in shared:
            for j in range(1, fe.fusion_level + 1):
                a, b = first.tile[(d, j)], enc.tile[(d, j)]
                if not (a.is_const and b.is_const):
                    fe.model.add(a.expr == b.expr)
                elif int(a.expr) != int(b.expr):
                    fe.model.add_bool_or([False])
        for j in range(1, fe.fusion_level + 1):
            for d in shared:
                for e in shared:
                    if d < e:
                        a, b = first.before[(j, d, e)], enc.before[(j, d, e)]
                        if isinstance(a, bool) or isinstance(b, bool):
                            continue  # a dim that never advances here: its place changes nothing
                        fe.model.add_implication(a, b)
                        fe.model.add_implication(b, a)


def _add_capacity(fe: FusedEncoding) -> None:
    f = fe.fusion_level
    for n, enc in enumerate(fe.stages):
        add_capacity(enc, constrain_up_to=f)  # each stage alone below f
        fe.guards.update({f"{name} (einsum {n}: {enc.problem.workload.einsum.text()})": g
                          for name, g in enc.guards.items()})
    for i in range(0, f + 1):
        occ = fe.stages[0].total([enc.occupancy[i] for enc in fe.stages])
        fe.occupancy[i] = occ
        cap = fe.architecture.levels[i].capacity
        if cap is not None:
            guard = fe.model.new_bool_var(f"capacity_{fe.architecture.levels[i].name}")
            if occ.is_const:
                if int(occ.expr) > cap:
                    fe.model.add_bool_or([~guard])
            else:
                fe.model.add(occ.expr <= cap).only_enforce_if(guard)
            fe.guards[f"capacity of {fe.architecture.levels[i].name}"] = guard
    for i in range(f + 1, fe.architecture.depth):
        occ = [enc.occupancy[i] for enc in fe.stages]
        hi = max(q.hi for q in occ)
        lo = max(q.lo for q in occ)
        v = fe.model.new_int_var(lo, hi, f"occupancy_L{i}")
        fe.model.add_max_equality(v, [q.expr for q in occ])
        fe.occupancy[i] = Q(v, lo, hi)


def _add_links(fe: FusedEncoding) -> None:
    arch = fe.architecture
    total = fe.stages[0].total
    for a in range(1, arch.depth):
        tensors = sorted({t for enc in fe.stages for t in enc.problem.workload.tensor_names})
        for t in tensors:
            fe.link_down[(t, a)] = total([enc.link_tensor_down[(t, a)] for enc in fe.stages
                                          if t in enc.problem.workload.tensor_names])
            fe.link_up[(t, a)] = total([enc.link_tensor_up[(t, a)] for enc in fe.stages
                                        if t in enc.problem.workload.tensor_names])
        down = total([fe.link_down[(t, a)] for t in tensors])
        up = total([fe.link_up[(t, a)] for t in tensors])
        link = arch.levels[a].link
        icpw, ocpw = int(link.input_clocks_per_word * fe.scale), int(link.output_clocks_per_word * fe.scale)
        first = fe.stages[0]
        if link.lines == "shared":
            fe.link_time[a] = first.scaled(total([down, up]), icpw)
        else:
            d, u = first.scaled(down, icpw), first.scaled(up, ocpw)
            v = fe.model.new_int_var(max(d.lo, u.lo), max(d.hi, u.hi), f"link_time_L{a}")
            fe.model.add_max_equality(v, [d.expr, u.expr])
            fe.link_time[a] = Q(v, max(d.lo, u.lo), max(d.hi, u.hi))


def _add_time(fe: FusedEncoding) -> None:
    first = fe.stages[0]
    fe.compute_time = first.total([enc.compute_time for enc in fe.stages])
    fe.calls = first.total([enc.calls for enc in fe.stages])
    parts = [fe.compute_time] + list(fe.link_time.values())
    lo, hi = max(q.lo for q in parts), max(q.hi for q in parts)
    t = fe.model.new_int_var(lo, hi, "time")
    fe.model.add_max_equality(t, [q.expr for q in parts])
    fe.time = Q(t, lo, hi)
    fe.words_total = first.total(list(fe.link_down.values()) + list(fe.link_up.values()))


def decode_fused(fe: FusedEncoding, solver: cp_model.CpSolver) -> FusedSchedule:
    arch, f = fe.architecture, fe.fusion_level
    first = fe.stages[0]
    shared = outer_dims(fe.graph)
    values0 = _before_values(first, solver)
    stages = []
    for enc in fe.stages:
        w = enc.problem.workload
        values = _before_values(enc, solver)
        own = [d for d in w.dims if d not in shared]
        levels = [LevelMapping(arch.levels[0].name, w.extents)]
        for j in range(1, arch.depth):
            tile = tuple((d, value(solver, enc.tile[(d, j)])) for d in w.dims)
            keep = frozenset(t for t in w.tensor_names if value(solver, enc.kept[(t, j)]))
            if j <= f:  # the shared outer nest: stage 0's order of the shared dims, then this stage's whole dims
                order = tuple(d for d in decode_order(values0, j, first.problem.workload.dims) if d in shared) + tuple(own)
            else:
                order = decode_order(values, j, w.dims)
            levels.append(LevelMapping(arch.levels[j].name, tile, order, keep))
        homes = tuple((t, arch.levels[enc.problem.home(t)].name) for t in w.tensor_names)
        stages.append(Schedule(w, arch, tuple(levels), homes, None))
    return FusedSchedule(fe.graph, arch, f, tuple(stages), fused_figures(fe, solver))


def _before_values(enc: Encoding, solver: cp_model.CpSolver) -> dict:
    return {k: (v if isinstance(v, bool) else bool(solver.boolean_value(v))) for k, v in enc.before.items()}


def fused_figures(fe: FusedEncoding, solver: cp_model.CpSolver) -> Figures:
    arch = fe.architecture
    tensors = sorted({t for enc in fe.stages for t in enc.problem.workload.tensor_names},
                     key=lambda t: _tensor_rank(fe.graph, t))
    return Figures(
        links=link_figures(arch, tensors, fe.link_down, fe.link_up, fe.link_time, fe.scale, solver),
        op_calls=value(solver, fe.calls),
        compute_time=Fraction(value(solver, fe.compute_time), fe.scale),
        macs=fe.graph.macs,
        block_macs=arch.compute.block_macs,
        occupancy=tuple((lv.name, value(solver, fe.occupancy[i])) for i, lv in enumerate(arch.levels)),
    )


def _tensor_rank(graph: WorkloadGraph, tensor: str) -> int:
    for i, e in enumerate(graph.einsums):
        for t in e.tensors:
            if t.name == tensor:
                return i
    return len(graph.einsums)
