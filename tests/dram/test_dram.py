"""DRAM level: geometry, layouts, the row-buffer machine, the replay's address stream, traces, the seed's scenario."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from mapsearch.cli import main
from mapsearch.dram.geometry import PRESETS, DramSpecError, parse_mapping, preset, simple_dram
from mapsearch.dram.layout import Layouts, LayoutSpec, layouts_from_dict, row_aligned, row_major, tiled
from mapsearch.dram.options import load_trace_options
from mapsearch.dram.rowbuffer import RowBuffer, count_rows
from mapsearch.dram.spec import dram_from_dict, dram_to_dict
from mapsearch.dram.trace import FORMATS, coalesce, read_trace, read_trace_all, write_trace, write_trace_text
from mapsearch.errors import SpecError
from mapsearch.schedule.json_io import load_schedule, schedule_from_dict, schedule_to_dict
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.dram_trace import address_chunks, address_stream, dram_transfers, nest_order, row_activations, walk_applies
from mapsearch.sim.walk import count_figures
from mapsearch.spec.architecture import Architecture, Level, Link
from mapsearch.spec.load import architecture_from_dict, architecture_to_dict
from mapsearch.spec.workload import Workload
from tests.sim.spatial_helpers import spatial_schedules
from tests.sim.test_walk import schedules

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "dram" / "row-thrashing"


# ---------------------------------------------------------------- geometry and spec
def test_mapping_fields_and_decode_ddr4():
    d = preset("ddr4-3200")
    assert parse_mapping("RoBaRaCoCh") == ("Ro", "Ba", "Ra", "Co", "Ch")
    assert parse_mapping("rorabgbachco") == ("Ro", "Ra", "Bg", "Ba", "Ch", "Co")
    assert d.row_stride_bytes == 8192 and d.n_banks == 16
    # 64-byte bursts, 128 columns (8 KiB rows), then 2 bank bits, 2 bank-group bits, then the row.
    f = d.decode(np.array([0, 64, 8192, 8192 * 4, 8192 * 16]))
    assert f["Co"].tolist() == [0, 1, 0, 0, 0]
    assert f["Ba"].tolist() == [0, 0, 1, 0, 0]
    assert f["Bg"].tolist() == [0, 0, 0, 1, 0]
    assert f["Ro"].tolist() == [0, 0, 0, 0, 1]
    assert (d.hit, d.miss, d.conflict) == (22, 44, 66)
    h = PRESETS["hbm2"]
    assert (h.cl, h.rcd, h.rp, h.channels, h.row_bytes) == (14, 14, 14, 8, 1024)


def test_bad_specs_are_one_line_errors():
    with pytest.raises(DramSpecError, match="row_bytes: expected a power of two"):
        simple_dram(1000)
    with pytest.raises(DramSpecError, match="unknown field 'Xx'"):
        parse_mapping("RoXxCo")
    with pytest.raises(SpecError) as e:
        dram_from_dict({"preset": "ddr4-3200", "policy": "lazy"}, "a.yaml")
    assert str(e.value) == "a.yaml: dram.policy: expected 'open' or 'closed', got 'lazy'"
    with pytest.raises(SpecError, match=r"a.yaml: dram.preset: expected one of"):
        dram_from_dict({"preset": "ddr9"}, "a.yaml")
    with pytest.raises(SpecError, match=r"dram.colour: unknown field"):
        dram_from_dict({"colour": 1}, "a.yaml")
    with pytest.raises(SpecError, match=r"dram.mapping: 'RoBaCo' has no Ch field but channels is 2"):
        dram_from_dict({"channels": 2, "mapping": "RoBaCo"}, "a.yaml")


def test_architecture_yaml_carries_dram_and_round_trips():
    data = {"name": "a", "levels": [{"name": "DRAM", "capacity": None}, {"name": "L0", "capacity": 8}],
            "dram": {"preset": "ddr4-3200", "element_bytes": 2, "mapping": "RoBaRaCoCh", "policy": "open"}}
    a = architecture_from_dict(data, "a.yaml")
    assert a.dram == preset("ddr4-3200")  # the same values as the preset
    assert architecture_from_dict(architecture_to_dict(a), "b") == a
    assert dram_from_dict(dram_to_dict(a.dram)) == a.dram
    bad = dict(data, dram={"preset": "ddr4-3200", "banks": 3})
    with pytest.raises(SpecError, match=r"^a.yaml: dram.banks: expected a power of two >= 1, got 3$"):
        architecture_from_dict(bad, "a.yaml")
    plain = architecture_from_dict({"name": "a", "levels": [{"name": "DRAM", "capacity": None}]}, "a")
    assert plain.dram is None and "dram" not in architecture_to_dict(plain)


# ---------------------------------------------------------------- layouts
def _wl(text: str, ext: dict) -> Workload:
    return Workload.from_text("t", text, ext)


def test_layout_kinds_map_elements_to_bytes():
    wl = _wl("Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 2, "k": 6})
    d = simple_dram(16, element_bytes=2)
    lay = Layouts(wl, d, {"A": row_major(1, 0), "B": tiled({0: 4, 1: 2}), "Z": row_aligned(1)})
    a = lay["A"]  # column-major A[m,k]: address = 2 * (k*4 + m)
    assert a.addresses(np.array([[1], [2]])).tolist() == [2 * (2 * 4 + 1)]
    b = lay["B"]  # B[k,n] 6x2 in 4x2 tiles: tile (1,0) holds k 4..5 (padded to 4 rows)
    assert b.base == 48  # A's 24 words = 48 bytes, aligned to the 16-byte row stride
    assert b.addresses(np.array([[5], [1]])).tolist() == [48 + 2 * (8 + 1 * 2 + 1)]
    assert b.size_bytes == 2 * 16
    z = lay["Z"]  # each row m of Z (2 words = 4 bytes) padded to 16 bytes
    assert z.addresses(np.array([[0, 1, 3], [1, 0, 1]])).tolist() == [z.base + 2, z.base + 16, z.base + 50]
    assert z.base % 16 == 0


def test_layouts_from_dict_names_axes_by_index_text():
    wl = _wl("O[c,p] += I[c,p+r] * W[c,r]", {"c": 2, "p": 3, "r": 2})
    lay = layouts_from_dict(wl, simple_dram(64), {"I": {"kind": "row_aligned", "order": ["c", "p+r"], "slice": "c"}})
    assert lay["I"].addresses(np.array([[1], [2]])).tolist() == [64 + 2]
    with pytest.raises(ValueError, match=r"layouts.I.order\[0\]: unknown axis 'x'"):
        layouts_from_dict(wl, simple_dram(64), {"I": {"order": ["x", "c"]}})


# ---------------------------------------------------------------- the row-buffer machine, by hand
def test_one_tensor_over_two_rows_open_and_closed_page():
    d = simple_dram(4)  # one bank, 4-byte rows, 1-byte elements
    op = count_rows(d, [np.arange(8)])
    # 0..3 in row 0: a miss then 3 hits; 4..7 in row 1: a conflict then 3 hits.
    assert (op.hits, op.misses, op.conflicts, op.activations) == (6, 1, 1, 2)
    assert op.clocks == 6 * d.hit + 1 * d.miss + 1 * d.conflict
    cl = count_rows(d.with_(policy="closed"), [np.arange(8)])
    assert (cl.hits, cl.misses, cl.conflicts, cl.activations) == (0, 8, 0, 8)


def test_two_tensors_in_one_bank_conflict_and_in_two_banks_do_not():
    one = simple_dram(4)
    a, b = np.array([0, 1, 2, 3]), np.array([8, 9, 10, 11])  # rows 0 and 2 of the only bank
    interleaved = np.stack([a, b], axis=1).ravel()  # A0 B0 A1 B1 ...
    s = count_rows(one, [interleaved])
    assert (s.hits, s.misses, s.conflicts) == (0, 1, 7)
    two = simple_dram(4, banks=2)  # row stride 4: addresses 0..3 bank 0, 8..11 bank 0 again (row 1)
    s2 = count_rows(two, [interleaved])
    assert (s2.misses, s2.conflicts) == (1, 7)
    b_other = np.array([4, 5, 6, 7])  # bank 1, row 0
    s3 = count_rows(two, [np.stack([a, b_other], axis=1).ravel()])
    assert (s3.hits, s3.misses, s3.conflicts) == (6, 2, 0)
    assert dict((n, x) for n, x, *_ in s3.per_bank) == {"ch0.ra0.bg0.ba0": 4, "ch0.ra0.bg0.ba1": 4}
    assert s3.busiest_bank_clocks == 3 * two.hit + two.miss


def test_chunks_carry_the_open_rows():
    d = simple_dram(4, banks=2)
    x = np.random.default_rng(0).integers(0, 64, 500)
    whole = count_rows(d, [x])
    parts = count_rows(d, [x[:7], x[7:300], x[300:]])
    assert (whole.hits, whole.misses, whole.conflicts) == (parts.hits, parts.misses, parts.conflicts)
    # The vectorised machine equals a plain loop.
    rb, open_row, got = RowBuffer(d), {}, []
    bank, row = d.bank_and_row(x)
    for b, r in zip(bank.tolist(), row.tolist()):
        got.append(0 if open_row.get(b) == r else 1 if b not in open_row else 2)
        open_row[b] = r
    assert rb.feed(x).tolist() == got


# ---------------------------------------------------------------- replay: hand counts
def _elementwise(dram) -> Schedule:
    wl = _wl("Z[m] += A[m] * B[m]", {"m": 8})
    arch = Architecture("t", (Level("DRAM", None), Level("L0", 6, Link())), dram=dram)
    return Schedule(wl, arch, (LevelMapping("DRAM", (("m", 8),)), LevelMapping("L0", (("m", 2),), ("m",), frozenset("ABZ"))), ())


def test_replay_stream_of_an_elementwise_op_by_hand():
    d = simple_dram(4)  # one bank, 4-byte rows: A in rows 0-1, B in rows 2-3, Z in rows 4-5
    s = _elementwise(d)
    got = list(address_stream(s))
    want = []
    for step in range(4):
        if step:
            want += [(16 + 2 * (step - 1), True), (17 + 2 * (step - 1), True)]  # Z's previous tile goes up first
        want += [(2 * step, False), (2 * step + 1, False), (8 + 2 * step, False), (9 + 2 * step, False)]
    want += [(22, True), (23, True)]
    assert got == want
    st = row_activations(s)
    # 12 transfers of 2 words, each in another row of the one bank than the transfer before it.
    assert (st.hits, st.misses, st.conflicts, st.activations) == (12, 1, 11, 12)
    assert st.tensor("Z").writes == 8 and st.tensor("A").activations == 4
    closed = row_activations(s, d.with_(policy="closed"))
    assert closed.activations == 24


def test_element_order_follows_the_loops_and_holes_come_last():
    wl = _wl("O[p] += I[p*2+r] * W[r]", {"p": 3, "r": 2})  # I has 6 elements, holes at none; p*2+r covers 0..5
    arch = Architecture("t", (Level("DRAM", None), Level("L0", 64, Link())), dram=simple_dram(64))
    s = Schedule(wl, arch, (LevelMapping("DRAM", tuple(wl.extents)), LevelMapping("L0", tuple(wl.extents), ("p", "r"), frozenset("IWO"))), ())
    lay = Layouts(wl, arch.dram, {"I": LayoutSpec(base=0), "W": LayoutSpec(base=100), "O": LayoutSpec(base=200)})
    i_addrs = [a for a, w in address_stream(s, lay, {"I": ["r", "p"]}) if a < 100]
    assert i_addrs == [0, 2, 4, 1, 3, 5]  # r outer, p inner
    assert [a for a, _ in address_stream(s, lay) if a < 100] == [0, 1, 2, 3, 4, 5]
    wl2 = _wl("O[p] += I[p*3] * W[p]", {"p": 2})  # I spans 0..3: elements 1 and 2 are holes
    s2 = Schedule(wl2, arch, (LevelMapping("DRAM", tuple(wl2.extents)), LevelMapping("L0", tuple(wl2.extents), ("p",), frozenset("IWO"))), ())
    lay2 = Layouts(wl2, arch.dram, {"I": LayoutSpec(base=0), "W": LayoutSpec(base=100), "O": LayoutSpec(base=200)})
    assert [a for a, _ in address_stream(s2, lay2, {"I": ["p"]}) if a < 100] == [0, 3, 1, 2]
    assert nest_order(s, 0) == ("p", "r")


# ---------------------------------------------------------------- replay: against the replay's own counts
def _link_words(s: Schedule) -> int:
    link = count_figures(s).links[0]
    return link.words_down + link.words_up


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules())
def test_walk_transfers_equal_event_transfers_and_link_words(s):
    walk = list(dram_transfers(s, method="walk"))
    events = list(dram_transfers(s, method="events"))
    assert walk == events
    assert sum(t.words for t in walk) == _link_words(s)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spatial_schedules())
def test_spatial_transfers_cross_the_dram_link_once(s):
    events = list(dram_transfers(s, method="events"))
    assert sum(t.words for t in events) == _link_words(s)
    if walk_applies(s):
        assert list(dram_transfers(s, method="walk")) == events
    d = simple_dram(64, banks=4)
    n = sum(len(c.addresses) for c in address_chunks(s, None, "nest", dram=d, chunk=7))
    assert n == _link_words(s)


# ---------------------------------------------------------------- traces
def test_every_format_parses_back_to_the_same_stream(tmp_path):
    schedule = load_schedule(SEED / "schedule.json")
    opts = load_trace_options(schedule, SEED / "thrash.yaml")
    chunks = list(address_chunks(schedule, opts.layouts, opts.element_order, dram=opts.dram, chunk=1000))
    a = np.concatenate([c.addresses for c in chunks])
    w = np.concatenate([c.is_write for c in chunks])
    assert len(chunks) > 1 and len(a) == 9728
    for fmt in FORMATS:
        path = tmp_path / f"t.{fmt}"
        assert write_trace(((c.addresses, c.is_write) for c in chunks), path, fmt) == len(a)
        got_a, got_w = read_trace_all(path, fmt)
        assert np.array_equal(got_a, a) and np.array_equal(got_w, w), fmt
    cycles = np.concatenate([c[2] for c in read_trace(tmp_path / "t.dramsim3", "dramsim3", chunk=999)])
    assert np.array_equal(cycles, np.arange(len(a)))


def test_trace_lines_look_like_the_simulators_examples():
    ch = [(np.array([0x1A2B3C40, 0x12345680]), np.array([False, True]))]
    assert write_trace_text(ch, "ramulator2") == "LD 0x1a2b3c40\nST 0x12345680\n"
    assert write_trace_text(ch, "ramulator1") == "0x1a2b3c40 R\n0x12345680 W\n"
    assert write_trace_text(ch, "dramsim3", cycles_per_request=30, start_cycle=30) == "0x1A2B3C40 READ 30\n0x12345680 WRITE 60\n"


def test_coalesce_merges_runs_within_one_request_across_chunks():
    chunks = [(np.array([0, 1, 63]), np.zeros(3, bool)), (np.array([62, 64, 64]), np.array([False, False, True]))]
    got = list(coalesce(chunks, 64))
    assert np.concatenate([g[0] for g in got]).tolist() == [0, 64, 64]
    assert np.concatenate([g[1] for g in got]).tolist() == [False, False, True]


# ---------------------------------------------------------------- the seed's scenario
def _seed(options: str):
    schedule = load_schedule(SEED / "schedule.json")
    opts = load_trace_options(schedule, SEED / options)
    return row_activations(schedule, opts.dram, opts.layouts, opts.element_order)


def test_seed_row_thrashing_and_its_fix():
    thrash, fix = _seed("thrash.yaml"), _seed("fix.yaml")
    # 32 DRAM tiles (K:4 outer, C:8), each the input's 2 channels x 10 x 10 = 200 bytes in 2 rows.
    # Thrashing: for each of the 10 new input rows h (Q, S outside C) both channels are
    # visited: 20 row switches per tile. The fix visits each channel's row once: 2 per tile.
    assert thrash.tensor("I").accesses == fix.tensor("I").accesses == 32 * 200
    assert thrash.tensor("I").activations == 32 * 20 == 640
    assert fix.tensor("I").activations == 32 * 2 == 64
    assert (thrash.activations, fix.activations) == (692, 116)
    assert fix.activations < thrash.activations and fix.clocks < thrash.clocks
    assert thrash.accesses == fix.accesses == 9728


def test_seed_example_script_and_cli(tmp_path, capsys):
    out = subprocess.run([sys.executable, str(SEED / "run.py")], capture_output=True, text=True, check=True).stdout
    assert "thrash.yaml: 692 activations (640 for the input)" in out
    assert "fix.yaml: 116 activations (64 for the input)" in out
    path = tmp_path / "t.trace"
    rc = main(["trace", str(SEED / "schedule.json"), "--layouts", str(SEED / "fix.yaml"), "--format", "dramsim3", "-o", str(path)])
    assert rc == 0
    assert "116 activations" in capsys.readouterr().out
    assert path.read_text().splitlines()[0] == "0x0 READ 0"
    rc = main(["trace", str(SEED / "schedule.json"), "--format", "nope"])
    assert rc == 2 and "--format: expected one of" in capsys.readouterr().err


def test_schedule_file_keeps_the_dram_entry():
    s = load_schedule(SEED / "schedule.json")
    assert s.architecture.dram.row_bytes == 1024 and s.architecture.dram.element_bytes == 1
    assert schedule_from_dict(schedule_to_dict(s), "x").architecture == s.architecture
    assert s.architecture.dram.hit == Fraction(22)
