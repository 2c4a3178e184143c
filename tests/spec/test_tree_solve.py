"""solve_tree: every path solved, the best one picked, the ones the solver cannot take skipped with a reason."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from mapsearch.schedule.figures import differences
from mapsearch.sim.replay import replay
from mapsearch.spec.constraints import Constraints
from mapsearch.model.options import SolveOptions
from mapsearch.solve.tree import NoUsablePath, solve_tree
from mapsearch.spec.tree import load_tree, tree_from_text
from mapsearch.spec.workload import Workload

ROOT = Path(__file__).resolve().parents[2]
TWO_PATHS = load_tree(ROOT / "examples" / "trees" / "two-paths.yaml")
OPTIONS = SolveOptions(time_limit=120)


def matmul(m: int, n: int, k: int) -> Workload:
    return Workload.from_text(f"matmul-{m}x{n}x{k}", "Z[m,n] += A[m,k] * B[k,n]", {"m": m, "n": n, "k": k})


def test_small_awkward_matmul_picks_the_scalar_unit():
    best, result, outcomes = solve_tree(TWO_PATHS, matmul(5, 3, 7), {}, OPTIONS)
    assert best == "scalar_unit"
    by_name = {o.compute_name: o for o in outcomes}
    assert [o.compute_name for o in outcomes] == ["scalar_unit", "mac_array"]
    assert all(o.skipped is None and o.result.status == "OPTIMAL" for o in outcomes)
    # Scalar: 105 MACs at one per clock; DRAM->GLB moves each of the 71 words once.
    assert result.schedule.predicted.time == 105
    # Array: 4 block calls, but at least 71 words cross GLB->L0 at 2 clocks each.
    assert by_name["mac_array"].result.schedule.predicted.time == 142
    assert result.schedule.architecture.name == "two-paths/scalar_unit"
    assert differences(result.schedule.predicted, replay(result.schedule, mode="count").figures) == []


def test_large_matmul_picks_the_mac_array():
    best, result, outcomes = solve_tree(TWO_PATHS, matmul(128, 128, 128), {}, OPTIONS)
    assert best == "mac_array"
    scalar = next(o for o in outcomes if o.compute_name == "scalar_unit").result
    assert scalar.schedule.predicted.time == 128 ** 3
    assert result.status == "OPTIMAL"
    assert result.schedule.predicted.time < scalar.schedule.predicted.time / 3
    # Link-bound (GLB->L0 at 2 clocks per word), far under the scalar unit's 2,097,152 clocks.
    assert result.schedule.predicted.time > result.schedule.predicted.compute_time
    assert differences(result.schedule.predicted, replay(result.schedule, mode="count").figures) == []


def test_words_objective_ranks_by_words():
    best, result, outcomes = solve_tree(TWO_PATHS, matmul(5, 3, 7), {}, SolveOptions(objective="words", time_limit=60))
    # The scalar path moves 71 words; the array path moves them over two links.
    assert best == "scalar_unit" and result.schedule.predicted.words_total == 71


MESHED = """\
name: meshed-and-plain
arch:
  nodes:
  - !Memory {name: DRAM, size: inf}
  - !Memory {name: GLB, size: 4096}
  - !Parallel
    nodes:
    - !Hierarchical
      nodes:
      - !Memory
        name: PE
        size: 16
        spatial: [{name: x, fanout: 2, may_reuse: input}]
      - !Memory
        name: R
        size: 8
        spatial: [{name: y, fanout: 2}]
      - !Compute {name: array}
    - !Compute {name: scalar}
"""


def test_a_path_with_two_meshed_levels_is_solved_beside_the_plain_one():
    """PE (2 instances) over R (2 each): two meshed levels in one path, solved since issue 15, and faster than
    the scalar path's 64 clocks; the mesh's role names are bound to the workload's tensors."""
    t = tree_from_text(MESHED, "meshed.yaml")
    best, result, outcomes = solve_tree(t, matmul(4, 4, 4), {}, OPTIONS)
    array = next(o for o in outcomes if o.compute_name == "array")
    scalar = next(o for o in outcomes if o.compute_name == "scalar")
    assert array.result is not None and scalar.result is not None
    assert best == "array" and array.result.time < scalar.result.time == 64
    assert array.architecture.levels[2].mesh[0].may_reuse == ("A", "B")  # bound to the workload


def test_homes_off_the_path_skip_it():
    best, _, outcomes = solve_tree(TWO_PATHS, matmul(8, 8, 8), {"Z": "L0"}, OPTIONS)
    assert best == "mac_array"
    scalar = next(o for o in outcomes if o.compute_name == "scalar_unit")
    assert "home of Z, 'L0', is not on the path to 'scalar_unit'" in scalar.skipped


def test_extra_constraints_apply_to_every_path_that_has_their_levels():
    c = Constraints(name="tiny", tiles=(), keep=(("L0", "A", True),))
    best, _, outcomes = solve_tree(TWO_PATHS, matmul(5, 3, 7), {}, OPTIONS, c)
    scalar = next(o for o in outcomes if o.compute_name == "scalar_unit")
    assert "constraints do not fit this path" in scalar.skipped and best == "mac_array"


def test_no_usable_path_is_one_error_naming_each_reason():
    t = tree_from_text(textwrap.dedent("""\
        arch:
          nodes:
          - !Memory {name: DRAM, size: inf}
          - !Memory {name: L0, size: 4}
          - !Compute {name: mac}
        """), "tiny.yaml")
    with pytest.raises(NoUsablePath, match=r"tiny\.yaml: no path of 'tiny' could be solved \(mac: tiny\.yaml:5:5: the home of Z, 'GLB', is not on the path"):
        solve_tree(t, matmul(2, 2, 2), {"Z": "GLB"}, OPTIONS)


def test_every_path_out_of_time_is_a_timeout(monkeypatch):
    """Every path timed out: a SolverTimeout (the CLI's exit 3, as for one architecture), not bad input (exit 2,
    which the exam found); a path skipped for another reason keeps it a NoUsablePath only."""
    import mapsearch.solve.tree as tree_solve
    from mapsearch.errors import InfeasibleError, SolverTimeout
    from mapsearch.solve.tree import PathsTimedOut

    def out_of_time(problem, constraints, options):
        raise SolverTimeout("no schedule found within 1 s")

    monkeypatch.setattr(tree_solve, "solve", out_of_time)
    with pytest.raises(PathsTimedOut, match=r"scalar_unit: timed out: no schedule found within 1 s; mac_array: timed out"):
        solve_tree(TWO_PATHS, matmul(5, 3, 7), {}, OPTIONS)
    assert issubclass(PathsTimedOut, SolverTimeout) and issubclass(PathsTimedOut, NoUsablePath)

    def one_infeasible(problem, constraints, options):
        if problem.architecture.name.endswith("scalar_unit"):
            raise InfeasibleError("nothing fits")
        raise SolverTimeout("no schedule found within 1 s")

    monkeypatch.setattr(tree_solve, "solve", one_infeasible)
    with pytest.raises(NoUsablePath) as info:
        solve_tree(TWO_PATHS, matmul(5, 3, 7), {}, OPTIONS)
    assert not isinstance(info.value, SolverTimeout)
