"""The peers' Python expressions, evaluated by walking a whitelisted ``ast`` (never ``eval``).

AccelForge writes sizes, throughputs, set expressions and conditions as
Python expressions (``1024*1024*128*8``, ``~MainMemory.tensors``,
``weight.bits_per_value if weight else 0``, ``len(All) == 3``,
``max(a.n_calls / a.throughput for a in actions)``). This module parses them
with :func:`ast.parse` and evaluates only these nodes: constants, names from
the given namespace, arithmetic, comparisons, ``and``/``or``/``not``,
conditional expressions, set operators (``| & - ^ ~``), tuples and lists,
one-generator comprehensions, calls of the functions in :data:`FUNCTIONS`,
attributes that an object lists in its ``EXPR_ATTRIBUTES``, and indexing a
mapping, list or tuple by a key (``spec.problem.instance['C']``; no slices).
Anything else (imports, lambdas, dunder attributes, unknown functions) is an
:class:`ExprError` naming the construct.

Numbers stay exact: a decimal constant such as ``614e9`` is the
:class:`~fractions.Fraction` it prints as; ``inf`` is ``math.inf``.
"""

from __future__ import annotations

import ast
import math
import operator
from fractions import Fraction
from typing import Any, Callable, Mapping

__all__ = ["ExprError", "evaluate_expr", "FUNCTIONS"]


class ExprError(ValueError):
    """An expression that does not parse, uses a construct outside the whitelist, or fails to evaluate."""


def _exact_div(a: Any, b: Any) -> Any:
    if isinstance(a, (int, Fraction)) and isinstance(b, (int, Fraction)):
        if b == 0:
            raise ExprError("division by zero")
        return Fraction(a) / Fraction(b)
    if b == 0:
        return math.inf if a > 0 else -math.inf if a < 0 else math.nan
    return a / b


def _sum(*args: Any) -> Any:
    items = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    return sum(items, 0)


def _max(*args: Any) -> Any:
    return max(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else max(args)


def _min(*args: Any) -> Any:
    return min(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else min(args)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len, "min": _min, "max": _max, "sum": _sum, "abs": abs, "round": round, "int": int, "float": float,
    "bool": bool, "ceil": math.ceil, "floor": math.floor, "log2": math.log2, "log": math.log, "sqrt": math.sqrt,
    "prod": math.prod, "pow": pow,
}
_CONSTANTS = {"inf": math.inf, "pi": math.pi, "e": math.e, "True": True, "False": False, "None": None}

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: _exact_div,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.BitXor: operator.xor,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}
_COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}


def evaluate_expr(text: str, names: Mapping[str, Any]) -> Any:
    """The value of the expression ``text`` with ``names`` (and ``inf``, ``pi``, ``e``) in scope."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"not a Python expression ({e.msg})") from None
    return _Walker(names).eval(tree.body)


class _Walker:
    def __init__(self, names: Mapping[str, Any]):
        self.scopes: list[Mapping[str, Any]] = [names]

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in _CONSTANTS:
            return _CONSTANTS[name]
        if name in FUNCTIONS:
            return FUNCTIONS[name]
        raise ExprError(f"unknown name {name!r}")

    def eval(self, node: ast.AST) -> Any:
        method = getattr(self, "do_" + type(node).__name__, None)
        if method is None:
            raise ExprError(f"{type(node).__name__} is not allowed in an expression")
        try:
            return method(node)
        except ExprError:
            raise
        except (TypeError, ValueError, ArithmeticError, KeyError) as e:
            raise ExprError(f"{type(e).__name__}: {e}") from None

    def do_Constant(self, node: ast.Constant) -> Any:
        v = node.value
        if isinstance(v, float) and math.isfinite(v):
            return Fraction(repr(v))
        if isinstance(v, (int, float, str, bool)) or v is None:
            return v
        raise ExprError(f"constant {v!r} is not allowed")

    def do_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id)

    def do_BinOp(self, node: ast.BinOp) -> Any:
        op = _BINARY.get(type(node.op))
        if op is None:
            raise ExprError(f"operator {type(node.op).__name__} is not allowed")
        return op(self.eval(node.left), self.eval(node.right))

    def do_UnaryOp(self, node: ast.UnaryOp) -> Any:
        return _UNARY[type(node.op)](self.eval(node.operand))

    def do_BoolOp(self, node: ast.BoolOp) -> Any:
        value: Any = None
        for v in node.values:
            value = self.eval(v)
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        return value

    def do_Compare(self, node: ast.Compare) -> Any:
        left = self.eval(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def do_IfExp(self, node: ast.IfExp) -> Any:
        return self.eval(node.body) if self.eval(node.test) else self.eval(node.orelse)

    def do_Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self.eval(e) for e in node.elts)

    def do_List(self, node: ast.List) -> Any:
        return [self.eval(e) for e in node.elts]

    def do_Attribute(self, node: ast.Attribute) -> Any:
        obj = self.eval(node.value)
        allowed = getattr(obj, "EXPR_ATTRIBUTES", ())
        if node.attr.startswith("_") or node.attr not in allowed:
            raise ExprError(f"attribute {node.attr!r} of {type(obj).__name__} is not available")
        return getattr(obj, node.attr)

    def do_Subscript(self, node: ast.Subscript) -> Any:
        obj = self.eval(node.value)
        key = self.eval(node.slice)
        if not isinstance(obj, (dict, list, tuple)) or isinstance(key, bool) or not isinstance(key, (str, int)):
            raise ExprError(f"indexing a {type(obj).__name__} by {key!r} is not allowed")
        try:
            return obj[key]
        except (KeyError, IndexError):
            raise ExprError(f"no {key!r} in {type(obj).__name__} of {len(obj)} entries") from None

    def do_Call(self, node: ast.Call) -> Any:
        if not isinstance(node.func, ast.Name) or node.keywords:
            raise ExprError("only calls of plain functions without keywords are allowed")
        fn = self.lookup(node.func.id)
        if fn not in FUNCTIONS.values():
            if callable(fn) and getattr(fn, "EXPR_CALLABLE", False):
                return fn()
            raise ExprError(f"{node.func.id!r} is not a function available here")
        return fn(*[self.eval(a) for a in node.args])

    def comprehension(self, node: ast.GeneratorExp | ast.ListComp) -> list:
        if len(node.generators) != 1:
            raise ExprError("a comprehension may have one 'for' only")
        gen = node.generators[0]
        if not isinstance(gen.target, ast.Name) or gen.is_async:
            raise ExprError("a comprehension's target must be one name")
        out = []
        for item in self.eval(gen.iter):
            self.scopes.append({gen.target.id: item})
            try:
                if all(self.eval(cond) for cond in gen.ifs):
                    out.append(self.eval(node.elt))
            finally:
                self.scopes.pop()
        return out

    do_GeneratorExp = comprehension
    do_ListComp = comprehension
