"""DRAM row openings as a solver term (model/dram_rows.py) against the replay's count.

- Random cases: the solver's predicted row openings per tensor equal the
  replay's (every address decoded to its bank and row, distinct rows counted
  per transfer), and the row-buffer machine's activations are no more.
- Brute force: among all schedules of the family that are optimal in (time,
  words), each scored with every row_aligned layout whose slices fit a row
  (enumerated here from the layout definition, not from the model), the
  fewest openings equal the solver's ``dram rows`` phase.
- Hand counts, the seed's layer, bad layouts and the row limit.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace
from fractions import Fraction

import pytest

import brute_force as bf
from mapsearch.dram.geometry import simple_dram
from mapsearch.dram.layout import LayoutSpec
from mapsearch.errors import InfeasibleError
from mapsearch.model.problem import Problem, UnsupportedProblem
from mapsearch.schedule.figures import differences
from mapsearch.schedule.json_io import dumps_schedule, schedule_from_dict
from mapsearch.sim.dram_trace import row_activations, row_openings
from mapsearch.sim.replay import replay
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.spec.architecture import Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.workload import Workload


def _workload(rng: random.Random) -> Workload:
    kind = rng.choice(["mm", "conv1d", "conv2d"])
    if kind == "mm":
        return Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {d: rng.randint(1, 9) for d in "mnk"})
    if kind == "conv1d":
        return Workload.from_text("c1", "O[p] += I[p+r] * W[r]", {"p": rng.randint(2, 12), "r": rng.randint(1, 3)})
    return Workload.from_text("c2", "O[k,p] += I[c,p+r] * W[k,c,r]",
                              {"k": rng.randint(1, 5), "c": rng.randint(1, 5), "p": rng.randint(2, 8), "r": rng.randint(1, 3)})


def _arch(rng: random.Random) -> Architecture:
    depth = rng.choice([2, 3])
    caps = [None] + sorted((rng.randint(8, 80) for _ in range(depth - 1)), reverse=True)
    names = ["DRAM", "L1", "L0"][:depth]
    levels = []
    for i in range(depth):
        mesh = (MeshAxis("x", rng.choice([2, 3])),) if i == depth - 1 and depth == 3 and rng.random() < 0.3 else ()
        levels.append(Level(names[i], caps[i], None if i == 0 else Link(), mesh=mesh))
    dram = simple_dram(rng.choice([8, 16, 32, 64]), rng.choice([1, 2]), banks=rng.choice([1, 2, 4]), burst_bytes=8)
    return Architecture("a", tuple(levels), Compute((), Fraction(1)), False, dram=dram)


def _fixed_layouts(rng: random.Random, w: Workload, arch: Architecture) -> dict[str, LayoutSpec]:
    """Random row_aligned layouts whose slices fit a row, for about half the tensors."""
    out = {}
    for t in w.tensor_names:
        if rng.random() < 0.5:
            shape = w.tensor_shape(t)
            order = list(range(len(shape)))
            rng.shuffle(order)
            fits = [k for k in range(len(shape) + 1)
                    if math.prod(shape[a] for a in order[k:]) * arch.dram.element_bytes <= arch.dram.row_bytes]
            out[t] = LayoutSpec("row_aligned", tuple(order), (), rng.choice(fits))
    return out


@pytest.mark.parametrize("seed", range(30))
def test_predicted_openings_equal_the_replay(seed):
    rng = random.Random(seed)
    w, arch = _workload(rng), _arch(rng)
    fixed = _fixed_layouts(rng, w, arch)
    mode = rng.choice(["tiebreak", "before-words"])
    try:
        result = solve(Problem(w, arch), options=SolveOptions(time_limit=30, dram_rows=mode, dram_layouts=tuple(fixed.items())))
    except InfeasibleError:
        pytest.skip("infeasible capacities")
    s = result.schedule
    layouts = dict(s.dram.layouts)
    assert all(layouts[t] == spec for t, spec in fixed.items())
    assert differences(s.predicted, replay(s, mode="count").figures) == []
    counted = row_openings(s, None, layouts)
    assert dict(s.dram.row_openings) == counted
    assert row_activations(s, None, layouts, "layout").activations <= sum(counted.values())
    # The plan travels in the schedule file.
    again = schedule_from_dict(__import__("json").loads(dumps_schedule(s)))
    assert again.dram == s.dram


def _row_aligned_layouts(w: Workload, t: str, dram) -> list[LayoutSpec]:
    """Every row_aligned layout of ``t`` (slice axes = a subset, in tensor order) whose slices fit one row."""
    shape = w.tensor_shape(t)
    n = len(shape)
    out = []
    for k in range(n + 1):
        for sliced in itertools.combinations(range(n), k):
            inner = [a for a in range(n) if a not in sliced]
            if math.prod(shape[a] for a in inner) * dram.element_bytes <= dram.row_bytes:
                out.append(LayoutSpec("row_aligned", tuple(sliced) + tuple(inner), (), k))
    return out


BRUTE_CASES = [
    ("Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 3, "k": 5}, [None, 12], 8),
    ("Z[m,n] += A[m,k] * B[k,n]", {"m": 6, "n": 2, "k": 3}, [None, 20, 6], 4),
    ("Z[m,n] += A[m,k] * B[k,n]", {"m": 5, "n": 5, "k": 2}, [None, 14], 4),
    ("O[p] += I[p+r] * W[r]", {"p": 9, "r": 3}, [None, 9], 4),
    ("O[k,p] += I[c,p+r] * W[k,c,r]", {"k": 2, "c": 3, "p": 4, "r": 2}, [None, 30], 8),
]


@pytest.mark.parametrize("text,extents,caps,row_bytes", BRUTE_CASES)
def test_fewest_openings_equal_brute_force(text, extents, caps, row_bytes):
    w = Workload.from_text("w", text, extents)
    names = ["DRAM", "L1", "L0"][-len(caps):]
    levels = tuple(Level(names[i], caps[i], None if i == 0 else Link()) for i in range(len(caps)))
    dram = simple_dram(row_bytes, 1, banks=2, burst_bytes=2)
    arch = Architecture("a", levels, Compute((), Fraction(1)), False, dram=dram)
    result = solve(Problem(w, arch), options=SolveOptions(time_limit=60, dram_rows="tiebreak"))
    assert result.proven
    best = bf.brute_force(w, arch, objective=bf.Objective(), keep_all_optima=True)
    assert best is not None and best.all_optimal
    assert (result.phases[0].value, result.phases[1].value) == best.value
    fewest = min(
        sum(min(row_openings(s, dram, {t: spec})[t] for spec in _row_aligned_layouts(w, t, dram)) for t in w.tensor_names)
        for s in best.all_optimal
    )
    assert result.phases[2].name == "dram rows"
    assert result.phases[2].value == fewest == result.schedule.dram.total_row_openings


def test_hand_count_of_row_openings():
    """Z[m,n] = A[m,k] B[k,n], 4x4x4, rows of 4 one-byte words, A one row per m, B one row per k, Z one row per m.

    L0 tiles m=2, n=4, k=4: A's two tiles touch 2 rows each (4), B is
    loaded once whole (4 rows), Z's two tiles are stored once each, 2 rows
    each (4): 12 openings. With one bank every transfer starts on another
    tensor's row, so all 12 are activations.
    """
    from mapsearch.schedule.schedule import LevelMapping, Schedule

    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})
    dram = simple_dram(4, 1, banks=1, burst_bytes=1)
    arch = Architecture("a", (Level("DRAM", None), Level("L0", 64, Link())), Compute((), Fraction(1)), False, dram=dram)
    s = Schedule(w, arch, (LevelMapping("DRAM", w.extents),
                           LevelMapping("L0", (("m", 2), ("n", 4), ("k", 4)), ("m", "n", "k"), frozenset({"A", "B", "Z"}))),
                 (("A", "DRAM"), ("B", "DRAM"), ("Z", "DRAM")))
    layouts = {"A": LayoutSpec("row_aligned", (0, 1), (), 1), "B": LayoutSpec("row_aligned", (0, 1), (), 1),
               "Z": LayoutSpec("row_aligned", (0, 1), (), 1)}
    assert row_openings(s, dram, layouts) == {"A": 4, "B": 4, "Z": 4}
    # Stream: A rows 0,1 | B rows 0..3 | Z rows 0,1 stored, A rows 2,3 | Z rows 2,3: every transfer changes the row.
    assert row_activations(s, dram, layouts, "layout").activations == 12
    # The solver, told these layouts and these tiles, predicts the same.
    from mapsearch.spec.constraints import Constraints, TileLimit

    limits = Constraints(tiles=(TileLimit("L0", "m", 2, 2), TileLimit("L0", "n", 4, 4), TileLimit("L0", "k", 4, 4)))
    result = solve(Problem(w, arch), limits, SolveOptions(dram_rows="tiebreak", dram_layouts=tuple(layouts.items())))
    assert dict(result.schedule.dram.row_openings) == {"A": 4, "B": 4, "Z": 4}


def test_seed_layer_rows_chosen_by_the_solver():
    """The seed's layer (examples/dram/row-thrashing): 14 openings with chosen layouts, 20 with the seed's input layout."""
    from pathlib import Path

    from mapsearch.spec.load import load_problem

    here = Path(__file__).resolve().parents[2] / "examples" / "dram" / "row-thrashing"
    w, arch, homes = load_problem(here / "workload.yaml", here / "arch.yaml")
    p = Problem(w, arch, tuple(homes.items()))
    chosen = solve(p, options=SolveOptions(dram_rows="tiebreak"))
    seed_input = LayoutSpec("row_aligned", (0, 1, 2, 3), (), 2)  # one row per (n, c), as in the seed
    given = solve(p, options=SolveOptions(dram_rows="tiebreak", dram_layouts=(("I", seed_input),)))
    assert chosen.proven and given.proven
    assert dict(chosen.schedule.dram.row_openings) == {"I": 10, "W": 3, "O": 1}
    assert dict(given.schedule.dram.row_openings) == {"I": 16, "W": 3, "O": 1}
    for s in (chosen.schedule, given.schedule):
        layouts = dict(s.dram.layouts)
        assert row_openings(s, None, layouts) == dict(s.dram.row_openings)
        assert row_activations(s, None, layouts, "layout").activations == s.dram.total_row_openings


def test_unmodelled_layout_and_mapping_are_named():
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 8, "n": 8, "k": 8})
    dram = simple_dram(16, 1, banks=1, burst_bytes=4)
    arch = Architecture("a", (Level("DRAM", None), Level("L0", 64, Link())), Compute((), Fraction(1)), False, dram=dram)
    with pytest.raises(UnsupportedProblem, match="A's row_major layout is replayed but not modelled"):
        solve(Problem(w, arch), options=SolveOptions(dram_rows="tiebreak", dram_layouts=(("A", LayoutSpec()),)))
    wide = replace(arch, dram=replace(dram, channels=2, mapping="RoBaCoCh"))
    with pytest.raises(UnsupportedProblem, match="column field lowest"):
        solve(Problem(w, wide), options=SolveOptions(dram_rows="tiebreak"))


def test_row_limit_is_a_constraint_and_a_named_conflict():
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 8, "n": 8, "k": 8})
    dram = simple_dram(8, 1, banks=1, burst_bytes=4)
    arch = Architecture("a", (Level("DRAM", None), Level("L0", 40, Link())), Compute((), Fraction(1)), False, dram=dram)
    free = solve(Problem(w, arch), options=SolveOptions(objective="words", dram_rows="tiebreak"))
    words = free.phases[0].value
    # Bounding the rows below the words-optimal schedule's count costs words (or is infeasible).
    limit = free.schedule.dram.total_row_openings - 1
    try:
        bounded = solve(Problem(w, arch), options=SolveOptions(objective="words", max_dram_rows=limit))
    except InfeasibleError as e:
        assert f"DRAM row openings <= {limit}" in str(e)
    else:
        assert bounded.schedule.dram.total_row_openings <= limit
        assert bounded.phases[0].value > words
    with pytest.raises(InfeasibleError, match="DRAM row openings <= 3"):
        solve(Problem(w, arch), options=SolveOptions(max_dram_rows=3))


def test_cli_solve_with_rows_writes_a_plan_that_replay_checks(tmp_path, capsys):
    """``solve --dram-rows`` prints predicted = replayed openings, writes the plan; ``replay --check`` rechecks it."""
    import json
    from pathlib import Path

    from mapsearch import cli

    here = Path(__file__).resolve().parents[2] / "examples" / "dram" / "row-thrashing"
    out = tmp_path / "s.json"
    assert cli.main(["solve", str(here / "workload.yaml"), str(here / "arch.yaml"), "--dram-layouts",
                     str(here / "fix.yaml"), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "I: row_aligned, a row per (n, c) holding [q+s, p+r]; row openings predicted 16, replayed 16; activations 16" in text
    plan = json.loads(out.read_text())["dram"]
    assert plan["predicted"]["row_openings"] == {"I": 16, "W": 3, "O": 1}
    assert plan["layouts"]["I"] == {"kind": "row_aligned", "order": ["n", "c", "q+s", "p+r"], "slice": 2}
    assert cli.main(["replay", str(out), "--check"]) == 0
    data = json.loads(out.read_text())
    data["dram"]["predicted"]["row_openings"]["I"] = 15
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert cli.main(["replay", str(bad), "--check"]) == 1
    assert "replay mismatch in dram.row_openings.I: predicted 15, replayed 16" in capsys.readouterr().err
    assert cli.main(["solve", str(here / "workload.yaml"), str(here / "arch.yaml"), "--dram-rows", "sometimes"]) == 2
    assert "--dram-rows: expected one of off, tiebreak, before-words, got 'sometimes'" in capsys.readouterr().err
