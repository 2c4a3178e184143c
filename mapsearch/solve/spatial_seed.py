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
(solve/coarse.py), the model is first searched with its spatial mapping
fixed to each of a few assignments in turn (:func:`assignments`): the one
with the shortest estimated time (ties: the fewest op calls of the busiest
instance, then splits the axes may share: multicast, in-network
reduction), the one with the most such shared splits within
:data:`TIME_SLACK` times that time, and the next shortest. Everything
else (tiles, orders, keeps, parts) is searched. The best schedule hints
the search that follows; it is a schedule of the family (the fixed
factors only remove chain rows), so it changes no optimum, bound or
status, and a seeded search that finds nothing (the fixed factors break a
``must_reuse`` or a split bound, or the time runs out) is dropped.

The assignments come from a beam search over the mesh axes, those of the
level with the most instances first: per axis up to
:data:`DIMS_PER_AXIS` dimensions in every order, each split by the largest
factor that the room left on the axis allows, that its chains have and that
splits its remaining extent into exactly that many parts. The calls of an
assignment are ``prod_d ceil(part_d / b_d)`` with ``part_d`` the largest
part left after every level's split (outermost first), which is what the
busiest instance computes when every split divides. The estimated time is
the larger of those calls' time and each link's time if every copy moved
its children's parts of each tensor once (:func:`_link_time`). Ranked by
the calls alone, the first assignment on ``simba-like`` (36 chiplets that
share nothing over one package link) spread a 1x1 layer's pixels over
every chiplet, which reads the weights 25 times: the seeded searches ended
at 37,904 clocks on ResNet-50's 256->1024 layer at 10 s, 12,544 with the
links counted (every ResNet-50 layer measured on that preset gained, by
1.05x-5.2x; the ``tpu`` profile's layers are compute-bound there and rank
as before).
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model

import mapsearch.budget as budget
from mapsearch.model.bounds import touched
from mapsearch.model.encoding import Encoding
from mapsearch.model.options import SolveOptions
from mapsearch.model.spatial import axes, split_dims
from mapsearch.solve.phases import new_solver
from mapsearch.solve.progress import search
from mapsearch.spec.workload import Workload

log = logging.getLogger(__name__)

# The fewest instances on the path (the product over its meshed levels) for which a search is seeded:
# small meshes are searched well without it, and each seeded search costs a presolve of the model.
SEED_INSTANCES = 64
# Partial assignments kept per mesh axis, and at most this many dimensions per axis.
BEAM = 16
DIMS_PER_AXIS = 3
# The assignment with the most shared splits is taken among those whose estimated time is at most this multiple
# of the shortest (_score: the compute time of the fewest calls or the links, the larger).
TIME_SLACK = 2
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
    """The assignments to seed from, best first (see the module's docstring): the shortest estimated time (ties:
    the fewest calls, then the most shared splits), the most shared splits within :data:`TIME_SLACK` times
    that time, and the second shortest; each once, none that splits nothing."""
    by_time = _beam(enc, lambda est, calls, shared: (est, calls, -shared))
    least = _score(enc, by_time[0])[0] if by_time else 0
    by_sharing = _beam(enc, lambda est, calls, shared: (est > TIME_SLACK * least, -shared, est, calls))
    out: list[tuple[Split, ...]] = []
    for splits in by_time[:1] + by_sharing[:1] + by_time[1:]:
        if splits and _key(splits) not in {_key(x) for x in out}:
            out.append(splits)
    levels = enc.problem.architecture.levels
    for splits in out[:SEEDS]:
        est, calls, shared = _score(enc, splits)
        log.debug("seed assignment (estimated time %s, calls floor %d, %d shared): %s", float(est), calls, shared,
                  ", ".join(f"{s.dim}/{s.factor} on {axes(enc, s.lv)[s.axis].name} of "
                            f"{levels[enc.spatial_levels[s.lv]].name}" for s in splits))
    return out[:SEEDS]


def _key(splits: tuple[Split, ...]) -> tuple:
    return tuple(sorted((s.dim, s.lv, s.axis, s.factor) for s in splits))


def _beam(enc: Encoding, rank) -> list[tuple[Split, ...]]:
    """A beam search over the mesh axes (those of the level with the most instances first), keeping the
    :data:`BEAM` best partial assignments by ``rank(estimated time, calls, shared)`` (:func:`_score`, the
    axes still to come counted as dividing the calls evenly); the final ones, best first."""
    levels = enc.problem.architecture.levels
    order = sorted(range(len(enc.spatial_levels)), key=lambda lv: -levels[enc.spatial_levels[lv]].instances)
    todo = [(lv, a, axis) for lv in order for a, axis in enumerate(axes(enc, lv))]
    beam: list[tuple[Split, ...]] = [()]
    for n, (lv, a, axis) in enumerate(todo):
        later = tuple((x_lv, x.size) for x_lv, _, x in todo[n + 1:])
        candidates = {}
        for splits in beam:
            for chosen in _axis_choices(enc, lv, a, axis.size, splits):
                candidates[_key(chosen)] = chosen
        beam = sorted(candidates.values(), key=lambda c: (rank(*_score(enc, c, later)), len(c)))[:BEAM]
    return beam


def _score(enc: Encoding, splits: tuple[Split, ...], later: tuple[tuple[int, int], ...] = ()) \
        -> tuple[Fraction, int, int]:
    """``(estimated time, calls, shared)`` of an assignment: the time is the larger of the busiest
    instance's compute time and :func:`_link_time`; a ranking, not a bound. ``later``: ``(meshed level
    number, size)`` of the axes not assigned yet, counted as dividing the calls and every link below them
    evenly (a partial assignment is ranked by the best its completions could do)."""
    calls = _calls(enc, splits)
    compute = Fraction(-(-calls // math.prod(size for _, size in later))) * enc.problem.architecture.compute.clocks_per_call
    return max(compute, _link_time(enc, splits, later)), calls, _shared(enc, splits)


def _link_time(enc: Encoding, splits: tuple[Split, ...], later: tuple[tuple[int, int], ...] = ()) -> Fraction:
    """The longest link time if every copy of every link moved each child's part of each tensor once: per copy
    of the link into level ``i``, each tensor's footprint over the largest parts left by the splits at and
    above ``i``, times the instances at ``i`` that need a part of their own (a split that indexes the tensor,
    or one on an axis that may not reuse it; overlapping windows are counted per child). What the splits
    cost the links, which the calls do not see: on ``simba-like``, whose 36 chiplets share nothing, splitting
    a 1x1 layer's pixels over all of them reads the weights 25 times."""
    p = enc.problem
    w, levels = p.workload, p.architecture.levels
    longest = Fraction(0)
    for i in range(1, len(levels)):
        inside = tuple(s for s in splits if enc.spatial_levels[s.lv] <= i)
        here = [s for s in inside if enc.spatial_levels[s.lv] == i]
        part = {d: _remaining(enc, inside, d) for d in w.dims}
        down = up = 0
        for t in w.tensor_names:
            out = w.is_output(t)
            copies = math.prod(s.factor for s in here if not _one_crossing(enc, s, t))
            words = _touched(enc, t, part) * copies
            if out:
                up += words
            else:
                down += words
        spread = math.prod(size for lv, size in later if enc.spatial_levels[lv] < i)
        longest = max(longest, levels[i].link.time(down, up) / spread)
    return longest


def _touched(enc: Encoding, tensor: str, part: dict[str, int]) -> int:
    """The elements of ``tensor`` that a part of the iteration space with these extents touches (a strided
    window's holes left out, as a schedule's loads leave them out over its run)."""
    w = enc.problem.workload
    key = ("seed_touched", tensor, tuple(part[d] for d in w.dims))
    if key not in enc.cache:
        enc.cache[key] = touched(Workload(w.name, w.einsum, tuple((d, part[d]) for d in w.dims)), tensor)
    return enc.cache[key]


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
    return sum(1 for s in splits for t in enc.problem.workload.tensor_names if _one_crossing(enc, s, t))


def _one_crossing(enc: Encoding, s: Split, tensor: str) -> bool:
    """Every instance of split ``s`` needs the same part of ``tensor`` (its dimension does not index it) and the
    axis may reuse it: one crossing serves them all (multicast of an input, in-network reduction of an
    output). Otherwise each instance's part crosses on its own."""
    w = enc.problem.workload
    return s.dim not in w.tensor(tensor).dims and axes(enc, s.lv)[s.axis].reuses(tensor, w.is_output(tensor))


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
    """``(objective value, solver, seconds)`` of the best schedule of ``model`` (the coarse model, its objective
    set) found with each of the first :data:`SEEDS` assignments (:func:`assignments`) as the whole spatial
    mapping in turn, in ``time_left`` (``seconds``: what the searches took together); None when they find
    nothing. Each search may take all the time left: with its factors fixed the model is small, and most end
    proven (0.1-3.4 s on ResNet-50's layers on the ``tpu`` profile and on ``simba-like``), leaving the rest
    to the next. A schedule at the phase's proven ``floor`` ends the searches.

    Then the best assignment is searched once more with the other dimensions free (:func:`_fixed`,
    ``whole=False``), in a quarter of the time left, and its schedule is kept if it is no worse: it may
    split more dimensions than the assignment names, which gives the search that follows more to build on.
    On the ``tpu`` profile's 3x3 64-channel layer both seeds prove 3,280 clocks, and the search that follows
    reaches 2,620 from the free one's schedule, 2,888 from the held one's."""
    started = time.perf_counter()
    ends = started + time_left
    best = best_splits = None
    for n, splits in enumerate(assignments(enc)):
        left = ends - time.perf_counter()
        if left <= 0 or budget.stopped():
            break
        found = _search_seed(_fixed(enc, model, splits), options, left, f"{n + 1} ({len(splits)} splits)")
        if found is not None and (best is None or found[0] < best[0]):
            best, best_splits = found, splits
        if best is not None and floor is not None and best[0] <= floor:
            break
    left = ends - time.perf_counter()
    if best is not None and (floor is None or best[0] > floor) and left > 0 and not budget.stopped():
        found = _search_seed(_fixed(enc, model, best_splits, whole=False), options, left / 4, "free")
        if found is not None and found[0] <= best[0]:
            best = found
    return None if best is None else (best[0], best[1], time.perf_counter() - started)


def _search_seed(seeded: cp_model.CpModel | None, options: SolveOptions, limit: float, label: str):
    """``(objective value, solver)`` of a seeded model's search within ``limit`` seconds; None where it finds
    nothing (or there is no such model)."""
    if seeded is None:
        return None
    solver = new_solver(options, limit)
    status = search(solver, seeded, "seeded search")
    found = int(round(solver.objective_value)) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
    log.info("seeded search %s: %s (%s in %.2f s)", label, "nothing found" if found is None else found,
             solver.status_name(status), solver.wall_time)
    return None if found is None else (found, solver)


def _fixed(enc: Encoding, model: cp_model.CpModel, splits: tuple[Split, ...], whole: bool = True) \
        -> cp_model.CpModel | None:
    """A copy of ``model`` whose spatial mapping is ``splits``: every split dimension's chains are those with
    ``splits``'s factor at each meshed level (1 where it names none; where ``whole`` is False, free), on their
    axes; None where no chain has them. (The rows themselves, not the factors: presolve then expands every table over the rows left only,
    which on a 128x128 array is most of the search's time.) The other dimensions unsplit make the model small:
    left free (``whole=False``), the search on ResNet-50's 3x3 256-channel layer on ``simba-like`` found no
    schedule in the 2.3 s a 10 s limit leaves it; held, it proves the assignment's best, 16,448 clocks, in
    2.2 s."""
    seeded = model.clone()
    rows: dict[str, np.ndarray] = {}
    assigned = {(s.dim, s.lv): s for s in splits}
    for d in split_dims(enc):
        factors = enc.chains[d].factors
        for lv in range(len(enc.spatial_levels)):
            s = assigned.get((d, lv))
            if s is None and not whole:
                continue
            keep = factors[:, lv] == (1 if s is None else s.factor)  # whole parents: _largest_factor
            rows[d] = keep if d not in rows else rows[d] & keep
            on = None if s is None else enc.on_axis.get((d, lv, s.axis))
            if s is not None and on is None:
                return None
            if on is not None and on is not True:
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
