"""mode="count": the vectorised walk counts what the contract says, as the event replay does.

Also home of the shared test helpers (``test_data`` imports them): small
workloads, random legal schedules (hypothesis) and a naive counter that walks
the nest with Python loops and dicts straight from the contract's replay
semantics, an oracle that does not depend on the event replay.
"""

from __future__ import annotations

import importlib
import itertools
import math
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mapsearch.schedule.figures import differences
from mapsearch.sim.errors import CapacityError
from mapsearch.sim.pieces import piece_tables, tile_chunks
from mapsearch.sim.walk import count_figures
from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.spec.architecture import SEPARATE, SHARED, Architecture, Compute, Level, Link
from mapsearch.spec.workload import Workload


LEVEL_NAMES = ("DRAM", "L2", "L1", "L0")


def matmul(m: int, n: int, k: int) -> Workload:
    return Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": m, "n": n, "k": k})


def conv1d(k: int, c: int, p: int, r: int, stride: int, dil: int) -> Workload:
    text = f"O[k,p] += I[c,p*{stride}+r*{dil}] * W[k,c,r]"
    return Workload.from_text("conv1d", text, {"k": k, "c": c, "p": p, "r": r})


def conv2d(p: int, q: int, r: int, s: int, stride: int, dil: int) -> Workload:
    text = f"O[p,q] += I[p*{stride}+r*{dil},q*{stride}+s*{dil}] * W[r,s]"
    return Workload.from_text("conv2d", text, {"p": p, "q": q, "r": r, "s": s})


def architecture(depth: int, capacities=None, links=None, block=(), clocks=Fraction(1), double=False) -> Architecture:
    names = LEVEL_NAMES[-depth:]
    capacities = capacities or [None] * depth
    links = links or [Link()] * depth
    levels = tuple(Level(names[i], capacities[i], None if i == 0 else links[i]) for i in range(depth))
    return Architecture("arch", levels, Compute(tuple(block), clocks), double)


def schedule(wl: Workload, arch: Architecture, tiles, orders, keeps, homes=()) -> Schedule:
    """``tiles[i]``/``orders[i]``/``keeps[i]`` for levels 1.. (the top is the whole space)."""
    levels = [LevelMapping(arch.levels[0].name, tuple(wl.extents))]
    for i in range(1, arch.depth):
        levels.append(
            LevelMapping(arch.levels[i].name, tuple((d, tiles[i - 1][d]) for d in wl.dims), tuple(orders[i - 1]), frozenset(keeps[i - 1]))
        )
    return Schedule(wl, arch, tuple(levels), tuple(homes))


# --------------------------------------------------------------------------- strategies

workloads = st.one_of(
    st.builds(matmul, st.integers(1, 7), st.integers(1, 7), st.integers(1, 7)),
    st.builds(conv1d, st.integers(1, 3), st.integers(1, 3), st.integers(1, 6), st.integers(1, 3), st.integers(1, 3), st.integers(1, 2)),
    st.builds(conv2d, st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.integers(1, 2), st.integers(1, 2)),
)

clock_values = st.sampled_from([Fraction(1), Fraction(1, 2), Fraction(2), Fraction(3)])
links = st.builds(Link, clock_values, clock_values, st.sampled_from([SHARED, SEPARATE]))


@st.composite
def schedules(draw, workload=workloads, depths=st.integers(2, 4)) -> Schedule:
    """A legal schedule: random tiles (remainders allowed), orders, homes, bypass, block op, buffering."""
    wl = draw(workload)
    depth = draw(depths)
    link_list = [None] + [draw(links) for _ in range(depth - 1)]
    block = tuple((d, draw(st.integers(1, 3))) for d in wl.dims if draw(st.booleans()))
    arch = architecture(depth, None, link_list, block, draw(clock_values), draw(st.booleans()))
    tiles, orders = [], []
    parent = wl.extent
    for _ in range(1, depth):
        tile = {d: draw(st.integers(1, parent[d])) for d in wl.dims}
        tiles.append(tile)
        orders.append(draw(st.permutations(wl.dims)))
        parent = tile
    homes, keeps = [], [set() for _ in range(depth - 1)]
    for t in wl.tensor_names:
        home = draw(st.integers(0, depth - 1))
        if home:
            homes.append((t, arch.levels[home].name))
        for i in range(home + 1, depth):
            if i == depth - 1 or draw(st.booleans()):
                keeps[i - 1].add(t)
    return schedule(wl, arch, tiles, orders, keeps, homes)


# --------------------------------------------------------------------------- naive oracle


def _pieces(lo: int, size: int, t: int):
    return [(lo + x, min(t, size - x)) for x in range(0, size, t)]


def naive_steps(s: Schedule):
    """Yield, per innermost step, the box of every level: ``boxes[i][d] = (lo, size)``."""
    wl = s.workload
    depth = len(s.levels)

    def rec(i, boxes):
        if i == depth:
            yield boxes
            return
        tile = s.tile_extents(i)
        order = s.levels[i].order
        parent = boxes[-1]
        lists = [_pieces(*parent[d], tile[d]) for d in order]
        for combo in itertools.product(*lists):
            box = dict(zip(order, combo))
            yield from rec(i + 1, boxes + [box])

    yield from rec(1, [{d: (0, e) for d, e in wl.extents}])


def _region(access, box):
    return tuple(
        (sum(c * box[d][0] for d, c in ix.terms), sum(c * (box[d][0] + box[d][1] - 1) for d, c in ix.terms))
        for ix in access.indices
    )


def naive_figures(s: Schedule) -> Figures:
    """Figures by plain nested loops over the contract's replay semantics."""
    wl, arch = s.workload, s.architecture
    depth = arch.depth
    names = wl.tensor_names
    down = {(j, t): 0 for j in range(depth) for t in names}
    up = dict(down)
    prev, seen, largest, changes = {}, {}, {}, {}
    calls = 0
    for boxes in naive_steps(s):
        calls += math.prod(-(-boxes[-1][d][1] // arch.compute.block_extent(d)) for d in wl.dims)
        for i in range(1, depth):
            for t in names:
                if not s.keeps(t, i):
                    continue
                r = _region(wl.tensor(t), boxes[i])
                words = math.prod(hi - lo + 1 for lo, hi in r)
                largest[i, t] = max(largest.get((i, t), 0), words)
                if prev.get((i, t)) == r:
                    continue
                changes[i, t] = changes.get((i, t), 0) + 1
                src = s.keeper_above(t, i)
                path = range(src + 1, i + 1)
                if wl.is_output(t):
                    old = prev.get((i, t))
                    if old is not None:
                        for j in path:
                            up[j, t] += math.prod(hi - lo + 1 for lo, hi in old)
                    if r in seen.setdefault((i, t), set()):
                        for j in path:
                            down[j, t] += words
                    seen[i, t].add(r)
                else:
                    for j in path:
                        down[j, t] += words
                prev[i, t] = r
    for i in range(depth - 1, 0, -1):  # final stores, innermost first
        for t in names:
            if s.keeps(t, i) and wl.is_output(t):
                for j in range(s.keeper_above(t, i) + 1, i + 1):
                    up[j, t] += math.prod(hi - lo + 1 for lo, hi in prev[i, t])
    occupancy = []
    for i in range(depth):
        occ = sum(wl.tensor_words(t) for t in names if s.home(t) == i)
        for t in names:
            if s.keeps(t, i):
                buffers = 2 if arch.double_buffering and changes[i, t] > 1 else 1
                occ += buffers * largest[i, t]
        occupancy.append((arch.levels[i].name, occ))
    links = []
    for j in range(1, depth):
        wd = sum(down[j, t] for t in names)
        wu = sum(up[j, t] for t in names)
        links.append(
            LinkFigures(arch.link_name(j), wd, wu, Fraction(arch.levels[j].link.time(wd, wu)), tuple(TensorTraffic(t, down[j, t], up[j, t]) for t in names))
        )
    return Figures(tuple(links), calls, calls * Fraction(arch.compute.clocks_per_call), wl.macs, arch.compute.block_macs, tuple(occupancy))


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def worked_example(order):
    """The contract's worked example: 4x4x4 matmul, L1 home of all, L0 tiles 2x2x2."""
    wl = matmul(4, 4, 4)
    arch = architecture(2, capacities=[None, 12])
    return schedule(wl, arch, [{"m": 2, "n": 2, "k": 2}], [order], [{"A", "B", "Z"}])


def traffic(fig, link="L1->L0"):
    return {t.tensor: (t.words_down, t.words_up) for t in fig.link(link).tensors}


# --------------------------------------------------------------------------- hand-checked


def test_worked_example_order_mnk():
    f = count_figures(worked_example(("m", "n", "k")))
    assert traffic(f) == {"A": (32, 0), "B": (32, 0), "Z": (0, 16)}
    assert f.link("L1->L0").time == 80
    assert (f.op_calls, f.compute_time) == (64, 64)
    assert f.utilization == Fraction(4, 5)
    assert dict(f.occupancy)["L0"] == 12


def test_worked_example_order_mkn():
    f = count_figures(worked_example(("m", "k", "n")))
    assert traffic(f) == {"A": (16, 0), "B": (32, 0), "Z": (16, 32)}
    assert f.link("L1->L0").time == 96
    assert f.utilization == Fraction(2, 3)


def test_separate_lines_take_the_busier_direction():
    s = worked_example(("m", "k", "n"))
    arch = architecture(2, capacities=[None, 12], links=[None, Link(Fraction(1), Fraction(3), SEPARATE)])
    s = schedule(s.workload, arch, [{"m": 2, "n": 2, "k": 2}], [("m", "k", "n")], [{"A", "B", "Z"}])
    # down: A 16 + B 32 + Z 16 = 64 words at 1; up: Z 32 words at 3.
    assert count_figures(s).link("L1->L0").time == max(64 * 1, 32 * 3)


def test_remainder_tiles_move_only_their_words():
    # M=5 split by 2: pieces 2, 2, 1. A[m,k] with K=1 loads 2+2+1 words once each.
    s = schedule(matmul(5, 1, 1), architecture(2), [{"m": 2, "n": 1, "k": 1}], [("m", "n", "k")], [{"A", "B", "Z"}])
    f = count_figures(s)
    assert traffic(f) == {"A": (5, 0), "B": (1, 0), "Z": (0, 5)}
    assert f.op_calls == 5


def test_bypass_counts_on_every_link_crossed():
    # A bypasses L1: its L0 loads cross L2->L1 and L1->L0.
    wl = matmul(4, 4, 4)
    s = schedule(wl, architecture(3), [{"m": 4, "n": 4, "k": 4}, {"m": 2, "n": 2, "k": 2}], [("m", "n", "k")] * 2, [{"B", "Z"}, {"A", "B", "Z"}])
    f = count_figures(s)
    assert traffic(f, "L2->L1")["A"] == traffic(f, "L1->L0")["A"] == (32, 0)
    assert traffic(f, "L2->L1")["B"] == (16, 0)


def test_conv_input_moves_its_footprint_and_equal_regions_do_not_move():
    # O[k,p] += I[c, p*2 + r] * W[k,c,r], P=3, R=3: I spans 2*2 + 2 + 1 = 7.
    wl = conv1d(1, 1, 3, 3, 2, 1)
    s = schedule(wl, architecture(2), [{"k": 1, "c": 1, "p": 3, "r": 3}], [("k", "c", "p", "r")], [{"I", "W", "O"}])
    assert traffic(count_figures(s))["I"] == (7, 0)
    # p*1 + r*1 with tiles p=1, r=1, order r outer p inner over P=1: region p+r changes with r only.
    wl = conv1d(1, 1, 2, 2, 1, 1)
    s = schedule(wl, architecture(2), [{"k": 1, "c": 1, "p": 1, "r": 1}], [("k", "c", "p", "r")], [{"I", "W", "O"}])
    # visits (p,r) = (0,0)->I[0], (0,1)->I[1], (1,0)->I[1] (no move), (1,1)->I[2]
    assert traffic(count_figures(s))["I"] == (3, 0)


def test_block_op_calls_round_up():
    arch = architecture(2, block=(("m", 2), ("k", 3)), clocks=Fraction(5))
    s = schedule(matmul(5, 2, 4), arch, [{"m": 3, "n": 2, "k": 4}], [("m", "n", "k")], [{"A", "B", "Z"}])
    f = count_figures(s)
    # m pieces 3, 2 -> ceil(3/2) + ceil(2/2) = 3; k piece 4 -> 2; n: 2 calls of b=1.
    assert f.op_calls == 3 * 2 * 2
    assert f.compute_time == 60
    assert f.mac_efficiency == Fraction(5 * 2 * 4, 12 * 6)


def test_double_buffering_doubles_moving_tensors_only():
    arch = architecture(2, double=True)
    # B is whole at L0 (n, k full): never moves, one buffer; A and Z move.
    s = schedule(matmul(4, 2, 2), arch, [{"m": 1, "n": 2, "k": 2}], [("m", "n", "k")], [{"A", "B", "Z"}])
    assert dict(count_figures(s).occupancy)["L0"] == 2 * 2 + 4 + 2 * 2


def test_capacity_overflow_raises_the_simulator_error():
    s = worked_example(("m", "n", "k"))
    arch = architecture(2, capacities=[None, 11])
    s = schedule(s.workload, arch, [{"m": 2, "n": 2, "k": 2}], [("m", "n", "k")], [{"A", "B", "Z"}])
    with pytest.raises(CapacityError) as e:
        count_figures(s)
    assert e.value.level == "L0" and e.value.capacity == 11


def test_inner_home_counts_whole_tensor_and_no_traffic_above():
    wl = matmul(4, 4, 4)
    s = schedule(wl, architecture(3), [{"m": 4, "n": 4, "k": 2}, {"m": 2, "n": 2, "k": 2}], [("m", "n", "k")] * 2, [{"A", "Z"}, {"A", "Z"}], homes=[("B", "L1")])
    f = count_figures(s)
    assert traffic(f, "L2->L1")["B"] == (0, 0)
    assert dict(f.occupancy)["L1"] >= 16


# --------------------------------------------------------------------------- properties


@SETTINGS
@given(schedules())
def test_walk_visits_the_nest_in_order(s):
    tables = piece_tables(s)
    inner = len(s.levels) - 1
    got = []
    for pid in tile_chunks(s, tables, inner, chunk=5):
        for j in range(pid.shape[1]):
            got.append({d: (int(tables.start[inner][k][pid[k, j]]), int(tables.size[inner][k][pid[k, j]])) for k, d in enumerate(tables.dims)})
    assert got == [boxes[-1] for boxes in naive_steps(s)]


@SETTINGS
@given(schedules())
def test_count_equals_naive_loops(s):
    assert differences(naive_figures(s), count_figures(s)) == []


@SETTINGS
@given(schedules(), st.integers(1, 7))
def test_chunking_does_not_change_the_count(s, chunk):
    assert differences(count_figures(s), count_figures(s, chunk=chunk)) == []


def _events_replay():
    try:
        replay = importlib.import_module("mapsearch.sim.replay").replay
        importlib.import_module("mapsearch.sim.events")
    except ImportError:
        pytest.skip("the event replay (mapsearch.sim.events) is not there yet")
    return replay


@SETTINGS
@given(schedules())
def test_count_equals_event_replay(s):
    replay = _events_replay()
    try:
        want = replay(s, mode="events").figures
    except CapacityError:
        with pytest.raises(CapacityError):
            count_figures(s)
        return
    assert differences(want, count_figures(s)) == []


@pytest.mark.parametrize("order", [("m", "n", "k"), ("m", "k", "n")])
def test_worked_example_equals_event_replay(order):
    replay = _events_replay()
    s = worked_example(order)
    assert differences(replay(s, mode="events").figures, count_figures(s)) == []
