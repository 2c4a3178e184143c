"""``mapsearch solve``: solve, replay, compare, report; exit codes and one-line errors.

Reference: the contract's worked example (Z = A x B, M = N = K = 4, L0 holds
12 words, one shared line at 1 clock per word, scalar MAC at 1 clock). Its
optimum is time 64 and 64 words (100% utilization: B's L0 buffer holds a
4 x 2 strip placed outside the m and k loops, cost-model.md "Buffer
placement"); with every buffer at its default position it is time 80 and 80
words (``--no-placement``). Both are checked here against brute forces over
every L0 tiling, loop order (and buffer position), replayed in the simulator.
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from mapsearch import cli
from mapsearch.errors import SolverTimeout
from mapsearch.schedule.figures import LinkFigures
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.counters import ReplayResult
from mapsearch.sim.errors import CapacityError
from mapsearch.solve import entry
from mapsearch.cli import solving
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import Phase, solve
from mapsearch.spec.load import load_problem

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
MATMUL = str(EXAMPLES / "matmul-4x4x4.yaml")
ARCH = str(EXAMPLES / "arch-worked-example.yaml")
BIG = str(EXAMPLES / "matmul-97x193x61.yaml")
THREE = str(EXAMPLES / "arch-three-level.yaml")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mapsearch", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def replay_module():
    """The module whose ``replay`` the solve command's solve calls (to stand in for the simulator)."""
    return importlib.import_module("mapsearch.solve.entry")


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.fixture(scope="module")
def worked_json() -> dict:
    proc = run_cli("solve", MATMUL, ARCH, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# ------------------------------------------------------------- the worked example


def brute_force_worked_example() -> tuple[Fraction, int]:
    """The least (time, words) over every L0 tiling (1..4 per dim) and order that fits 12 words."""
    w, a, _ = load_problem(MATMUL, ARCH)
    from mapsearch.sim.replay import replay

    best = None
    for tm, tn, tk in itertools.product(range(1, 5), repeat=3):
        if tm * tk + tk * tn + tm * tn > 12:  # A, B and Z tiles in L0
            continue
        for order in itertools.permutations(w.dims):
            top = LevelMapping("L1", tuple((d, 4) for d in w.dims))
            l0 = LevelMapping("L0", (("m", tm), ("n", tn), ("k", tk)), order, frozenset({"A", "B", "Z"}))
            f = replay(Schedule(w, a, (top, l0), ()), "count").figures
            assert dict(f.occupancy)["L0"] <= 12
            key = (f.time, f.words_total)
            best = key if best is None or key < best else best
    return best


def test_brute_force_agrees_the_default_position_optimum_is_80():
    assert brute_force_worked_example() == (80, 80)


def test_brute_force_over_positions_agrees_the_optimum_is_64():
    sys.path.insert(0, str(ROOT / "tests"))
    import brute_force_placement as bp

    w, a, _ = load_problem(MATMUL, ARCH)
    assert bp.brute_force_placed(w, a, "all")[0] == (64, 64)


def test_worked_example_json_is_optimal_at_64(worked_json):
    r = worked_json
    assert r["status"] == "OPTIMAL" and r["family_restrictions"] == []
    assert r["objective"] == "time"
    assert r["time"] == 64 and r["words_total"] == 64 and r["compute_time"] == 64
    assert r["utilization"] == 1.0
    assert [(p["name"], p["status"], p["value"], p["bound"]) for p in r["phases"]] == [
        ("time", "OPTIMAL", 64, 64), ("words", "OPTIMAL", 64, 64)]
    assert (r["objective_value"], r["objective_bound"], r["gap"]) == (64, 64, 0.0)
    assert r["predicted_equals_replayed"] is True and r["mismatches"] == []
    assert r["solve_seconds"] > 0
    # the replay report's keys are all there
    for key in ("utilization", "mac_efficiency", "time", "compute_time", "op_calls", "macs", "words_total", "links",
                "occupancy", "bound", "exact"):
        assert key in r
    # A 1 word + B's 4 x 2 strip + Z 2 words
    assert r["occupancy"][1] == {"level": "L0", "words": 11, "capacity": 12}
    binding = {(b["kind"], b["name"]): b for b in r["binding"]}
    cap = binding[("capacity", "L0")]
    assert (cap["value"], cap["limit"], cap["slack"], cap["tight"]) == (11, 12, 1, False)
    assert binding[("link", "L1->L0")]["tight"] is True
    assert binding[("compute", "op")]["slack"] == 0 and binding[("compute", "op")]["tight"] is True
    assert r["space"]["size"] > 0 and r["space"]["pinned"] == [] and r["space"]["reduced"] is False
    sched = r["schedule"]
    assert sched["format"] == "mapsearch-schedule" and sched["predicted"]["links"][0]["time"] == 64
    l0 = sched["levels"][1]
    assert sorted(l0["keep"]) == ["A", "B", "Z"]
    assert l0["positions"], "64 clocks need a buffer placed outside its level's loops"


def test_default_positions_only_is_optimal_in_family_at_80():
    proc = run_cli("solve", MATMUL, ARCH, "--json", "--no-placement")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["status"] == "OPTIMAL_IN_FAMILY"
    assert r["family_restrictions"] == ["buffer placement: default positions only (turned off)"]
    assert (r["time"], r["words_total"], r["occupancy"][1]["words"]) == (80, 80, 12)
    assert "positions" not in r["schedule"]["levels"][1]


def test_output_is_accepted_by_replay_check(tmp_path):
    out = tmp_path / "s.json"
    proc = run_cli("solve", MATMUL, ARCH, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    check = run_cli("replay", str(out), "--check", "--json")
    assert check.returncode == 0, check.stderr
    report = json.loads(check.stdout)
    assert report["check"]["ok"] is True and report["time"] == 64


def test_text_report_has_the_side_by_side_table(capsys):
    assert cli.main(["solve", MATMUL, ARCH]) == 0
    out = capsys.readouterr().out
    assert "status: OPTIMAL: time 64 clocks (bound 64), then words 64 words (bound 64); gap 0.00%" in out
    assert "predicted vs replayed (count mode):" in out
    table = out[out.index("predicted vs replayed"):out.index("what binds")]
    assert "\u2717" not in table
    rows = {line.split("  ")[1].strip(): line for line in table.splitlines()[2:] if "\u2713" in line}
    for quantity in ("L1->L0 words down", "L1->L0 words up", "L1->L0 time", "op calls", "compute time", "time",
                     "utilization", "MAC efficiency", "occupancy L0 (capacity 12)"):
        assert quantity in rows, quantity
    assert rows["L1->L0 words down"].split()[-3:] == ["48", "48", "\u2713"]
    assert rows["utilization"].split()[-1] == "\u2713" and "1 = 100.00%" in rows["utilization"]
    assert "A words down/up" in table and "32 / 0" in table and "16 / 0" in table
    # the loop nest with B's buffer where it sits, the binding and the search space
    assert "L0: tile m=1 n=2 k=1" in out and "keeps A, B (placed above), Z" in out and "for " in out
    assert "[L0 buffer of B sits here" in out
    assert "what binds:\n  link L1->L0: 64 clocks, 100.0% of the time (bottleneck)" in out
    assert "compute: 64 clocks of 64 (the bound: 100% utilization)" in out
    assert "slack of the rest:\n  capacity of L0: 11 of 12 words, 1 free" in out
    assert "search space: " in out


def test_data_mode_checks_the_values():
    proc = run_cli("solve", MATMUL, ARCH, "--replay-mode", "data", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["data_ok"] is True and report["replay_mode"] == "data"


def test_energy_objective_with_link_and_op_costs(capsys):
    # 2 per word on the one link, 1/2 per call: 2 * 64 words + 64 / 2 = 160
    assert cli.main(["solve", MATMUL, ARCH, "--objective", "energy", "--link-energy", "L1->L0=2", "--op-energy", "1/2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["status"], report["objective"], report["objective_value"]) == ("OPTIMAL", "energy", 160)


def test_words_with_min_utilization(capsys):
    assert cli.main(["solve", MATMUL, ARCH, "--objective", "words", "--min-utilization", "4/5", "--workers", "2", "--seed", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["objective_value"] == 64 and report["utilization"] >= 0.8


# ------------------------------------------------------------- errors: exit 2, one line


def test_infeasible_capacity_is_one_line_naming_l0(tmp_path):
    arch = write(tmp_path / "tiny.yaml", Path(ARCH).read_text().replace("capacity: 12", "capacity: 2"))
    proc = run_cli("solve", MATMUL, arch)
    assert proc.returncode == 2
    line = one_line(proc.stderr)
    assert line.startswith("mapsearch: infeasible") and "capacity of L0" in line
    assert "L0 holds 2 words" in line and "need 3" in line
    assert proc.stdout == ""


def test_impossible_tile_limit_names_the_conflict(tmp_path):
    # m = n = 4 at L0: Z alone needs 16 words of 12
    c = write(tmp_path / "c.yaml", "tiles:\n  innermost: {m: 4, n: 4}\n")
    proc = run_cli("solve", MATMUL, ARCH, "-c", c)
    assert proc.returncode == 2
    line = one_line(proc.stderr)
    assert "capacity of L0" in line and "tile limits" in line


def test_bad_constraints_file_names_file_and_field(tmp_path):
    c = write(tmp_path / "c.yaml", "tiles:\n  innermost: {x: 4}\n")
    proc = run_cli("solve", MATMUL, ARCH, "-c", c)
    assert proc.returncode == 2
    assert one_line(proc.stderr) == (f"mapsearch: {c}: tiles.innermost.x: expected a dimension of matmul-4x4x4 "
                                     "['m', 'n', 'k'], got 'x'")


def test_bad_constraints_yaml_key(tmp_path):
    c = write(tmp_path / "c.yaml", "tile: {}\n")
    proc = run_cli("solve", MATMUL, ARCH, "-c", c)
    assert proc.returncode == 2
    line = one_line(proc.stderr)
    assert c in line and "tile" in line


@pytest.mark.parametrize(
    "extra, expected",
    [
        (["--objective", "bogus"], "mapsearch: --objective: expected one of time, words, energy, got 'bogus'"),
        (["--replay-mode", "fast"], "mapsearch: --replay-mode: expected one of count, events, data, got 'fast'"),
        (["--min-utilization", "2"], "mapsearch: --min-utilization: expected a number in (0, 1], got '2'"),
        (["--min-utilization", "x"], "mapsearch: --min-utilization: expected a number in (0, 1], got 'x'"),
        (["--objective", "energy", "--link-energy", "L9->L0=1"], "mapsearch: --link-energy: expected a link of worked-example ['L1->L0'], got 'L9->L0'"),
        (["--objective", "energy", "--link-energy", "L1->L0"], "mapsearch: --link-energy: expected NAME=COST, e.g. 'L1->L0=2', got 'L1->L0'"),
        (["--objective", "energy", "--op-energy", "-1"], "mapsearch: --op-energy: expected a number >= 0 (int, decimal or 'a/b'), got '-1'"),
        (["--workers", "0"], "mapsearch: --workers: expected an int >= 1, got 0"),
        (["--time-limit", "0"], "mapsearch: --time-limit: expected seconds > 0, got 0.0"),
    ],
)
def test_bad_options_are_one_line_exit_2(capsys, extra, expected):
    assert cli.main(["solve", MATMUL, ARCH, *extra]) == 2
    captured = capsys.readouterr()
    assert one_line(captured.err) == expected
    assert captured.out == ""


def test_bad_objective_fails_before_reading_files(capsys):
    assert cli.main(["solve", "no-such.yaml", "no-such-arch.yaml", "--objective", "bogus"]) == 2
    assert "--objective" in capsys.readouterr().err


def test_help_documents_exit_codes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["solve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for part in ("exit codes: 0 ok", "1 replay mismatch", "2 bad input or infeasible", "3 no schedule found"):
        assert part in text
    for option in ("--min-utilization", "--workers", "--seed", "--replay-mode", "--link-energy", "--op-energy"):
        assert option in text


def test_new_arguments_parse():
    args = cli.build_parser().parse_args(
        ["solve", "w.yaml", "a.yaml", "--min-utilization", "0.5", "--workers", "4", "--seed", "7", "--replay-mode", "data",
         "--link-energy", "L2->L1=4", "--link-energy", "L1->L0=1/2", "--op-energy", "3"])
    assert (args.min_utilization, args.workers, args.seed, args.replay_mode) == ("0.5", 4, 7, "data")
    assert (args.link_energy, args.op_energy) == (["L2->L1=4", "L1->L0=1/2"], "3")
    defaults = cli.build_parser().parse_args(["solve", "w.yaml", "a.yaml"])
    assert (defaults.replay_mode, defaults.link_energy, defaults.workers, defaults.seed) == ("count", [], None, None)


def test_options_from_args():
    _, arch, _ = load_problem(MATMUL, ARCH)
    args = cli.build_parser().parse_args(
        ["solve", "w", "a", "--objective", "energy", "--min-utilization", "4/5", "--workers", "3", "--seed", "9",
         "--time-limit", "5", "--link-energy", "L1->L0=0.25", "--op-energy", "2"])
    assert solving.options_from_args(args, arch) == SolveOptions(
        "energy", Fraction(4, 5), (("L1->L0", Fraction(1, 4)),), Fraction(2), 5.0, 3, 9)
    assert solving.options_from_args(cli.build_parser().parse_args(["solve", "w", "a"]), arch) == SolveOptions()


# ------------------------------------------------------------- time limits


def test_tiny_time_limit_is_reported_either_way():
    proc = run_cli("solve", BIG, THREE, "--time-limit", "0.8")
    if proc.returncode == 3:
        line = one_line(proc.stderr)
        assert "no schedule found within 0.8 s" in line and "bound" in line
        assert proc.stdout == ""
    else:
        assert proc.returncode == 0, proc.stderr
        if "status: FEASIBLE" in proc.stdout:
            assert "*** FEASIBLE, NOT PROVEN OPTIMAL" in proc.stdout and "bound" in proc.stdout and "gap" in proc.stdout
            assert "FEASIBLE, not proven optimal" in proc.stderr
        else:
            assert "status: OPTIMAL" in proc.stdout


def _feasible(result):
    phases = (result.phases[0], Phase("words", "FEASIBLE", Fraction(90), Fraction(60), 0.1))
    return dataclasses.replace(result, status="FEASIBLE", phases=phases)


def test_feasible_result_is_prominent_with_bound_and_gap(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(entry, "solve_problem", lambda *a: _feasible(solve(*a)))
    out = tmp_path / "s.json"
    assert cli.main(["solve", MATMUL, ARCH, "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[2] == (
        "*** FEASIBLE, NOT PROVEN OPTIMAL: the time limit stopped the search. Best words found 90, bound 60, gap 33.33% ***")
    assert "status: FEASIBLE: time 64 clocks (bound 64), then words 90 words (bound 60); gap 33.33%" in captured.out
    assert "FEASIBLE, not proven optimal" in captured.err and "bound 60" in captured.err
    assert out.exists()

    assert cli.main(["solve", MATMUL, ARCH, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["status"], report["objective_value"], report["objective_bound"]) == ("FEASIBLE", 90, 60)
    assert report["gap"] == pytest.approx(1 / 3)


def test_time_phase_only_says_words_were_not_minimised(monkeypatch, capsys):
    monkeypatch.setattr(entry, "solve_problem", lambda *a: dataclasses.replace(solve(*a), phases=solve(*a).phases[:1]))
    assert cli.main(["solve", MATMUL, ARCH]) == 0
    out = capsys.readouterr().out
    assert "*** WORDS NOT MINIMISED" in out
    assert "status: OPTIMAL: time 64 clocks (bound 64); gap 0.00%" in out


def test_timeout_exits_3_with_the_bound(monkeypatch, capsys):
    def timeout(*a):
        raise SolverTimeout("no schedule found within 0.01 s; best bound on time: 64")

    monkeypatch.setattr(entry, "solve_problem", timeout)
    assert cli.main(["solve", MATMUL, ARCH, "--time-limit", "0.01"]) == 3
    captured = capsys.readouterr()
    assert one_line(captured.err) == "mapsearch: no schedule found within 0.01 s; best bound on time: 64"
    assert captured.out == ""


# ------------------------------------------------------------- replay disagreements: exit 1, nothing written


def test_replay_mismatch_exits_1_and_writes_nothing(monkeypatch, capsys, tmp_path):
    sim_replay = replay_module()

    def wrong(schedule, mode="events", **options):
        f = schedule.predicted
        link = f.links[0]
        bad = LinkFigures(link.name, link.words_down + 1, link.words_up, link.time + 1, link.tensors)
        return ReplayResult(dataclasses.replace(f, links=(bad,), op_calls=f.op_calls + 2))

    monkeypatch.setattr(sim_replay, "replay", wrong)
    out = tmp_path / "s.json"
    assert cli.main(["solve", MATMUL, ARCH, "-o", str(out)]) == 1
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert err[0].startswith("mapsearch: REPLAY MISMATCH: the count replay disagrees")
    assert "mapsearch: REPLAY MISMATCH in op_calls: predicted 64, replayed 66" in err
    assert "mapsearch: REPLAY MISMATCH in links[L1->L0].words_down: predicted 48, replayed 49" in err
    assert "mapsearch: REPLAY MISMATCH in links[L1->L0].time: predicted 64, replayed 65" in err
    assert "mapsearch: REPLAY MISMATCH in time: predicted 64, replayed 65" in err
    assert "\u2717" in captured.out  # the table marks the rows
    assert not out.exists()
    assert not list(tmp_path.iterdir())

    assert cli.main(["solve", MATMUL, ARCH, "--json", "-o", str(out)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["predicted_equals_replayed"] is False
    assert {"field": "op_calls", "predicted": 64, "replayed": 66} in report["mismatches"]
    assert not out.exists()


def test_simulator_error_is_a_replay_mismatch(monkeypatch, capsys, tmp_path):
    sim_replay = replay_module()

    def fails(schedule, mode="events", **options):
        raise CapacityError("L0", "Z[0:2,0:2]", 12, 4, 12)

    monkeypatch.setattr(sim_replay, "replay", fails)
    out = tmp_path / "s.json"
    assert cli.main(["solve", MATMUL, ARCH, "-o", str(out)]) == 1
    err = one_line(capsys.readouterr().err)
    assert err.startswith("mapsearch: REPLAY MISMATCH: the solved schedule fails in the simulator (count mode)")
    assert "no room for Z[0:2,0:2]" in err
    assert not out.exists()


def test_failed_data_check_exits_1_and_writes_nothing(monkeypatch, capsys, tmp_path):
    sim_replay = replay_module()
    monkeypatch.setattr(sim_replay, "replay", lambda s, mode="events": ReplayResult(s.predicted, False, 0.5))
    out = tmp_path / "s.json"
    assert cli.main(["solve", MATMUL, ARCH, "--replay-mode", "data", "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert "data check failed" in captured.err and "data check: FAILED (max abs error 0.5)" in captured.out
    assert not out.exists()


def test_replay_mode_is_passed_through(monkeypatch, capsys):
    sim_replay = replay_module()
    seen = []
    real = sim_replay.replay
    monkeypatch.setattr(sim_replay, "replay", lambda s, mode="events": seen.append(mode) or real(s, mode=mode))
    assert cli.main(["solve", MATMUL, ARCH, "--replay-mode", "events"]) == 0
    assert seen == ["events"] and "predicted vs replayed (events mode)" in capsys.readouterr().out


TEAAL_NO_SHAPE = """einsum:
  declaration: {A: [I, J], B: [J, K], Y: [I, K]}
  expressions: ["Y[i, k] = A[i, j] * B[j, k]"]
"""


def test_teaal_extents_from_the_command_line(tmp_path, capsys):
    spec = tmp_path / "mm.yaml"
    spec.write_text(TEAAL_NO_SHAPE)
    arch = str(Path(__file__).resolve().parents[2] / "examples" / "arch-three-level.yaml")
    assert cli.main(["solve", str(spec), arch]) == 2
    err = capsys.readouterr().err
    assert err == (f"mapsearch: {spec}: shape: expected an extent for every rank (TeAAL takes them from the data; add "
                   "'shape: {I: N, J: N, K: N}' or pass --extent I=N --extent J=N --extent K=N), got none for I, J, K\n")
    assert cli.main(["solve", str(spec), arch, "--extent", "I=4", "--extent", "J=5", "--extent", "K=6", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["workload"]["extents"] == {"i": 4, "j": 5, "k": 6}
    assert cli.main(["solve", str(spec), arch, "--extent", "I=0"]) == 2
    assert capsys.readouterr().err == "mapsearch: --extent: expected NAME=N with N an int >= 1, got 'I=0'\n"
