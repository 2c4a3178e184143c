"""Brute force over the solver's whole schedule family, scored by the replay.

An oracle for the CP-SAT mapper that shares nothing with it: this module
imports nothing from ``mapsearch.model`` or ``mapsearch.solve``. It
enumerates, straight from the contract (``shared/spec/cost-model.md``) and
the family that ``mapsearch/model/problem.py`` documents:

- every tile extent chain ``E >= T_1 >= ... >= T_J >= 1`` of every dimension
  (all integers, not only divisors), both dimensions of a filter window
  (an axis over two dimensions) included. A dimension of extent 1, and in
  an axis over three or more dimensions every one but its *carrier* (the
  one of largest extent, ties to the first listed), is held whole at every
  level: that is the family the solver covers with default positions;
- every loop order of every level below the top. Dimensions that do not
  advance at a level (``T_i == T_{i-1}``: one trip in every context) are
  placed innermost in workload order: permuting them changes no step of the
  nest, so one representative is kept;
- every keep/bypass choice at the levels strictly between a tensor's home
  and L0 (L0 always keeps).

Scoring. The replay counts the words each (tensor, level) buffer takes in
from the region changes of the loop nest, which depend only on the tiles and
orders of the levels down to that one; keep/bypass only decides which links
those words cross (every link between the buffer and the nearest holder
above) and which buffers take room. So, for each (tiles, orders) pair, the
replay runs **once**, on the schedule that keeps every tensor at every level
below its home with capacities lifted, and every keep choice is scored from
that run's per-link, per-tensor words (``routed``). Capacity is checked here
from the contract's occupancy rule (homes + the first, i.e. largest, tile of
every kept tensor, twice with double buffering when the tile is smaller
than the tensor). ``evaluate_direct`` scores one schedule with one plain
replay (real capacities, ``CapacityError`` when it overflows);
``brute_force(..., direct=True)`` uses it for every schedule, and the tests
check that both ways agree schedule by schedule, and that the optimum's
figures equal a plain replay of it.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Callable, Iterator, Mapping, Sequence

from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.errors import CapacityError
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import Workload

# --------------------------------------------------------------------------- the replay


def replay_figures(schedule: Schedule) -> Figures:
    """The replay's figures: ``replay(mode="count")`` if it exists, else ``"events"``.

    Falls back to the vectorised walk (``mapsearch.sim.walk.count_figures``)
    while ``mapsearch.sim.replay`` is not there yet. Raises ``CapacityError``
    when a level overflows.
    """
    try:
        from mapsearch.sim.replay import replay
    except ImportError:
        replay = None
    if replay is not None:
        from mapsearch.sim.errors import UnknownModeError

        for mode in ("count", "events"):
            try:
                result = replay(schedule, mode=mode)
            except UnknownModeError:
                continue
            return getattr(result, "figures", result)
    try:
        from mapsearch.sim.walk import count_figures
    except ImportError:
        from mapsearch.sim.events import replay_events

        return replay_events(schedule).figures
    return count_figures(schedule)


# --------------------------------------------------------------------------- the family


def pinned_dims(w: Workload) -> frozenset[str]:
    """Dims held whole at every level: extent 1, and the non-carriers of axes over three or more
    dims of extent > 1 (an axis over two, a filter window, is split along both)."""
    ext = w.extent
    out = {d for d, e in w.extents if e == 1}
    for t in w.tensors:
        for ix in t.indices:
            if sum(ext[d] > 1 for d in ix.dims) > 2:
                dims = ix.dims
                carrier = max(dims, key=lambda d: (ext[d], -dims.index(d)))
                out.update(d for d in dims if d != carrier)
    return frozenset(out)


def chains(extent: int, depth: int) -> list[tuple[int, ...]]:
    """Every ``(T_1, ..., T_depth)`` with ``extent >= T_1 >= ... >= T_depth >= 1``."""
    out: list[tuple[int, ...]] = []

    def grow(prefix: tuple[int, ...], parent: int) -> None:
        if len(prefix) == depth:
            out.append(prefix)
            return
        for t in range(1, parent + 1):
            grow(prefix + (t,), t)

    grow((), extent)
    return out


def tile_choices(w: Workload, depth: int) -> list[dict[str, tuple[int, ...]]]:
    """Every combination of per-dimension chains (``depth`` = levels below the top)."""
    pinned = pinned_dims(w)
    per_dim = [[(e,) * depth] if d in pinned else chains(e, depth) for d, e in w.extents]
    return [dict(zip(w.dims, combo)) for combo in itertools.product(*per_dim)]


def orders_for(w: Workload, tiles: Mapping[str, tuple[int, ...]], level: int) -> list[tuple[str, ...]]:
    """Loop orders of ``level`` (1-based below the top): advancing dims permuted, the rest innermost."""
    ext = w.extent
    parent = {d: ext[d] if level == 1 else tiles[d][level - 2] for d in w.dims}
    moving = [d for d in w.dims if tiles[d][level - 1] < parent[d]]
    still = tuple(d for d in w.dims if d not in moving)
    return [p + still for p in itertools.permutations(moving)]


def keep_choices(w: Workload, arch: Architecture, homes: Mapping[str, str]) -> list[dict[str, frozenset[int]]]:
    """Per tensor, the set of levels that keep it: L0 always (below the home), the middle ones free."""
    inner = arch.depth - 1
    per_tensor = []
    for t in w.tensor_names:
        home = arch.index(homes.get(t, arch.levels[0].name))
        free = list(range(home + 1, inner))
        forced = {inner} if home < inner else set()
        options = []
        for n in range(len(free) + 1):
            for sub in itertools.combinations(free, n):
                options.append(frozenset(forced | set(sub)))
        per_tensor.append(options)
    return [dict(zip(w.tensor_names, combo)) for combo in itertools.product(*per_tensor)]


def make_schedule(w: Workload, arch: Architecture, homes: Mapping[str, str], tiles: Mapping[str, tuple[int, ...]],
                  orders: Sequence[tuple[str, ...]], keeps: Mapping[str, frozenset[int]]) -> Schedule:
    levels = [LevelMapping(arch.levels[0].name, tuple(w.extents))]
    for i in range(1, arch.depth):
        levels.append(LevelMapping(arch.levels[i].name, tuple((d, tiles[d][i - 1]) for d in w.dims), tuple(orders[i - 1]),
                                   frozenset(t for t in w.tensor_names if i in keeps[t])))
    home_pairs = tuple((t, homes.get(t, arch.levels[0].name)) for t in w.tensor_names)
    return Schedule(w, arch, tuple(levels), home_pairs)


def family_size(w: Workload, arch: Architecture, homes: Mapping[str, str] = {}) -> tuple[int, int]:
    """(replays the fast brute force runs, schedules in the family)."""
    depth = arch.depth - 1
    nests = 0
    for tiles in tile_choices(w, depth):
        nests += math.prod(len(orders_for(w, tiles, i)) for i in range(1, depth + 1))
    return nests, nests * len(keep_choices(w, arch, homes))


# --------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class Objective:
    """What to minimise; mirrors ``SolveOptions`` without importing it.

    ``time``: (time, words) lexicographically; ``words``: words;
    ``energy``: ``sum(link_energy[link] * words on it) + op_energy * calls``
    (a link not named costs 1 per word). ``min_utilization`` filters.
    """

    kind: str = "time"
    min_utilization: Fraction | None = None
    link_energy: tuple[tuple[str, Fraction], ...] = ()
    op_energy: Fraction = Fraction(0)

    def key(self, f: Figures) -> tuple[Fraction, ...] | None:
        """The objective's value (a tuple, compared lexicographically), None when filtered out."""
        if self.min_utilization is not None and f.utilization < self.min_utilization:
            return None
        if self.kind == "time":
            return (f.time, Fraction(f.words_total))
        if self.kind == "words":
            return (Fraction(f.words_total),)
        if self.kind == "energy":
            cost = dict(self.link_energy)
            e = sum(Fraction(cost.get(l.name, 1)) * l.words for l in f.links) + Fraction(self.op_energy) * f.op_calls
            return (Fraction(e),)
        raise ValueError(self.kind)


@dataclass
class BruteResult:
    value: tuple[Fraction, ...]  # Objective.key of the optimum
    schedule: Schedule  # one optimal schedule, with ``predicted`` = its figures as scored here
    figures: Figures
    optima: int  # schedules that reach the optimum
    nests: int  # (tiles, orders) pairs enumerated
    schedules: int  # schedules enumerated (nests x keep choices)
    feasible: int
    replays: int
    seconds: float
    all_optimal: list[Schedule] = field(default_factory=list)  # filled when keep_all_optima


def _occupancy(w: Workload, arch: Architecture, home_of: Mapping[str, int], tiles, keeps) -> list[int]:
    """Peak words per level: homes + first (largest) tile of each kept tensor, x2 when double-buffered and moving."""
    out = []
    for i in range(arch.depth):
        words = sum(w.tensor_words(t) for t in w.tensor_names if home_of[t] == i)
        if i > 0:
            ext_i = {d: tiles[d][i - 1] for d in w.dims}
            for t in w.tensor_names:
                if i in keeps[t]:
                    tile = w.tensor(t).words(ext_i)
                    buffers = 2 if arch.double_buffering and tile < w.tensor_words(t) else 1
                    words += buffers * tile
        out.append(words)
    return out


def _fits(arch: Architecture, occupancy: Sequence[int]) -> bool:
    return all(lv.capacity is None or occ <= lv.capacity for lv, occ in zip(arch.levels, occupancy))


def _unbounded(arch: Architecture) -> Architecture:
    return replace(arch, levels=tuple(replace(lv, capacity=None) for lv in arch.levels), double_buffering=False)


def routed(w: Workload, arch: Architecture, home_of: Mapping[str, int], per_buffer: Mapping[tuple[str, int], tuple[int, int]],
           keeps: Mapping[str, frozenset[int]], op_calls: int, occupancy: Sequence[int]) -> Figures:
    """Figures of one keep choice from each buffer's own (down, up) words.

    A buffer at level ``i`` exchanges with the nearest holder above (a level
    that keeps the tensor, or its home); its words cross every link between.
    """
    down = {(t, a): 0 for t in w.tensor_names for a in range(1, arch.depth)}
    up = dict(down)
    for t in w.tensor_names:
        for i in keeps[t]:
            src = max([j for j in keeps[t] if j < i] + [home_of[t]])
            d, u = per_buffer[(t, i)]
            for a in range(src + 1, i + 1):
                down[(t, a)] += d
                up[(t, a)] += u
    links = []
    for a in range(1, arch.depth):
        wd = sum(down[(t, a)] for t in w.tensor_names)
        wu = sum(up[(t, a)] for t in w.tensor_names)
        links.append(LinkFigures(arch.link_name(a), wd, wu, Fraction(arch.levels[a].link.time(wd, wu)),
                                 tuple(TensorTraffic(t, down[(t, a)], up[(t, a)]) for t in w.tensor_names)))
    return Figures(tuple(links), op_calls, op_calls * Fraction(arch.compute.clocks_per_call), w.macs,
                   arch.compute.block_macs, tuple((lv.name, o) for lv, o in zip(arch.levels, occupancy)))


def evaluate_direct(schedule: Schedule) -> Figures | None:
    """One plain replay of the schedule; None when it overflows a level (``CapacityError``)."""
    try:
        return replay_figures(schedule)
    except CapacityError:
        return None


def nests(w: Workload, arch: Architecture) -> Iterator[tuple[dict[str, tuple[int, ...]], tuple[tuple[str, ...], ...]]]:
    depth = arch.depth - 1
    for tiles in tile_choices(w, depth):
        per_level = [orders_for(w, tiles, i) for i in range(1, depth + 1)]
        for orders in itertools.product(*per_level):
            yield tiles, orders


def fitting_schedules(w: Workload, arch: Architecture) -> Iterator[Schedule]:
    """Every schedule of the family (tilings, orders, keep choices; homes at the top) that fits every level."""
    home_of = {t: 0 for t in w.tensor_names}
    for tiles, orders in nests(w, arch):
        for keeps in keep_choices(w, arch, {}):
            if _fits(arch, _occupancy(w, arch, home_of, tiles, keeps)):
                yield make_schedule(w, arch, {}, tiles, orders, keeps)


def _fast_key(objective: Objective, arch: Architecture, down: Sequence[int], up: Sequence[int], calls: int,
              compute_time: Fraction) -> tuple[Fraction, ...] | None:
    """``objective.key`` from per-link totals (the hot loop); the optimum is re-checked on full figures."""
    links = arch.levels
    times = [links[a].link.time(down[a], up[a]) for a in range(1, arch.depth)]
    t = max([compute_time] + times)
    if objective.min_utilization is not None:
        if (compute_time / t if t else Fraction(1)) < objective.min_utilization:
            return None
    words = sum(down) + sum(up)
    if objective.kind == "time":
        return (Fraction(t), Fraction(words))
    if objective.kind == "words":
        return (Fraction(words),)
    if objective.kind == "energy":
        cost = dict(objective.link_energy)
        e = sum(Fraction(cost.get(arch.link_name(a), 1)) * (down[a] + up[a]) for a in range(1, arch.depth))
        return (Fraction(e + Fraction(objective.op_energy) * calls),)
    raise ValueError(objective.kind)


def brute_force(w: Workload, arch: Architecture, homes: Mapping[str, str] | Sequence[tuple[str, str]] = (),
                objective: Objective = Objective(), *, accept: Callable[[Schedule], bool] | None = None,
                direct: bool = False, keep_all_optima: bool = False) -> BruteResult | None:
    """The optimum of ``objective`` over the whole family; None when no schedule fits (or passes ``accept``).

    ``accept`` restricts the family (user constraints). ``direct`` replays
    every schedule as it is instead of routing one replay per nest.
    """
    start = time.perf_counter()
    homes = dict(homes)
    names = w.tensor_names
    home_of = {t: arch.index(homes.get(t, arch.levels[0].name)) for t in names}
    size = {t: w.tensor_words(t) for t in names}
    depth = arch.depth
    inner = depth - 1
    home_words = [sum(size[t] for t in names if home_of[t] == i) for i in range(depth)]
    caps = [lv.capacity for lv in arch.levels]
    keep_list = keep_choices(w, arch, homes)
    # Per keep choice: the (tensor, level, source) buffers, i.e. where each one's words come from.
    routes = [[(t, i, max([j for j in keeps[t] if j < i] + [home_of[t]])) for t in names for i in sorted(keeps[t])]
              for keeps in keep_list]
    free_arch = _unbounded(arch)
    clocks = Fraction(arch.compute.clocks_per_call)
    best: tuple | None = None
    best_sched: Schedule | None = None
    best_fig: Figures | None = None
    all_opt: list[Schedule] = []
    n_opt = n_nests = n_sched = n_feasible = n_replays = 0
    for tiles, orders in nests(w, arch):
        n_nests += 1
        n_sched += len(keep_list)
        # Buffer words per (tensor, level): the first tile is the largest; x2 when double-buffered and moving.
        held = {}
        for i in range(1, depth):
            ext_i = {d: tiles[d][i - 1] for d in w.dims}
            for t in names:
                if i > home_of[t]:
                    words = w.tensor(t).words(ext_i)
                    held[(t, i)] = words * (2 if arch.double_buffering and words < size[t] else 1)
        # L0 keeps every tensor not homed there: if even that overflows, skip the replay.
        if not direct and caps[inner] is not None and \
                home_words[inner] + sum(held[(t, inner)] for t in names if home_of[t] < inner) > caps[inner]:
            continue
        if not direct:
            everything = {t: frozenset(range(home_of[t] + 1, depth)) for t in names}
            f_all = replay_figures(make_schedule(w, free_arch, homes, tiles, orders, everything))
            n_replays += 1
            per_buffer = {}
            for a, link in enumerate(f_all.links, start=1):
                for tt in link.tensors:
                    per_buffer[(tt.tensor, a)] = (tt.words_down, tt.words_up)
            calls = f_all.op_calls
            compute_time = calls * clocks
        for keeps, route in zip(keep_list, routes):
            sched = None
            if direct:
                sched = make_schedule(w, arch, homes, tiles, orders, keeps)
                n_replays += 1
                fig = evaluate_direct(sched)
                if fig is None:
                    continue
                key = objective.key(fig)
            else:
                occ = list(home_words)
                for t, i, _ in route:
                    occ[i] += held[(t, i)]
                if any(c is not None and o > c for c, o in zip(caps, occ)):
                    continue
                down = [0] * depth
                up = [0] * depth
                for t, i, src in route:
                    d, u = per_buffer[(t, i)]
                    for a in range(src + 1, i + 1):
                        down[a] += d
                        up[a] += u
                key = _fast_key(objective, arch, down, up, calls, compute_time)
                fig = None
            if accept is not None:
                sched = sched or make_schedule(w, arch, homes, tiles, orders, keeps)
                if not accept(sched):
                    continue
            n_feasible += 1
            if key is None or (best is not None and key > best):
                continue
            if fig is None:
                fig = routed(w, arch, home_of, per_buffer, keeps, calls, occ)
            sched = (sched or make_schedule(w, arch, homes, tiles, orders, keeps)).with_predicted(fig)
            if best is None or key < best:
                best, n_opt, best_sched, best_fig, all_opt = key, 0, sched, fig, []
            n_opt += 1
            if keep_all_optima:
                all_opt.append(sched)
    if best is None:
        return None
    assert objective.key(best_fig) == best, (objective.key(best_fig), best)
    return BruteResult(best, best_sched, best_fig, n_opt, n_nests, n_sched, n_feasible, n_replays,
                       time.perf_counter() - start, all_opt)


def all_scored(w: Workload, arch: Architecture, homes: Mapping[str, str] | Sequence[tuple[str, str]] = ()
               ) -> Iterator[tuple[Schedule, Figures | None]]:
    """Every schedule of the family with its routed figures (None when it overflows): for self-checks."""
    homes = dict(homes)
    home_of = {t: arch.index(homes.get(t, arch.levels[0].name)) for t in w.tensor_names}
    free_arch = _unbounded(arch)
    keep_list = keep_choices(w, arch, homes)
    for tiles, orders in nests(w, arch):
        everything = {t: frozenset(range(home_of[t] + 1, arch.depth)) for t in w.tensor_names}
        f_all = replay_figures(make_schedule(w, free_arch, homes, tiles, orders, everything))
        per_buffer = {(tt.tensor, a): (tt.words_down, tt.words_up)
                      for a, link in enumerate(f_all.links, start=1) for tt in link.tensors}
        for keeps in keep_list:
            occ = _occupancy(w, arch, home_of, tiles, keeps)
            fig = routed(w, arch, home_of, per_buffer, keeps, f_all.op_calls, occ) if _fits(arch, occ) else None
            yield make_schedule(w, arch, homes, tiles, orders, keeps), fig
