"""Hostile schedule files, constraint files, sweep files and options: each fails in one exact line, exit 2.

Found by mutating the bundled schedules (examples/*.schedule.json, a fused chain's
``solve -o``), constraints, sweeps and the commands' options: each case here was
a traceback, an exit 0 on bad input, a megabyte-long error line, several lines,
or an output directory left behind. The schedules are mutated in ``tmp_path``
from ``examples/array-4x4-matmul.schedule.json`` and
``tests/data/hostile/fused-chain.schedule.json``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from cli_run import run_cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ARRAY = EXAMPLES / "array-4x4-matmul.schedule.json"
MNK = EXAMPLES / "worked-example-mnk.schedule.json"
FUSED = ROOT / "tests" / "data" / "hostile" / "fused-chain.schedule.json"
MATMUL, THREE = EXAMPLES / "matmul-4x4x4.yaml", EXAMPLES / "arch-three-level.yaml"


def fails(argv: list[Any], message: str, output: Path | None = None) -> None:
    """Exit 2, exactly ``mapsearch: <message>`` on stderr, and ``output`` not written."""
    code, _, err = run_cli(argv)
    assert "Traceback" not in err, err
    assert err.splitlines() == [f"mapsearch: {message}"], err
    assert code == 2
    if output is not None:
        assert not output.exists()


def mutant(tmp_path: Path, base: Path, change: Callable[[dict], Any], raw: dict[str, str] | None = None) -> Path:
    """``base`` with ``change`` applied; ``raw`` replaces quoted placeholders with JSON text Python does not write."""
    doc = copy.deepcopy(json.loads(base.read_text(encoding="utf-8")))
    change(doc)
    text = json.dumps(doc, indent=1)
    for placeholder, value in (raw or {}).items():
        text = text.replace(json.dumps(placeholder), value)
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    return path


def _set(path: list[Any], value: Any) -> Callable[[dict], None]:
    def change(doc: dict) -> None:
        node = doc
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value
    return change


# ---- a fused chain's whole-run predicted figures: schema-checked like a stage's (was an OverflowError traceback)

@pytest.mark.parametrize("raw", ["1e309", "Infinity", "NaN"])
@pytest.mark.parametrize("command", [["replay", "--check"], ["export", "--format", "loopnest"]])
def test_fused_predicted_not_a_count(tmp_path: Path, raw: str, command: list[str]) -> None:
    s = mutant(tmp_path, FUSED, _set(["predicted", "op_calls"], "@RAW@"), {"@RAW@": raw})
    shown = {"1e309": "inf", "Infinity": "inf", "NaN": "nan"}[raw]
    fails([command[0], s, *command[1:]], f"{s}: predicted.op_calls: expected int >= 0, got {shown}")


def test_fused_predicted_tensor_words_infinite(tmp_path: Path) -> None:
    s = mutant(tmp_path, FUSED, _set(["predicted", "links", 0, "tensors", "A", "words_up"], "@RAW@"), {"@RAW@": "1e309"})
    fails(["replay", s], f"{s}: predicted.links[0].tensors.A.words_up: expected int >= 0, got inf")


def test_fused_predicted_missing_field(tmp_path: Path) -> None:
    s = mutant(tmp_path, FUSED, lambda d: d["predicted"].pop("macs"))
    fails(["replay", s], f"{s}: predicted.macs: missing; expected int >= 0")


# ---- predicted figures beyond the solver's integers (were read, exported and rewritten: exit 0)

def test_predicted_count_beyond_2p62(tmp_path: Path) -> None:
    s = mutant(tmp_path, ARRAY, _set(["predicted", "op_calls"], 2**70))
    out = tmp_path / "out.json"
    fails(["export", s, "--format", "json", "-o", out],
          f"{s}: predicted.op_calls: expected int >= 0, at most 2^62 (the solver's integers), got {2**70}", out)


# ---- the embedded workload and architecture checked together, as solve checks its two files (were ignored: exit 0)

def test_may_reuse_unknown_tensor(tmp_path: Path) -> None:
    s = mutant(tmp_path, ARRAY, _set(["architecture", "levels", 2, "mesh", 0, "may_reuse"], ["bogus"]))
    fails(["replay", s, "--check"], f"{s}: architecture.levels[2].mesh[0].may_reuse[0]: expected a tensor of {s} "
          "(A, B, Z) or a role (input, output, all, none), got 'bogus'")


def test_block_unknown_dimension(tmp_path: Path) -> None:
    s = mutant(tmp_path, ARRAY, _set(["architecture", "compute", "block"], {"q": 2}))
    out = tmp_path / "nest.txt"
    fails(["export", s, "-o", out], f"{s}: architecture.compute.block.q: unknown dimension; the workload {s} uses m, n, k", out)


def test_fused_block_unknown_dimension(tmp_path: Path) -> None:
    s = mutant(tmp_path, FUSED, _set(["architecture", "compute", "block"], {"q": 2}))
    fails(["replay", s], f"{s}: architecture.compute.block.q: unknown dimension; the workload {s} uses m, n, k, p")


# ---- names copied from the file into the message are cut (a 100,000-character name was one 100 KB line)

@pytest.mark.parametrize("path, message", [
    (["levels", 1, "keep", 0], "levels[1].keep[0]: unknown tensor 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA...; "
     "expected one of A, B, Z"),
    (["levels", 2, "spatial", 0, "dim"], "levels[2].spatial[0].dim: unknown dimension "
     "'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA...; expected one of m, n, k"),
])
def test_huge_name_is_cut(tmp_path: Path, path: list[Any], message: str) -> None:
    s = mutant(tmp_path, ARRAY, _set(path, "A" * 100_000))
    fails(["replay", s], f"{s}: {message}")


def test_huge_level_name_is_cut(tmp_path: Path) -> None:
    s = mutant(tmp_path, MNK, _set(["levels", 0, "name"], "A" * 100_000))
    code, _, err = run_cli(["replay", s])
    assert code == 2 and len(err.splitlines()) == 1 and len(err) < 600, err[:300]
    assert err.startswith(f"mapsearch: {s}: levels: expected one mapping per level ['L1', 'L0'], got ['AAAA")


# ---- constraints

@pytest.mark.parametrize("text, message", [
    ("name: {a: 1}\n", "name: expected text, got {'a': 1}"),
    ("description: [1, 2]\n", "description: expected text, got [1, 2]"),
    ("name: !!binary aGVsbG8=\n", "name: expected text, got b'hello'"),
    ("tiles: {innermost: {m: {}}}\n", "tiles.innermost.m: expected keys min and/or max, got {}"),
    ("orders: {outermost: [m, n, k]}\n", "orders.outermost: L2 is the top level, which has no loops (its tile is the "
     "whole workload); give the order of a level below it"),
    ("stationary: [{tensor: output, level: outermost}]\n", "stationary[0].level: L2 is the top level, which has no "
     "loops (its tile is the whole workload); give a level below it"),
    # The schema runs after the field checks: a name that is no text is refused as the schema says.
    ("stationary: [{tensor: 1, level: innermost}]\n", "stationary[0].tensor: expected string, got 1"),
])
def test_constraints(tmp_path: Path, text: str, message: str) -> None:
    c = tmp_path / "c.yaml"
    c.write_text(text, encoding="utf-8")
    out = tmp_path / "s.json"
    fails(["solve", MATMUL, THREE, "-c", c, "-q", "-o", out], f"{c}: {message}", out)


# ---- sweep files and options: NaN and infinities are no numbers (a sweep ran with time_limit .nan, exit 0)

@pytest.mark.parametrize("key, value, shown", [("time_limit", ".nan", "nan"), ("time_limit", ".inf", "inf"),
                                               ("time_limit", "-.inf", "-inf"), ("time_limit", "1.0e+30", "1e+30"),
                                               ("work_limit", "2.0e+7", "20000000.0")])
def test_sweep_file_limits(tmp_path: Path, key: str, value: str, shown: str) -> None:
    """Not finite, or past solve's 10^7 s (a limit the walk's cell bound overflowed on)."""
    sweep = tmp_path / "sw.yaml"
    sweep.write_text(f"name: tiny\nworkloads: [{MATMUL}]\narchitectures: [{THREE}]\nobjectives: [time]\n"
                     f"{key}: {value}\n", encoding="utf-8")
    out = tmp_path / "results"
    what = "seconds" if key == "time_limit" else "deterministic seconds"
    tail = " (as solve's --time-limit)" if key == "time_limit" else " (CP-SAT's deterministic time per phase)"
    fails(["sweep", sweep, "--out", out, "--workers", "1", "-q"],
          f"{sweep}: {key}: expected {what} in (0, 10,000,000]{tail}, got {shown}", out)


@pytest.mark.parametrize("flag, value, message", [
    ("--time-limit", "inf", "--time-limit: expected seconds > 0, got inf"),
    ("--time-limit", "1e30", "--time-limit: expected at most 10,000,000 seconds, got 1e+30"),
    ("--work-limit", "inf", "--work-limit: expected deterministic seconds > 0, got inf"),
    ("--work-limit", "1e9", "--work-limit: expected at most 10,000,000 seconds, got 1000000000.0"),
])
def test_sweep_limits(tmp_path: Path, flag: str, value: str, message: str) -> None:
    out = tmp_path / "results"
    fails(["sweep", EXAMPLES / "sweeps" / "l1-capacity.yaml", "--out", out, flag, value, "-q"], message, out)


def test_one_limit_on_seconds_for_the_api_and_the_sweep_schema() -> None:
    """The sweep file's schema, load_sweep's overrides and characterize all stop where solve does."""
    import json

    from mapsearch import api
    from mapsearch.errors import UsageError
    from mapsearch.solve.named_options import MAX_SECONDS
    from mapsearch.sweep.spec import SCHEMA, load_sweep

    properties = json.loads(SCHEMA.read_text(encoding="utf-8"))["properties"]
    assert properties["time_limit"]["maximum"] == properties["work_limit"]["maximum"] == MAX_SECONDS
    for key in ("time_limit", "work_limit"):
        with pytest.raises(UsageError, match=f"^{key}: expected at most 10,000,000 seconds, got 1000000000.0$"):
            load_sweep(EXAMPLES / "sweeps" / "l1-capacity.yaml", **{key: 1e9})
        with pytest.raises(UsageError, match=f"^{key}: expected at most 10,000,000 seconds"):
            api.characterize("resnet50", ["cpu"], "/nonexistent-out", **{"time_limit": 30, key: 1e9})


# ---- empty option values are bad values, not "not given" (--objective '' solved for time: exit 0)

@pytest.mark.parametrize("flag, message", [
    ("--objective", "--objective: expected one of time, words, energy, got ''"),
    ("--block-binding", "--block-binding: expected a value (it is empty), got ''"),
    ("--start", "--start: expected a value (it is empty), got ''"),
    ("--replay-mode", "--replay-mode: expected one of count, events, data, got ''"),
])
def test_solve_empty_option(tmp_path: Path, flag: str, message: str) -> None:
    out = tmp_path / "s.json"
    fails(["solve", MATMUL, THREE, flag, "", "-q", "-o", out], message, out)


def test_replay_empty_mode() -> None:
    fails(["replay", MNK, "--mode", ""], "--mode: expected one of count, data, events, events-data, got ''")


# ---- trace options (a huge --request-bytes was an OverflowError traceback; '' element order was ignored)

@pytest.mark.parametrize("args, message", [
    (["--request-bytes", "99999999999999999999"],
     "--request-bytes: expected an int in 1..1,073,741,824 (2^30), got 99999999999999999999"),
    (["--element-order", ""], "--element-order: expected 'layout', 'nest' or dims outer->inner, e.g. m,k,n, got ''"),
    (["--format", "dramsim3", "--cycles-per-request", "99999999999999999999"],
     "--cycles-per-request: expected an int in 1..1,048,576 (2^20), got 99999999999999999999"),
])
def test_trace_options(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "trace.txt"
    fails(["trace", MNK, "--dram", "ddr4-3200", "-o", out, *args], message, out)


# ---- characterize: a repeated profile was refused after the run had started (four lines, a directory left)

def test_characterize_repeated_profile(tmp_path: Path) -> None:
    out = tmp_path / "results"
    fails(["characterize", "mlp", "tpu", "tpu", "--out", out, "--no-plot", "-q"],
          "profiles must have distinct names, got TPU, TPU", out)


def test_characterize_empty_profile(tmp_path: Path) -> None:
    out = tmp_path / "results"
    fails(["characterize", "mlp", "", "--out", out], "PROFILE: expected a name or a file, got ''", out)


def test_trace_layouts_dram_entry_is_checked_under_a_preset(tmp_path: Path) -> None:
    """--dram PRESET replaces the layouts file's dram: entry, which was then never read: a bad one passed."""
    layouts = tmp_path / "layouts.yaml"
    layouts.write_text("dram: ddr9\n", encoding="utf-8")
    out = tmp_path / "trace.txt"
    fails(["trace", MNK, "--dram", "ddr4-3200", "--layouts", layouts, "-o", out],
          f"{layouts}: dram.preset: expected one of ddr4, ddr4-3200, hbm2, hbm2-2000, got 'ddr9'", out)


def test_the_api_trace_refuses_what_its_addresses_cannot_hold() -> None:
    """The limits are api.trace's, not only the command line's: a huge request was an OverflowError there."""
    from mapsearch import api

    with pytest.raises(api.UsageError, match=r"^request_bytes: expected an int in 1\.\.1,073,741,824 \(2\^30\), "
                                             r"got 100000000000000000000$"):
        api.trace(MNK, request_bytes=10**20, dram="ddr4-3200")
