"""The whitelisted-ast evaluator of the peers' Python expressions."""

from fractions import Fraction

import pytest

from mapsearch.spec.foreign.expr import ExprError, evaluate_expr
from mapsearch.spec.foreign.sets import TensorSet

U = frozenset({"A", "B", "Z"})
NAMES = {"All": TensorSet(U, U, {"A": 8, "B": 16, "Z": 8}), "A": TensorSet(frozenset({"A"}), U, {"A": 8}),
         "B": TensorSet(frozenset({"B"}), U, {"B": 16}), "weight": TensorSet(frozenset({"B"}), U, {"B": 16})}


def test_numbers_stay_exact():
    assert evaluate_expr("8 * 614e9", {}) == 4912 * 10**9
    assert evaluate_expr("1024*1024*128*8", {}) == 1073741824
    assert evaluate_expr("0.1 + 0.2", {}) == Fraction(3, 10)
    assert evaluate_expr("1 / 3", {}) == Fraction(1, 3)
    assert evaluate_expr("inf", {}) == float("inf")


def test_set_expressions_and_attributes():
    assert evaluate_expr("~A", NAMES).names == {"B", "Z"}
    assert evaluate_expr("~A.tensors - weight", NAMES).names == {"Z"}
    assert evaluate_expr("weight.bits_per_value if weight else 0", NAMES) == 16
    assert evaluate_expr("len(All) == 3", NAMES) is True


def test_comprehensions_over_objects():
    class Action:
        EXPR_ATTRIBUTES = ("n_calls", "throughput")

        def __init__(self, n, t):
            self.n_calls, self.throughput = n, t

    actions = [Action(2, 4), Action(3, 1)]
    assert evaluate_expr("max(a.n_calls / a.throughput for a in actions)", {"actions": actions}) == 3
    assert evaluate_expr("sum(a.n_calls for a in actions) / 32 / 200e6", {"actions": actions}) == Fraction(5, 6400000000)


@pytest.mark.parametrize("text, why", [
    ("__import__('os')", "unknown name '__import__'"),
    ("__import__('os').system('true')", "plain functions"),
    ("A.__class__", "attribute '__class__'"),
    ("(lambda: 1)()", "plain functions"),
    ("lambda: 1", "Lambda is not allowed"),
    ("open('x')", "unknown name 'open'"),
    ("A.names", "attribute 'names'"),
    ("[x for x in [1] for y in [2]]", "one 'for'"),
    ("1 +", "not a Python expression"),
    ("d[0:1]", "Slice is not allowed"),
    ("d['Z']", "no 'Z' in dict of 2 entries"),
    ("A['x']", "indexing a TensorSet"),
])
def test_anything_else_is_refused(text, why):
    with pytest.raises(ExprError, match=why.replace("(", r"\(").replace(")", r"\)")):
        evaluate_expr(text, {**NAMES, "d": {"C": 3, "M": 4}})


def test_timeloopfe_expressions():
    """What timeloopfe's attribute values use: indexing the instance, len, max, ceil/log2 over names."""
    names = {"instance": {"C": 3, "M": 4, "densities": {}}, "datawidth": 8, "DATAWIDTH": 16}
    assert evaluate_expr("len(instance)", names) == 3
    assert evaluate_expr("instance['C'] * instance['M']", names) == 12
    assert evaluate_expr("max(datawidth, DATAWIDTH) * 3", names) == 48
    assert evaluate_expr("ceil(log2(1000)) + int(7 / 2) + floor(2.5)", names) == 10 + 3 + 2
    assert evaluate_expr("datawidth * 3 if DATAWIDTH > 8 else 0", names) == 24
