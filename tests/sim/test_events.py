"""The event-by-event replay: hand-derived figures, errors, and data checked against NumPy."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mapsearch.schedule.legality import violations
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim import CapacityError, ReplayResult, UnknownModeError, replay
from mapsearch.sim.events import Event, replay_events, replay_events_data
from mapsearch.spec.architecture import SEPARATE, SHARED, Architecture, Compute, Level, Link
from mapsearch.spec.workload import Workload
from schedule_builder import build_schedule

MATMUL = "Z[m,n] += A[m,k] * B[k,n]"
ONE = Link(Fraction(1), Fraction(1), SHARED)


def matmul(m: int, n: int, k: int) -> Workload:
    return Workload.from_text("mm", MATMUL, {"m": m, "n": n, "k": k})


def arch(*levels: tuple[str, int | None], link: Link = ONE, block=(), clocks=1, double=False) -> Architecture:
    """Levels outermost first, every link the same."""
    built = tuple(Level(name, cap, None if i == 0 else link) for i, (name, cap) in enumerate(levels))
    return Architecture("test", built, Compute(tuple(block), Fraction(clocks)), double)


schedule = build_schedule


def words(result: ReplayResult, link: str) -> dict[str, tuple[int, int]]:
    return {t.tensor: (t.words_down, t.words_up) for t in result.figures.link(link).tensors}


def worked_example(order: str, **arch_options) -> Schedule:
    w = matmul(4, 4, 4)
    a = arch(("L1", None), ("L0", arch_options.pop("capacity", 12)), **arch_options)
    return schedule(w, a, [({"m": 2, "n": 2, "k": 2}, order, "ABZ")])


# ---------------------------------------------------------------- the contract's worked example
def test_worked_example_mnk() -> None:
    r = replay(worked_example("mnk"))
    f = r.figures
    assert words(r, "L1->L0") == {"A": (32, 0), "B": (32, 0), "Z": (0, 16)}
    assert f.link("L1->L0").time == 80
    assert (f.op_calls, f.compute_time, f.utilization) == (64, 64, Fraction(4, 5))
    assert f.occupancy == (("L1", 48), ("L0", 12))
    assert (r.data_ok, r.max_abs_error) == (None, None)


def test_worked_example_mkn() -> None:
    r = replay(worked_example("mkn"))
    f = r.figures
    # Each Z tile is left once with partial sums and loaded back once.
    assert words(r, "L1->L0") == {"A": (16, 0), "B": (32, 0), "Z": (16, 32)}
    assert f.link("L1->L0").time == 96 and f.utilization == Fraction(2, 3)
    assert f.occupancy == (("L1", 48), ("L0", 12))


def test_the_example_schedule_built_as_in_the_brief() -> None:
    w = matmul(4, 4, 4)
    a = Architecture(
        "two",
        (Level("L1", None), Level("L0", 12, Link(Fraction(1), Fraction(1), "shared"))),
        Compute((), Fraction(1)),
    )
    s = Schedule(
        w,
        a,
        levels=(
            LevelMapping("L1", (("m", 4), ("n", 4), ("k", 4))),
            LevelMapping("L0", (("m", 2), ("n", 2), ("k", 2)), order=("m", "n", "k"), keep=frozenset({"A", "B", "Z"})),
        ),
        homes=(),
    )
    assert replay(s, mode="events").figures.utilization == Fraction(4, 5)


# ---------------------------------------------------------------- remainders
def test_remainder_tiles_move_only_their_words() -> None:
    # M=5, N=3, K=4 with L0 tiles m=2, n=2, k=3, order m,n,k:
    #   m pieces 2,2,1 (sum 5, 3 pieces); n pieces 2,1 (sum 3, 2); k pieces 3,1 (sum 4, 2); 12 steps.
    #   A[m,k]: k is innermost with 2 pieces, so A changes every step:
    #           sum over steps of m*k = 5 * 2 * 4 = 40 words down.
    #   B[k,n]: also changes every step: 3 * 3 * 4 = 36 words down.
    #   Z[m,n]: changes with m,n only, 6 tiles never revisited: 5 * 3 = 15 words up.
    #   calls = 60; link time 40 + 36 + 15 = 91; L0 peak at the first step: A 6 + B 6 + Z 4.
    w = matmul(5, 3, 4)
    s = schedule(w, arch(("L1", None), ("L0", 16)), [({"m": 2, "n": 2, "k": 3}, "mnk", "ABZ")])
    f = replay(s).figures
    assert {t.tensor: (t.words_down, t.words_up) for t in f.links[0].tensors} == {
        "A": (40, 0),
        "B": (36, 0),
        "Z": (0, 15),
    }
    assert (f.op_calls, f.links[0].time, f.occupancy[1]) == (60, 91, ("L0", 16))
    assert f.utilization == Fraction(60, 91)


# ---------------------------------------------------------------- bypass and homes
def test_bypass_counts_on_both_links() -> None:
    # L2 -> L1 -> L0, matmul 4x4x4. L1 tiles m=2 (n, k whole) and keeps B, Z; A bypasses L1.
    # L0 tiles 2,2,2, order m,n,k: inside an L1 tile, 2 n-pieces x 2 k-pieces; 8 steps in all.
    #   A at L0 changes every step (k innermost): 8 x 4 = 32 words, counted on BOTH links.
    #   B at L1 is all of B, loaded once: 16 down L2->L1; at L0 it changes every step: 32.
    #   Z at L1 is 2x4, 2 tiles: 16 up L2->L1; at L0, 4 tiles of 4, none revisited: 16 up L1->L0.
    w = matmul(4, 4, 4)
    a = arch(("L2", None), ("L1", 24), ("L0", 12))
    s = schedule(w, a, [({"m": 2, "n": 4, "k": 4}, "mnk", "BZ"), ({"m": 2, "n": 2, "k": 2}, "mnk", "ABZ")])
    r = replay(s)
    assert words(r, "L2->L1") == {"A": (32, 0), "B": (16, 0), "Z": (0, 16)}
    assert words(r, "L1->L0") == {"A": (32, 0), "B": (32, 0), "Z": (0, 16)}
    assert [l.time for l in r.figures.links] == [64, 80]
    assert r.figures.occupancy == (("L2", 48), ("L1", 16 + 8), ("L0", 12))


def test_input_home_at_the_inner_level() -> None:
    # B lives whole in L0: it never moves; A and Z move as in the worked example.
    w = matmul(4, 4, 4)
    s = schedule(w, arch(("L1", None), ("L0", 24)), [({"m": 2, "n": 2, "k": 2}, "mnk", "AZ")], homes=[("B", "L0")])
    r = replay(s)
    assert words(r, "L1->L0") == {"A": (32, 0), "B": (0, 0), "Z": (0, 16)}
    assert r.figures.occupancy == (("L1", 32), ("L0", 16 + 4 + 4))
    assert replay(s, "events-data").data_ok


def test_output_home_at_a_middle_level() -> None:
    # Z ends in L1 (its home): its L0 tiles go up to L1 only, nothing crosses L2->L1 for Z.
    # A and B bypass L1 and move as in the worked example, on both links.
    w = matmul(4, 4, 4)
    a = arch(("L2", None), ("L1", 16), ("L0", 12))
    tiles = [({"m": 4, "n": 4, "k": 4}, "mnk", ""), ({"m": 2, "n": 2, "k": 2}, "mnk", "ABZ")]
    s = schedule(w, a, tiles, homes=[("Z", "L1")])
    r = replay(s)
    assert words(r, "L2->L1") == {"A": (32, 0), "B": (32, 0), "Z": (0, 0)}
    assert words(r, "L1->L0") == {"A": (32, 0), "B": (32, 0), "Z": (0, 16)}
    assert r.figures.occupancy == (("L2", 32), ("L1", 16), ("L0", 12))
    assert replay(s, "events-data").data_ok


# ---------------------------------------------------------------- block op
def test_block_op_with_remainders() -> None:
    # M=5, N=3, K=4; L0 tiles m=3, n=3, k=2; op block (2,2,2) at 4 clocks per call.
    #   calls per tile = prod ceil(t/b): m pieces 3,2 -> 2,1; n piece 3 -> 2; k pieces 2,2 -> 1,1.
    #   total = (2 + 1) * 2 * (1 + 1) = 12 calls, 48 clocks; MAC efficiency 60 / (12 * 8) = 5/8.
    #   Traffic (order m,n,k): A changes every step: 5 * 1 * 4 = 20; B: 2 * 3 * 4 = 24; Z: 15 up.
    w = matmul(5, 3, 4)
    a = arch(("L1", None), ("L0", None), block=(("m", 2), ("n", 2), ("k", 2)), clocks=4)
    s = schedule(w, a, [({"m": 3, "n": 3, "k": 2}, "mnk", "ABZ")])
    f = replay(s).figures
    assert (f.op_calls, f.compute_time, f.mac_efficiency) == (12, 48, Fraction(5, 8))
    assert (f.links[0].words_down, f.links[0].words_up, f.time) == (44, 15, 59)
    assert f.utilization == Fraction(48, 59)
    assert replay(s, "events-data").data_ok


# ---------------------------------------------------------------- convolution
CONV = "O[p] += I[p+r] * W[r]"


def conv(p: int, r: int, text: str = CONV) -> Workload:
    return Workload.from_text("conv", text, {"p": p, "r": r})


def test_conv_sliding_window_region_unchanged_moves_nothing() -> None:
    # P=4, R=4 (I has 7 elements); L0 tiles p=2, r=2, order r,p (4 steps):
    #   step (r0:2, p0:2): I[0:3]   (r0:2, p2:4): I[2:5]
    #   step (r2:4, p0:2): I[2:5] again -> r advanced but the region did not change: no load
    #   step (r2:4, p2:4): I[4:7].                                  I: 3 loads x 3 = 9 words.
    #   W[r] changes with r only: 2 x 2 = 4.  O[p] changes every step: tiles p0, p2, p0, p2:
    #   4 stores x 2 = 8 up, the 2 revisits load partial sums back: 4 down.
    s = schedule(conv(4, 4), arch(("L1", None), ("L0", 7)), [({"p": 2, "r": 2}, "rp", "IWO")])
    events: list[Event] = []
    r = replay_events(s, on_event=events.append)
    assert words(r, "L1->L0") == {"I": (9, 0), "W": (4, 0), "O": (4, 8)}
    assert r.figures.occupancy[1] == ("L0", 3 + 2 + 2)
    i_loads = [e.region for e in events if e.kind == "load" and e.tensor == "I"]
    assert i_loads == [((0, 2),), ((2, 4),), ((4, 6),)]

    # Order p,r keeps O for a whole r sweep: O 4 up, W 8 down; I still reuses I[2:5].
    s = schedule(conv(4, 4), arch(("L1", None), ("L0", 7)), [({"p": 2, "r": 2}, "pr", "IWO")])
    assert words(replay(s), "L1->L0") == {"I": (9, 0), "W": (8, 0), "O": (0, 4)}


def test_strided_conv_footprint_holes_included() -> None:
    # O[p] += I[2p + r] * W[r], P=3, R=2: I has 2*2 + 1 + 1 = 6 elements. L0 tile p=2, r=2:
    # the tile's I footprint is [0, 2*1 + 1] = 4 words (holes count), then p=2 alone: [4, 5] = 2.
    w = conv(3, 2, "O[p] += I[p*2+r] * W[r]")
    s = schedule(w, arch(("L1", None), ("L0", None)), [({"p": 2, "r": 2}, "pr", "IWO")])
    r = replay(s)
    assert words(r, "L1->L0") == {"I": (6, 0), "W": (2, 0), "O": (0, 3)}
    assert r.figures.occupancy[1] == ("L0", 4 + 2 + 2)
    assert replay(s, "events-data").data_ok


# ---------------------------------------------------------------- time, capacity, buffering
def test_separate_lines_time() -> None:
    # Worked example words: 64 down, 16 up. Separate lines at 1/2 and 5 clocks per word:
    # max(64 / 2, 16 * 5) = 80. A shared line at 1/2 clock per word: (64 + 16) / 2 = 40.
    f = replay(worked_example("mnk", link=Link(Fraction(1, 2), Fraction(5), SEPARATE))).figures
    assert f.links[0].time == 80 and f.utilization == Fraction(4, 5)
    f = replay(worked_example("mnk", link=Link(Fraction(1, 2), Fraction(5), SHARED))).figures
    assert f.links[0].time == 40 and f.utilization == 1


def test_capacity_overflow_names_level_tensor_and_numbers() -> None:
    # First step: A (4) and B (4) fit in 11 words, Z's 4 do not.
    with pytest.raises(CapacityError) as err:
        replay(worked_example("mnk", capacity=11))
    e = err.value
    assert (e.level, e.tensor, e.used, e.needed, e.capacity) == ("L0", "Z[0:2,0:2]", 8, 4, 11)
    assert str(e) == "L0: no room for Z[0:2,0:2]: 8 words used + 4 needed > capacity 11"


def test_double_buffering_reserves_a_second_buffer_for_tensors_that_move() -> None:
    f = replay(worked_example("mnk", capacity=None, double=True)).figures
    assert f.occupancy[1] == ("L0", 2 * (4 + 4 + 4))
    assert f.links[0].words == 80  # buffering changes room, not traffic
    # With tiles m=2, n=4, k=4 the B tile is all of B: it never moves and needs one buffer.
    w = matmul(4, 4, 4)
    s = schedule(w, arch(("L1", None), ("L0", None), double=True), [({"m": 2, "n": 4, "k": 4}, "mnk", "ABZ")])
    assert replay(s).figures.occupancy[1] == ("L0", 16 + 2 * 8 + 2 * 8)


def test_unknown_mode() -> None:
    with pytest.raises(UnknownModeError, match="events"):
        replay(worked_example("mnk"), mode="no-such-mode")


# ---------------------------------------------------------------- data
def test_events_data_matmul_equals_numpy() -> None:
    w = matmul(5, 3, 4)
    a = arch(("L2", None), ("L1", None), ("L0", None))
    s = schedule(w, a, [({"m": 3, "n": 2, "k": 3}, "kmn", "AZ"), ({"m": 2, "n": 1, "k": 2}, "nkm", "ABZ")])
    r = replay_events_data(s, seed=3)
    assert r.data_ok and r.max_abs_error < 1e-12
    assert r.figures == replay_events(s).figures


def test_events_data_conv_equals_explicit_loops() -> None:
    from mapsearch.sim.compute import einsum_reference

    w = conv(5, 3, "O[p] += I[p*2+r] * W[r]")
    rng = np.random.default_rng(0)
    i, wt = rng.standard_normal(11), rng.standard_normal(3)
    want = np.array([sum(i[2 * p + r] * wt[r] for r in range(3)) for p in range(5)])
    assert np.allclose(einsum_reference(w, {"I": i, "W": wt}), want)
    s = schedule(w, arch(("L1", None), ("L0", None)), [({"p": 2, "r": 2}, "rp", "IWO")])
    assert replay(s, "events-data", seed=1).data_ok


def test_events_data_output_dim_absent_from_every_input() -> None:
    """``Z[m,n] += A[m,k] * B[k]``: n indexes the output only, every Z[m, :] is the same sum. The event replay's
    kernel gave numpy's einsum an output subscript no operand had (ValueError; fuzz_vs_brute odd 7005)."""
    from mapsearch.sim.compute import einsum_reference

    w = Workload.from_text("bcast", "Z[m,n] += A[m,k] * B[k]", {"m": 3, "n": 2, "k": 4})
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal(4)
    assert np.allclose(einsum_reference(w, {"A": a, "B": b}), np.repeat((a @ b)[:, None], 2, axis=1))
    s = schedule(w, arch(("L1", None), ("L0", None)), [({"m": 2, "n": 1, "k": 3}, "nmk", "ABZ")])
    r = replay(s, "events-data", seed=1)
    assert r.data_ok and r.figures == replay(s, "count").figures


def test_matmul_reference_is_numpy_einsum() -> None:
    from mapsearch.sim.compute import einsum_reference

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    assert np.allclose(einsum_reference(matmul(3, 2, 4), {"A": a, "B": b}), np.einsum("mk,kn->mn", a, b))


# ---------------------------------------------------------------- property: any legal schedule
@st.composite
def workloads(draw) -> Workload:
    if draw(st.booleans()):
        return matmul(*(draw(st.integers(1, 5)) for _ in range(3)))
    stride = draw(st.integers(1, 2))
    text = "O[p] += I[p+r] * W[r]" if stride == 1 else "O[p] += I[p*2+r] * W[r]"
    return conv(draw(st.integers(1, 6)), draw(st.integers(1, 4)), text)


@st.composite
def schedules(draw) -> Schedule:
    w = draw(workloads())
    depth = draw(st.integers(2, 4))
    names = [f"L{depth - 1 - i}" for i in range(depth)]
    link = draw(st.sampled_from([ONE, Link(Fraction(1, 2), Fraction(3), SEPARATE)]))
    block = tuple((d, draw(st.integers(1, 2))) for d in w.dims)
    a = arch(*((n, None) for n in names), link=link, block=block, double=draw(st.booleans()))
    tensors = list(w.tensor_names)
    homes = tuple((t, names[draw(st.integers(0, depth - 1))]) for t in tensors if draw(st.booleans()))
    home_index = {t: names.index(l) for t, l in homes}
    below, parent = [], w.extent
    for i in range(1, depth):
        tile = {d: draw(st.integers(1, parent[d])) for d in w.dims}
        order = "".join(draw(st.permutations(list(w.dims))))
        keep = {t for t in tensors if i > home_index.get(t, 0) and (i == depth - 1 or draw(st.booleans()))}
        below.append((tile, order, "".join(sorted(keep))))
        parent = tile
    top = LevelMapping(names[0], tuple(w.extent.items()))
    rest = tuple(
        LevelMapping(names[i + 1], tuple(t.items()), tuple(o), frozenset(k)) for i, (t, o, k) in enumerate(below)
    )
    s = Schedule(w, a, (top,) + rest, homes)
    assume(not violations(s))
    return s


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules(), st.integers(0, 2**16))
def test_property_data_equals_numpy_and_counters_equal(s: Schedule, seed: int) -> None:
    counted = replay(s, "events")
    with_data = replay(s, "events-data", seed=seed)
    assert with_data.data_ok, with_data.max_abs_error
    assert with_data.figures == counted.figures
    f = counted.figures
    # Every MAC is computed exactly once, whatever the tiling.
    assert f.macs == s.workload.macs
    if s.architecture.compute.block_macs == 1:
        assert f.op_calls == s.workload.macs
