"""Warm starts (mapsearch/solve/warm_start.py): a known schedule as the first hint of a solve.

- The start reproduces its schedule: the model with the start's decisions
  fixed decodes to the very schedule, predicted figures included
  (matmuls on 2 and 3 levels, a convolution with split windows, buffers
  away from their default position, bypassed levels, a 2x2 mesh with two
  axes and a 3-level path with a mesh).
- A start outside the model's family (another workload, a chain the
  enumeration never lists, a buffer that overflows a smaller capacity, a
  user order it breaks) is ignored: the solve runs as without it.
- Solving with the optimum as start gives the same optimum, proven, and the
  phases start from its values.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import random

import pytest
from ortools.sat.python import cp_model

from mapsearch import cli
from mapsearch.model.build import build
from mapsearch.model.decode import decode
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import differences
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.replay import replay
from mapsearch.solve import built_first
from mapsearch.solve.run import _decision_vars, solve
from mapsearch.solve.warm_start import model_view, start_of
from mapsearch.spec.architecture import Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.constraints import Constraints
from mapsearch.spec.workload import Workload

MATMUL = "Z[m,n] += A[m,k] * B[k,n]"


def arch(caps, costs=None, mesh=()) -> Architecture:
    names = ("L2", "L1", "L0")[-len(caps):]
    costs = costs or [1] * len(caps)
    levels = tuple(Level(names[i], caps[i], None if i == 0 else Link(Fraction(costs[i]), Fraction(costs[i])),
                         mesh=mesh if mesh and i == len(caps) - 1 else ()) for i in range(len(caps)))
    return Architecture("a", levels, Compute())


def matmul(m: int, n: int, k: int) -> Workload:
    return Workload.from_text("mm", MATMUL, {"m": m, "n": n, "k": k})


TWO_BY_TWO = (MeshAxis("x", 2, ("input",)), MeshAxis("y", 2, ("output",)))
CASES = {
    "matmul 2 levels": (matmul(4, 4, 4), arch([None, 12])),  # the contract's worked example: B placed
    "matmul 3 levels": (matmul(48, 40, 36), arch([None, 2048, 96], [1, 4, 1])),
    "conv, split windows": (Workload.from_text("conv", "O[k,p] += I[c,p+r] * W[k,c,r]", {"k": 2, "c": 2, "p": 6, "r": 3}),
                            arch([None, 40, 10], [1, 2, 1])),
    "conv 2-d window": (Workload.from_text("c2", "O[p,q] += I[p+r,q+s] * W[r,s]", {"p": 4, "q": 3, "r": 2, "s": 2}),
                        arch([None, 12])),
    "matmul, 2x2 mesh": (matmul(4, 3, 4), arch([None, 6], mesh=TWO_BY_TWO)),
    "matmul 3 levels, 2 PEs": (matmul(3, 2, 3), arch([None, 20, 4], mesh=(MeshAxis("x", 2, ("all",)),))),
}


@pytest.fixture(scope="module")
def solved():
    return {name: solve(Problem(w, a), options=SolveOptions(workers=1, seed=0)) for name, (w, a) in CASES.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_start_reproduces_its_schedule(name, solved) -> None:
    w, a = CASES[name]
    schedule = solved[name].schedule
    assert solved[name].status in ("OPTIMAL", "OPTIMAL_IN_FAMILY")
    seen = model_view(Problem(w, a), schedule)
    assert seen == schedule  # tiles, parts, axes, orders, keeps, positions and the predicted figures
    assert differences(seen.predicted, replay(seen, mode="count").figures) == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_start_inverts_decode_on_any_schedule_of_the_model(name) -> None:
    """Schedules the model holds, not only optima: each found by minimising a random weighting of the
    decisions (tiles, parts, keeps, orders, cuts, mesh axes), then read back through a start."""
    w, a = CASES[name]
    problem = Problem(w, a)
    enc = build(problem)
    for guard in enc.guards.values():
        enc.model.add(guard == 1)
    decisions = _decision_vars(enc) + [v for v in enc.on_axis.values() if isinstance(v, cp_model.IntVar)]
    rng = random.Random(name)
    seen = set()
    for _ in range(6):
        enc.model.minimize(sum(rng.randint(-5, 5) * v for v in decisions))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.max_deterministic_time = 1.0  # any schedule will do: the same ones under any load
        if solver.solve(enc.model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            continue
        schedule = decode(enc, solver)
        seen.add(schedule)
        assert model_view(problem, schedule) == schedule
    assert len(seen) >= 5  # distinct schedules


def test_the_cases_cover_positions_bypass_windows_and_meshes(solved) -> None:
    """What the reproduction test is worth: its schedules use every kind of decision the start fixes."""
    schedules = {name: r.schedule for name, r in solved.items()}
    assert schedules["matmul 3 levels"].placed and schedules["matmul 2 levels"].placed
    three = schedules["matmul 3 levels"]
    assert not three.keeps("Z", 1) and three.keeps("Z", 2)  # Z bypasses L1
    assert any(lm.tile_extent("r") < 3 for lm in schedules["conv, split windows"].levels[1:])  # r is split
    mesh = schedules["matmul, 2x2 mesh"].levels[1].spatial
    assert {s.axis for s in mesh} == {"x", "y"}  # a split on each axis: the axis literal is fixed both ways
    assert schedules["matmul 3 levels, 2 PEs"].levels[2].spatial


def test_a_buffer_between_loops_of_one_trip_keeps_its_cut() -> None:
    """L0's tile is L1's, so every L0 loop has one trip; A's L1 buffer sits after L0's m loop (position 4).

    Counting every one-trip loop as outside would put it at L0's own cut, which the strict nesting of a
    free keep refuses (model/placement.py): the start would be lost (found on the ResNet-50 3x3 conv,
    whose solved schedule did not start its own model). The cut of the loops the schedule has outside
    keeps it, and the model reads back the very schedule with the replay's figures.
    """
    w = matmul(8, 8, 8)
    a = arch([None, 200, 96])
    tile = (("m", 4), ("n", 4), ("k", 8))
    levels = (LevelMapping("L2", w.extents), LevelMapping("L1", tile, ("k", "m", "n"), frozenset("AB"), (), (("A", 4),)),
              LevelMapping("L0", tile, ("m", "n", "k"), frozenset("ABZ")))
    start = Schedule(w, a, levels, ())
    seen = model_view(Problem(w, a), start)
    assert seen is not None and seen.levels == levels
    assert seen.predicted == replay(start, mode="count").figures
    assert (seen.predicted.time, seen.predicted.words_total) == (512, 512)


def test_a_start_keeps_the_optimum_and_starts_at_it(solved) -> None:
    w, a = CASES["matmul 3 levels"]
    first = solved["matmul 3 levels"]
    again = solve(Problem(w, a), options=SolveOptions(workers=1, seed=0, start=first.schedule))
    assert again.status == "OPTIMAL"
    assert [(p.name, p.value) for p in again.phases] == [("time", 69120), ("words", 22560)]
    assert [(p.name, p.value) for p in first.phases] == [("time", 69120), ("words", 22560)]
    assert [p.start_value for p in again.phases] == [69120, 22560]  # each phase started from the given optimum
    assert again.schedule == first.schedule


def test_a_worse_start_does_not_change_the_optimum(solved) -> None:
    """A legal but poor start (every tile 1 at L0, default positions): hinted or not, the same proven optimum."""
    w, a = CASES["matmul 3 levels"]
    best = solved["matmul 3 levels"].schedule
    poor = replace(best, levels=best.levels[:2] + (LevelMapping("L0", (("m", 1), ("n", 1), ("k", 1)), ("m", "n", "k"),
                                                                frozenset("AZB")),), predicted=None)
    seen = model_view(Problem(w, a), poor)
    assert seen is not None and seen.predicted.time > best.predicted.time  # it is a schedule of the model
    result = solve(Problem(w, a), options=SolveOptions(workers=1, seed=0, start=poor))
    assert result.status == "OPTIMAL" and result.schedule.predicted == best.predicted


def _ignored(problem, start, caplog, why: str, constraints: Constraints = Constraints()) -> None:
    enc = build(problem, constraints)
    with caplog.at_level(logging.DEBUG, logger="mapsearch.solve.warm_start"):
        caplog.clear()
        assert start_of(enc, start, constraints) is None or model_view(problem, start, constraints) is None
    assert any(why in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_a_start_outside_the_family_is_ignored(solved, caplog) -> None:
    w, a = CASES["matmul 3 levels"]
    best = solved["matmul 3 levels"].schedule
    # Another problem: the 2-level matmul's schedule.
    _ignored(Problem(w, a), solved["matmul 2 levels"].schedule, caplog, "not of mm")
    # Too big for a smaller L1: the model with the start fixed is infeasible; the log names the overflow.
    small = arch([None, 1024, 96], [1, 4, 1])
    _ignored(Problem(w, small), best, caplog, "L1 holds 1,")
    # A user order the start breaks.
    from mapsearch.spec.constraints import constraints_from_dict

    fixed = constraints_from_dict({"orders": {"L1": ["m", "k", "n"]}}, "c")
    _ignored(Problem(w, a), best, caplog, "infeasible", fixed)
    # A tile limit the start breaks (L1 m <= 4; the start's L1 m is 8): no chain has its piece counts.
    from mapsearch.spec.constraints import TileLimit

    limited = Constraints("limit", (TileLimit("L1", "m", 1, 4),))
    assert best.levels[1].tile_extent("m") == 8
    _ignored(Problem(w, a), best, caplog, "the tile extents of m [8, 2] are not among the model's chains", limited)


def test_a_pruned_chain_is_replaced_by_one_that_dominates_it(solved) -> None:
    """m tiled 48 -> 9 -> 1 moves what 48 -> 8 -> 1 moves (6 and 48 pieces, the same sums) in a larger L1 tile,
    so the enumeration drops it (model/chains.py); the start takes the dominating chain, same words."""
    w, a = CASES["matmul 3 levels"]
    best = solved["matmul 3 levels"].schedule
    tiles = lambda lm, m: tuple((d, m if d == "m" else e) for d, e in lm.tile)  # noqa: E731
    start = replace(best, levels=(best.levels[0], replace(best.levels[1], tile=tiles(best.levels[1], 9)),
                                  replace(best.levels[2], tile=tiles(best.levels[2], 1), positions=())),
                    predicted=None)
    truth = replay(start, mode="count").figures
    seen = model_view(Problem(w, a), start)
    assert seen is not None
    assert [lm.tile_extent("m") for lm in seen.levels] == [48, 8, 1]
    assert (seen.predicted.time, seen.predicted.words_total) == (truth.time, truth.words_total)
    assert [lm.order for lm in seen.levels] == [lm.order for lm in start.levels]


def test_an_ignored_start_solves_as_without_one(solved) -> None:
    w, a = CASES["matmul 3 levels"]
    other = solved["matmul 2 levels"].schedule
    plain = solved["matmul 3 levels"]
    result = solve(Problem(w, a), options=SolveOptions(workers=1, seed=0, start=other))
    assert result.status == "OPTIMAL" and result.schedule == plain.schedule
    assert [p.value for p in result.phases] == [p.value for p in plain.phases]


# --------------------------------------------------------------------------- mapsearch solve --start

ROOT = Path(__file__).resolve().parents[2]
WORKED = (str(ROOT / "examples" / "matmul-4x4x4.yaml"), str(ROOT / "examples" / "arch-worked-example.yaml"))


def test_cli_start_from_a_schedule_file(tmp_path, capsys, caplog) -> None:
    """The worked example's optimum written by -o starts the next solve: same optimum, the start hints both phases
    (it meets the time phase's floor, 64 clocks, so no coarse search runs there)."""
    out = tmp_path / "s.json"
    assert cli.main(["solve", *WORKED, "-q", "-o", str(out)]) == 0
    capsys.readouterr()
    with caplog.at_level(logging.DEBUG, logger="mapsearch.solve.warm_start"):
        assert cli.main(["solve", *WORKED, "-q", "--json", "--start", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["status"], report["time"], report["words_total"]) == ("OPTIMAL", 64, 64)
    assert [r.getMessage() for r in caplog.records] == [
        "the start schedule meets the phase's floor 64: no coarse search",
        "the start schedule hints the phase: value 64 (coarse search: none)"]
    # Another workload's schedule: ignored (the reason at debug level), the same optimum.
    caplog.clear()
    other = ROOT / "examples" / "matmul-97x193x61.schedule.json"
    with caplog.at_level(logging.DEBUG, logger="mapsearch.solve.warm_start"):
        assert cli.main(["solve", *WORKED, "-q", "--json", "--start", str(other)]) == 0
    assert json.loads(capsys.readouterr().out)["time"] == 64
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
        "the start schedule is ignored: it is a schedule of matmul-97x193x61"]


@pytest.mark.parametrize("content, expected", [
    ('{"levels": ', "line 1 column 12: malformed JSON: Expecting value"),
    ('{"a": 1}', "a: unknown field; expected one of format, version, workload"),
    (None, "no such file"),
])
def test_cli_bad_start_file_is_one_line_exit_2(tmp_path, capsys, content, expected) -> None:
    path = tmp_path / "start.json"
    if content is not None:
        path.write_text(content)
    assert cli.main(["solve", *WORKED, "-q", "--start", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mapsearch: {path}: ") and expected in lines[0], lines


def test_cli_a_fused_chain_schedule_is_no_start(tmp_path, capsys) -> None:
    from mapsearch import api

    chains = ROOT / "examples" / "chains"
    fused = tmp_path / "fused.json"
    api.save_schedule(api.solve_chain(chains / "fusion-wins.yaml", chains / "fusion-arch.yaml", replay_mode=None), fused)
    assert cli.main(["solve", *WORKED, "-q", "--start", str(fused)]) == 2
    assert capsys.readouterr().err.strip() == (f"mapsearch: {fused}: --start takes one einsum's schedule (format "
                                               "mapsearch-schedule); this is a fused chain's schedule "
                                               "(mapsearch-fused-schedule)")


def test_cli_start_is_refused_by_the_sparse_solve(capsys) -> None:
    schedule = str(ROOT / "examples" / "matmul-97x193x61.schedule.json")
    assert cli.main(["solve", *WORKED, "-q", "--density", "A=uniform:0.5,0.5", "--start", schedule]) == 2
    assert "--start: a dense-model option" in capsys.readouterr().err


def test_a_start_the_reduced_family_lacks_is_returned_when_the_search_ends_worse(monkeypatch) -> None:
    """A start is never lost: where the tile enumeration is reduced (model/chains.py, limits lowered here for
    a small case) and the start's chains are not among the model's, the search cannot take it as a hint, so
    a search cut short may end worse than it; the start, solved on its own (solve/greedy_start.py), is then
    the result, FEASIBLE, predicted as the replay counts it."""
    import mapsearch.model.build as model_build
    import mapsearch.model.chains as model_chains

    w = matmul(30, 30, 30)
    a = Architecture("4L", (Level("DRAM", None), Level("L2", 512, Link(Fraction(4), Fraction(4))),
                            Level("L1", 64, Link(Fraction(2), Fraction(2))), Level("L0", 12, Link())), Compute())
    # A legal schedule with an L1 tile of m that no reduced family lists (7: no power of two, no ceil(30/2^j),
    # no divisor of 30).
    levels = (LevelMapping("DRAM", (("m", 30), ("n", 30), ("k", 30)), ()),
              LevelMapping("L2", (("m", 30), ("n", 3), ("k", 15)), ("m", "k", "n"), frozenset({"A"})),
              LevelMapping("L1", (("m", 7), ("n", 3), ("k", 15)), ("n", "k", "m"), frozenset({"B"})),
              LevelMapping("L0", (("m", 2), ("n", 3), ("k", 1)), ("n", "m", "k"), frozenset({"A", "B", "Z"})))
    start = Schedule(w, a, levels, ())
    truth = replay(start, mode="count").figures
    monkeypatch.setattr(model_chains, "DEEP_ENUMERATION_LIMIT", 50)
    # The search alone, without the schedule built level by level that starts it on four levels (it finds a
    # better one than this start here: tests/solve/test_built_first.py).
    monkeypatch.setattr(built_first, "applies", lambda *args: False)
    model_build._chains_cached.cache_clear()
    try:
        options = SolveOptions(work_limit=0.05, workers=1, seed=0)
        alone = solve(Problem(w, a), options=options)
        assert any(r.startswith("reduced tile candidates") for r in alone.family_restrictions)
        enc = build(Problem(w, a), Constraints(), options)
        assert start_of(enc, start) is None  # m's chain [30, 7, 2] is not in the reduced family
        assert (truth.time, truth.words_total) < (alone.schedule.predicted.time, alone.schedule.predicted.words_total)
        result = solve(Problem(w, a), options=replace(options, start=start))
    finally:
        model_build._chains_cached.cache_clear()  # the reduced chains must not serve later tests
    f = result.schedule.predicted
    assert result.status == "FEASIBLE"
    assert (f.time, f.words_total) == (truth.time, truth.words_total)
    assert [lm.tile for lm in result.schedule.levels] == [lm.tile for lm in levels]
    assert differences(f, replay(result.schedule, mode="count").figures) == []
    assert [p.value for p in result.phases] == [f.time, f.words_total]
    assert all(p.bound <= p.value for p in result.phases)
