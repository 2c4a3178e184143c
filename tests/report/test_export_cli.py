"""``mapsearch export``: the four formats (timeloop and accelforge to one file or a directory), atomic -o, one-line errors with exit 2."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from mapsearch import cli
from mapsearch.errors import MapsearchError
from mapsearch.report.loopnest import loop_nest_code
from mapsearch.schedule.json_io import dumps_schedule, load_schedule

sys.path.insert(0, str(Path(__file__).resolve().parent))
import timeloop_v04  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Fixed array schedules with placed buffers (tests/data/export/README.md): not the solver's pick among optima.
PLACED_100x37x61 = Path(__file__).resolve().parents[1] / "data" / "export" / "array-100x37x61-placed.schedule.json"
MNK = EXAMPLES / "worked-example-mnk.schedule.json"


def test_loopnest_to_stdout_is_the_default(capsys):
    assert cli.main(["export", str(MNK)]) == 0
    assert capsys.readouterr().out == loop_nest_code(load_schedule(MNK))


def test_timeloop_to_a_file_holds_the_three_sections(tmp_path, capsys):
    out = tmp_path / "tl.yaml"
    assert cli.main(["export", str(MNK), "--format", "timeloop", "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    data = timeloop_v04.load(out.read_text())
    assert set(data) == {"problem", "architecture", "mapping"}
    assert [(e["target"], e["type"]) for e in data["mapping"]] == [("L1", "temporal"), ("L1", "dataspace"),
                                                                   ("L0", "temporal"), ("L0", "dataspace")]
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind


@pytest.mark.parametrize("fmt, names", [("timeloop", ["arch.yaml", "mapping.yaml", "problem.yaml"]),
                                        ("accelforge", ["arch.yaml", "mapping.yaml", "workload.yaml"])])
def test_peer_formats_to_a_directory(tmp_path, capsys, fmt, names):
    out = tmp_path / "new" / "dir"
    assert cli.main(["export", str(EXAMPLES / "matmul-97x193x61.schedule.json"), "--format", fmt, "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == names
    assert "M=7,6" in (out / "mapping.yaml").read_text() if fmt == "timeloop" else "!Storage" in (out / "mapping.yaml").read_text()


def test_a_schedule_timeloop_cannot_state_writes_nothing(tmp_path, capsys):
    # The placed schedule at default positions (it places A and B at the GLB, which Timeloop refuses first):
    # its unequal parts are what Timeloop cannot state.
    shipped = load_schedule(PLACED_100x37x61)
    source = tmp_path / "s.json"
    source.write_text(dumps_schedule(dataclasses.replace(
        shipped, levels=tuple(dataclasses.replace(lm, positions=()) for lm in shipped.levels), predicted=None)))
    out = tmp_path / "tl"
    err = _one_line_exit_2(capsys, ["export", str(source), "--format", "timeloop", "-o", str(out)])
    assert "cannot be stated exactly" in err
    assert not out.exists()
    # As placed, the buffers are refused, with what to do instead.
    err = _one_line_exit_2(capsys, ["export", str(PLACED_100x37x61),
                                    "--format", "timeloop", "-o", str(out)])
    assert "buffers placed away from their level's tile" in err and "--no-placement" in err
    assert not out.exists()


def test_json_rewrites_the_schedule(tmp_path):
    out = tmp_path / "s.json"
    assert cli.main(["export", str(MNK), "--format", "json", "-o", str(out)]) == 0
    assert out.read_text() == dumps_schedule(load_schedule(MNK))
    json.loads(out.read_text())


def _one_line_exit_2(capsys, argv) -> str:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mapsearch: ")
    return err


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    assert "no such file" in _one_line_exit_2(capsys, ["export", str(tmp_path / "missing.json")])
    assert "--format: expected one of loopnest, timeloop, accelforge, json" in _one_line_exit_2(capsys, ["export", str(MNK), "--format", "xml"])
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert "malformed JSON" in _one_line_exit_2(capsys, ["export", str(bad)])
    assert "cannot write" in _one_line_exit_2(capsys, ["export", str(MNK), "-o", str(tmp_path / "no" / "dir" / "x.py")])


def test_a_failed_write_keeps_the_old_file(tmp_path, capsys, monkeypatch):
    out = tmp_path / "nest.py"
    out.write_text("old\n")

    def boom(schedule):
        raise MapsearchError("stop")

    monkeypatch.setattr("mapsearch.report.loopnest.loop_nest_code", boom)
    _one_line_exit_2(capsys, ["export", str(MNK), "-o", str(out)])
    assert out.read_text() == "old\n"
