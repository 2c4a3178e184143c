"""``mapsearch export``: the three formats, atomic -o, one-line errors with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from mapsearch import cli
from mapsearch.errors import MapsearchError
from mapsearch.report.loopnest import loop_nest_code
from mapsearch.schedule.json_io import dumps_schedule, load_schedule

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MNK = EXAMPLES / "worked-example-mnk.schedule.json"


def test_loopnest_to_stdout_is_the_default(capsys):
    assert cli.main(["export", str(MNK)]) == 0
    assert capsys.readouterr().out == loop_nest_code(load_schedule(MNK))


def test_timeloop_to_a_file(tmp_path, capsys):
    out = tmp_path / "map.yaml"
    assert cli.main(["export", str(MNK), "--format", "timeloop", "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    data = yaml.safe_load(out.read_text())
    assert [e["target"] for e in data["mapping"]] == ["L1", "L1", "L0", "L0"]
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind


def test_json_rewrites_the_schedule(tmp_path):
    out = tmp_path / "s.json"
    assert cli.main(["export", str(MNK), "--format", "json", "-o", str(out)]) == 0
    assert out.read_text() == dumps_schedule(load_schedule(MNK))
    json.loads(out.read_text())


def test_padding_warns_on_stderr(tmp_path, capsys):
    data = json.loads(MNK.read_text())
    data["workload"]["extents"]["m"] = 5
    data["levels"][0]["tile"]["m"] = 5
    data.pop("predicted")
    path = tmp_path / "rem.json"
    path.write_text(json.dumps(data))
    assert cli.main(["export", str(path), "--format", "timeloop"]) == 0
    captured = capsys.readouterr()
    assert "M 5 -> 6 (+1)" in captured.err and captured.err.startswith("mapsearch: warning: remainder tiles")
    assert "# WARNING: remainder tiles" in captured.out


def _one_line_exit_2(capsys, argv) -> str:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mapsearch: ")
    return err


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    assert "no such file" in _one_line_exit_2(capsys, ["export", str(tmp_path / "missing.json")])
    assert "--format: expected one of loopnest, timeloop, json" in _one_line_exit_2(capsys, ["export", str(MNK), "--format", "xml"])
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
