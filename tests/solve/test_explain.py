"""Infeasibility is explained by a core of named requirement families, and the CLI shows it on one line."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from mapsearch import cli
from mapsearch.errors import InfeasibleError
from mapsearch.model.problem import Problem
from mapsearch.solve.explain import with_core
from mapsearch.spec.constraints import Constraints, TileLimit
from mapsearch.solve.explain import explain_infeasible
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.spec.load import architecture_from_dict, load_problem
from mapsearch.spec.reading import read_yaml

ROOT = Path(__file__).resolve().parents[2]
MATMUL = str(ROOT / "examples" / "matmul-4x4x4.yaml")
ARCH = str(ROOT / "examples" / "arch-worked-example.yaml")


def worked(capacity: int = 12) -> Problem:
    w, _, _ = load_problem(MATMUL, ARCH)
    data = read_yaml(ARCH)
    data["levels"][1]["capacity"] = capacity
    return Problem(w, architecture_from_dict(data, "arch"))


def test_l0_too_small_for_one_word_of_each_tensor():
    # every tensor needs >= 1 word in L0: 3 > 2
    with pytest.raises(InfeasibleError) as info:
        solve(worked(2), Constraints(), SolveOptions(time_limit=10))
    e = info.value
    assert e.core == ("capacity of L0",)
    assert "L0 holds 2 words but the smallest tiles (A 1, B 1, Z 1 words) need 3" in str(e)


def test_explain_directly_gives_the_same_core():
    e = explain_infeasible(worked(2), Constraints(), SolveOptions(time_limit=10))
    assert isinstance(e, InfeasibleError) and e.core == ("capacity of L0",)


def test_three_words_are_enough():
    r = solve(worked(3), Constraints(), SolveOptions(time_limit=10))
    assert r.status == "OPTIMAL" and dict(r.schedule.predicted.occupancy)["L0"] <= 3


def test_tile_limits_that_overflow_l0_are_named():
    # m = n = 4 at L0: Z's tile alone is 16 words > 12
    c = Constraints("big", (TileLimit("innermost", "m", 4, 4), TileLimit("innermost", "n", 4, 4)))
    with pytest.raises(InfeasibleError) as info:
        solve(worked(), c, SolveOptions(time_limit=10))
    assert "capacity of L0" in info.value.core and "user tile limits" in info.value.core
    assert "tile limits" in str(info.value)


def test_full_utilization_is_out_of_reach():
    # With L0 at 8 words the optimum time is 80 > 64 compute clocks (brute force over every
    # tiling, order and buffer position: tests/solve/test_cli_solve.py uses the same example),
    # so utilization 1 conflicts with L0's capacity.
    with pytest.raises(InfeasibleError) as info:
        solve(worked(8), Constraints(), SolveOptions(objective="words", min_utilization=Fraction(1), time_limit=10))
    assert "utilization >= 1" in info.value.core and "capacity of L0" in info.value.core


def test_full_utilization_in_reach_with_12_words():
    # 12 words reach 64 clocks: B's buffer holds a 4 x 2 strip placed outside the m and k loops.
    result = solve(worked(), Constraints(), SolveOptions(objective="words", min_utilization=Fraction(1), time_limit=10))
    assert result.schedule.predicted.utilization == 1 and result.schedule.placed


def test_cli_min_utilization_conflict_is_one_line(capsys, tmp_path):
    arch = tmp_path / "arch8.yaml"
    arch.write_text(Path(ARCH).read_text().replace("capacity: 12", "capacity: 8"))
    assert cli.main(["solve", MATMUL, str(arch), "--objective", "words", "--min-utilization", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mapsearch: infeasible: ")
    assert "utilization >= 1" in err[0] and "capacity of L0" in err[0]


def test_cli_message_always_names_the_core():
    e = with_core(InfeasibleError("infeasible, but no conflicting set of requirements was isolated in time", ("capacity of L0",)))
    assert str(e) == ("infeasible, but no conflicting set of requirements was isolated in time "
                      "(conflicting requirements: capacity of L0)")
    assert e.core == ("capacity of L0",)
    named = InfeasibleError("infeasible: capacity of L0 conflict: L0 holds 2 words", ("capacity of L0",))
    assert str(with_core(named)) == str(named)
    assert str(with_core(InfeasibleError("infeasible"))) == "infeasible (conflicting requirements: none isolated)"
