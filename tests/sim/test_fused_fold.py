"""The fused chain's folded count (mapsearch/sim/fused_count.py + walk_folded.py) counts what the tile walk counts.

Random small legal fused chains: two and three einsums, matmul and attention
chains, windows (stride, two dimensions on one axis), a rank-3 intermediate,
2-4 levels, every fusion level, remainder pieces, random orders, keeps and
homes, block ops, small capacities. The fold is forced on (``explicit_tiles``
0, or a random threshold so some stages fold and some walk); every figure
must equal the tile-by-tile walk's, and a level that overflows must overflow
in both with the same message. A share of them is also replayed event by
event. The features the fold must get right (forced run starts below ``f``,
reloaded outputs, intermediates kept below ``f``, remainders, 4 levels) are
counted over the random set, so a generator that stopped producing them fails.
"""

from __future__ import annotations

import random
import time
from fractions import Fraction

import pytest

from mapsearch.schedule.figures import differences
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.fused_json import fused_violations
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim import fused_count
from mapsearch.sim.errors import CapacityError
from mapsearch.sim.fused import replay_fused
from mapsearch.sim.fused_count import count_fused, fused_count_tiles
from mapsearch.sim.walk_folded import fold_counts
from mapsearch.spec.architecture import Architecture, Compute, Level, Link
from mapsearch.spec.workload import WorkloadGraph

WALK = 1 << 62  # explicit_tiles: every stage walked tile by tile
FOLD = 0  # every stage folded

CHAINS = [
    ["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n] * C[n,p]"],
    ["S[i,j] += Q[i,d] * K[j,d]", "O[i,e] += S[i,j] * V[j,e]"],
    ["H[m,n] += X[m,k] * W[k,n]", "G[m,p] += H[m,n] * U[n,p]", "Y[m,q] += G[m,p] * Z[p,q]"],
    ["T[i,j,f] += A[i,j,k] * C[k,f]", "Y[i,f] += T[i,j,f] * B[j,f]"],
    ["T[p] += I[2*p+r] * W[r]", "Y[q] += J[q+p] * T[p]"],
    ["T[p,u] += I[p+r+u] * W[r]", "Y[p] += T[p,u] * V[u]"],
    ["T[k,p] += I[p,r] * W[k,r]", "Y[j,p] += T[k,p] * V[j,k]"],
]
NAMES = ("L3", "L2", "L1", "L0")


def random_fused(rng: random.Random, capacities: bool = False) -> FusedSchedule | None:
    """A random fused schedule of one of ``CHAINS``; None when the draw breaks a rule of docs/fusion.md."""
    texts = rng.choice(CHAINS)
    g0 = WorkloadGraph.from_texts("c", texts, {d: 1 for d in "abcdefghijklmnopqrstuvwxyz"})
    dims = [d for d, _ in g0.extents]
    ext = {d: rng.randint(1, 9) for d in dims}
    g = WorkloadGraph.from_texts("c", texts, ext)
    depth = rng.randint(2, 4)
    names = NAMES[-depth:]
    caps = [None] * depth
    if capacities:
        caps = [None] + sorted((rng.randint(4, 200) for _ in range(depth - 1)), reverse=True)
    levels = [Level(names[0], None)]
    for i in range(1, depth):
        link = Link(Fraction(rng.choice([1, 2])), Fraction(1), rng.choice(["shared", "separate"]))
        levels.append(Level(names[i], caps[i] if capacities else 10**6, link))
    block = tuple((d, rng.randint(2, 3)) for d in dims if rng.random() < 0.2)
    a = Architecture("r", tuple(levels), Compute(block, Fraction(1)))
    f = rng.randint(0, depth - 1)
    shared = g.shared_dims
    common = [dict(ext)]
    orders: list[list[str]] = [[]]
    for i in range(1, f + 1):
        common.append({d: rng.randint(1, common[-1][d]) for d in shared})
        orders.append(rng.sample(list(shared), len(shared)))
    inter = set(g.intermediates)
    stages = []
    for e in range(len(g.einsums)):
        w = g.stage(e)
        tn = w.tensor_names
        home_of = {t: f if t in inter else rng.randint(0, f) for t in tn}
        lms = [LevelMapping(names[0], tuple((d, ext[d]) for d in w.dims))]
        for i in range(1, depth):
            if i <= f:
                tile = {d: (common[i][d] if d in shared else ext[d]) for d in w.dims}
                order = list(orders[i]) + [d for d in w.dims if d not in shared]
            else:
                parent = lms[-1].tile_extents
                tile = {d: rng.randint(1, parent[d]) for d in w.dims}
                order = rng.sample(list(w.dims), len(w.dims))
            keep = frozenset(t for t in tn if i > home_of[t] and (i == depth - 1 or rng.random() < 0.6))
            lms.append(LevelMapping(names[i], tuple((d, tile[d]) for d in w.dims), tuple(order), keep))
        stages.append(Schedule(w, a, tuple(lms), tuple((t, names[h]) for t, h in home_of.items())))
    fs = FusedSchedule(g, a, f, tuple(stages))
    return None if fused_violations(fs) else fs


def counted(fs: FusedSchedule, explicit_tiles: int, chunk: int | None = None):
    """The count's figures, or the overflow's message."""
    try:
        return count_fused(fs, chunk, explicit_tiles)
    except CapacityError as e:
        return f"CapacityError: {e}"


def _features(fs: FusedSchedule, figures) -> set[str]:
    """What of the fold's rules this case exercises."""
    out = set()
    f, depth = fs.fusion_level, fs.architecture.depth
    if depth == 4:
        out.add("4 levels")
    inter = set(fs.graph.intermediates)
    for st in fs.stages:
        wl = st.workload
        for i in range(f + 1, depth):
            kept = [t for t in wl.tensor_names if st.keeps(t, i)]
            if kept and any(st.tile_extents(j)[d] < wl.extent[d] for j in range(1, f + 1) for d in wl.dims):
                out.add("runs below f")
            if any(t in inter for t in kept) and i < depth - 1:
                out.add("intermediate kept in a sub-nest")
        for i in range(1, depth):
            tile, parent = st.tile_extents(i), st.tile_extents(i - 1)
            if any(parent[d] % tile[d] for d in wl.dims):
                out.add("remainder")
        # The fold differs from the plain single-einsum fold: the forced run starts count.
        if f > 0 and fold_counts(st, runs_below=f)[1] != fold_counts(st, runs_below=None)[1]:
            out.add("forced entries")
    if not isinstance(figures, str):
        for j, link in enumerate(figures.links, start=1):
            for tt in link.tensors:
                if tt.words_down and any(tt.tensor == e.output.name for e in fs.graph.einsums):
                    out.add("inter reload" if tt.tensor in inter else "output reload")
    else:
        out.add("overflow")
    return out


def test_fold_equals_walk_on_random_chains() -> None:
    rng = random.Random(20240611)
    seen: dict[str, int] = {}
    cases = 0
    while cases < 600:
        fs = random_fused(rng, capacities=rng.random() < 0.2)
        if fs is None:
            continue
        cases += 1
        walked = counted(fs, WALK, chunk=rng.choice([None, 5]))
        folded = counted(fs, FOLD)
        assert folded == walked, (cases, fs)
        mixed = counted(fs, rng.randint(1, 300))  # some stages fold, the others walk
        assert mixed == walked
        for feature in _features(fs, walked):
            seen[feature] = seen.get(feature, 0) + 1
    for feature in ("4 levels", "runs below f", "intermediate kept in a sub-nest", "remainder", "forced entries",
                    "output reload", "overflow"):
        assert seen.get(feature, 0) >= 10, (feature, seen)


def test_fold_equals_events_on_random_chains() -> None:
    rng = random.Random(7)
    cases = 0
    while cases < 80:
        fs = random_fused(rng)
        if fs is None:
            continue
        cases += 1
        ev = replay_fused(fs, "events").figures
        folded = count_fused(fs, None, FOLD)
        assert differences(ev, folded) == [], (cases, fs)
        assert ev.occupancy == folded.occupancy


def test_the_default_count_folds_a_large_stage(monkeypatch) -> None:
    """A chain of 2^28 innermost tiles per stage: counted folded (the tile walk is never entered) in well under a
    second, and its figures are those of the same nest with m scaled down by 2^14, times the scale, where the
    tile walk can check them."""
    texts = ["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n] * C[n,p]"]
    levels = (Level("DRAM", None), Level("L1", 10**9, Link(Fraction(1))), Level("L0", 10**9, Link(Fraction(1))))
    a = Architecture("big", levels)

    def chain(m: int) -> FusedSchedule:
        g = WorkloadGraph.from_texts("c", texts, {"m": m, "n": 4, "k": 4, "p": 4})
        stages = []
        for e in range(2):
            w = g.stage(e)
            lms = [LevelMapping("DRAM", tuple((d, w.extent[d]) for d in w.dims)),
                   LevelMapping("L1", tuple((d, 2 if d == "m" else w.extent[d]) for d in w.dims), w.dims,
                                frozenset(t for t in w.tensor_names if t in ("A", "Y"))),  # tiles of m only
                   LevelMapping("L0", tuple((d, 1 if d == "m" else 2) for d in w.dims), tuple(reversed(w.dims)),
                                frozenset(w.tensor_names))]
            stages.append(Schedule(w, a, tuple(lms), (("T", "L1"),) if "T" in w.tensor_names else ()))
        fs = FusedSchedule(g, a, 1, tuple(stages))
        assert fused_violations(fs) == []
        return fs

    big, small = chain(1 << 26), chain(1 << 12)
    assert fused_count_tiles(big) == 0 < fused_count_tiles(small)

    def no_walk(*args, **kwargs):
        raise AssertionError("a large stage must not be walked tile by tile")

    monkeypatch.setattr(fused_count, "_walk_stage", no_walk)
    t0 = time.perf_counter()
    got = replay_fused(big, "count").figures
    assert time.perf_counter() - t0 < 5
    monkeypatch.undo()
    want = count_fused(small, None, WALK)
    scale = 1 << 14
    for gl, wl in zip(got.links, want.links):
        assert {t.tensor: (t.words_down, t.words_up) for t in gl.tensors} == {
            t.tensor: (t.words_down * scale, t.words_up * scale) for t in wl.tensors}
    assert got.op_calls == want.op_calls * scale
    assert got.occupancy[1:] == want.occupancy[1:]


@pytest.mark.parametrize("f", [0, 1, 2])
def test_output_reloaded_below_f(f: int) -> None:
    """A final output kept below ``f`` with the reduction loop outside it: its partial sums are stored up and
    reloaded, and each run below ``f`` starts by entering its regions; fold, walk and events agree."""
    texts = ["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n] * C[n,p]"]
    g = WorkloadGraph.from_texts("c", texts, {"m": 7, "n": 5, "k": 3, "p": 6})
    levels = (Level("DRAM", None), Level("L2", None, Link(Fraction(1))), Level("L1", None, Link(Fraction(1))),
              Level("L0", None, Link(Fraction(1))))
    a = Architecture("r", levels)
    stages = []
    for e in range(2):
        w = g.stage(e)
        shared_tile = {"m": 3, "n": 5}
        lms = [LevelMapping("DRAM", tuple((d, w.extent[d]) for d in w.dims))]
        for i, name in enumerate(("L2", "L1", "L0"), start=1):
            if i <= f:
                tile = {d: shared_tile.get(d, w.extent[d]) if i == 1 else lms[-1].tile_extents[d] for d in w.dims}
                order = tuple(d for d in ("m", "n") if d in w.dims) + tuple(d for d in w.dims if d not in "mn")
            else:
                parent = lms[-1].tile_extents
                tile = {d: max(1, parent[d] // 2) for d in w.dims}
                order = tuple(sorted(w.dims, key=lambda d: d not in ("k", "n")))  # the reduction outside
            keep = frozenset(t for t in w.tensor_names if t != "T" or i > f)
            lms.append(LevelMapping(name, tuple((d, tile[d]) for d in w.dims), order, keep))
        stages.append(Schedule(w, a, tuple(lms), (("T", a.levels[f].name),) if "T" in w.tensor_names else ()))
    fs = FusedSchedule(g, a, f, tuple(stages))
    assert fused_violations(fs) == []
    folded = count_fused(fs, None, FOLD)
    assert folded == count_fused(fs, None, WALK)
    ev = replay_fused(fs, "events").figures
    assert differences(ev, folded) == [] and ev.occupancy == folded.occupancy
    y_down = [tt.words_down for link in folded.links for tt in link.tensors if tt.tensor == "Y"]
    assert sum(y_down) > 0  # Y's partial sums come back down
