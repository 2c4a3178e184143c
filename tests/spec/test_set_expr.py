"""Set expressions: the grammar, precedence, roles, evaluation, and errors with positions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mapsearch.errors import MapsearchError
from mapsearch.spec.set_expr import (
    Binary,
    Complement,
    Name,
    Role,
    SetExprSyntaxError,
    UnknownTensor,
    evaluate,
    names_in,
    parse_set_expr,
    union_terms,
)

MATMUL = {"A": False, "B": False, "Z": True}


def ev(text: str, tensors=MATMUL) -> list[str]:
    return sorted(evaluate(parse_set_expr(text), tensors, text))


@pytest.mark.parametrize("text, expected", [
    ("A", ["A"]),
    ("input", ["A", "B"]),
    ("output", ["Z"]),
    ("All", ["A", "B", "Z"]),
    ("all", ["A", "B", "Z"]),
    ("Nothing", []),
    ("none", []),
    ("input | output", ["A", "B", "Z"]),
    ("input & B", ["B"]),
    ("All - A", ["B", "Z"]),
    ("~A", ["B", "Z"]),
    ("~~A", ["A"]),
    ("~Nothing", ["A", "B", "Z"]),
    ("~(A | output)", ["B"]),
    ("  ( A|B )  ", ["A", "B"]),
])
def test_evaluates(text, expected):
    assert ev(text) == expected


def test_ast_is_frozen_dataclasses_with_positions():
    e = parse_set_expr("~A | (B & output)")
    assert e == Binary("|", Complement(Name("A", 1), 0), Binary("&", Name("B", 6), Role("output", 10), 8), 3)
    with pytest.raises(Exception):
        e.op = "&"  # type: ignore[misc]
    assert hash(e) == hash(parse_set_expr("~A | (B & output)"))


@pytest.mark.parametrize("text, same_as", [
    ("A | B & Z", "A | (B & Z)"),          # & binds tighter than |
    ("A & B - A", "A & (B - A)"),          # - binds tighter than &
    ("All - A - B", "(All - A) - B"),      # left-associative
    ("~A & B", "(~A) & B"),                # ~ binds tightest
    ("~A - B", "(~A) - B"),
    ("A | B - B", "A | (B - B)"),
])
def test_precedence_follows_python(text, same_as):
    assert ev(text) == ev(same_as)
    assert _shape(parse_set_expr(text)) == _shape(parse_set_expr(same_as))


def _shape(e):
    """The AST without positions."""
    if isinstance(e, Name):
        return e.name
    if isinstance(e, Role):
        return e.role
    if isinstance(e, Complement):
        return ("~", _shape(e.operand))
    return (e.op, _shape(e.left), _shape(e.right))


def test_precedence_changes_results():
    # A | B & Z: A | (B & Z) = {A}; (A | B) & Z would be {}.
    assert ev("A | B & Z") == ["A"]
    assert ev("(A | B) & Z") == []
    assert ev("All - A - B") == ["Z"]
    assert ev("All - (A - B)") == ["B", "Z"]


@pytest.mark.parametrize("text, position, fragment", [
    ("", 0, "got the end"),
    ("A |", 3, "got the end"),
    ("A B", 2, "expected an operator"),
    ("(A | B", 6, "')' to close the '(' at position 0"),
    ("A | )", 4, "got ')'"),
    ("A + B", 2, "unexpected character '+'"),
    ("__import__('os')", 11, "unexpected character"),
    ("A.tensors", 1, "unexpected character '.'"),
    ("~", 1, "got the end"),
])
def test_syntax_errors_name_the_position(text, position, fragment):
    with pytest.raises(SetExprSyntaxError) as info:
        parse_set_expr(text)
    assert info.value.position == position
    assert fragment in str(info.value)
    assert isinstance(info.value, MapsearchError)
    assert "\n" not in str(info.value)


def test_unknown_tensor_names_it_and_its_position():
    text = "input | Q - B"
    with pytest.raises(UnknownTensor) as info:
        evaluate(parse_set_expr(text), MATMUL, text)
    assert info.value.name == "Q"
    assert info.value.position == 8
    assert "unknown tensor 'Q'" in str(info.value) and "A, B, Z" in str(info.value)


def test_unknown_names_only_fail_on_evaluation():
    e = parse_set_expr("W | output")
    assert names_in(e) == (Name("W", 0),)
    assert sorted(evaluate(e, {"I": False, "W": False, "O": True})) == ["O", "W"]
    with pytest.raises(UnknownTensor):
        evaluate(e, MATMUL)


def test_union_terms():
    assert union_terms(parse_set_expr("input | A | Nothing")) == ("input", "A", "none")
    assert union_terms(parse_set_expr("All")) == ("all",)
    assert union_terms(parse_set_expr("~A")) is None
    assert union_terms(parse_set_expr("A | B & Z")) is None


# A property: a random expression, printed fully parenthesised, parses back to
# the same meaning as Python's own set operations on the same tree.
NAMES = ["A", "B", "Z", "input", "output", "All", "Nothing"]


def _exprs():
    leaves = st.sampled_from(NAMES)
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.tuples(st.just("~"), inner),
            st.tuples(st.sampled_from(["|", "&", "-"]), inner, inner),
        ),
        max_leaves=12,
    )


def _text(e) -> str:
    if isinstance(e, str):
        return e
    if e[0] == "~":
        return f"~({_text(e[1])})"
    return f"({_text(e[1])}) {e[0]} ({_text(e[2])})"


def _meaning(e) -> frozenset[str]:
    everything = frozenset(MATMUL)
    if isinstance(e, str):
        return {"input": frozenset("AB"), "output": frozenset("Z"), "All": everything,
                "Nothing": frozenset()}.get(e, frozenset([e]))
    if e[0] == "~":
        return everything - _meaning(e[1])
    a, b = _meaning(e[1]), _meaning(e[2])
    return {"|": a | b, "&": a & b, "-": a - b}[e[0]]


@settings(max_examples=200, deadline=None)
@given(_exprs())
def test_random_expressions_match_python_sets(e):
    text = _text(e)
    assert evaluate(parse_set_expr(text), MATMUL, text) == _meaning(e)
