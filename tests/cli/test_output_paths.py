"""Where the commands write: never over one of their own inputs, never to an empty --out, and only schedules the
simulator accepts (export). Each refusal is one line on stderr, exit 2, and nothing written."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from cli_run import run_captured as _run
from mapsearch.cli.paths import same_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HOSTILE = Path(__file__).resolve().parents[1] / "data" / "hostile"
SCHEDULE = EXAMPLES / "worked-example-mnk.schedule.json"


def _refused(argv: list[str], capsys, words: str) -> None:
    """One line on stderr containing ``words``, exit 2."""
    code, _, err = _run(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and words in lines[0], err


@pytest.fixture
def files(tmp_path, monkeypatch) -> Path:
    """A scratch directory (the working directory) with a workload, an architecture and a schedule."""
    shutil.copy(EXAMPLES / "matmul-4x4x4.yaml", tmp_path / "w.yaml")
    shutil.copy(EXAMPLES / "arch-three-level.yaml", tmp_path / "a.yaml")
    shutil.copy(SCHEDULE, tmp_path / "s.json")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------
# Defect 1: an output that is one of the command's inputs.
# --------------------------------------------------------------------------


@pytest.mark.parametrize("argv, words", [
    (["solve", "w.yaml", "a.yaml", "--time-limit", "5", "-q", "-o", "w.yaml"],
     "-o: expected a path other than WORKLOAD w.yaml (writing there would replace it), got 'w.yaml'"),
    (["solve", "w.yaml", "a.yaml", "--time-limit", "5", "-q", "-o", "./a.yaml"],
     "-o: expected a path other than ARCH a.yaml (writing there would replace it), got './a.yaml'"),
    (["solve", "w.yaml", "a.yaml", "--time-limit", "5", "-q", "--start", "s.json", "-o", "s.json"],
     "-o: expected a path other than --start s.json"),
    (["trace", "s.json", "-o", "s.json"],
     "-o: expected a path other than SCHEDULE.json s.json (writing there would replace it), got 's.json'"),
    (["export", "s.json", "-o", "s.json"], "-o: expected a path other than SCHEDULE.json s.json"),
    (["export", "s.json", "--format", "json", "-o", "s.json"], "-o: expected a path other than SCHEDULE.json s.json"),
    (["export", "s.json", "--format", "accelforge", "-o", "s.json"],
     "-o: expected a path other than SCHEDULE.json s.json"),
])
def test_an_output_that_is_an_input_is_refused(files, capsys, argv, words) -> None:
    before = _contents(files)
    _refused(argv, capsys, words)
    assert _contents(files) == before  # the input is intact and nothing else was written


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_a_link_to_an_input_is_the_input(files, capsys, link) -> None:
    (os.symlink if link == "symlink" else os.link)("w.yaml", "other.yaml")
    before = (files / "w.yaml").read_bytes()
    _refused(["solve", "w.yaml", "a.yaml", "-q", "-o", "other.yaml"], capsys,
             "-o: expected a path other than WORKLOAD w.yaml (writing there would replace it), got 'other.yaml'")
    assert (files / "w.yaml").read_bytes() == before


def test_export_to_a_directory_never_replaces_the_schedule(files, capsys) -> None:
    (files / "d").mkdir()
    shutil.copy(SCHEDULE, files / "d" / "mapping.yaml")  # the name accelforge's mapping file gets in DIR
    before = _contents(files)
    _refused(["export", "d/mapping.yaml", "--format", "accelforge", "-o", "d"], capsys,
             "-o: expected a path other than SCHEDULE.json d/mapping.yaml")
    assert _contents(files) == before


def test_outputs_that_are_not_inputs_are_still_written(files, capsys) -> None:
    code, _, err = _run(["export", "s.json", "--format", "json", "-o", "copy.json"], capsys)
    assert code == 0, err
    assert json.loads((files / "copy.json").read_text()) == json.loads(SCHEDULE.read_text())


def test_same_file() -> None:
    assert same_file(SCHEDULE, SCHEDULE.parent / ".." / "examples" / SCHEDULE.name)
    assert not same_file(SCHEDULE, EXAMPLES / "worked-example-mkn.schedule.json")
    assert not same_file(SCHEDULE, EXAMPLES / "no-such-file.json")


def test_sweep_out_that_is_or_holds_the_sweep_file_is_refused(files, capsys) -> None:
    shutil.copy(HOSTILE / "sw-ok.yaml", files / "sw.yaml")
    _refused(["sweep", "sw.yaml", "--out", "sw.yaml"], capsys,
             "--out: expected a path other than SWEEP.yaml sw.yaml (writing there would replace it), got 'sw.yaml'")
    (files / "r").mkdir()
    shutil.copy(HOSTILE / "sw-ok.yaml", files / "r" / "summary.txt")  # the sweep writes DIR/summary.txt
    before = _contents(files)
    _refused(["sweep", "r/summary.txt", "--out", "r"], capsys,
             "--out: expected a directory where the command would not replace SWEEP.yaml r/summary.txt "
             "(it would write r/summary.txt), got 'r'")
    assert _contents(files) == before


def test_characterize_out_that_holds_a_profile_is_refused(files, capsys) -> None:
    (files / "r").mkdir()
    shutil.copy(HOSTILE / "p-ok.yaml", files / "r" / "layers.json")  # characterize writes DIR/layers.json
    before = _contents(files)
    _refused(["characterize", "mlp", "r/layers.json", "--out", "r"], capsys,
             "--out: expected a directory where the command would not replace PROFILE r/layers.json "
             "(it would write r/layers.json), got 'r'")
    assert _contents(files) == before


# --------------------------------------------------------------------------
# Defect 2: --out '' of sweep and characterize; defect 3: sweep/characterize --workers past solve's limit.
# --------------------------------------------------------------------------


@pytest.mark.parametrize("argv, words", [
    (["sweep", str(HOSTILE / "sw-ok.yaml"), "--out", ""], "argument --out: expected a directory path, got ''"),
    (["characterize", "mlp", str(HOSTILE / "p-ok.yaml"), "--out", ""],
     "argument --out: expected a directory path, got ''"),
    (["sweep", str(HOSTILE / "sw-ok.yaml"), "--out", "res", "--workers", "100000"],
     "--workers: expected an int between 1 and 4,096, got 100000"),
    (["characterize", "mlp", str(HOSTILE / "p-ok.yaml"), "--out", "res", "--workers", "100000"],
     "--workers: expected an int between 1 and 4,096, got 100000"),
    (["solve", "w.yaml", "a.yaml", "--workers", "100000"],  # the wording both copy
     "--workers: expected an int between 1 and 4,096, got 100000"),
])
def test_sweep_and_characterize_options_are_refused(files, capsys, argv, words) -> None:
    before = _contents(files)
    _refused(argv, capsys, words)
    assert _contents(files) == before
    assert not (files / "res").exists() and not (files / "sw-ok-results").exists()
    assert not (files / "characterize-mlp").exists()


# --------------------------------------------------------------------------
# Defect 4: export refuses what replay refuses.
# --------------------------------------------------------------------------


@pytest.fixture
def overflowing(files) -> Path:
    """The worked example's schedule with its innermost level's capacity set to 1 word."""
    doc = json.loads(SCHEDULE.read_text())
    doc["architecture"]["levels"][-1]["capacity"] = 1
    (files / "cap.json").write_text(json.dumps(doc))
    return files / "cap.json"


def test_replay_refuses_the_overflowing_schedule(overflowing, capsys) -> None:
    _refused(["replay", "cap.json", "--check"], capsys, "cap.json: L0: no room for ")


@pytest.mark.parametrize("fmt", ["loopnest", "json", "accelforge", "timeloop"])
def test_export_refuses_what_replay_refuses(overflowing, capsys, fmt) -> None:
    before = _contents(overflowing.parent)
    code, _, err = _run(["replay", "cap.json"], capsys)
    replay_line = err.strip()
    assert code == 2
    _refused(["export", "cap.json", "--format", fmt, "-o", "out.json"], capsys, replay_line.removeprefix("mapsearch: "))
    assert _contents(overflowing.parent) == before  # no out.json
    code, out, err = _run(["export", "cap.json", "--format", fmt], capsys)  # stdout: nothing printed either
    assert code == 2 and out == "" and "no room for" in err


def test_export_still_writes_a_schedule_replay_accepts(files, capsys) -> None:
    code, out, err = _run(["export", "s.json"], capsys)
    assert code == 0 and err == "" and out.startswith("#")


def test_plot_refuses_to_write_over_its_results(tmp_path, capsys) -> None:
    from mapsearch.cli import main

    rows = tmp_path / "results.jsonl"
    rows.write_text('{"status": "OPTIMAL", "time": 4, "words": 8}\n', encoding="utf-8")
    before = rows.read_bytes()
    assert main(["plot", str(tmp_path), "-o", str(rows)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mapsearch: -o: expected a path other than RESULTS ") and len(err.splitlines()) == 1
    assert rows.read_bytes() == before
