"""Split bounds (AccelForge's ``Spatial.loop_bounds``) in the solver, against the brute force.

The bound of a dimension on a mesh axis is its factor there when it is split
on that axis, else 1 (``MeshAxis.split_bounds``). A 4x4x4 matmul on 4
instances, compute bound (4 clocks per MAC, links of 1/16 clock per word):
split 4 ways, the busiest instance does 16 calls, 64 clocks; at most 2 ways,
128; unsplit, 256. ``tests/brute_force_spatial.py`` enumerates only the
splits that meet the bounds; its optimum must be the solver's, and every
returned schedule replays to its prediction.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402
import brute_force_spatial as bfs  # noqa: E402

from mapsearch.errors import InfeasibleError  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.model.spatial import unmeetable_split_bounds  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import Link, MeshAxis, SplitBound  # noqa: E402
from mapsearch.spec.tree import tree_from_text  # noqa: E402
from mapsearch.spec.tree_paths import flatten, path_architecture  # noqa: E402
from tests.solve.test_spatial_must_reuse import TREE  # noqa: E402
from tests.solve.test_spatial_vs_brute_force import arch, conv1d, matmul  # noqa: E402

FAST = Link(Fraction(1, 16), Fraction(1, 16))


def bounded(*rules: SplitBound, sizes=(4,), extents=(4, 4, 4)):
    mesh = tuple(MeshAxis(name, size, ("all",), split_bounds=rules if a == 0 else ())
                 for a, (name, size) in enumerate(zip(("x", "y"), sizes)))
    return matmul(*extents), arch([None, 3], 1, mesh, [None, FAST], clocks=Fraction(4))


def solved(w, a):
    result = solve(Problem(w, a), options=SolveOptions(time_limit=60, workers=1, seed=0))
    assert differences(result.schedule.predicted, bf.replay_figures(result.schedule)) == []
    return result


def axis_factors(result, axis: str = "x") -> dict[str, int]:
    """Per dimension split on ``axis`` of the meshed level: its factor (parts of the level-above tile)."""
    level = result.schedule.levels[1]
    parent = dict(result.schedule.levels[0].tile)
    return {sp.dim: -(-parent[sp.dim] // sp.part) for sp in level.spatial if sp.axis == axis}


@pytest.mark.parametrize("rule, clocks", [
    (SplitBound(("m", "n"), "==", 1), 64),      # only k may be split: 4 ways
    (SplitBound(("m", "n", "k"), "<=", 2), 128),  # each at most 2 ways, on a 4-instance axis: m 2 x n 2 (64) ...
    (SplitBound(("m", "n", "k"), "product<=", 2), 128),  # ... but the product at most 2
    (SplitBound(("k",), ">=", 2), 64),          # k must be split (unsplit schedules are not legal)
    (SplitBound(("m",), "==", 2), 64),          # m in exactly 2 parts, the other factor 2 from n or k
    (SplitBound(("m", "n", "k"), "<", 2), 256),  # nothing may be split
])
def test_split_bounds_limit_the_splits(rule, clocks) -> None:
    w, a = bounded(rule)
    result = solved(w, a)
    assert rule.holds(axis_factors(result))
    assert tuple(p.value for p in result.phases) == bfs.brute_force_spatial(w, a).value
    if rule.operator != "<=":
        assert result.phases[0].value == clocks
    else:
        assert result.phases[0].value == 64 and len(axis_factors(result)) == 2  # two dims of 2 parts each


def test_split_bounds_on_one_axis_of_two() -> None:
    # 2x2 mesh: x splits only n (at most 2 ways), y anything; the brute force over the same family agrees.
    w, a = bounded(SplitBound(("m", "k"), "==", 1), sizes=(2, 2))
    result = solved(w, a)
    assert set(axis_factors(result, "x")) <= {"n"}
    assert tuple(p.value for p in result.phases) == bfs.brute_force_spatial(w, a).value
    assert result.phases[0].value == 64


def test_split_bounds_on_a_convolution_with_uneven_parts() -> None:
    # O[k,p] += I[p+r] * W[k,r], p = 5 on 3 instances; p must be split 3 ways (parts 2, 2, 1).
    w = conv1d(2, 5, 3)
    a = arch([None, 16], 1, (MeshAxis("x", 3, ("all",), split_bounds=(SplitBound(("p",), "==", 3),)),),
             [None, FAST], clocks=Fraction(4))
    result = solved(w, a)
    assert axis_factors(result) .get("p") == 3
    assert tuple(p.value for p in result.phases) == bfs.brute_force_spatial(w, a).value


def test_a_bound_no_split_can_meet_is_infeasible_and_named() -> None:
    # k >= 8 on an axis of 4 instances: no schedule of the contract meets it.
    w, a = bounded(SplitBound(("k",), ">=", 8))
    with pytest.raises(InfeasibleError, match=r"^infeasible: loop bounds of mesh axis x of L0 conflict: no split of at most 4 instances meets each of \(k\) >= 8$"):
        solve(Problem(w, a), options=SolveOptions(time_limit=60, workers=1, seed=0))
    assert bfs.brute_force_spatial(w, a) is None


def test_split_bound_rules_and_their_text() -> None:
    rule = SplitBound(("m", "n"), "product<=", 4)
    assert rule.holds({"m": 2, "n": 2}) and not rule.holds({"m": 4, "n": 2}) and rule.holds({})
    assert str(rule) == "product of (m, n) <= 4"
    assert SplitBound(("k",), ">=", 2).holds({}) is False
    with pytest.raises(ValueError, match="split bound operator '=<'"):
        SplitBound(("k",), "=<", 2)


def tree(bounds: str) -> str:
    """The must_reuse tests' tree with ``loop_bounds: [bounds]`` on its fanout dimension."""
    return TREE.format(fanout=f"name: x, fanout: 4, may_reuse: All, loop_bounds: [{bounds}]")


def test_tree_loop_bounds_reach_the_solver() -> None:
    (path,) = flatten(tree_from_text(tree("{expression: ~k, operator: ==, value: 1}, "
                                          "{expression: k, operator: '>=', value: 2}"), "t.yaml"))
    w = matmul(4, 4, 4)
    a = path_architecture(path, w)
    assert [(r.dims, r.operator, r.value) for r in a.levels[1].mesh[0].split_bounds] == [
        (("m", "n"), "==", 1), (("k",), ">=", 2)]
    result = solved(w, a)
    assert set(axis_factors(result)) == {"k"} and result.phases[0].value == 64
    assert tuple(p.value for p in result.phases) == bfs.brute_force_spatial(w, a).value


@pytest.mark.parametrize("bounds, message", [
    ("{expression: ~x, operator: ==, value: 1}", "t.yaml:10:72: arch.nodes[1].spatial[0].loop_bounds[0].expression: "
                                                 "unknown dimension 'x'; the workload's dimensions are m, n, k (in '~x')"),
    ("{expression: input, operator: ==, value: 1}", "expected dimension names, All or Nothing, got the tensor role"),
    ("{expression: m, operator: '=<', value: 1}", "expected operator: one of ==, <=, >=, <, >, product=="),
    ("{expression: m, operator: ==, value: -1}", "expected value: int >= 0, got -1"),
    ("{expression: m, operator: ==, valu: 1}", "unknown field of a loop bound (did you mean 'value'?)"),
])
def test_a_bad_tree_loop_bound_is_one_line_at_its_place(bounds, message) -> None:
    from mapsearch.spec.tree_yaml import TreeError

    with pytest.raises(TreeError) as e:
        (path,) = flatten(tree_from_text(tree(bounds), "t.yaml"))
        path_architecture(path, matmul(4, 4, 4))
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("rules, meets", [
    ((SplitBound(("m", "n", "k"), "product>=", 5),), False),  # at most 4 instances
    ((SplitBound(("m", "n", "k"), "product==", 4),), True),
    ((SplitBound(("m",), ">=", 2), SplitBound(("n",), ">=", 3)), False),  # 2 x 3 > 4
    ((SplitBound(("m",), ">=", 2), SplitBound(("n",), ">=", 2)), True),
    ((SplitBound(("m",), ">", 4),), False),  # m has 4 elements
    ((SplitBound(("m", "n"), "<", 1),), False),
    ((SplitBound(("m", "n"), "product<", 2), SplitBound(("k",), "==", 4)), True),
])
def test_the_outright_check_of_split_bounds_agrees_with_the_brute_force(rules, meets) -> None:
    w, a = bounded(*rules)
    assert (unmeetable_split_bounds(Problem(w, a)) is None) is meets
    if not meets:  # no schedule of the brute force's family either
        assert bfs.brute_force_spatial(w, a) is None


def test_the_outright_check_reads_the_extents_on_a_large_axis() -> None:
    # k, p, r (extents 2, 5, 3) on an axis of 16,384: their factors multiply to 30 at most, whatever the size.
    w = conv1d(2, 5, 3)
    big = MeshAxis("x", 16384, ("all",), split_bounds=(SplitBound(("k", "p", "r"), "product>", 30),))
    assert unmeetable_split_bounds(Problem(w, arch([None, 16], 1, (big,), [None, FAST]))) is not None
    big = MeshAxis("x", 16384, ("all",), split_bounds=(SplitBound(("k", "p", "r"), "product>", 29),))
    assert unmeetable_split_bounds(Problem(w, arch([None, 16], 1, (big,), [None, FAST]))) is None


# --- the same bounds from a constraints file (spec/constraints.py, ``spatial``) -------------------------------

CONSTRAINED = {"spatial": {"L0": {"x": [{"expression": "~k", "operator": "==", "value": 1},
                                        {"expression": ["k"], "operator": ">=", "value": 2}]}}}


def test_a_constraints_file_bounds_the_splits_as_the_architecture_would() -> None:
    from mapsearch.spec.constraints import constraints_from_dict, with_spatial_limits

    w, a = bounded()
    c = constraints_from_dict(CONSTRAINED, "c.yaml")
    bounded_arch = with_spatial_limits(a, c, w)
    assert [(r.dims, r.operator, r.value) for r in bounded_arch.levels[1].mesh[0].split_bounds] == [
        (("m", "n"), "==", 1), (("k",), ">=", 2)]
    result = solve(Problem(w, a), c, options=SolveOptions(time_limit=60, workers=1, seed=0))
    assert set(axis_factors(result)) == {"k"} and result.phases[0].value == 64
    assert tuple(p.value for p in result.phases) == bfs.brute_force_spatial(w, bounded_arch).value
    assert differences(result.schedule.predicted, bf.replay_figures(result.schedule)) == []


@pytest.mark.parametrize("spatial, field, expected", [
    ({"L0": {"x": [{"expression": "~k", "operator": "=<", "value": 1}]}}, "spatial.L0.x[0].operator", "one of =="),
    ({"L0": {"x": [{"expression": "~k", "operator": "==", "value": -1}]}}, "spatial.L0.x[0].value", "int >= 0"),
    ({"L0": {"x": [{"expression": "~k |", "operator": "==", "value": 1}]}}, "spatial.L0.x[0].expression",
     "a set of dimensions"),
    ({"L0": {"x": [{"expression": "~k", "operator": "=="}]}}, "spatial.L0.x[0]", "keys expression, operator and value"),
    ({"L0": {"x": {"expression": "~k"}}}, "spatial.L0.x", "a list of {expression, operator, value}"),
    ({"L0": {"z": [{"expression": "~k", "operator": "==", "value": 1}]}}, "spatial.L0.z", "a mesh axis of L0 ['x']"),
    ({"L1": {"x": [{"expression": "~k", "operator": "==", "value": 1}]}}, "spatial.L1.x", "(L1 has none)"),
    ({"L0": {"x": [{"expression": "~q", "operator": "==", "value": 1}]}}, "spatial.L0.x", "unknown dimension 'q'"),
    # A tensor role named every dimension here before the evaluation over dimensions was shared with trees.
    ({"L0": {"x": [{"expression": "input", "operator": "==", "value": 1}]}}, "spatial.L0.x", "the tensor role 'input'"),
])
def test_a_bad_spatial_constraint_is_one_line_naming_its_field(spatial, field, expected) -> None:
    from mapsearch.errors import SpecError
    from mapsearch.spec.constraints import check_constraints, constraints_from_dict

    w, a = bounded()
    with pytest.raises(SpecError) as e:
        check_constraints(constraints_from_dict({"spatial": spatial}, "c.yaml"), w, a, "c.yaml")
    assert f"c.yaml: {field}:" in str(e.value) and expected in str(e.value) and "\n" not in str(e.value)


def test_values_beyond_64_bits_compare_as_any_value_past_the_axis_does() -> None:
    # A bound or product lies in 1..size: <= 10^30 holds for every split, >= 10^30 for none (CP-SAT takes no
    # integer beyond 64 bits, so the model compares with size + 1).
    w, a = bounded(SplitBound(("m", "n", "k"), "<=", 10**30))
    assert solved(w, a).phases[0].value == 64
    w, a = bounded(SplitBound(("k",), ">=", 10**30))
    with pytest.raises(InfeasibleError, match="loop bounds of mesh axis x of L0 conflict"):
        solve(Problem(w, a), options=SolveOptions(time_limit=60, workers=1, seed=0))
