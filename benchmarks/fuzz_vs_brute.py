"""Differential fuzz: the solver against the independent brute forces, one random case per seed.

Each seed draws one problem small enough to enumerate (einsum, extents,
2-5 levels, capacities tight to unbounded, homes, link costs and line
modes, block ops, double buffering, and for ``--kind mesh`` one or two
meshed levels with primes, ``may_reuse`` and ``must_reuse``, diagonals
``A[m,m]`` and a skewed axis ``I[p+r,p]`` among the einsums), solves it
with ``SolveOptions(workers=1, seed=0, time_limit=60)`` and checks the
solver's claims against the oracles in ``tests/`` (which import nothing
from ``mapsearch.model`` or ``mapsearch.solve``):

- ``tests/brute_force_wide.py``: the contract's whole family of one einsum
  without spatial fanout (every tile of every dim, order, keep, buffer
  position); with ``held`` dims it is also the solver's family when the
  solver holds the small dims of an axis over three dims whole;
- ``tests/brute_force_spatial.py``: the solver's spatial family (buffer
  positions above the mesh only; window dims split over mesh axes in every
  part, or in equal parts above L0 where the solver names that restriction).

Checks: OPTIMAL equals the whole-family optimum (meshed: it is at most the
spatial-family optimum and the mesh-free whole-family optimum, and equals
the former); OPTIMAL_IN_FAMILY equals its family's optimum (and, where it
is worse than the whole family's, the named restriction explains it);
nothing beats an oracle; "infeasible" only where no schedule exists,
``NoScheduleInFamily`` only where the family is empty; prediction equals
the replay (count, and events / data on small cases); the schedule's JSON
round-trips and replays the same.

Run (one process; the output is one line per case, then a summary)::

    PYTHONPATH=. python benchmarks/fuzz_vs_brute.py --kind flat --seed-from 0 --seed-to 200
    PYTHONPATH=. python benchmarks/fuzz_vs_brute.py --kind mesh --seed-from 0 --seed-to 200
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import itertools
import math
import random
import sys
import time
import traceback
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import brute_force as bf  # noqa: E402
import brute_force_spatial as bfs  # noqa: E402
import brute_force_wide as bw  # noqa: E402

from mapsearch.errors import InfeasibleError, NoScheduleInFamily  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.model.problem import Problem, UnsupportedProblem  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.schedule.json_io import dumps_schedule, schedule_from_dict  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.solve import unsplit  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import (SEPARATE, SHARED, SPLIT_BOUND_OPERATORS, Architecture, Compute, Level, Link,  # noqa: E402
                                         MeshAxis, SplitBound)
from mapsearch.spec.workload import Workload  # noqa: E402

import json  # noqa: E402

# name -> (einsum, per-dim extent range for the flat kind)
EINSUMS = {
    "matmul": ("Z[m,n] += A[m,k] * B[k,n]", {"m": (1, 4), "n": (1, 4), "k": (1, 4)}),
    "matvec": ("Z[m] += A[m,k] * B[k]", {"m": (1, 6), "k": (1, 6)}),
    "outer": ("Z[m,n] += A[m] * B[n]", {"m": (1, 5), "n": (1, 5)}),
    "conv1d": ("O[p] += I[p+r] * W[r]", {"p": (1, 6), "r": (1, 4)}),
    "conv1d_k": ("O[k,p] += I[p+r] * W[k,r]", {"k": (1, 3), "p": (1, 5), "r": (1, 3)}),
    "conv1d_s2": ("O[p] += I[2*p+r] * W[r]", {"p": (1, 5), "r": (1, 4)}),
    "conv1d_d2": ("O[p] += I[p+2*r] * W[r]", {"p": (1, 5), "r": (1, 3)}),
    "conv2d": ("O[k,p,q] += I[c,p+r,q+s] * W[k,c,r,s]", {"k": (1, 1), "c": (1, 1), "p": (1, 3), "q": (1, 3),
                                                          "r": (1, 2), "s": (1, 2)}),
    "conv2d_s2": ("O[p,q] += I[2*p+r,2*q+s] * W[r,s]", {"p": (1, 2), "q": (1, 2), "r": (1, 2), "s": (1, 2)}),
    "axis3": ("O[p] += I[p+r+u] * W[r,u]", {"p": (1, 4), "r": (1, 3), "u": (1, 3)}),
    "bmm": ("Z[b,m,n] += A[b,m,k] * B[b,k,n]", {"b": (1, 2), "m": (1, 3), "n": (1, 3), "k": (1, 3)}),
}
# Odd but legal inputs (the "hostile" kind): repeated index, skewed axis, three operands, all-ones.
ODD = {
    "diag": ("Z[m] += A[m,m] * B[m,k]", {"m": (1, 4), "k": (1, 4)}),
    "skew": ("O[p] += I[p+r,p] * W[r]", {"p": (1, 4), "r": (1, 3)}),
    "skew_mk": ("Z[m] += A[m,m+k] * B[k]", {"m": (1, 4), "k": (1, 4)}),
    "skew_ru": ("O[p] += I[p+r+u,p] * W[r,u]", {"p": (1, 3), "r": (1, 2), "u": (1, 2)}),
    "three": ("Z[m] += A[m] * B[m] * C[m]", {"m": (1, 6)}),
    "rowsum": ("Y[m] += X[m,k]", {"m": (1, 5), "k": (1, 5)}),
    "ones": ("Z[m,n] += A[m,k] * B[k,n]", {"m": (1, 1), "n": (1, 1), "k": (1, 1)}),
    "bcast": ("Z[m,n] += A[m,k] * B[k]", {"m": (1, 4), "n": (1, 3), "k": (1, 3)}),
}
MESH_EINSUMS = ["matmul", "matmul", "matvec", "outer", "conv1d_k", "conv1d", "conv1d_s2", "conv1d_d2", "bmm",
                "diag", "diag2", "skew", "skew_ru"]
# The mesh kind's einsums: the plain ones, two diagonals, a skewed axis and one with a window hidden in it.
MESH_TABLE = {**EINSUMS, "diag": ODD["diag"], "diag2": ("Z[m,n] += A[2*m,m] * B[m,n]", {"m": (1, 3), "n": (1, 3)}),
              "skew": ODD["skew"], "skew_ru": ODD["skew_ru"]}
REUSE = [("all",), ("input",), ("output",), ("none",)]
CLOCKS = [Fraction(1), Fraction(1), Fraction(2), Fraction(3), Fraction(1, 2), Fraction(1, 3), Fraction(3, 2), Fraction(0)]

WIDE_BUDGET = 40_000  # buffer measurements (one events replay each) per wide brute force: ~10-20 s
SPATIAL_BUDGET = 1_500  # nests (x keep choices when replayed directly) per spatial brute force
EVENTS_MACS = 400  # replay events and data only on problems this small


@dataclass(frozen=True)
class Case:
    seed: int
    kind: str
    name: str
    workload: Workload
    architecture: Architecture
    homes: tuple[tuple[str, str], ...]
    objective: bf.Objective = bf.Objective()

    def options(self) -> SolveOptions:
        o = self.objective
        return SolveOptions(objective=o.kind, min_utilization=o.min_utilization, workers=1, seed=0, time_limit=60)

    def describe(self) -> str:
        a = self.architecture
        lv = ", ".join(
            f"{l.name}(cap={l.capacity}"
            + (f", link={l.link.lines} {l.link.input_clocks_per_word}/{l.link.output_clocks_per_word}" if l.link else "")
            + (", mesh=" + "x".join(f"{m.name}:{m.size}{list(m.may_reuse)}"
                                    + (f"must{list(m.must_reuse)}" if m.must_reuse else "")
                                    + "".join(f"[{r}]" for r in m.split_bounds) for m in l.mesh)
               if l.mesh else "") + ")"
            for l in a.levels)
        obj = self.objective
        o = obj.kind + (f">={obj.min_utilization}" if obj.min_utilization is not None else "")
        return (f"{self.workload.einsum.text()} {dict(self.workload.extents)}; {lv}; block={dict(a.compute.block)} "
                f"clocks={a.compute.clocks_per_call} double={a.double_buffering}; homes={dict(self.homes)}; obj={o}")


# --------------------------------------------------------------------------- sizes


def wide_cost(w: Workload, arch: Architecture, homes, held=frozenset()) -> int:
    """Buffer measurements the wide brute force makes: nests x buffers (tensor, level, position)."""
    J, D = arch.depth - 1, len(w.dims)
    home_of = {t: arch.index(dict(homes).get(t, arch.levels[0].name)) for t in w.tensor_names}
    buffers = sum(max(0, J - home_of[t]) for t in w.tensor_names) * (J * D + 1)
    per_dim = [[(e,) * J] if d in held else bw.chains(e, J) for d, e in w.extents]
    nests = 0
    for combo in itertools.product(*per_dim):
        tiles = dict(zip(w.dims, combo))
        nests += math.prod(len(bw.orders(w, tiles, i)) for i in range(1, J + 1))
        if nests * buffers > 10 * WIDE_BUDGET:
            break
    return nests * max(buffers, 1)


def spatial_cost(w: Workload, arch: Architecture, homes) -> int:
    nests, schedules = bfs.family_size(w, arch, dict(homes))
    return nests if bfs._composable(w, arch, dict(homes)) else schedules


# --------------------------------------------------------------------------- random cases


def _draw_workload(rng: random.Random, table: dict, name: str, scale: float) -> Workload:
    text, ranges = table[name]
    ext = {}
    for d, (lo, hi) in ranges.items():
        hi = max(lo, round(hi * scale))
        ext[d] = rng.randint(lo, hi) if rng.random() < 0.85 else rng.choice([lo, hi])
    return Workload.from_text(name, text, ext)


def _lean_words(w: Workload, t: str) -> int:
    """A tensor's words with every dim at 1 (the smallest tile any schedule may use)."""
    return w.tensor(t).words({d: 1 for d in w.dims})


def _architecture(rng: random.Random, w: Workload, depth: int, homes: dict, meshes: dict) -> Architecture:
    names = [f"L{depth - 1 - i}" for i in range(depth)]
    double = rng.random() < 0.2
    J = depth - 1
    home_at = {t: names.index(homes.get(t, names[0])) for t in w.tensor_names}
    caps: list[int | None] = [None if rng.random() < 0.85 else
                              sum(w.tensor_words(t) for t in w.tensor_names if home_at[t] == 0) + rng.randint(0, 30)]
    for i in range(1, depth):
        home_words = sum(w.tensor_words(t) for t in w.tensor_names if home_at[t] == i)
        below = [t for t in w.tensor_names if home_at[t] < i]
        lean = sum(_lean_words(w, t) * (2 if double else 1) for t in below) if i == J else 0
        roll = rng.random()
        if i < J and roll < 0.3:
            caps.append(None if home_words == 0 else home_words + rng.randint(0, 20))
        elif i == J:
            slack = rng.choice([-1, 0, 0, 1, 1, 2, 3, 4, 6, 10, 20, 40])
            caps.append(max(1, home_words + lean + slack))
        else:
            caps.append(max(1, home_words + rng.choice([0, 1, 2, 4, 6, 8, 12, 20, 40])))
    clocks = rng.choice([Fraction(1), Fraction(1), Fraction(1), Fraction(1, 2), Fraction(2), Fraction(3, 2)])
    block = ()
    free = [d for d, e in w.extents if e > 1]
    if free and rng.random() < 0.2:
        block = ((rng.choice(free), rng.choice([2, 2, 3, 4])),)
    levels = []
    for i in range(depth):
        link = None
        if i > 0:
            lines = rng.choice([SHARED, SHARED, SEPARATE])
            link = Link(rng.choice(CLOCKS), rng.choice(CLOCKS), lines)
        levels.append(Level(names[i], caps[i], link, mesh=meshes.get(i, ())))
    return Architecture("fuzz", tuple(levels), Compute(block, clocks), double)


def _homes(rng: random.Random, w: Workload, depth: int, lowest: int) -> dict[str, str]:
    """A random tensor or two homed at a level from 1 to ``lowest`` (levels named L{depth-1-i})."""
    homes = {}
    if depth >= 3 and lowest >= 1 and rng.random() < 0.35:
        for t in rng.sample(list(w.tensor_names), rng.choice([1, 1, 2])):
            homes[t] = f"L{depth - 1 - rng.randint(1, lowest)}"
    return homes


def _objective(rng: random.Random) -> bf.Objective:
    roll = rng.random()
    if roll < 0.8:
        return bf.Objective("time")
    if roll < 0.9:
        return bf.Objective("words")
    return bf.Objective("words", min_utilization=rng.choice([Fraction(1, 4), Fraction(1, 2), Fraction(1)]))


def flat_case(seed: int, odd: bool = False) -> Case:
    rng = random.Random(seed * 7919 + (1 if odd else 0))
    depth = rng.choice([2, 2, 3, 3, 3, 4, 4, 5]) if not odd else rng.choice([2, 3, 3, 4])
    table = ODD if odd else EINSUMS
    name = rng.choice(sorted(table))
    best = None
    for attempt in range(12):
        scale = {2: 2.0, 3: 1.0, 4: 0.6, 5: 0.5}[depth] * rng.choice([0.6, 0.8, 1.0])
        w = _draw_workload(rng, table, name, scale)
        homes = _homes(rng, w, depth, depth - 2 if rng.random() < 0.85 else depth - 1)
        a = _architecture(rng, w, depth, homes, {})
        cost = wide_cost(w, a, homes)
        if cost <= WIDE_BUDGET and (best is None or cost > best[0]):
            best = (cost, w, a, homes)
    if best is None:  # nothing within budget: all-ones extents of the same einsum
        w = Workload.from_text(name, table[name][0], {d: 1 for d in table[name][1]})
        homes = {}
        best = (0, w, _architecture(rng, w, depth, homes, {}), homes)
    _, w, a, homes = best
    return Case(seed, "odd" if odd else "flat", name, w, a, tuple(sorted(homes.items())), _objective(rng))


def _split_bounds(rng: random.Random, meshes: dict, dims) -> dict:
    """Some axes get split bounds (AccelForge's loop_bounds) over the einsum's dimensions (own stream: the
    other draws of a seed are unchanged)."""
    out = {}
    for s, axes in meshes.items():
        drawn = []
        for ax in axes:
            rules = ()
            if rng.random() < 0.2:
                names = tuple(d for d in dims if rng.random() < 0.5) or (rng.choice(list(dims)),)
                rules = (SplitBound(names, rng.choice(SPLIT_BOUND_OPERATORS), rng.choice([1, 1, 2, 2, 3, 4])),)
            drawn.append(dataclasses.replace(ax, split_bounds=rules))
        out[s] = tuple(drawn)
    return out


def mesh_case(seed: int) -> Case:
    rng = random.Random(seed * 104729 + 5)
    depth = rng.choice([2, 2, 3, 3, 3, 4])
    two = depth >= 3 and rng.random() < 0.3
    if two:
        meshed = sorted(rng.sample(range(1, depth), 2))
    else:
        meshed = [rng.choice(range(1, depth))]
    meshes = {}
    for s in meshed:
        shape = rng.choice([(2,), (3,), (4,), (5,), (2, 2), (2, 3)] if not two else [(2,), (3,), (2, 2)])
        axes = []
        for name, size in zip("xy", shape):
            must = ()
            if rng.random() < 0.15:
                must = rng.choice([("input",), ("output",), ("A",), ("B",), ("W",)])
            axes.append(MeshAxis(name + str(s), size, rng.choice(REUSE), must))
        meshes[s] = tuple(axes)
    name = rng.choice(MESH_EINSUMS)
    meshes = _split_bounds(random.Random(seed * 7919 + 11), meshes, MESH_TABLE[name][1])
    best = None
    for attempt in range(12):
        scale = {2: 2.0, 3: 1.0, 4: 0.6}[depth] * rng.choice([0.6, 0.8, 1.0])
        w = _draw_workload(rng, MESH_TABLE, name, scale)
        # homes above the outermost meshed level only (a home is whole at its level)
        homes = _homes(rng, w, depth, meshed[0] - 1)
        a = _architecture(rng, w, depth, homes, meshes)
        # must_reuse names: drop those not in this workload (keeps the architecture valid)
        cost = spatial_cost(w, a, homes)
        if cost <= SPATIAL_BUDGET and (best is None or cost > best[0]):
            best = (cost, w, a, homes)
    if best is None:
        w = Workload.from_text(name, MESH_TABLE[name][0], {d: rng.choice([1, 2]) for d in MESH_TABLE[name][1]})
        homes = {}
        best = (0, w, _architecture(rng, w, depth, homes, meshes), homes)
    _, w, a, homes = best
    return Case(seed, "mesh", name, w, a, tuple(sorted(homes.items())), _objective(rng))


# --------------------------------------------------------------------------- the checks


@dataclass
class Outcome:
    label: str  # ok / feasible / discrepancy / skipped
    status: str = ""
    flags: list[str] = field(default_factory=list)
    detail: str = ""


def _value(objective: bf.Objective, figures) -> tuple:
    key = objective.key(figures)
    if key is not None and objective.kind == "time":
        key = (key[0], int(key[1]))
    return key


def _oracle_value(result) -> tuple | None:
    if result is None:
        return None
    v = result.value
    return (v[0], int(v[1])) if len(v) == 2 else v


def _check_replays(case: Case, sched, flags: list[str], small: bool, data: bool) -> None:
    counted = replay(sched, "count").figures
    diff = differences(sched.predicted, counted)
    if diff:
        flags.append(f"PRED!=COUNT {diff[:3]}")
    if small:
        ev = replay(sched, "events").figures
        diff = differences(sched.predicted, ev)
        if diff:
            flags.append(f"PRED!=EVENTS {diff[:3]}")
    if data:
        r = replay(sched, "data")
        if not r.data_ok:
            flags.append(f"DATA-MISMATCH err={r.max_abs_error}")
        r = replay(sched, "events-data") if small else r
        if not r.data_ok:
            flags.append(f"EVENTS-DATA-MISMATCH err={r.max_abs_error}")
    # JSON round trip: same schedule, same replay. The file format takes an unbounded level only at the
    # top (spec/load.py) while Architecture() takes one anywhere: such a schedule is saved but not read back.
    if any(lv.capacity is None for lv in sched.architecture.levels[1:]):
        flags_note = "json-skipped(middle unbounded)"
        return flags_note
    text = dumps_schedule(sched)
    loaded = schedule_from_dict(json.loads(text), "<fuzz>")
    if loaded.levels != sched.levels or loaded.homes != sched.homes:
        flags.append("JSON-LEVELS-DIFFER")
    if differences(sched.predicted, loaded.predicted):
        flags.append("JSON-PREDICTED-DIFFER")
    again = replay(loaded, "count").figures
    if differences(counted, again):
        flags.append(f"JSON-REPLAY-DIFFER {differences(counted, again)[:3]}")
    return None


def run_case(case: Case, data_every: int = 5) -> Outcome:
    w, a, homes = case.workload, case.architecture, dict(case.homes)
    obj = case.objective
    meshed = any(lv.instances > 1 for lv in a.levels)
    t0 = time.perf_counter()
    # Oracles
    whole_arch = unsplit.unmeshed(a) if meshed else a
    whole = bw.brute_force(w, whole_arch, homes, obj) if wide_cost(w, whole_arch, homes) <= 3 * WIDE_BUDGET else "skip"
    if meshed and not unsplit.unsplit_meets_bounds(Problem(w, a)):
        whole = None  # a split bound that a schedule without splits breaks: none of them is legal
    whole_v = None if whole in (None, "skip") else _oracle_value(whole)
    fam = bfs.brute_force_spatial(w, a, homes, obj) if meshed else None
    fam_v = _oracle_value(fam)
    t_oracle = time.perf_counter() - t0
    t1 = time.perf_counter()
    flags: list[str] = []
    try:
        r = solve(Problem(w, a, tuple(homes.items())), options=case.options())
    except UnsupportedProblem as e:  # a clean, documented refusal: no claim to check
        return Outcome("unsupported", "UnsupportedProblem", [], str(e)[:200])
    except NoScheduleInFamily as e:
        msg = " ".join(str(e).split())[:200]
        if meshed and fam is not None:
            flags.append(f"NO-SCHEDULE-IN-FAMILY but spatial family has {fam_v}")
        if meshed and obj.kind in unsplit.OBJECTIVES and whole not in (None, "skip"):
            flags.append(f"NO-SCHEDULE-IN-FAMILY but a schedule without splits has {whole_v}")
        if not meshed:
            held = _held(w, e.restrictions if hasattr(e, "restrictions") else ())
            famw = bw.brute_force(w, a, homes, obj, held)
            if famw is not None:
                flags.append(f"NO-SCHEDULE-IN-FAMILY but family oracle has {_oracle_value(famw)}")
        note = f"whole={whole_v if whole != 'skip' else 'skip'} " if whole is not None else "whole=None "
        return Outcome("discrepancy" if flags else "ok", "NoScheduleInFamily", flags, note + msg)
    except InfeasibleError as e:
        msg = " ".join(str(e).split())[:200]
        if whole not in (None, "skip"):
            flags.append(f"INFEASIBLE but whole family has {whole_v}")
        if meshed and fam is not None:
            flags.append(f"INFEASIBLE but spatial family has {fam_v}")
        if obj.min_utilization is None and whole == "skip" and not meshed:
            flags.append("INFEASIBLE unchecked (oracle skipped)")
        return Outcome("discrepancy" if flags else "ok", "infeasible", flags, msg)
    except Exception as e:  # noqa: BLE001 - a crash is a finding
        return Outcome("discrepancy", "CRASH", [f"CRASH {type(e).__name__}: {e}"], traceback.format_exc(limit=3))
    t_solve = time.perf_counter() - t1
    sched = r.schedule
    got = _value(obj, sched.predicted)
    status = r.status
    restr = "; ".join(r.family_restrictions)
    if meshed and any(x.startswith("spatial splits: window dimensions") for x in r.family_restrictions):
        fam = _equal_window_parts_above(w, a, homes, obj)  # the solver's family then: equal parts above L0
        fam_v = _oracle_value(fam)
    if status == "FEASIBLE":
        out = Outcome("feasible", status)
    else:
        out = Outcome("ok", status)
    # (c) never below an oracle over a family that contains the solver's schedule
    if meshed:
        # The solver's family: the spatial one and, for time and words, every schedule without a split at
        # every position (solve/unsplit.py), whose optimum is the mesh-free whole family's.
        union = obj.kind in unsplit.OBJECTIVES
        options = [v for v in (fam_v, whole_v if union else None) if v is not None]
        fam_u = min(options) if options else None
        unknown = union and whole == "skip"  # the unsplit part was not brute-forced
        if fam_u is None:
            if not unknown:
                flags.append(f"SOLVED {got} but spatial family empty")
        elif got < fam_u and unknown:
            out.detail = "[unsplit family not brute-forced] "
        elif got < fam_u:
            flags.append(f"BELOW-SPATIAL-ORACLE {got} < {fam_u}")
        if status == "OPTIMAL":
            if fam_u is not None and got != fam_u and not unknown:
                flags.append(f"WRONG-OPTIMAL vs spatial family {got} != {fam_u}")
            if whole_v is not None and got > whole_v:
                flags.append(f"WRONG-OPTIMAL: a mesh-free schedule is better {whole_v} < {got}")
        elif status == "OPTIMAL_IN_FAMILY":
            if fam_u is not None and got != fam_u and not (unknown and got < fam_u):
                flags.append(f"WRONG-IN-FAMILY {got} != spatial family {fam_u}")
            if whole_v is not None and whole_v < got:
                out.detail = f"(whole w/o mesh better: {whole_v} < {got}; {restr})"
    else:
        if whole is None:
            flags.append(f"SOLVED {got} but wide oracle found nothing")
        elif whole_v is not None and got < whole_v:
            flags.append(f"BELOW-WIDE-ORACLE {got} < {whole_v}")
        if status == "OPTIMAL" and whole_v is not None and got != whole_v:
            flags.append(f"WRONG-OPTIMAL {got} != whole {whole_v}")
        if status == "OPTIMAL_IN_FAMILY":
            held = _held(w, r.family_restrictions)
            other = [x for x in r.family_restrictions if not x.startswith("filter windows held whole")]
            if whole_v is not None and got != whole_v:
                out.detail = f"(whole better: {whole_v} < {got}; {restr})"
            if held and not other:
                famw = bw.brute_force(w, a, homes, obj, held)
                famw_v = _oracle_value(famw)
                if famw_v != got:
                    flags.append(f"WRONG-IN-FAMILY {got} != held-family oracle {famw_v} (held {sorted(held)})")
            elif other and whole_v is not None and got != whole_v:
                out.detail += " [family not brute-forced]"
    small = w.macs <= EVENTS_MACS and all(lv.instances <= 6 for lv in a.levels)
    note = _check_replays(case, sched, flags, small, data=(case.seed % data_every == 0))
    if r.mismatches:
        flags.append(f"RESULT-MISMATCHES {r.mismatches[:2]}")
    if flags:
        out.label = "discrepancy"
    out.flags = flags
    out.detail = (f"got={got} whole={whole_v if whole != 'skip' else 'skip'} fam={fam_v} "
                  f"oracle {t_oracle:.1f}s solve {t_solve:.1f}s " + out.detail)
    if restr:
        out.detail += f" restr=[{restr}]"
    if note:
        out.detail += f" {note}"
    return out


def _equal_window_parts_above(w: Workload, a, homes, obj):
    """The spatial oracle with window dimensions in equal parts above L0 (what the solver searches beyond its
    row and class limits, a named restriction)."""
    bfs.WINDOW_PARTS = "equal_above"
    try:
        return bfs.brute_force_spatial(w, a, homes, obj)
    finally:
        bfs.WINDOW_PARTS = "all"


def _held(w: Workload, restrictions) -> frozenset[str]:
    """The dims the solver holds whole when it names that restriction: the ones it names
    ("filter windows held whole: r, s (why...)"), and bf.pinned_dims (axes over three dims) unless the
    restriction is a skewed axis's (model/skew.py holds exactly the dims it names)."""
    held: set[str] = set()
    for x in restrictions:
        if x.startswith("filter windows held whole: "):
            named = x[len("filter windows held whole: "):].split(" (")[0]
            held |= {d.strip() for d in named.split(",")}
            if "a window dimension that also indexes another axis" not in x:  # a skewed axis holds what it names
                held |= {d for d in bf.pinned_dims(w) if w.extent[d] > 1}
    return frozenset(d for d in held if d in w.extent)


CASES = {"flat": flat_case, "mesh": mesh_case, "odd": lambda s: flat_case(s, odd=True)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed-from", type=int, default=0)
    ap.add_argument("--seed-to", type=int, default=50)
    ap.add_argument("--kind", choices=sorted(CASES) + ["all"], default="all")
    ap.add_argument("--only-seed", type=int, nargs="*", default=None)
    ap.add_argument("--budget", type=float, default=1.0,
                    help="scale the brute forces' budgets (larger extents and meshes, slower cases)")
    args = ap.parse_args(argv)
    global WIDE_BUDGET, SPATIAL_BUDGET
    WIDE_BUDGET = int(WIDE_BUDGET * args.budget)
    SPATIAL_BUDGET = int(SPATIAL_BUDGET * args.budget)
    kinds = sorted(CASES) if args.kind == "all" else [args.kind]
    counts: dict[str, collections.Counter] = {k: collections.Counter() for k in kinds}
    statuses: dict[str, collections.Counter] = {k: collections.Counter() for k in kinds}
    bad = []
    seeds = args.only_seed if args.only_seed else range(args.seed_from, args.seed_to)
    for seed in seeds:
        for kind in kinds:
            try:
                case = CASES[kind](seed)
            except Exception as e:  # noqa: BLE001
                print(f"{kind} {seed}: GEN-ERROR {type(e).__name__}: {e}", flush=True)
                counts[kind]["gen-error"] += 1
                continue
            t = time.perf_counter()
            try:
                out = run_case(case)
            except Exception as e:  # noqa: BLE001 - an oracle or replay crash
                out = Outcome("discrepancy", "HARNESS-CRASH", [f"{type(e).__name__}: {e}"], traceback.format_exc(limit=4))
            counts[kind][out.label] += 1
            statuses[kind][out.status] += 1
            line = f"{kind} {seed} {case.name}: {out.label} {out.status} {out.detail} ({time.perf_counter() - t:.1f}s)"
            if out.flags:
                line += "\n    " + "\n    ".join(out.flags) + "\n    case: " + case.describe()
                bad.append((kind, seed))
            print(line, flush=True)
    for kind in kinds:
        print(f"summary {kind}: {dict(counts[kind])} statuses {dict(statuses[kind])}")
    print(f"discrepancies: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
