"""Findings of the hostile-input exam, each with the test that failed before its fix.

1. A closed stdout (``mapsearch trace ... | head -1``) printed a BrokenPipeError traceback: now every command ends
   quietly, exit 141 (128 + SIGPIPE, :data:`mapsearch.cli.exits.EXIT_OUTPUT_CLOSED`).
2. ``solve --dram-layouts`` took tensor bases that overlap (``trace`` refused the same file): now it refuses them
   at load, in trace's words, exit 2, nothing written.
3. Characterize models and profiles took names that are no file name (``''``, ``../evil``, control
   characters) and put them in output paths: now refused at load, one line naming the file and ``name``.
4. The files sweep and characterize write were hand-copied lists in the CLI: now ``api.SWEEP_WRITTEN`` and
   ``api.CHARACTERIZE_WRITTEN`` come from the modules that write them, and equal what a run writes.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cli_run import run_captured as _run
from mapsearch import api
from mapsearch.cli import replay as replay_command
from mapsearch.cli.exits import EXIT_OUTPUT_CLOSED
from mapsearch.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
HOSTILE = ROOT / "tests" / "data" / "hostile"
ROWS = EXAMPLES / "dram" / "row-thrashing"


def _one_line(argv: list[str], capsys) -> str:
    """The command's only stderr line; it exits 2."""
    code, _, err = _run(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    return lines[0]


# --------------------------------------------------------------------------
# 1. A closed stdout.
# --------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["trace", str(ROWS / "schedule.json"), "--layouts", str(ROWS / "fix.yaml")],  # the exam's command
    ["replay", str(EXAMPLES / "worked-example-mnk.schedule.json")],
    ["export", str(EXAMPLES / "worked-example-mnk.schedule.json")],
    ["solve", str(EXAMPLES / "matmul-4x4x4.yaml"), str(EXAMPLES / "arch-worked-example.yaml"), "-q"],
], ids=lambda argv: argv[0])
def test_a_closed_stdout_ends_quietly_with_141(argv) -> None:
    """The reader of stdout is gone before the command prints (``| head -1`` that already has its line): no
    traceback, no 'Exception ignored' at exit, exit 141 (before: a BrokenPipeError traceback and exit 1)."""
    child = subprocess.Popen([sys.executable, "-m", "mapsearch", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    child.stdout.close()  # the pipe's reader goes away at once
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == EXIT_OUTPUT_CLOSED == 141
    assert err == ""


def test_a_pipe_that_is_not_stdout_is_one_line(monkeypatch, capsys) -> None:
    """A BrokenPipeError of another output (``-o`` a FIFO whose reader left) is not a closed stdout: one line."""
    def broken(args: argparse.Namespace) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(replay_command, "run", broken)
    code, out, err = _run(["replay", str(EXAMPLES / "worked-example-mnk.schedule.json")], capsys)
    assert code == 141 and out == ""
    assert err == "mapsearch: an output's reader went away: [Errno 32] Broken pipe\n"


# --------------------------------------------------------------------------
# 2. solve --dram-layouts with bases that overlap.
# --------------------------------------------------------------------------

OVERLAP = """layouts:
  I: {kind: row_aligned, order: [n, c, q+s, p+r], slice: c, base: 0}
  W: {kind: row_aligned, order: [k, c, s, r], slice: c, base: 4096}
"""


def test_solve_refuses_overlapping_layouts_as_trace_does(tmp_path, capsys) -> None:
    layouts = tmp_path / "overlap.yaml"
    layouts.write_text(OVERLAP)
    trace_line = _one_line(["trace", str(ROWS / "schedule.json"), "--layouts", str(layouts)], capsys)
    out = tmp_path / "s.json"
    line = _one_line(["solve", str(ROWS / "workload.yaml"), str(ROWS / "arch.yaml"), "--dram-layouts", str(layouts),
                      "-o", str(out), "-q", "--time-limit", "30"], capsys)
    assert line == trace_line == (
        f"mapsearch: {layouts}: layouts.W.base: W at bytes 4,096..266,239 overlaps I at bytes 0..16,383; expected "
        "disjoint address ranges (e.g. W at a base >= 16,384, or no base: packed after the others)")
    assert not out.exists()


def test_the_api_refuses_overlapping_layouts_before_solving() -> None:
    layouts = yaml.safe_load(OVERLAP)["layouts"]
    with pytest.raises(api.SpecError, match=r"^dram_layouts: layouts\.W\.base: W at bytes 4,096\.\.266,239 overlaps I"):
        api.solve(ROWS / "workload.yaml", ROWS / "arch.yaml", dram_layouts=layouts)
    workload = api.load_workload(ROWS / "workload.yaml")
    arch = api.load_architecture(ROWS / "arch.yaml")
    specs = api.solve_options(dram_layouts=layouts, workload=workload)  # no architecture: nothing to place in
    with pytest.raises(api.SpecError, match=r"^options\.dram_layouts: layouts\.W\.base: W at bytes"):
        api.solve(workload, arch, options=specs)  # fixed in the options themselves: placed by solve


# --------------------------------------------------------------------------
# 3. Model and profile names that are no file name.
# --------------------------------------------------------------------------

BAD_NAMES = ["", "   ", "../evil", "a/b", "a\\b", "..", "x..y", "tab\there", "new\nline", "nul\x00", "zero\u200bwidth",
             "x" * 201, "\u00e9" * 101]
MODEL = {"nodes": [{"name": "fc1", "op": "linear", "in": [[4, 8]], "out": [4, 4], "from": [""]}]}
EXPECTED = ("name: expected a non-empty name of printable characters, at most 200 bytes in UTF-8, without '/', '\\' "
            "or '..' (it names output files and directories), got ")


def _profile(path: Path, name: object) -> Path:
    data = yaml.safe_load((HOSTILE / "p-ok.yaml").read_text())
    data["name"] = name
    path.write_text(yaml.safe_dump(data, allow_unicode=False))
    return path


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_a_profile_name_that_is_no_file_name_is_refused(tmp_path, monkeypatch, capsys, name) -> None:
    profile = _profile(tmp_path / "p.yaml", name)
    with pytest.raises(api.SpecError) as e:
        api.load_profile(str(profile))
    assert str(e.value).startswith(f"{profile}: {EXPECTED}")
    monkeypatch.chdir(tmp_path)
    line = _one_line(["characterize", "mlp", str(profile), "--out", "res"], capsys)
    assert line.startswith(f"mapsearch: {profile}: {EXPECTED}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.yaml"]  # nothing written


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_a_model_name_that_is_no_file_name_is_refused(tmp_path, monkeypatch, capsys, name) -> None:
    model = tmp_path / "m.yaml"
    model.write_text(yaml.safe_dump({"name": name, **MODEL}, allow_unicode=False))
    with pytest.raises(api.SpecError) as e:
        api.load_model(str(model))
    assert str(e.value).startswith(f"{model}: {EXPECTED}")
    monkeypatch.chdir(tmp_path)
    line = _one_line(["characterize", str(model), str(HOSTILE / "p-ok.yaml")], capsys)  # --out from the name
    assert line.startswith(f"mapsearch: {model}: {EXPECTED}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.yaml"]  # nothing written


def test_a_model_file_without_a_name_is_named_by_its_file_and_that_is_checked(tmp_path) -> None:
    good = tmp_path / "tiny net.yaml"
    good.write_text(yaml.safe_dump(MODEL))
    assert api.load_model(str(good)).name == "tiny net"
    bad = tmp_path / "a..b.yaml"  # its stem would name the output directory
    bad.write_text(yaml.safe_dump(MODEL))
    with pytest.raises(api.SpecError, match=r"name: expected a non-empty name .*got 'a\.\.b'$"):
        api.load_model(str(bad))


@pytest.mark.parametrize("name", ["KPU-quick", "ResNet-50 v1.5", "caf\u00e9", "x" * 200])
def test_ordinary_names_still_load(tmp_path, name) -> None:
    assert api.load_profile(str(_profile(tmp_path / "p.yaml", name))).name == name
    model = tmp_path / "m.yaml"
    model.write_text(yaml.safe_dump({"name": name, **MODEL}))
    assert api.load_model(str(model)).name == name


# --------------------------------------------------------------------------
# 4. What sweep and characterize write: one list each, from the modules that write the files.
# --------------------------------------------------------------------------

# SQLite's files beside an open database (WAL mode; a rollback journal while it is created): listed, since an
# --out must not replace an input by them either, but gone once the run has closed the database.
WHILE_OPEN = {"results.sqlite-wal", "results.sqlite-shm", "results.sqlite-journal"}


def _entries(folder: Path) -> set[str]:
    return {p.name + "/" if p.is_dir() else p.name for p in folder.iterdir()}


def test_the_sweep_list_is_what_a_sweep_writes(tmp_path, capsys) -> None:
    out = tmp_path / "res"
    assert main(["sweep", str(HOSTILE / "sw-ok.yaml"), "--out", str(out), "--workers", "1", "-q"]) == 0
    assert WHILE_OPEN <= set(api.SWEEP_WRITTEN)
    assert _entries(out) == set(api.SWEEP_WRITTEN) - WHILE_OPEN
    assert len(set(api.SWEEP_WRITTEN)) == len(api.SWEEP_WRITTEN)


def test_the_characterize_list_is_what_characterize_writes(tmp_path, capsys) -> None:
    """Two linear layers that fuse on a one-level profile: every file characterize writes, chains/ included."""
    pytest.importorskip("matplotlib")  # the roofline
    model = tmp_path / "tiny.yaml"
    model.write_text(yaml.safe_dump({"name": "tiny", "nodes": [
        {"name": "fc1", "op": "linear", "in": [[4, 8]], "out": [4, 4], "from": [""]},
        {"name": "fc2", "op": "linear", "in": [[4, 4]], "out": [4, 4], "from": ["fc1"]}]}))
    out = tmp_path / "res"
    assert main(["characterize", str(model), str(HOSTILE / "p-ok.yaml"), "--out", str(out), "--workers", "1",
                 "--time-limit", "30", "-q"]) == 0
    assert set(api.SWEEP_WRITTEN) <= set(api.CHARACTERIZE_WRITTEN)
    assert _entries(out) == set(api.CHARACTERIZE_WRITTEN) - WHILE_OPEN
    assert len(set(api.CHARACTERIZE_WRITTEN)) == len(api.CHARACTERIZE_WRITTEN)


def test_the_cli_refuses_by_the_api_lists(tmp_path, monkeypatch, capsys) -> None:
    """An --out holding an input as one of the written files is refused (each list's own entries, incl. a folder)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r" / "chains").mkdir(parents=True)
    shutil.copy(HOSTILE / "p-ok.yaml", tmp_path / "r" / "chains" / "p.yaml")  # characterize writes r/chains/
    line = _one_line(["characterize", "mlp", "r/chains/p.yaml", "--out", "r"], capsys)
    assert "would not replace PROFILE r/chains/p.yaml (it would write r/chains)" in line
    shutil.copy(HOSTILE / "sw-ok.yaml", tmp_path / "r" / ".mapsearch.lock")
    line = _one_line(["sweep", "r/.mapsearch.lock", "--out", "r"], capsys)
    assert "would not replace SWEEP.yaml r/.mapsearch.lock (it would write r/.mapsearch.lock)" in line
