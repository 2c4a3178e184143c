"""Random small chains with random legal fused schedules: events == count, data == numpy."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mapsearch.schedule.figures import differences
from mapsearch.schedule.fused import FusedSchedule
from mapsearch.schedule.fused_json import fused_from_dict, fused_to_dict, fused_violations
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.fused import replay_fused
from mapsearch.spec.architecture import Architecture, Level, Link
from mapsearch.spec.workload import WorkloadGraph

CHAINS = [
    ["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n] * C[n,p]"],
    ["S[i,j] += Q[i,d] * K[j,d]", "O[i,e] += S[i,j] * V[j,e]"],
    ["H[m,n] += X[m,k] * W[k,n]", "G[m,p] += H[m,n] * U[n,p]", "Y[m,q] += G[m,p] * Z[p,q]"],
    ["T[i,j,f] += A[i,j,k] * C[k,f]", "Y[i,f] += T[i,j,f] * B[j,f]"],
]


@st.composite
def fused_schedules(draw):
    texts = draw(st.sampled_from(CHAINS))
    g0 = WorkloadGraph.from_texts("c", texts, {d: 1 for d in "abcdefghijklmnopqrstuvwxyz"})
    dims = [d for d, _ in g0.extents]
    ext = {d: draw(st.integers(1, 4)) for d in dims}
    g = WorkloadGraph.from_texts("c", texts, ext)
    depth = draw(st.integers(2, 3))
    names = ["DRAM", "L1", "L0"][-depth:] if depth == 3 else ["DRAM", "L0"]
    levels = [Level(names[0], None)]
    for i in range(1, depth):
        levels.append(Level(names[i], 10**6, Link(Fraction(draw(st.sampled_from([1, 2]))), Fraction(1),
                                                 draw(st.sampled_from(["shared", "separate"])))))
    a = Architecture("r", tuple(levels))
    f = draw(st.integers(0, depth - 1))
    shared = g.shared_dims
    # Shared tiles and order at levels 1..f (common); the others whole there.
    common = [{d: ext[d] for d in dims}]
    orders: list[list[str]] = [[]]
    for i in range(1, f + 1):
        common.append({d: draw(st.integers(1, common[-1][d])) for d in shared})
        orders.append(draw(st.permutations(list(shared))))
    inter = set(g.intermediates)
    stages = []
    for e in range(len(g.einsums)):
        w = g.stage(e)
        tn = w.tensor_names
        homes = {}
        for t in tn:
            homes[t] = names[f] if t in inter else names[draw(st.integers(0, f))]
        lms = [LevelMapping(names[0], tuple((d, ext[d]) for d in w.dims))]
        for i in range(1, depth):
            if i <= f:
                tile = {d: (common[i][d] if d in shared else ext[d]) for d in w.dims}
                order = list(orders[i]) + [d for d in w.dims if d not in shared]
            else:
                parent = lms[-1].tile_extents
                tile = {d: draw(st.integers(1, parent[d])) for d in w.dims}
                order = draw(st.permutations(list(w.dims)))
            home_of = {t: names.index(homes[t]) for t in tn}
            keep = frozenset(t for t in tn if i > home_of[t] and (i == depth - 1 or draw(st.booleans())))
            lms.append(LevelMapping(names[i], tuple((d, tile[d]) for d in w.dims), tuple(order), keep))
        stages.append(Schedule(w, a, tuple(lms), tuple(homes.items())))
    return FusedSchedule(g, a, f, tuple(stages))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fused_schedules())
def test_events_count_data_agree(fs):
    assert fused_violations(fs) == []
    ev = replay_fused(fs, "events").figures
    co = replay_fused(fs, "count").figures
    assert differences(ev, co) == []
    assert ev.occupancy == co.occupancy
    data = replay_fused(fs, "data")
    assert data.data_ok, data.max_abs_error
    assert differences(data.figures, ev) == []
    # Intermediates never cross a link at or above the fusion level.
    for j, link in enumerate(ev.links, start=1):
        if j <= fs.fusion_level:
            assert not {t.tensor for t in link.tensors} & set(fs.graph.intermediates)
    # The file format round-trips.
    again = fused_from_dict(fused_to_dict(fs.with_predicted(ev)), "r.json")
    assert again == fs.with_predicted(ev)
