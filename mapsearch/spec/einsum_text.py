"""A small grammar for einsum text; never ``eval``.

    einsum  := access ('+=' | '=') access ('*' access)*
    access  := NAME '[' [index (',' index)*] ']'
    index   := term ('+' term)*
    term    := NAME | INT '*' NAME | NAME '*' INT

``=`` means the same as ``+=``: as in Einstein notation, the dimensions the
output lacks are summed over (every point of the iteration space is one
multiply-accumulate into the output; the output starts at zero either way).
There is no plain assignment that would keep only the last product.

>>> parse_einsum("O[p] += I[p*2+r] * W[r]").inputs[0].indices[0].terms
(('p', 2), ('r', 1))
"""

from __future__ import annotations

import re

from mapsearch.errors import short_repr
from mapsearch.spec.einsum import AffineIndex, Einsum, TensorAccess

_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<int>\d+)|(?P<op>\+=|[\[\],*+=]))")


class EinsumSyntaxError(ValueError):
    """Raised with the position and what was expected; loaders wrap it in SpecError."""


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise EinsumSyntaxError(f"unexpected character {text[pos:].strip()[:1]!r} at column {pos + 1}")
        kind = m.lastgroup
        out.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, kind: str, value: str | None = None) -> str:
        tok = self.peek()
        if tok is None or tok[0] != kind or (value is not None and tok[1] != value):
            want = value or kind
            got = "end of text" if tok is None else short_repr(tok[1], 40)
            raise EinsumSyntaxError(f"expected {want!r}, got {got}")
        self.i += 1
        return tok[1]

    def accept(self, kind: str, value: str) -> bool:
        tok = self.peek()
        if tok is not None and tok[0] == kind and tok[1] == value:
            self.i += 1
            return True
        return False

    def term(self) -> tuple[str, int]:
        tok = self.peek()
        if tok is not None and tok[0] == "int":
            coeff = int(self.take("int"))
            self.take("op", "*")
            return self.take("name"), coeff
        name = self.take("name")
        if self.accept("op", "*"):
            return name, int(self.take("int"))
        return name, 1

    def index(self) -> AffineIndex:
        terms = [self.term()]
        while self.accept("op", "+"):
            terms.append(self.term())
        merged: dict[str, int] = {}
        for d, c in terms:
            if c <= 0:
                raise EinsumSyntaxError(f"coefficient of {d!r} must be a positive integer")
            merged[d] = merged.get(d, 0) + c
        return AffineIndex(tuple(merged.items()))

    def access(self) -> TensorAccess:
        name = self.take("name")
        self.take("op", "[")
        indices = []
        if not self.accept("op", "]"):
            indices.append(self.index())
            while self.accept("op", ","):
                indices.append(self.index())
            self.take("op", "]")
        return TensorAccess(name, tuple(indices))


def parse_einsum(text: str) -> Einsum:
    """Parse ``Z[m,n] += A[m,k] * B[k,n]``; raises :class:`EinsumSyntaxError`."""
    p = _Parser(text)
    out = p.access()
    if not (p.accept("op", "+=") or p.accept("op", "=")):
        raise EinsumSyntaxError("expected '+=' (or '=', the same sum) after the output")
    inputs = [p.access()]
    while p.accept("op", "*"):
        inputs.append(p.access())
    if p.peek() is not None:
        raise EinsumSyntaxError(f"unexpected {short_repr(p.peek()[1], 40)} after the last operand")
    names = [out.name] + [t.name for t in inputs]
    if len(set(names)) != len(names):
        raise EinsumSyntaxError("a tensor appears twice; each operand needs its own name")
    for ix in out.indices:
        if not ix.is_plain:
            raise EinsumSyntaxError(f"output index {ix.text()!r} must be a single dimension")
    out_dims = out.dims_in_order()
    if len(set(out_dims)) != len(out_dims):
        raise EinsumSyntaxError("the output repeats a dimension")
    return Einsum(out, tuple(inputs))
