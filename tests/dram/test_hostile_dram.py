"""Hostile DRAM inputs: each is one line naming the file and the field, exit code 2 and no output file;
and ``--request-bytes`` keeps every request under its own tensor."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from mapsearch.cli import main
from mapsearch.dram.geometry import PRESETS, DramSpec, DramSpecError, simple_dram
from mapsearch.dram.layout import LayoutError, Layouts, LayoutSpec
from mapsearch.dram.trace import coalesce
from mapsearch.dram.tracing import trace
from mapsearch.spec.workload import Workload

SEED = Path(__file__).resolve().parents[2] / "examples" / "dram" / "row-thrashing"
SCHEDULE = SEED / "schedule.json"
WORKLOAD = SEED / "workload.yaml"
ARCH = SEED / "arch.yaml"
SEED_DRAM = "dram: {preset: ddr4-3200, element_bytes: 1, row_bytes: 1024, bank_groups: 1, banks: 1, policy: open}"
LAYOUT = "layouts:\n  I: {kind: row_aligned, order: [n, c, q+s, p+r], slice: c}\n"


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def trace_cli(tmp_path: Path, options: str | None, *extra: str, schedule: Path = SCHEDULE) -> tuple[int, str, str, Path]:
    out = tmp_path / "trace.txt"
    args = ["trace", str(schedule), "-o", str(out), *extra]
    if options is not None:
        (tmp_path / "l.yaml").write_text(options)
        args += ["--layouts", str(tmp_path / "l.yaml")]
    code, stdout, stderr = run(args)
    return code, stdout, stderr, out


# ---------------------------------------------------------------- 1. geometry caps
@pytest.mark.parametrize("field, value, message", [
    ("banks", 2**40, "dram.banks: expected a power of two from 1 to 2^10 (1,024), got 1,099,511,627,776"),
    ("rows", 2**40, "dram.rows: expected a power of two from 1 to 2^24 (16,777,216), got 1,099,511,627,776"),
    ("row_bytes", 2**40, "dram.row_bytes: expected a power of two from 1 to 2^20 (1,048,576), got 1,099,511,627,776"),
    ("channels", 2**20, "dram.channels: expected a power of two from 1 to 2^10 (1,024), got 1,048,576"),
    ("ranks", 2**20, "dram.ranks: expected a power of two from 1 to 2^6 (64), got 1,048,576"),
    ("bank_groups", 2**20, "dram.bank_groups: expected a power of two from 1 to 2^6 (64), got 1,048,576"),
])
def test_a_huge_geometry_field_in_trace_options_is_one_line(tmp_path: Path, field: str, value: int, message: str) -> None:
    code, out, err, trace_file = trace_cli(tmp_path, f"dram: {{preset: ddr4-3200, {field}: {value}}}\n" + LAYOUT)
    assert (code, out) == (2, "")
    assert err == f"mapsearch: {tmp_path / 'l.yaml'}: {message}\n"
    assert not trace_file.exists()


def test_a_huge_bank_count_in_the_architecture_is_one_line_for_solve(tmp_path: Path) -> None:
    text = ARCH.read_text()
    assert SEED_DRAM in text
    arch = tmp_path / "arch.yaml"
    arch.write_text(text.replace(SEED_DRAM, "dram: {preset: ddr4-3200, banks: 1099511627776}"))
    out = tmp_path / "s.json"
    code, stdout, stderr = run(["solve", str(WORKLOAD), str(arch), "--time-limit", "5", "--dram-rows", "tiebreak",
                                "-q", "-o", str(out)])
    assert (code, stdout) == (2, "")
    assert stderr == (f"mapsearch: {arch}: dram.banks: expected a power of two from 1 to 2^10 (1,024), "
                      "got 1,099,511,627,776\n")
    assert not out.exists()


def test_all_banks_together_and_the_whole_memory_are_capped() -> None:
    assert DramSpec(channels=1024, ranks=64, bank_groups=1, banks=1, rows=2**8, mapping="RoRaChCo").n_banks == 2**16
    with pytest.raises(DramSpecError, match=r"^banks: expected channels \* ranks \* bank_groups \* banks <= 2\^16 "
                                            r"\(65,536\), got 1024 \* 64 \* 2 \* 1 = 131,072$"):
        DramSpec(channels=1024, ranks=64, bank_groups=2, banks=1, rows=2**8, mapping="RoRaBgChCo")
    with pytest.raises(DramSpecError, match=r"^rows: expected rows \* row_bytes \* banks in all <= 2\^48 bytes "
                                            r"\(256 TiB\), got 16,777,216 \* 1,048,576 \* 32 = 2\^49 bytes$"):
        DramSpec(rows=2**24, row_bytes=2**20, bank_groups=4, banks=8)
    assert DramSpec(rows=2**24, row_bytes=2**20, bank_groups=4, banks=4).n_banks == 16  # 2^48 bytes: the limit itself
    with pytest.raises(DramSpecError, match=r"^rows: .* = 2\^52 bytes$"):
        DramSpec(rows=2**24, row_bytes=2**20, bank_groups=4, banks=4, ranks=16, mapping="RoRaBaCoCh")


def test_the_caps_keep_every_preset_and_the_simple_dram() -> None:
    for spec in PRESETS.values():
        assert spec.with_() == spec
    assert simple_dram(2**14, banks=1024).n_banks == 1024  # 2^20 rows of 2^14 bytes in 2^10 banks: 2^44 bytes


# ---------------------------------------------------------------- 2. element_order's type
@pytest.mark.parametrize("entry, message", [
    ("5", "element_order: expected 'layout', 'nest', a list of dimensions, or a mapping tensor -> one of those, got 5"),
    ("{I: 5}", "element_order.I: expected 'layout', 'nest' or a list of dimensions, got 5"),
    ("[n, 3]", "element_order[1]: expected a dimension name, got 3"),
    ("{I: [n, [c]]}", "element_order.I[1]: expected a dimension name, got ['c']"),
    ("{I: {n: 1}}", "element_order.I: expected 'layout', 'nest' or a list of dimensions, got {'n': 1}"),
])
def test_an_element_order_of_the_wrong_type_is_one_line(tmp_path: Path, entry: str, message: str) -> None:
    code, out, err, trace_file = trace_cli(tmp_path, f"element_order: {entry}\n")
    assert (code, out) == (2, "")
    assert err == f"mapsearch: {tmp_path / 'l.yaml'}: {message}\n"
    assert not trace_file.exists()


def test_an_empty_element_order_is_the_default(tmp_path: Path) -> None:
    empty = trace(SCHEDULE, options=_write(tmp_path / "e.yaml", "element_order: null\n"))
    default = trace(SCHEDULE)
    assert empty.rows == default.rows


# ---------------------------------------------------------------- 3. --request-bytes keeps each tensor's requests
def _per_tensor(result) -> dict[str, tuple[int, int, int]]:
    return {t.tensor: (t.accesses, t.writes, t.activations) for t in result.rows.per_tensor}


def test_one_byte_requests_count_under_their_own_tensors() -> None:
    plain = trace(SCHEDULE)
    assert _per_tensor(plain) == {"I": (6400, 0, 36), "W": (2304, 0, 48), "O": (1024, 1024, 4)}
    merged = trace(SCHEDULE, request_bytes=1)  # 1-byte elements, no access repeated back to back: one request each
    assert merged.requests == plain.addresses == 9728
    assert _per_tensor(merged) == _per_tensor(plain)
    assert merged.rows == plain.rows


def test_64_byte_requests_count_under_their_own_tensors() -> None:
    merged = trace(SCHEDULE, request_bytes=64)
    assert merged.requests == 304
    assert _per_tensor(merged) == {"I": (128, 0, 36), "W": (160, 0, 48), "O": (16, 16, 4)}
    assert sum(t.accesses for t in merged.rows.per_tensor) == merged.rows.accesses == merged.requests
    assert sum(t.activations for t in merged.rows.per_tensor) == merged.rows.activations


def test_request_bytes_per_tensor_in_the_json_report(tmp_path: Path) -> None:
    code, out, err = run(["trace", str(SCHEDULE), "--request-bytes", "1", "--json"])
    assert (code, err) == (0, "")
    per = json.loads(out)["rows"]["per_tensor"]
    assert {t: (v["accesses"], v["writes"]) for t, v in per.items()} == {"I": (6400, 0), "W": (2304, 0), "O": (1024, 1024)}
    code, out, err = run(["trace", str(SCHEDULE), "--request-bytes", "3"])
    assert (code, err) == (0, "")
    assert out.splitlines()[3:] == ["  I: 2156 accesses, 36 activations (2120 hits, 1 misses, 35 conflicts)",
                                    "  W: 896 accesses, 49 activations (847 hits, 0 misses, 49 conflicts)",
                                    "  O: 344 accesses, 5 activations (339 hits, 0 misses, 5 conflicts)"]


def test_coalesce_never_merges_two_tensors_in_one_block() -> None:
    chunks = [(np.array([0, 1, 2]), np.zeros(3, bool), np.array([0, 0, 1], np.int8)),
              (np.array([3, 64]), np.zeros(2, bool), np.array([1, 1], np.int8))]
    got = list(coalesce(chunks, 64))
    assert np.concatenate([g[0] for g in got]).tolist() == [0, 0, 64]
    assert np.concatenate([g[2] for g in got]).tolist() == [0, 1, 1]
    pairs = list(coalesce([(c[0], c[1]) for c in chunks], 64))  # without tensors: (requests, is_write) as before
    assert [len(g) for g in pairs] == [2, 2] and np.concatenate([g[0] for g in pairs]).tolist() == [0, 64]


# ---------------------------------------------------------------- 4. overlapping tensors
def test_two_tensors_at_one_base_are_refused(tmp_path: Path) -> None:
    code, out, err, trace_file = trace_cli(tmp_path, "layouts:\n  I: {kind: row_major, base: 0}\n"
                                                     "  W: {kind: row_major, base: 0}\n")
    assert (code, out) == (2, "")
    assert err == (f"mapsearch: {tmp_path / 'l.yaml'}: layouts.W.base: W at bytes 0..2,303 overlaps I at bytes "
                   "0..1,599; expected disjoint address ranges (e.g. W at a base >= 1,600, or no base: packed after "
                   "the others)\n")
    assert not trace_file.exists()


def test_a_base_inside_an_earlier_packed_tensor_is_refused() -> None:
    wl = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})
    d = simple_dram(64)
    with pytest.raises(LayoutError, match=r"^layouts\.Z\.base: Z at bytes 8\.\.23 overlaps A at bytes 0\.\.15;"):
        Layouts(wl, d, {"Z": LayoutSpec(base=8)})
    lay = Layouts(wl, d, {"A": LayoutSpec(base=0), "B": LayoutSpec(base=16), "Z": LayoutSpec(base=32)})  # touching: fine
    assert [lay[t].base for t in ("A", "B", "Z")] == [0, 16, 32]


def test_adjacent_bases_are_taken_but_element_bytes_pushing_them_together_is_one_line(tmp_path: Path) -> None:
    options = ("dram: {preset: ddr4-3200, element_bytes: 1}\nlayouts:\n  I: {kind: row_major, base: 0}\n"
               "  W: {kind: row_major, base: 1600}\n")
    code, out, err, trace_file = trace_cli(tmp_path, options)
    assert (code, err) == (0, "") and trace_file.exists()
    trace_file.unlink()
    code, out, err, trace_file = trace_cli(tmp_path, options, "--element-bytes", "2")
    assert (code, out) == (2, "")
    assert err == (f"mapsearch: {tmp_path / 'l.yaml'}: layouts.W.base: W at bytes 1,600..6,207 overlaps I at bytes "
                   "0..3,199; expected disjoint address ranges (e.g. W at a base >= 3,200, or no base: packed after "
                   "the others) (with --element-bytes 2)\n")
    assert not trace_file.exists()


# ---------------------------------------------------------------- 5. no DRAM anywhere
def test_no_dram_names_the_schedule_file(tmp_path: Path) -> None:
    data = json.loads(SCHEDULE.read_text())
    data["architecture"].pop("dram")
    schedule = tmp_path / "s.json"
    schedule.write_text(json.dumps(data))
    code, out, err, trace_file = trace_cli(tmp_path, None, schedule=schedule)
    assert (code, out) == (2, "")
    assert err == (f"mapsearch: {schedule} (no options file): dram: no DRAM: give the architecture a dram: entry, "
                   "an options file (--layouts) with a dram: entry, or --dram PRESET\n")
    assert not trace_file.exists()
    code, out, err, trace_file = trace_cli(tmp_path, "", schedule=schedule)  # an empty options file
    assert err == (f"mapsearch: {tmp_path / 'l.yaml'}: dram: no DRAM: give the architecture a dram: entry, "
                   "a dram: entry here, or --dram PRESET\n")


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
