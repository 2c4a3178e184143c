"""The loop-nest pseudo-code is faithful: run as Python, it does what the replay does.

Each schedule's code is executed with stub ``load``/``store``/``zero``/``op``
functions that record what they are asked to move; the record must equal,
event for event (as a multiset), the loads, stores and zero-creations of
``replay(s, mode="events")``, and the op calls its count.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mapsearch.report.loopnest import loop_nest_code, loop_nest_lines
from mapsearch.schedule.json_io import load_schedule
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.replay import replay
from mapsearch.spec.architecture import Architecture, Compute, Level, Link
from mapsearch.spec.workload import Workload
from schedule_builder import build_schedule

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
MATMUL = "Z[m,n] += A[m,k] * B[k,n]"
CONV = "O[k,p] += I[c,p*2+r] * W[k,c,r]"


def arch(*names: str, block=(), clocks=1) -> Architecture:
    levels = tuple(Level(n, None if i == 0 else 10**9, None if i == 0 else Link()) for i, n in enumerate(names))
    return Architecture("test", levels, Compute(tuple(block), Fraction(clocks)))


schedule = build_schedule


class _Tensor:
    def __init__(self, name: str):
        self.name = name

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        return (self.name, tuple((k.start, k.stop - 1) for k in key))


def run_code(s: Schedule) -> tuple[Counter, int]:
    """Execute the pseudo-code with recording stubs: (events, op calls)."""
    events: Counter = Counter()
    calls = [0]

    def load(tile, into, src):
        events[("load", tile[0], into, tile[1], src)] += 1

    def store(tile, src, into):
        events[("store", tile[0], src, tile[1], into)] += 1

    def zero(tile, at):
        events[("zero", tile[0], at, tile[1], None)] += 1

    def op(*index):
        assert len(index) == len(s.workload.dims)
        calls[0] += 1

    scope = {"load": load, "store": store, "zero": zero, "op": op}
    scope.update({t: _Tensor(t) for t in s.workload.tensor_names})
    exec(compile(loop_nest_code(s), "<loop nest>", "exec"), scope)
    return events, calls[0]


def replay_events(s: Schedule) -> tuple[Counter, int]:
    names = s.architecture.level_names
    events: Counter = Counter()

    def on_event(e):
        if e.kind in ("load", "store"):
            events[(e.kind, e.tensor, names[e.level], e.region, names[e.source])] += 1
        elif e.kind == "zero":
            events[("zero", e.tensor, names[e.level], e.region, None)] += 1

    result = replay(s, mode="events", on_event=on_event)
    return events, result.figures.op_calls


def assert_faithful(s: Schedule) -> str:
    code = loop_nest_code(s)
    got, got_calls = run_code(s)
    want, want_calls = replay_events(s)
    assert got_calls == want_calls
    assert got == want, f"\n{code}\nonly in code: {got - want}\nonly in replay: {want - got}"
    return code


# ---------------------------------------------------------------- named cases
def test_worked_examples_match_the_replay():
    for name in ("worked-example-mnk", "worked-example-mkn"):
        code = assert_faithful(load_schedule(EXAMPLES / f"{name}.schedule.json"))
        assert "for m0 in range(0, 4, 2):" in code


def test_catalogue_schedules_match_the_replay():
    for path in sorted((EXAMPLES / "catalogue").glob("*.schedule.json")):
        assert_faithful(load_schedule(path))


def test_remainders_show_real_bounds():
    w = Workload.from_text("mm", MATMUL, {"m": 97, "n": 5, "k": 7})
    a = arch("L2", "L1", "L0")
    s = schedule(w, a, [({"m": 49, "n": 5, "k": 7}, "mkn", "AZ"), ({"m": 16, "n": 2, "k": 3}, "nmk", "ABZ")])
    code = assert_faithful(s)
    assert "for m1 in range(0, 97, 49):  # L1 tile m=min(49, 97 - m1): 2 trips, last piece 48" in code
    assert "tm1 = min(49, 97 - m1)" in code
    assert "for m0 in range(m1, m1 + tm1, 16):" in code
    assert "tm0 = min(16, m1 + tm1 - m0)" in code
    # B bypasses L1: its tiles come to L0 straight from L2, and the comment says so.
    assert 'src="L2")  # B tile -> L0 from L2 (bypasses L1)' in code
    assert "bypasses B" in code
    # n and k are whole at L1: no loop for them there.
    assert "for n1" not in code and "for k1" not in code


def test_a_one_trip_remainder_piece_is_guarded():
    # m: 9 -> 5 (pieces 5, 4) -> 4: the L0 m loop makes one trip in the piece of 4,
    # so when n advances the A tile at L0 repeats and the replay moves nothing.
    w = Workload.from_text("mm", MATMUL, {"m": 9, "n": 4, "k": 3})
    a = arch("L2", "L1", "L0")
    s = schedule(w, a, [({"m": 5, "n": 4, "k": 3}, "mnk", "ABZ"), ({"m": 4, "n": 2, "k": 3}, "nmk", "ABZ")])
    code = assert_faithful(s)
    assert "if A_L0 != A[" in code


def test_output_homed_below_the_top_and_partial_sums():
    w = Workload.from_text("mm", MATMUL, {"m": 5, "n": 3, "k": 7})
    a = arch("L2", "L1", "L0")
    s = schedule(w, a, [({"m": 5, "n": 3, "k": 4}, "kmn", "A"), ({"m": 2, "n": 3, "k": 3}, "kmn", "ABZ")], homes=(("Z", "L1"),))
    code = assert_faithful(s)
    assert "# L1 holds Z whole for the whole run (home)" in code
    assert "(partial sums)" in code


def test_convolution_windows():
    w = Workload.from_text("conv", CONV, {"k": 2, "c": 2, "p": 5, "r": 3})
    a = arch("L2", "L1", "L0")
    s = schedule(w, a, [({"k": 2, "c": 2, "p": 3, "r": 3}, "kcpr", "IWO"), ({"k": 1, "c": 1, "p": 2, "r": 1}, "rpkc", "IWO")])
    code = assert_faithful(s)
    assert "I[" in code and "2*p0" in code


def test_block_op_pads_cut_blocks():
    w = Workload.from_text("mm", MATMUL, {"m": 10, "n": 6, "k": 5})
    a = arch("L1", "L0", block=(("m", 4), ("n", 4), ("k", 4)))
    s = schedule(w, a, [({"m": 8, "n": 6, "k": 5}, "kmn", "ABZ")])
    code = assert_faithful(s)
    assert "range(m0, m0 + tm0, 4)" in code
    assert "padded" in code


def test_summary_lines_still_name_every_level():
    s = load_schedule(EXAMPLES / "worked-example-mnk.schedule.json")
    lines = loop_nest_lines(s)
    assert lines[0].startswith("L1: the whole space")
    assert any("L0: tile m=2 n=2 k=2; keeps A, B, Z" in line for line in lines)


# ---------------------------------------------------------------- random schedules
@st.composite
def random_schedules(draw):
    conv = draw(st.booleans())
    if conv:
        extents = {"k": draw(st.integers(1, 3)), "c": draw(st.integers(1, 3)), "p": draw(st.integers(1, 6)), "r": draw(st.integers(1, 3))}
        w = Workload.from_text("conv", CONV, extents)
    else:
        w = Workload.from_text("mm", MATMUL, {d: draw(st.integers(1, 9)) for d in "mnk"})
    depth = draw(st.integers(2, 4))
    block = draw(st.sampled_from([(), (("m", 2), ("n", 3)), (("k", 2),)])) if not conv else ()
    a = arch(*(f"L{depth - 1 - i}" for i in range(depth)), block=block)
    parent = dict(w.extent)
    below = []
    names = w.tensor_names
    homes = []
    home_level = {t: 0 for t in names}
    if draw(st.booleans()):
        t = draw(st.sampled_from(names))
        home_level[t] = draw(st.integers(0, depth - 1))
        homes.append((t, a.levels[home_level[t]].name))
    for i in range(1, depth):
        tile = {d: draw(st.integers(1, parent[d])) for d in w.dims}
        order = "".join(draw(st.permutations(list(w.dims))))
        keep = "".join(
            t for t in names
            if i > home_level[t] and (i == depth - 1 or draw(st.booleans()))
        )
        below.append((tile, order, keep))
        parent = tile
    return schedule(w, a, below, homes)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_schedules())
def test_random_schedules_match_the_replay(s):
    assert_faithful(s)


# ---------------------------------------------------------------- spatial splits
def _no_sharing(s: Schedule) -> Schedule:
    """The same schedule on a mesh whose axes share nothing: every instance's loads and stores cross on their own.

    The code runs the instances one after another, each with its own tiles, so its
    events are every instance's own; the replay groups crossings only where an axis may
    reuse a tensor (docs/spatial.md), which this architecture never allows.
    """
    import dataclasses

    from mapsearch.spec.architecture import MeshAxis

    levels = tuple(dataclasses.replace(lv, mesh=tuple(MeshAxis(ax.name, ax.size, ("none",)) for ax in lv.mesh))
                   for lv in s.architecture.levels)
    return dataclasses.replace(s, architecture=dataclasses.replace(s.architecture, levels=levels))


def test_array_schedule_matches_the_replay_instance_by_instance():
    code = assert_faithful(_no_sharing(load_schedule(EXAMPLES / "array-4x4-matmul.schedule.json")))
    assert "# spatial: one PE instance per part of" in code


def test_spatial_code_keeps_the_instances_apart():
    s = load_schedule(EXAMPLES / "array-4x4-matmul.schedule.json")
    code = loop_nest_code(s)
    assert "for m0_x in range(0, 8, 2):  # spatial: one PE instance per part of 2 along axis x" in code
    assert "for k0_y in range(0, 8, 2):" in code


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_spatial_schedules_match_the_replay(data):
    import sys as _sys

    _sys.path.insert(0, str(ROOT / "tests" / "sim"))
    from spatial_helpers import spatial_schedules

    assert_faithful(_no_sharing(data.draw(spatial_schedules())))


@st.composite
def placed_schedules(draw):
    """A random schedule whose buffers sit at random legal positions (cost-model.md, "Buffer placement")."""
    from dataclasses import replace

    s = draw(random_schedules())
    D, J = len(s.workload.dims), len(s.levels) - 1
    positions: dict[int, list[tuple[str, int]]] = {i: [] for i in range(len(s.levels))}
    for t in s.workload.tensor_names:
        kept = [i for i in range(len(s.levels)) if s.keeps(t, i)]
        spots = sorted(draw(st.lists(st.integers(0, J * D), min_size=len(kept), max_size=len(kept))))
        for i, p in zip(kept, spots):  # non-decreasing going inward: the nesting rule
            if p != i * D:
                positions[i].append((t, p))
    levels = tuple(replace(lm, positions=tuple(sorted(positions[i]))) for i, lm in enumerate(s.levels))
    return replace(s, levels=levels)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(placed_schedules())
def test_placed_buffers_move_where_the_replay_moves_them(s):
    assert_faithful(s)
