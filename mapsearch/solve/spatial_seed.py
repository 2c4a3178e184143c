"""A first schedule on a large array: the coarse model with its mesh axes' factors fixed to a good assignment.

On a 128x128 array CP-SAT's search of the time phase starts from schedules
that leave the array idle and improves them in large, irregular steps, so
where a short limit cuts it is luck: ResNet-50's 3x3 layer at 28x28 on the
``tpu`` profile ended its coarse search at 6,422,528, 22,176 or 2,352 clocks
in runs of 10 s (floor 1,764). Even minimising the compute time alone, the
search found nothing better than 6.4 M in 3 s. What the search misses is
*which dimension goes on which axis*: with ``k`` on ``x``, ``c`` on ``y``
and ``p`` over the four cores fixed, the same model finds and proves 2,242
clocks in 1.4 s of search.

So where the time phase's coarse search starts on a path of at least
:data:`SEED_INSTANCES` instances and no warm start is known
(solve/coarse.py), the model is first searched with the spatial factors
fixed to each of a few assignments in turn (:func:`assignments`): the one
whose busiest instance makes the fewest op calls (ties towards splits the
axes may share: multicast, in-network reduction), the one with the most
such shared splits within :data:`CALLS_SLACK` times those calls (a
link-bound layer's), and the next fewest calls. Everything else (tiles,
orders, keeps, parts) is searched. The best schedule hints the search that
follows; it is a schedule of the family (the fixed factors only remove
chain rows), so it changes no optimum, bound or status, and a seeded
search that finds nothing (the fixed factors break a ``must_reuse`` or a
split bound, or the time runs out) is dropped.

The assignments come from a beam search over the mesh axes, those of the
level with the most instances first: per axis up to
:data:`DIMS_PER_AXIS` dimensions in every order, each split by the largest
factor that the room left on the axis allows, that its chains have and that
splits its remaining extent into exactly that many parts. The calls of an
assignment are ``prod_d ceil(part_d / b_d)`` with ``part_d`` the largest
part left after every level's split (outermost first), which is what the
busiest instance computes when every split divides.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

import mapsearch.budget as budget
from mapsearch.model.encoding import Encoding
from mapsearch.model.options import SolveOptions
from mapsearch.model.spatial import axes, split_dims
from mapsearch.solve.phases import new_solver
from mapsearch.solve.progress import search

log = logging.getLogger(__name__)

# The fewest instances on the path (the product over its meshed levels) for which a search is seeded:
# small meshes are searched well without it, and each seeded search costs a presolve of the model.
SEED_INSTANCES = 64
# Partial assignments kept per mesh axis, and at most this many dimensions per axis.
BEAM = 16
DIMS_PER_AXIS = 3
# The assignment with the most shared splits is taken among those with at most this multiple of the fewest calls.
CALLS_SLACK = 2
# How many assignments the seeded searches try.
SEEDS = 3


@dataclass(frozen=True)
class Split:
    """One dimension split over one mesh axis: ``factor`` parts at meshed level number ``lv``, axis ``axis``."""

    dim: str
    lv: int
    axis: int
    factor: int


def applies(enc: Encoding) -> bool:
    """The path's meshed levels have at least :data:`SEED_INSTANCES` instances together."""
    levels = enc.problem.architecture.levels
    return bool(enc.spatial_levels) and math.prod(levels[s].instances for s in enc.spatial_levels) >= SEED_INSTANCES


def assignments(enc: Encoding) -> list[tuple[Split, ...]]:
    """The assignments to seed from, best first (see the module's docstring): the fewest calls (ties: the
    most shared splits), the most shared splits within :data:`CALLS_SLACK` times those calls, and the
    second fewest calls; each once, none that splits nothing."""
    by_calls = _beam(enc, lambda calls, shared: (calls, -shared))
    least = _calls(enc, by_calls[0]) if by_calls else 0
    by_sharing = _beam(enc, lambda calls, shared: (calls > CALLS_SLACK * least, -shared, calls))
    out: list[tuple[Split, ...]] = []
    for splits in by_calls[:1] + by_sharing[:1] + by_calls[1:]:
        if splits and _key(splits) not in {_key(x) for x in out}:
            out.append(splits)
    levels = enc.problem.architecture.levels
    for splits in out[:SEEDS]:
        log.debug("seed assignment (calls floor %d, %d shared): %s", _calls(enc, splits), _shared(enc, splits),
                  ", ".join(f"{s.dim}/{s.factor} on {axes(enc, s.lv)[s.axis].name} of "
                            f"{levels[enc.spatial_levels[s.lv]].name}" for s in splits))
    return out[:SEEDS]


def _key(splits: tuple[Split, ...]) -> tuple:
    return tuple(sorted((s.dim, s.lv, s.axis, s.factor) for s in splits))


def _beam(enc: Encoding, rank) -> list[tuple[Split, ...]]:
    """A beam search over the mesh axes (those of the level with the most instances first), keeping the
    :data:`BEAM` best partial assignments by ``rank(calls, shared)``; the final ones, best first."""
    levels = enc.problem.architecture.levels
    order = sorted(range(len(enc.spatial_levels)), key=lambda lv: -levels[enc.spatial_levels[lv]].instances)
    beam: list[tuple[Split, ...]] = [()]
    for lv in order:
        for a, axis in enumerate(axes(enc, lv)):
            candidates = {}
            for splits in beam:
                for chosen in _axis_choices(enc, lv, a, axis.size, splits):
                    candidates[_key(chosen)] = chosen
            beam = sorted(candidates.values(), key=lambda c: (rank(_calls(enc, c), _shared(enc, c)), len(c)))[:BEAM]
    return beam


def _remaining(enc: Encoding, splits: tuple[Split, ...], d: str) -> int:
    """The largest part of ``d`` after ``splits``, the outermost meshed level first."""
    part = enc.problem.workload.extent[d]
    for s in sorted((s for s in splits if s.dim == d), key=lambda s: s.lv):
        part = -(-part // s.factor)
    return part


def _calls(enc: Encoding, splits: tuple[Split, ...]) -> int:
    """The busiest instance's op calls when every split divides: ``prod_d ceil(part_d / b_d)``."""
    compute = enc.problem.architecture.compute
    return math.prod(-(-_remaining(enc, splits, d) // compute.block_extent(d)) for d in enc.problem.workload.dims)


def _shared(enc: Encoding, splits: tuple[Split, ...]) -> int:
    """How many (split, tensor) pairs share a crossing: the tensor is not indexed by the split dimension and the
    axis may reuse it (multicast of an input, in-network reduction of an output)."""
    w = enc.problem.workload
    return sum(1 for s in splits for t in w.tensor_names
               if s.dim not in w.tensor(t).dims and axes(enc, s.lv)[s.axis].reuses(t, w.is_output(t)))


def _axis_choices(enc: Encoding, lv: int, a: int, size: int, splits: tuple[Split, ...]):
    """``splits`` plus up to :data:`DIMS_PER_AXIS` dimensions on axis ``a`` of meshed level ``lv`` (not split on
    another axis of that level), in every order, each split as far as the room the ones before it left allows."""
    dims = [d for d in split_dims(enc, lv) if all(s.dim != d or s.lv != lv for s in splits)]
    for n in range(DIMS_PER_AXIS + 1):
        for choice in itertools.permutations(dims, n):
            out = list(splits)
            room = size
            for d in choice:
                factor = _largest_factor(enc, d, lv, _remaining(enc, tuple(out), d), room)
                if factor < 2:
                    break
                out.append(Split(d, lv, a, factor))
                room //= factor
            else:
                yield tuple(out)


def _largest_factor(enc: Encoding, d: str, lv: int, extent: int, room: int) -> int:
    """The largest factor at most ``room`` that splits a whole ``extent`` of ``d`` into that many parts
    (``ceil(E / ceil(E / m)) = m``) and that ``d``'s chains have at meshed level number ``lv`` (1: none)."""
    key = ("seed_factors", d, lv)
    if key not in enc.cache:
        enc.cache[key] = sorted(set(int(f) for f in enc.chains[d].factors[:, lv]), reverse=True)
    return next((m for m in enc.cache[key] if m <= room and m <= extent and -(-extent // -(-extent // m)) == m), 1)


def seeded_solution(enc: Encoding, model: cp_model.CpModel, options: SolveOptions, time_left: float,
                    floor: int | None = None):
    """``(objective value, solver)`` of the best schedule of ``model`` (the coarse model, its objective set)
    found with the factors of each of the first :data:`SEEDS` assignments (:func:`assignments`) fixed in turn,
    in ``time_left``; None when they find nothing. Each search may take all the time
    left: with its factors fixed the model is small, and most end proven (0.5-1.9 s on ResNet-50's window
    layers on the ``tpu`` profile), leaving the rest to the next. A schedule at the phase's proven ``floor``
    ends the searches."""
    ends = time.perf_counter() + time_left
    best = None
    candidates = assignments(enc)
    for n, splits in enumerate(candidates):
        left = ends - time.perf_counter()
        if left <= 0 or budget.stopped():
            break
        seeded = _fixed(enc, model, splits)
        if seeded is None:
            continue
        solver = new_solver(options, left)
        status = search(solver, seeded, "seeded search")
        found = int(round(solver.objective_value)) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
        log.info("seeded search %d (%d splits fixed): %s", n + 1, len(splits), "nothing found" if found is None else found)
        if found is not None and (best is None or found < best[0]):
            best = (found, solver)
        if best is not None and floor is not None and best[0] <= floor:
            break
    return best


def _fixed(enc: Encoding, model: cp_model.CpModel, splits: tuple[Split, ...]) -> cp_model.CpModel | None:
    """A copy of ``model`` whose chains of each split dimension are those with ``splits``'s factors, on their
    axes; None where no chain has them. (The rows themselves, not the factors: presolve then expands every
    table over the rows left only, which on a 128x128 array is most of the search's time.)"""
    seeded = model.clone()
    rows: dict[str, np.ndarray] = {}
    for s in splits:
        on = enc.on_axis.get((s.dim, s.lv, s.axis))
        chains = enc.chains[s.dim]
        if on is None or chains.factors is None:
            return None
        keep = chains.factors[:, s.lv] == s.factor  # the parts of a whole parent (_largest_factor)
        rows[s.dim] = keep if s.dim not in rows else rows[s.dim] & keep
        if on is not True:
            seeded.add_bool_or([on])
    for d, keep in rows.items():
        allowed = np.flatnonzero(keep)
        choice = enc.choice[d]
        if allowed.size == 0:
            return None
        if isinstance(choice, int):
            if not keep[choice]:
                return None
            continue
        seeded.add_linear_expression_in_domain(choice, cp_model.Domain.from_values(allowed.tolist()))
    return seeded
