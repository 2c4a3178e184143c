"""How big a number the tool takes: size guards applied where the specs are read.

A number beyond these is refused with one line naming the file, the field
and the limit, before anything is built from it:

- ``MAX_EXTENT``: the tile-chain enumeration (model/chains.py) walks arrays as
  long as the extent; 2^24 takes about a second and under 1 GB, 10^8 takes
  15 s and 3.4 GB, 10^9 would not fit in memory.
- ``MAX_INSTANCES``: instances of one mesh axis or one level (a chip has at
  most thousands of PEs per axis; the figures multiply by this number).
- ``MAX_CAPACITY``: words of a buffer (2^50 words: a petaword).
- ``MODEL_LIMIT``: OR-Tools holds integers up to 2^62 (its domains overflow
  past that). An exact number (a link cost, clocks per call) whose numerator
  or denominator passes it cannot be held at all; together, the numbers
  must still fit: the model scales every time by the least common multiple
  of the denominators, and :func:`einsum_figures` estimates the largest
  number the model of an einsum holds (:func:`figures_error`: summed over a
  chain's einsums, it must stay below 2^62 with a margin).
- ``MAX_DEPTH``: nesting of a YAML or JSON document (the specs nest a few
  levels; a deeper one is refused before Python's recursion limit).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Iterable

from mapsearch.errors import short_repr

__all__ = ["MAX_EXTENT", "MAX_INSTANCES", "MAX_CAPACITY", "MODEL_LIMIT", "MAX_DEPTH", "describe",
           "extent_error", "instances_error", "capacity_error", "exact_error", "depth_error", "surrogate_at",
           "figures_error", "einsum_figures", "FIGURES_MARGIN"]

MAX_EXTENT = 2**24
MAX_INSTANCES = 2**20
MAX_CAPACITY = 2**50
MODEL_LIMIT = 2**62
MAX_DEPTH = 100
# einsum_figures is an estimate checked against the models built (tests/spec/test_size_guard.py: one-einsum
# models, random and presets, at most 0.66 of it; fused chains reach it where the compute time binds, which it
# counts exactly); the guard keeps this factor more in reserve.
FIGURES_MARGIN = 4


def describe(value: object, limit: int = 60) -> str:
    """``repr`` on one line, cut to ``limit`` characters; a huge int by its size (its repr may not even exist)."""
    return short_repr(value, limit)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def extent_error(value: object) -> str | None:
    """None for an extent the solver takes, else what is wrong, as ``expected ..., got ...``."""
    if _is_int(value) and value > MAX_EXTENT:  # type: ignore[operator]
        return f"expected an extent <= {MAX_EXTENT:,} (the largest the tile enumeration supports), got {describe(value)}"
    return None


def instances_error(value: object, axis: str | None = None) -> str | None:
    """None for a mesh axis size or instance count the solver takes, else what is wrong."""
    if _is_int(value) and value > MAX_INSTANCES:  # type: ignore[operator]
        what = f"mesh {axis} of {value:,} instances" if axis else f"{value:,} instances"
        return f"{what}: at most {MAX_INSTANCES:,} supported"
    return None


def capacity_error(value: object) -> str | None:
    if _is_int(value) and value > MAX_CAPACITY:  # type: ignore[operator]
        return f"expected a capacity <= {MAX_CAPACITY:,} words (2^50), got {describe(value)}"
    return None


def exact_error(value: Fraction) -> str | None:
    """None for an exact number whose numerator and denominator stay within ``MODEL_LIMIT``."""
    if abs(value.numerator) > MODEL_LIMIT or value.denominator > MODEL_LIMIT:
        return (f"expected a number whose numerator and denominator are at most 2^62 (the solver's integers), "
                f"got {describe(value.numerator)}/{describe(value.denominator)}")
    return None


def depth_error(data: Any) -> str | None:
    """None when ``data`` (parsed YAML or JSON) nests at most ``MAX_DEPTH`` levels; walks without recursion."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    seen: set[int] = set()  # YAML aliases share nodes: visit each container once
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, (dict, list, tuple)) or id(node) in seen:
            continue
        if depth >= MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels; the specs nest a few"
        seen.add(id(node))
        children: Iterable[Any] = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children)
    return None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")  # UTF-8 encodes every code point but the surrogates U+D800..U+DFFF
    except UnicodeEncodeError:
        return True
    return False


def surrogate_at(data: Any) -> tuple[tuple[Any, ...], str, bool] | None:
    """The first text of ``data`` (parsed YAML or JSON, keys included) holding a surrogate code point, else None.

    ``(path, text, is_key)``: ``path`` leads to the value (or to the key
    itself). A JSON ``"\\ud800"`` or a YAML ``"\\ud800"`` escape gives such
    a string; it cannot be written as UTF-8, so every later print of it (a
    report, an error line, a file) would fail. Walks in document order
    without recursion; call after :func:`depth_error`.
    """
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if _has_surrogate(node):
                return path, node, False
            continue
        if not isinstance(node, (dict, list, tuple)) or id(node) in seen:
            continue
        seen.add(id(node))
        items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        for key, _ in items:
            if isinstance(node, dict) and isinstance(key, str) and _has_surrogate(key):
                return path + (key,), key, True
        stack.extend((child, path + (key,)) for key, child in reversed(items))
    return None


def einsum_figures(extents: Iterable[tuple[str, int]], block: dict[str, int], spans: Iterable[int], links: int,
                   clocks_per_call: Fraction, link_costs: Iterable[Fraction]) -> tuple[int, int]:
    """``(largest, scale)``: the largest number the model of one einsum holds, estimated, and its clock unit.

    The model's numbers (model/build.py) are the time, scaled by the lcm
    of the costs' denominators, and the words; the largest is one of:

    - the compute time, at most ``calls x clocks_per_call x scale`` with
      ``calls = prod_d ceil(E_d / b_d)`` (one instance making every call);
    - a link's time, at most its words (every tensor, down and up) x the
      costliest rate x scale. A tensor's words down (or up) on one link,
      summed over the link's copies, are at most ``links x span_X x
      padded MACs``: each tile visit moves at most the region it holds,
      whose words are at most ``span_X`` per MAC of the visit (``span_X``:
      per axis of ``X`` the sum of its index coefficients, which bounds the
      holes a stride or dilation leaves, times ``E_d^(k-1)`` for a
      dimension in ``k`` axes), and the model's bound on a link's words
      adds one such term per level that can hold the tensor below it;
    - the words total, at most ``links`` links of those words.

    Not a proof that the model holds nothing larger: the estimate is
    checked against the models built for random and preset problems, and
    :func:`figures_error` keeps :data:`FIGURES_MARGIN` in reserve. A chain's
    models (each einsum alone, or fused: stage figures added up) hold at
    most the sum over its einsums.
    """
    extents = list(extents)
    costs = [Fraction(clocks_per_call)] + [Fraction(x) for x in link_costs]
    scale = math.lcm(*[x.denominator for x in costs])
    calls = math.prod(-(-e // block.get(d, 1)) for d, e in extents)
    padded = math.prod(-(-e // block.get(d, 1)) * block.get(d, 1) for d, e in extents)
    link_words = 2 * max(1, links) * sum(spans) * padded
    costliest = max(costs[1:], default=Fraction(0))
    largest = max(calls * math.ceil(costs[0] * scale), link_words * math.ceil(costliest * scale), links * link_words)
    return largest, scale


def figures_error(largest: int, scale: int, macs: int) -> str | None:
    """None when ``largest`` (:func:`einsum_figures`, summed over a chain's einsums) leaves
    :data:`FIGURES_MARGIN` in reserve below the solver's integers, else why not."""
    if largest * FIGURES_MARGIN > MODEL_LIMIT:
        return (f"its figures could reach about 2^{largest.bit_length() - 1} (MACs {macs:,}, clock unit 1/{scale:,}), "
                f"more than the solver holds exactly (2^62, with a factor {FIGURES_MARGIN} in reserve)")
    return None
