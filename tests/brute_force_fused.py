"""Brute force over the fused family of docs/fusion.md, scored by the fused replay.

An oracle for the fused CP-SAT model that shares nothing with it: this module
imports nothing from ``mapsearch.model`` or ``mapsearch.solve``. For a chain
(``WorkloadGraph``), an architecture and a fusion level ``f`` it enumerates,
straight from docs/fusion.md:

- **the outer nest** (levels ``1..f``, common to every stage): every tile
  chain ``E >= T_1 >= ... >= T_f >= 1`` of every *tileable* dimension (shared
  by every einsum, and not summed over by the producer of an intermediate);
  every other dimension is whole at levels ``<= f``. Every loop order of
  each of those levels over the tileable dimensions that advance there
  (the others, and every non-tileable dimension, innermost in the graph's
  dimension order: permuting loops of one trip changes no step);
- **per stage, below f** (levels ``f+1..L0``): every tile chain of every one
  of the einsum's dimensions inside its level-``f`` tile, every loop order of
  the dimensions that advance, and every keep/bypass choice of the levels
  strictly between ``f`` and L0 (L0 keeps every tensor not homed there);
- **per stage, at levels <= f**: every keep/bypass choice of the stage's own
  tensors at the levels strictly between their home and L0 (intermediates
  are homed at ``f``: a buffer of their level-``f`` tile).

Scoring (``mode="count"`` replay). The fused run's figures are sums over the
stages: each stage's words depend only on the outer nest and that stage's own
choices (docs/fusion.md: "words per link summed over the einsums").
So for one outer nest the brute force replays the *baseline* (every stage at
its first sub-nest) once, and each other sub-nest of each stage once with the
other stages at the baseline, keeping every tensor at every level ``<= f``
below its home and lifting the capacities. A stage's contribution below
``f`` (and its op calls) is the difference to the baseline; its own tensors'
words at levels ``<= f`` are routed from each buffer's intake to every link
between it and the nearest holder above, for each keep choice (as
``tests/brute_force.py`` does for one einsum). Capacity is checked from the
rule of docs/fusion.md (levels ``<= f``: homes, every stage's buffers and the
intermediates' level-``f`` tiles at once; below ``f``: the largest over the
stages of that stage's buffers). The stages' candidate vectors are cut to
their Pareto front and combined; the optimum (``time``, then ``words``) is
built as a :class:`FusedSchedule` and replayed once more as it is (real
capacities, real keeps) and its figures must give the same key.
``direct=True`` replays every schedule of the family as it is instead (tiny
cases only: the tests check both ways agree).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Iterator, Mapping, Sequence

from mapsearch.schedule.figures import Figures
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.errors import CapacityError
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.workload import WorkloadGraph


def replay_count(fs: FusedSchedule) -> Figures:
    from mapsearch.sim.replay import replay

    return replay(fs, mode="count").figures


# --------------------------------------------------------------------------- the family


def tileable_dims(g: WorkloadGraph) -> tuple[str, ...]:
    """Shared by every einsum and not summed over by any intermediate's producer."""
    inter = set(g.intermediates)
    summed: set[str] = set()
    for e in g.einsums:
        if e.output.name in inter:
            summed |= set(e.dims) - set(e.output.dims)
    common = set(g.einsums[0].dims)
    for e in g.einsums[1:]:
        common &= set(e.dims)
    return tuple(d for d, _ in g.extents if d in common and d not in summed)


def chains(parent: int, n: int) -> list[tuple[int, ...]]:
    """Every ``(T_1..T_n)`` with ``parent >= T_1 >= ... >= T_n >= 1``."""
    if n == 0:
        return [()]
    return [(t,) + rest for t in range(parent, 0, -1) for rest in chains(t, n - 1)]


def orders(dims: Sequence[str], parent: Mapping[str, int], tile: Mapping[str, int]) -> list[tuple[str, ...]]:
    """Advancing dims permuted, then the others in ``dims`` order."""
    moving = [d for d in dims if tile[d] < parent[d]]
    still = tuple(d for d in dims if tile[d] >= parent[d])
    return [tuple(p) + still for p in itertools.permutations(moving)]


@dataclass(frozen=True)
class Outer:
    """Levels ``1..f``: tiles (per tileable dim, one per level) and orders over the tileable dims."""

    tiles: tuple[tuple[str, tuple[int, ...]], ...]
    orders: tuple[tuple[str, ...], ...]

    def tile(self, d: str, level: int) -> int:
        return dict(self.tiles)[d][level - 1]


@dataclass(frozen=True)
class Sub:
    """One stage's levels ``f+1..L0``: tiles per dim, orders, and keeps (tensor -> kept levels) strictly
    between ``f`` and L0."""

    tiles: tuple[tuple[str, tuple[int, ...]], ...]
    orders: tuple[tuple[str, ...], ...]
    keeps: tuple[tuple[str, frozenset[int]], ...] = ()


def outer_choices(g: WorkloadGraph, arch: Architecture, f: int) -> list[Outer]:
    ext = g.extent
    tileable = tileable_dims(g)
    out = []
    for combo in itertools.product(*[chains(ext[d], f) for d in tileable]):
        tiles = dict(zip(tileable, combo))
        per_level = []
        for i in range(1, f + 1):
            parent = {d: ext[d] if i == 1 else tiles[d][i - 2] for d in tileable}
            per_level.append(orders(tileable, parent, {d: tiles[d][i - 1] for d in tileable}))
        for ords in itertools.product(*per_level):
            out.append(Outer(tuple(tiles.items()), tuple(ords)))
    return out


class Chain:
    """A chain, an architecture, homes and a fusion level: builds the stages of the family."""

    def __init__(self, g: WorkloadGraph, arch: Architecture, homes: Mapping[str, str], f: int):
        self.g, self.arch, self.f = g, arch, f
        self.depth = arch.depth
        self.inner = arch.depth - 1
        self.ext = g.extent
        self.gdims = tuple(d for d, _ in g.extents)
        self.tileable = tileable_dims(g)
        self.inter = set(g.intermediates)
        self.stages = [g.stage(e) for e in range(len(g.einsums))]
        self.owner: dict[str, int] = {}
        for e, w in enumerate(self.stages):
            for t in w.tensor_names:
                if t not in self.inter:
                    if t in self.owner:
                        raise ValueError(f"tensor {t} is used by two einsums; a fused group allows that only for intermediates")
                    self.owner[t] = e
        top = arch.levels[0].name
        self.home: dict[str, int] = {}
        for t in set(self.owner) | self.inter:
            self.home[t] = f if t in self.inter else arch.index(homes.get(t, top))
            if self.home[t] > f:
                raise ValueError(f"{t}: homes must be at or above the fusion level")
        self.homes = {t: arch.levels[h].name for t, h in self.home.items()}

    def own(self, e: int) -> list[str]:
        return [t for t in self.stages[e].tensor_names if t not in self.inter]

    def dims(self, e: int) -> tuple[str, ...]:
        """The stage's dims in graph order."""
        mine = set(self.stages[e].dims)
        return tuple(d for d in self.gdims if d in mine)

    def tile_at(self, e: int, outer: Outer, sub: Sub | None, level: int) -> dict[str, int]:
        if level == 0:
            return {d: self.ext[d] for d in self.dims(e)}
        if level <= self.f:
            return {d: outer.tile(d, level) if d in self.tileable else self.ext[d] for d in self.dims(e)}
        return {d: dict(sub.tiles)[d][level - self.f - 1] for d in self.dims(e)}

    def sub_choices(self, e: int, outer: Outer) -> list[Sub]:
        f, n = self.f, self.inner - self.f
        dims = self.dims(e)
        if n == 0:
            return [Sub((), ())]
        base = self.tile_at(e, outer, None, f)
        w = self.stages[e]
        free_levels = list(range(f + 1, self.inner))
        keep_opts = []
        for t in w.tensor_names:
            per = [frozenset(s) for k in range(len(free_levels) + 1) for s in itertools.combinations(free_levels, k)]
            keep_opts.append(per)
        out = []
        for combo in itertools.product(*[chains(base[d], n) for d in dims]):
            tiles = dict(zip(dims, combo))
            per_level = []
            for j in range(n):
                parent = {d: base[d] if j == 0 else tiles[d][j - 1] for d in dims}
                per_level.append(orders(dims, parent, {d: tiles[d][j] for d in dims}))
            for ords in itertools.product(*per_level):
                for keeps in itertools.product(*keep_opts):
                    out.append(Sub(tuple(tiles.items()), tuple(ords), tuple(zip(w.tensor_names, keeps))))
        return out

    def keep_choices(self, e: int) -> list[dict[str, frozenset[int]]]:
        """Per own tensor, the kept levels ``<= f`` among the free ones (home+1 .. min(f, L0-1))."""
        per = []
        names = self.own(e)
        for t in names:
            free = list(range(self.home[t] + 1, min(self.f, self.inner - 1) + 1))
            per.append([frozenset(s) for k in range(len(free) + 1) for s in itertools.combinations(free, k)])
        return [dict(zip(names, c)) for c in itertools.product(*per)]

    def kept(self, e: int, t: str, level: int, sub: Sub | None, keeps: Mapping[str, frozenset[int]]) -> bool:
        if level <= self.home[t]:
            return False
        if level == self.inner:
            return True
        if level <= self.f:
            return level in keeps[t]
        return level in dict(sub.keeps)[t]

    def stage_schedule(self, e: int, outer: Outer, sub: Sub, keeps: Mapping[str, frozenset[int]] | None,
                       arch: Architecture | None = None) -> Schedule:
        """``keeps=None``: every own tensor kept at every level ``<= f`` below its home."""
        arch = arch or self.arch
        w = self.stages[e]
        dims = self.dims(e)
        if keeps is None:
            keeps = {t: frozenset(range(self.home[t] + 1, self.f + 1)) for t in self.own(e)}
        levels = [LevelMapping(arch.levels[0].name, tuple((d, self.ext[d]) for d in w.dims))]
        for i in range(1, self.depth):
            tile = self.tile_at(e, outer, sub, i)
            if i <= self.f:
                order = tuple(d for d in outer.orders[i - 1]) + tuple(d for d in dims if d not in self.tileable)
            else:
                order = sub.orders[i - self.f - 1]
            keep = frozenset(t for t in w.tensor_names if self.kept(e, t, i, sub, keeps))
            levels.append(LevelMapping(arch.levels[i].name, tuple((d, tile[d]) for d in w.dims), order, keep))
        return Schedule(w, arch, tuple(levels), tuple((t, self.homes[t]) for t in w.tensor_names))

    def fused(self, outer: Outer, subs: Sequence[Sub], keeps: Sequence[Mapping[str, frozenset[int]] | None],
              arch: Architecture | None = None) -> FusedSchedule:
        arch = arch or self.arch
        stages = tuple(self.stage_schedule(e, outer, subs[e], keeps[e], arch) for e in range(len(self.stages)))
        return FusedSchedule(self.g, arch, self.f, stages)

    # ------------------------------------------------------------------ occupancy (docs/fusion.md)
    def occ_fixed(self, outer: Outer) -> list[int]:
        """Per level ``<= f``: homes (not intermediates) and the intermediates' level-f tiles."""
        occ = [0] * (self.f + 1)
        for t, e in self.owner.items():
            occ[self.home[t]] += self.stages[e].tensor_words(t)
        for e, ein in enumerate(self.g.einsums):
            if ein.output.name in self.inter:
                occ[self.f] += ein.output.words(self.tile_at(e, outer, None, self.f))
        return occ

    def occ_outer(self, e: int, outer: Outer, keeps: Mapping[str, frozenset[int]]) -> list[int]:
        """Stage ``e``'s buffers at levels ``1..f`` (index 0 unused)."""
        occ = [0] * (self.f + 1)
        w = self.stages[e]
        for i in range(1, self.f + 1):
            tile = self.tile_at(e, outer, None, i)
            occ[i] = sum(w.tensor(t).words(tile) for t in self.own(e) if self.kept(e, t, i, None, keeps))
        return occ

    def fits_below(self, e: int, outer: Outer, sub: Sub) -> bool:
        w = self.stages[e]
        for i in range(self.f + 1, self.depth):
            cap = self.arch.levels[i].capacity
            if cap is None:
                continue
            tile = self.tile_at(e, outer, sub, i)
            words = sum(w.tensor(t).words(tile) for t in w.tensor_names if self.kept(e, t, i, sub, {}))
            if words > cap:
                return False
        return True


def unbounded(arch: Architecture) -> Architecture:
    return replace(arch, levels=tuple(replace(lv, capacity=None) for lv in arch.levels))


def key_of(f: Figures) -> tuple[Fraction, Fraction]:
    return (Fraction(f.time), Fraction(f.words_total))


@dataclass
class FusedBrute:
    level: int
    value: tuple[Fraction, Fraction]  # (time, words) of the optimum
    schedule: FusedSchedule  # one optimal schedule, predicted = its plain replay
    figures: Figures
    outers: int  # outer nests enumerated
    schedules: int  # schedules in the family (outer x per-stage sub-nests x keeps)
    replays: int
    seconds: float


def family_size(g: WorkloadGraph, arch: Architecture, f: int, homes: Mapping[str, str] = {}) -> tuple[int, int]:
    """(replays the fast brute force runs, schedules in the family) at fusion level ``f``."""
    c = Chain(g, arch, homes, f)
    replays = schedules = 0
    keeps = math.prod(len(c.keep_choices(e)) for e in range(len(c.stages)))
    for outer in outer_choices(g, arch, f):
        sizes = [len(c.sub_choices(e, outer)) for e in range(len(c.stages))]
        replays += 1 + sum(s - 1 for s in sizes)
        schedules += math.prod(sizes) * keeps
    return replays, schedules


def _pareto(items: list[tuple[tuple[int, ...], object]]) -> list[tuple[tuple[int, ...], object]]:
    """Items whose vector no other item's is <= componentwise (ties: the first kept)."""
    uniq: dict[tuple[int, ...], object] = {}
    for v, x in items:
        uniq.setdefault(v, x)
    vs = sorted(uniq.items(), key=lambda vx: sum(vx[0]))
    front: list[tuple[tuple[int, ...], object]] = []
    for v, x in vs:
        if not any(all(a <= b for a, b in zip(u, v)) for u, _ in front):
            front.append((v, x))
    return front


def brute_force_fused(g: WorkloadGraph, arch: Architecture, f: int, homes: Mapping[str, str] = {}, *,
                      direct: bool = False) -> FusedBrute | None:
    """The (time, words) optimum of the fused family at level ``f``; None when nothing fits."""
    start = time.perf_counter()
    c = Chain(g, arch, homes, f)
    if direct:
        return _direct(c, start)
    free = unbounded(arch)
    depth, inner = arch.depth, c.inner
    n_st = len(c.stages)
    links = list(range(1, depth))
    clocks = Fraction(arch.compute.clocks_per_call)
    caps = [lv.capacity for lv in arch.levels]
    keep_lists = [c.keep_choices(e) for e in range(n_st)]
    best = None
    n_outer = n_sched = n_replays = 0

    def traffic(fig: Figures) -> dict[tuple[str, int], tuple[int, int]]:
        return {(tt.tensor, a): (tt.words_down, tt.words_up) for a, l in enumerate(fig.links, start=1) for tt in l.tensors}

    for outer in outer_choices(g, arch, f):
        n_outer += 1
        occ_fixed = c.occ_fixed(outer)
        if any(caps[i] is not None and occ_fixed[i] > caps[i] for i in range(f + 1)):
            n_sched += math.prod(len(c.sub_choices(e, outer)) * len(keep_lists[e]) for e in range(n_st))
            continue
        subs = [c.sub_choices(e, outer) for e in range(n_st)]
        n_sched += math.prod(len(s) * len(k) for s, k in zip(subs, keep_lists))
        base_subs = [s[0] for s in subs]
        base = replay_count(c.fused(outer, base_subs, [None] * n_st, free))
        n_replays += 1
        base_tr = traffic(base)
        # Constant part: the baseline's words on links below f and its calls.
        const = [0] * (2 * len(links)) + [base.op_calls]
        for (t, a), (dn, up) in base_tr.items():
            if a > f:
                const[2 * (a - 1)] += dn
                const[2 * (a - 1) + 1] += up
        fronts = []
        for e in range(n_st):
            own = c.own(e)
            cands = []
            for sub in subs[e]:
                if not c.fits_below(e, outer, sub):
                    continue
                if sub is base_subs[e]:
                    fig, tr = base, base_tr
                else:
                    fig = replay_count(c.fused(outer, [sub if r == e else base_subs[r] for r in range(n_st)],
                                               [None] * n_st, free))
                    n_replays += 1
                    tr = traffic(fig)
                # Below f and calls: the difference to the baseline (every tensor of the chain).
                delta = [0] * (2 * len(links)) + [fig.op_calls - base.op_calls]
                for (t, a), (dn, up) in tr.items():
                    if a > f:
                        bdn, bup = base_tr[(t, a)]
                        delta[2 * (a - 1)] += dn - bdn
                        delta[2 * (a - 1) + 1] += up - bup
                for keeps in keep_lists[e]:
                    v = list(delta)
                    for t in own:
                        h = c.home[t]
                        held = sorted(i for i in range(h + 1, f + 1) if c.kept(e, t, i, None, keeps))
                        for i in held:  # the level-i buffer's intake: link i of the all-keep run
                            src = max([j for j in held if j < i] + [h])
                            dn, up = tr.get((t, i), (0, 0))
                            for a in range(src + 1, i + 1):
                                v[2 * (a - 1)] += dn
                                v[2 * (a - 1) + 1] += up
                        if f < inner:  # what the sub-nest's buffers take in from level f
                            src = max(held + [h])
                            dn, up = tr.get((t, f + 1), (0, 0))
                            for a in range(src + 1, f + 1):
                                v[2 * (a - 1)] += dn
                                v[2 * (a - 1) + 1] += up
                    occ = c.occ_outer(e, outer, keeps)
                    cands.append((tuple(v) + tuple(occ[1:]), (sub, keeps)))
            fronts.append(_pareto(cands))
        if any(not fr for fr in fronts):
            continue
        nl = 2 * len(links) + 1
        for combo in itertools.product(*fronts):
            tot = list(const) + occ_fixed[1:]
            for v, _ in combo:
                for k in range(len(v)):
                    tot[k] += v[k]
            if any(caps[i] is not None and tot[nl + i - 1] > caps[i] for i in range(1, f + 1)):
                continue
            t_links = [arch.levels[a].link.time(tot[2 * (a - 1)], tot[2 * (a - 1) + 1]) for a in links]
            key = (Fraction(max([tot[nl - 1] * clocks] + t_links)), Fraction(sum(tot[:nl - 1])))
            if best is None or key < best[0]:
                best = (key, outer, [x for _, x in combo])
    if best is None:
        return None
    key, outer, picks = best
    fs = c.fused(outer, [p[0] for p in picks], [p[1] for p in picks])
    fig = replay_count(fs)  # as it is: real capacities, real keeps
    n_replays += 1
    assert key_of(fig) == key, (key_of(fig), key, "the routed/combined score disagrees with a plain replay")
    return FusedBrute(f, key, fs.with_predicted(fig), fig, n_outer, n_sched, n_replays, time.perf_counter() - start)


def _direct(c: Chain, start: float) -> FusedBrute | None:
    """Every schedule of the family replayed as it is (tiny cases only)."""
    best = None
    n_outer = n_sched = n_replays = 0
    n_st = len(c.stages)
    for outer in outer_choices(c.g, c.arch, c.f):
        n_outer += 1
        per_stage = [[(s, k) for s in c.sub_choices(e, outer) for k in c.keep_choices(e)] for e in range(n_st)]
        for combo in itertools.product(*per_stage):
            n_sched += 1
            fs = c.fused(outer, [x[0] for x in combo], [x[1] for x in combo])
            n_replays += 1
            try:
                fig = replay_count(fs)
            except CapacityError:
                continue
            key = key_of(fig)
            if best is None or key < best[0]:
                best = (key, fs, fig)
    if best is None:
        return None
    key, fs, fig = best
    return FusedBrute(c.f, key, fs.with_predicted(fig), fig, n_outer, n_sched, n_replays, time.perf_counter() - start)


def all_levels(g: WorkloadGraph, arch: Architecture, homes: Mapping[str, str] = {}, *, direct: bool = False
               ) -> dict[int, FusedBrute | None]:
    """The optimum at every fusion level ``1..L0`` (the levels ``solve_chain`` tries)."""
    return {f: brute_force_fused(g, arch, f, homes, direct=direct) for f in range(1, arch.depth)}


def iter_levels(arch: Architecture) -> Iterator[int]:
    return iter(range(1, arch.depth))
