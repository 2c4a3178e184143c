"""Set expressions over a workload's tensors, parsed by a small grammar (never ``eval``).

They say which tensors a component of a tree architecture keeps or bypasses,
and which tensors a spatial fanout may (or must) reuse::

    input | output          # every tensor
    ~B                      # every tensor but B
    (A | B) - output        # A and B unless one is the output
    All & ~Nothing          # every tensor

Grammar (precedence as in Python: ``~`` binds tightest, then ``-``, then
``&``, then ``|``; binary operators are left-associative)::

    union  := inter ('|' inter)*
    inter  := diff ('&' diff)*
    diff   := unary ('-' unary)*
    unary  := '~' unary | atom
    atom   := NAME | '(' union ')'
    NAME   := [A-Za-z_][A-Za-z0-9_]*

Reserved words: ``input`` (every input tensor), ``output`` (the output
tensor), ``All`` / ``all`` (every tensor), ``Nothing`` / ``none`` (no tensor).
Any other name is a tensor name; evaluating an expression against a workload
whose tensors do not include it raises :class:`UnknownTensor` with the name
and its position (0-based character offset) in the text.

>>> e = parse_set_expr("~(A | output)")
>>> sorted(evaluate(e, {"A": False, "B": False, "Z": True}))
['B']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Union

from mapsearch.errors import MapsearchError

__all__ = [
    "SetExpr",
    "Name",
    "Role",
    "Complement",
    "Binary",
    "SetExprError",
    "SetExprSyntaxError",
    "UnknownTensor",
    "parse_set_expr",
    "evaluate",
    "union_terms",
    "names_in",
]

ROLES = {"input": "input", "output": "output", "All": "all", "all": "all", "Nothing": "none", "none": "none"}


class SetExprError(MapsearchError):
    """A set expression that cannot be parsed or evaluated; ``position`` is the offset in ``text``."""

    def __init__(self, message: str, text: str, position: int):
        self.text = text
        self.position = position
        self.reason = message
        super().__init__(f"{message} at position {position} of {text!r}")


class SetExprSyntaxError(SetExprError):
    """The text does not follow the grammar."""


class UnknownTensor(SetExprError):
    """A name that is neither a reserved word nor a tensor of the workload."""

    def __init__(self, name: str, text: str, position: int, known: tuple[str, ...] = ()):
        self.name = name
        self.known = known
        hint = f"; the workload's tensors are {', '.join(known)}" if known else ""
        super().__init__(f"unknown tensor {name!r}{hint}", text, position)


# --------------------------------------------------------------------------
# The AST: frozen dataclasses; ``position`` is where the node starts.
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Name:
    """A tensor name."""

    name: str
    position: int = 0


@dataclass(frozen=True)
class Role:
    """``input``, ``output``, ``all`` or ``none`` (``All``/``Nothing`` are spelled the same internally)."""

    role: str
    position: int = 0


@dataclass(frozen=True)
class Complement:
    """``~operand``: every tensor not in the operand."""

    operand: "SetExpr"
    position: int = 0


@dataclass(frozen=True)
class Binary:
    """``left op right`` with ``op`` one of ``|``, ``&``, ``-``."""

    op: str
    left: "SetExpr"
    right: "SetExpr"
    position: int = 0


SetExpr = Union[Name, Role, Complement, Binary]

# --------------------------------------------------------------------------
# Parsing: a tokenizer and a recursive-descent parser.
# --------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[|&\-~()]))")


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """``(kind, value, position)``; kind ``name``, ``op`` or ``end``."""
    out: list[tuple[str, str, int]] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            out.append(("end", "", pos))
            return out
        m = _TOKEN.match(text, pos)
        if m is None:
            raise SetExprSyntaxError(f"unexpected character {text[pos]!r}", text, pos)
        kind = "name" if m.group("name") is not None else "op"
        out.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i]

    def take(self) -> tuple[str, str, int]:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def fail(self, expected: str) -> SetExprSyntaxError:
        kind, value, pos = self.peek()
        got = "the end" if kind == "end" else repr(value)
        return SetExprSyntaxError(f"expected {expected}, got {got}", self.text, pos)

    def binary(self, op: str, operand) -> SetExpr:
        left = operand()
        while self.peek()[:2] == ("op", op):
            pos = self.take()[2]
            left = Binary(op, left, operand(), pos)
        return left

    def union(self) -> SetExpr:
        return self.binary("|", self.inter)

    def inter(self) -> SetExpr:
        return self.binary("&", self.diff)

    def diff(self) -> SetExpr:
        return self.binary("-", self.unary)

    def unary(self) -> SetExpr:
        kind, value, pos = self.peek()
        if (kind, value) == ("op", "~"):
            self.take()
            return Complement(self.unary(), pos)
        return self.atom()

    def atom(self) -> SetExpr:
        kind, value, pos = self.peek()
        if kind == "name":
            self.take()
            return Role(ROLES[value], pos) if value in ROLES else Name(value, pos)
        if (kind, value) == ("op", "("):
            self.take()
            inner = self.union()
            if self.peek()[:2] != ("op", ")"):
                raise self.fail(f"')' to close the '(' at position {pos}")
            self.take()
            return inner
        raise self.fail("a tensor name, a role (input, output, All, Nothing), '~' or '('")


def parse_set_expr(text: str) -> SetExpr:
    """The AST of ``text``; :class:`SetExprSyntaxError` (with the position) when it does not parse."""
    if not isinstance(text, str):
        raise SetExprSyntaxError(f"expected text, got {type(text).__name__}", str(text), 0)
    p = _Parser(text)
    expr = p.union()
    if p.peek()[0] != "end":
        raise p.fail("an operator (|, &, -) or the end")
    return expr


# --------------------------------------------------------------------------
# Evaluation and inspection.
# --------------------------------------------------------------------------


def evaluate(expr: SetExpr, tensors: Mapping[str, bool], text: str = "") -> frozenset[str]:
    """The tensor names ``expr`` denotes; ``tensors`` maps each name to whether it is the output.

    ``text`` (the source of ``expr``) only goes into the :class:`UnknownTensor`
    message.
    """
    everything = frozenset(tensors)

    def ev(e: SetExpr) -> frozenset[str]:
        if isinstance(e, Name):
            if e.name not in tensors:
                raise UnknownTensor(e.name, text, e.position, tuple(tensors))
            return frozenset((e.name,))
        if isinstance(e, Role):
            if e.role == "all":
                return everything
            if e.role == "none":
                return frozenset()
            want_output = e.role == "output"
            return frozenset(t for t, is_out in tensors.items() if is_out == want_output)
        if isinstance(e, Complement):
            return everything - ev(e.operand)
        if isinstance(e, Binary):
            a, b = ev(e.left), ev(e.right)
            if e.op == "|":
                return a | b
            if e.op == "&":
                return a & b
            return a - b
        raise TypeError(f"not a set expression: {e!r}")

    return ev(expr)


def union_terms(expr: SetExpr) -> tuple[str, ...] | None:
    """The names and roles of an expression that is a plain union of them, else None.

    ``input | A`` -> ``('input', 'A')``: the form :class:`~mapsearch.spec.architecture.MeshAxis`
    takes for ``may_reuse`` without knowing the workload.
    """
    if isinstance(expr, Name):
        return (expr.name,)
    if isinstance(expr, Role):
        return (expr.role,)
    if isinstance(expr, Binary) and expr.op == "|":
        left, right = union_terms(expr.left), union_terms(expr.right)
        if left is not None and right is not None:
            return left + right
    return None


def evaluate_dims(expr: SetExpr, dims: tuple[str, ...], text: str = "") -> frozenset[str]:
    """The dimensions ``expr`` denotes among ``dims`` (names, ``All``, ``Nothing``, ``~ | & -``): what a fanout's
    loop bounds name. A tensor role (``input``, ``output``) or a name not in ``dims`` is a :class:`SetExprError`
    at its position."""
    role = next((r for r in roles_in(expr) if r.role in ("input", "output")), None)
    if role is not None:
        raise SetExprError(f"expected dimension names, All or Nothing, got the tensor role {role.role!r}", text,
                           role.position)
    try:
        return evaluate(expr, {d: False for d in dims}, text)
    except UnknownTensor as e:
        raise SetExprError(f"unknown dimension {e.name!r}; the workload's dimensions are {', '.join(dims)}", text,
                           e.position) from None


def _leaves(expr: SetExpr, kind: type) -> tuple:
    """Every leaf of type ``kind`` (:class:`Name` or :class:`Role`), in text order."""
    if isinstance(expr, kind):
        return (expr,)
    if isinstance(expr, Complement):
        return _leaves(expr.operand, kind)
    if isinstance(expr, Binary):
        return _leaves(expr.left, kind) + _leaves(expr.right, kind)
    return ()


def roles_in(expr: SetExpr) -> tuple[Role, ...]:
    """Every role leaf, in text order."""
    return _leaves(expr, Role)


def names_in(expr: SetExpr) -> tuple[Name, ...]:
    """Every tensor-name leaf, in text order."""
    return _leaves(expr, Name)
