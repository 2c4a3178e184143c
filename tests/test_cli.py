"""The command line: exit codes, one-line errors, and the replay report."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import types
from fractions import Fraction
from pathlib import Path

import pytest

from mapsearch import cli
from mapsearch.cli import replay as replay_command
from mapsearch.cli import solve as solve_command
from mapsearch.cli.exits import CommandFailed
from mapsearch.errors import SpecError
from mapsearch.schedule.figures import Figures, LinkFigures
from mapsearch.schedule.json_io import load_schedule

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MNK = EXAMPLES / "worked-example-mnk.schedule.json"
MKN = EXAMPLES / "worked-example-mkn.schedule.json"


def real_replay_available() -> bool:
    try:
        module = importlib.import_module("mapsearch.sim.replay")
    except ImportError:
        return False
    return hasattr(module, "replay")


needs_sim = pytest.mark.skipif(not real_replay_available(), reason="mapsearch.sim.replay is not importable yet (written by another engineer)")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mapsearch", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def tampered(tmp_path: Path) -> Path:
    data = json.loads(MNK.read_text())
    data["predicted"]["links"][0]["words_down"] = 63
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(data))
    return path


# ------------------------------------------------------------- errors


def test_missing_schedule_is_one_line_and_exit_2():
    proc = run_cli("replay", "no-such-file.json")
    assert proc.returncode == 2
    assert one_line(proc.stderr) == "mapsearch: no-such-file.json: no such file"
    assert proc.stdout == ""


def test_bad_schedule_is_one_line_naming_the_field(tmp_path):
    data = json.loads(MNK.read_text())
    data["levels"][1]["tile"]["m"] = 9
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    proc = run_cli("replay", str(path))
    assert proc.returncode == 2
    assert one_line(proc.stderr) == f"mapsearch: {path}: levels[1].tile.m: expected 1 <= tile <= 4 (the parent tile), got 9"


def test_bad_workload_for_solve_is_one_line(tmp_path):
    bad = tmp_path / "w.yaml"
    bad.write_text("name: mm\neinsum: 'Z[m] += A[m'\nextents: {m: 4}\n")
    proc = run_cli("solve", str(bad), str(EXAMPLES / "arch-worked-example.yaml"))
    assert proc.returncode == 2
    assert one_line(proc.stderr).startswith("mapsearch: ")


def test_debug_shows_the_traceback_before_or_after_the_subcommand(capsys):
    with pytest.raises(SpecError):
        cli.main(["--debug", "replay", "no-such-file.json"])
    with pytest.raises(SpecError):
        cli.main(["replay", "no-such-file.json", "--debug"])
    assert cli.main(["replay", "no-such-file.json"]) == 2
    assert capsys.readouterr().err == "mapsearch: no-such-file.json: no such file\n"


def test_usage_errors_exit_2():
    proc = run_cli("replay")
    assert proc.returncode == 2
    assert one_line(proc.stderr) == ("mapsearch: replay: the following arguments are required: SCHEDULE.json "
                                     "(see mapsearch replay --help)")


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("mapsearch ")


# ------------------------------------------------------------- solve hand-over


def test_solve_arguments_are_parsed_for_the_solve_command():
    args = cli.build_parser().parse_args(
        ["solve", "w.yaml", "a.yaml", "-c", "c.yaml", "--objective", "energy", "--time-limit", "2.5", "-o", "s.json", "--json"]
    )
    assert (args.workload, args.architecture, args.constraints, args.objective) == ("w.yaml", "a.yaml", "c.yaml", "energy")
    assert (args.time_limit, args.output, args.json) == (2.5, "s.json", True)
    assert args.func is solve_command.run
    defaults = cli.build_parser().parse_args(["solve", "w.yaml", "a.yaml"])
    assert (defaults.constraints, defaults.objective, defaults.time_limit, defaults.output, defaults.json) == (None, None, None, None, False)


def test_solve_calls_the_solve_command(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(solve_command, "run", lambda args: seen.append(args))
    assert cli.main(["solve", "w.yaml", "a.yaml", "--time-limit", "1"]) == 0
    assert seen[0].workload == "w.yaml" and seen[0].time_limit == 1.0

    def fails(args):
        raise CommandFailed(3, ["no schedule in time"])

    monkeypatch.setattr(solve_command, "run", fails)
    assert cli.main(["solve", "w.yaml", "a.yaml"]) == 3
    assert capsys.readouterr().err == "mapsearch: no schedule in time\n"


# ------------------------------------------------------------- replay, with a stand-in simulator


def fake_sim(monkeypatch, figures_for=lambda s: load_schedule(MNK).predicted):
    calls = []

    def replay(schedule, mode="events"):
        calls.append(mode)
        return types.SimpleNamespace(figures=figures_for(schedule), data_ok=True if mode == "data" else None, max_abs_error=0.0 if mode == "data" else None)

    monkeypatch.setattr(replay_command, "replay", replay)
    return calls


def test_replay_json_report_with_a_stand_in(monkeypatch, capsys):
    calls = fake_sim(monkeypatch)
    assert cli.main(["replay", str(MNK), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for key in ("utilization", "words_total", "compute_time", "time", "op_calls", "mac_efficiency", "occupancy", "links"):
        assert key in report
    assert report["utilization"] == pytest.approx(0.8)
    assert (report["words_total"], report["compute_time"], report["time"], report["op_calls"]) == (80, 64, 80, 64)
    link = report["links"][0]
    assert {k: link[k] for k in ("name", "words_down", "words_up", "time")} == {"name": "L1->L0", "words_down": 64, "words_up": 16, "time": 80}
    assert link["tensors"]["A"] == {"words_down": 32, "words_up": 0}
    assert report["occupancy"] == [{"level": "L1", "words": 48, "capacity": None}, {"level": "L0", "words": 12, "capacity": 12}]
    assert calls == ["count"]


def test_replay_does_not_hide_other_errors(monkeypatch):
    def replay(schedule, mode="events"):
        raise ValueError("a real bug")

    monkeypatch.setattr(replay_command, "replay", replay)
    with pytest.raises(ValueError, match="a real bug"):
        cli.main(["replay", str(MNK)])


def test_replay_check_passes_and_fails(monkeypatch, capsys, tmp_path):
    fake_sim(monkeypatch)
    assert cli.main(["replay", str(MNK), "--check"]) == 0
    assert "check: the replay matches" in capsys.readouterr().out

    replayed = load_schedule(MNK).predicted
    fake_sim(monkeypatch, figures_for=lambda s: replayed)
    assert cli.main(["replay", str(tampered(tmp_path)), "--check"]) == 1
    err = capsys.readouterr().err
    assert "mapsearch: replay mismatch in links[L1->L0].words_down: predicted 63, replayed 64" in err.splitlines()

    assert cli.main(["replay", str(tampered(tmp_path)), "--check", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["check"]["ok"] is False
    assert {"field": "links[L1->L0].words_down", "predicted": 63, "replayed": 64} in report["check"]["mismatches"]


def test_check_needs_predicted_figures(monkeypatch, capsys, tmp_path):
    fake_sim(monkeypatch)
    data = json.loads(MNK.read_text())
    del data["predicted"]
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(data))
    assert cli.main(["replay", str(path), "--check"]) == 2
    assert "has none" in capsys.readouterr().err
    assert cli.main(["replay", str(path)]) == 0


def test_data_mode_failure_exits_1(monkeypatch, capsys):
    monkeypatch.setattr(replay_command, "replay",
                        lambda s, mode: types.SimpleNamespace(figures=s.predicted, data_ok=False, max_abs_error=0.5))
    assert cli.main(["replay", str(MNK), "--mode", "data"]) == 1
    assert "data check failed" in capsys.readouterr().err


def test_text_report_shows_fractions(monkeypatch, capsys):
    figures = Figures((LinkFigures("L1->L0", 64, 32, Fraction(96)),), 64, Fraction(64), 64, 1, (("L1", 48), ("L0", 12)))
    fake_sim(monkeypatch, figures_for=lambda s: figures)
    assert cli.main(["replay", str(MKN)]) == 0
    out = capsys.readouterr().out
    assert "2/3 (~0.6667) = 66.67%" in out and "bound by L1->L0" in out


# ------------------------------------------------------------- replay, with the real simulator


@needs_sim
@pytest.mark.parametrize("path", [MNK, MKN], ids=["mnk", "mkn"])
def test_real_replay_matches_the_worked_example(path):
    proc = run_cli("replay", str(path), "--check", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    for key in ("utilization", "words_total", "compute_time", "time", "op_calls", "mac_efficiency", "occupancy", "links"):
        assert key in report
    for link in report["links"]:
        assert {"name", "words_down", "words_up", "time", "tensors"} <= set(link)
    assert report["check"]["ok"] is True
    assert report["utilization"] == pytest.approx(0.8 if path == MNK else 2 / 3)


@needs_sim
def test_real_replay_unknown_mode_is_one_line():
    proc = run_cli("replay", str(MNK), "--mode", "fast")
    assert proc.returncode == 2
    assert one_line(proc.stderr) == "mapsearch: --mode: expected one of count, data, events, events-data, got 'fast'"


@needs_sim
@pytest.mark.parametrize("mode", ["count", "events", "data"])
def test_real_replay_modes_agree_with_the_worked_example(mode):
    proc = run_cli("replay", str(MKN), "--check", "--mode", mode)
    assert proc.returncode == 0, proc.stderr
    assert "utilization     2/3 (~0.6667) = 66.67%" in proc.stdout


@needs_sim
def test_real_replay_check_catches_a_wrong_prediction(tmp_path):
    proc = run_cli("replay", str(tampered(tmp_path)), "--check")
    assert proc.returncode == 1
    assert "mapsearch: replay mismatch in links[L1->L0].words_down: predicted 63, replayed 64" in proc.stderr.splitlines()
    assert "Traceback" not in proc.stderr


def test_the_error_line_cuts_a_huge_word_the_layers_below_left_whole():
    """The CLI's last guard on width (cli/main._one_line): a word of more than 300 characters (a name copied
    from a hostile file that a message did not cut at its source) is cut; whitespace folds to single spaces."""
    from mapsearch.cli.main import _one_line
    from mapsearch.errors import MapsearchError

    line = _one_line(MapsearchError("f.yaml:\n  name: " + "x" * 100_000 + " unknown"))
    assert line == "mapsearch: f.yaml: name: " + "x" * 60 + "...(100,000 characters) unknown"
    assert _one_line(MapsearchError("a " + "y" * 300)) == "mapsearch: a " + "y" * 300
