"""The architecture's energy model: round trip in mapsearch's YAML, --objective energy, and the report."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

from mapsearch.model.problem import Problem
from mapsearch.report.energy import schedule_energy
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.spec.load import architecture_from_dict, architecture_to_dict
from mapsearch.spec.workload import Workload

ARCH = {
    "name": "e3",
    "levels": [
        {"name": "L2", "capacity": None},
        {"name": "L1", "capacity": 64, "link": {"input_clocks_per_word": 0}},
        {"name": "L0", "capacity": 8, "link": {"input_clocks_per_word": 0}},
    ],
    "energy": {"unit": "pJ", "levels": {"L2": {"read": 100, "write": 120}, "L1": {"read": 5, "write": 6, "leakage": "1/10"}},
               "mac": "1/2"},
}
MM = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})


def test_the_energy_model_round_trips_in_the_architecture_yaml():
    arch = architecture_from_dict(ARCH, "e3.yaml")
    again = architecture_from_dict(architecture_to_dict(arch), "again")
    assert again == arch and arch.energy.level("L1").leakage == Fraction(1, 10) and arch.energy.mac == Fraction(1, 2)


def test_energy_objective_is_the_model_and_the_report_agrees():
    from mapsearch.sim.replay import replay

    arch = architecture_from_dict(ARCH, "e3.yaml")
    result = solve(Problem(MM, arch), options=SolveOptions(objective="energy"))
    assert result.status == "OPTIMAL"
    # The report recomputes the energy from the replayed words and the schedule's buffers.
    b = schedule_energy(result.schedule, replay(result.schedule, mode="count").figures)
    assert result.objective_value == b.total == Fraction(27872, 5)
    # L2: the compulsory words only, A and B read once (32 x 100), Z written once (16 x 120). L0 holds 8 words,
    # so one input is staged whole in L1 (16 writes x 6) and read from there (64 reads x 5) rather than read again
    # from L2 (100 each); 64 MACs at 1/2; leakage 1/10 per clock of L1 over the 64 clocks. A and B are mirror
    # images in this 4x4x4 matmul, so either one is an optimum.
    assert dict(b.reads)["L2"] == 3200 and dict(b.writes)["L2"] == 1920
    assert dict(b.writes)["L1"] == 96 and dict(b.reads)["L1"] == 320
    assert next(lv.keep for lv in result.schedule.levels if lv.level == "L1") in ({"A"}, {"B"})
    assert b.compute == 32 and b.leakage == Fraction(64, 10)


def test_link_energy_flags_still_win_over_the_model():
    arch = architecture_from_dict(ARCH, "e3.yaml")
    options = SolveOptions(objective="energy", link_energy=(("L2->L1", Fraction(1)), ("L1->L0", Fraction(0))))
    result = solve(Problem(MM, arch), options=options)
    assert result.objective_value == 48  # the words on L2->L1: 32 down, 16 up, at 1 each


def test_cli_energy_report(tmp_path):
    import yaml

    path = tmp_path / "e3.yaml"
    path.write_text(yaml.safe_dump(ARCH))
    wl = tmp_path / "mm.yaml"
    wl.write_text("name: mm\neinsum: 'Z[m,n] += A[m,k] * B[k,n]'\nextents: {m: 4, n: 4, k: 4}\n")
    out = subprocess.run([sys.executable, "-m", "mapsearch", "solve", str(wl), str(path), "--objective", "energy",
                          "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["energy"]["total_exact"] == "27872/5" and report["energy"]["unit"] == "pJ"
