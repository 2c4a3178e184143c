r"""A time floor for links into instances that share nothing: each instance reads its own operands.

Take the link into a meshed level ``a`` whose mesh axes may reuse no tensor
(``simba-like``'s chiplets, ``tpu-v4i-like``'s four cores): no input word
crossing it is multicast and no partial sum is reduced on the way up, so
its words are the sum over the level's instances ``c`` of the words into
and out of ``c``'s subtree. Let ``W_c`` be the MACs computed under ``c``
(``sum_c W_c = MACs``) and ``U_c`` the distinct elements of the three
tensors they use. With every home above ``a``:

1. ``words_c >= U_c``: every input element used under ``c`` enters ``c``'s
   subtree at least once over this link (the subtree starts empty), and
   every output element with a partial sum made under ``c`` leaves it at
   least once (the home is above, and no sibling adds it on the way).
2. ``W_c <= sqrt(K) (U_c / 3)^{3/2}``, i.e. ``K U_c^3 >= 27 W_c^2``: the
   Loomis-Whitney step of model/lower_bound.py (proof (2) and (3) there,
   with ``K = segment_reuse``), applied to all of ``c``'s MACs at once
   instead of one segment: they use ``|X| + |Y| + |Z| = U_c`` elements.
3. ``W_c <= cap(T)``: ``c`` has ``u`` compute instances under it, each
   making at most ``floor(T / clocks_per_call)`` calls of at most
   ``block_macs`` MACs in a schedule of time ``T``.

``f(W) = 3 (W^2 / K)^{1/3}`` is concave with ``f(0) = 0``, so ``sum_c
f(W_c)`` over ``{0 <= W_c <= cap, sum_c W_c = MACs}`` is least at a vertex
of that polytope: ``q = floor(MACs / cap)`` instances at ``cap`` and one at
the rest ``r`` (none fitting the instances: no schedule of time ``T``).
Hence the link's words are at least ``F(T) = q f(cap) + f(r)`` (rounded
down, with a margin for the floating point), and at least its compulsory
words. ``F`` does not grow with ``T``, while the link's time from its words
(model/bounds.link_time_floor, the busiest of its copies at least the
average) must stay within ``T``: the least ``T`` with
``link_time(F(T)) <= T`` is a floor on the time of every schedule of the
contract. Found by bisection, as the condition is monotone in ``T``.

Where it binds: a problem whose instances would each have to read much of
the operands (``simba-like``'s 36 chiplets on one package link), which the
per-link floors of model/bounds.py (each element once over the link, the
sum over all instances as one cache) do not see.
"""

from __future__ import annotations

import math

from mapsearch.model.lower_bound import segment_reuse
from mapsearch.model.problem import Problem

__all__ = ["fanout_time_floor", "elements_floor"]


def elements_floor(macs: int, reuse: int) -> float:
    """``3 (macs^2 / reuse)^{1/3}``: at most the distinct elements ``macs`` MACs use (a real number)."""
    return 3.0 * (macs * macs / reuse) ** (1.0 / 3.0)


def _shares_nothing(p: Problem, a: int) -> bool:
    level = p.architecture.levels[a]
    w = p.workload
    return bool(level.mesh) and level.instances > 1 and not any(
        axis.reuses(t, w.is_output(t)) for axis in level.mesh for t in w.tensor_names)


def _split_words(macs: int, cap: int, units: int, reuse: int) -> int | None:
    """A floor on ``sum_c U_c`` over ``units`` instances of at most ``cap`` MACs each (None: they cannot do it).

    The real minimum ``q f(cap) + f(r)`` is over a set that grows with
    ``cap``, so it never grows with ``cap``; rounded down with a margin for
    the floating point, it stays a floor and keeps that order (the bisection
    of :func:`fanout_time_floor` needs it)."""
    if cap <= 0:
        return None
    q, r = divmod(macs, cap)
    if q + (r > 0) > units:
        return None
    value = q * elements_floor(cap, reuse) + elements_floor(r, reuse)
    return max(0, math.floor(value * (1 - 1e-9)) - 1)


def fanout_time_floor(p: Problem, scale: int, link_time) -> int:
    """The floor above over every link into a level of instances that share nothing, in clocks x ``scale``.

    ``link_time(a, words)``: the least time of link ``a`` carrying ``words``
    (with its compulsory down and up words), clocks x ``scale``. 0 where no
    link qualifies.
    """
    w = p.workload
    arch = p.architecture
    reuse = segment_reuse(w)
    call = int(arch.compute.clocks_per_call * scale)
    if p.fusion_level is not None or reuse is None or call <= 0:
        return 0
    best = 0
    levels = arch.levels
    for a in range(1, p.depth + 1):
        if not _shares_nothing(p, a) or any(p.home(t) >= a for t in w.tensor_names):
            continue
        units = math.prod(lv.instances for lv in levels[:a + 1])
        per_call = math.prod(lv.instances for lv in levels[a + 1:]) * arch.compute.block_macs

        def needed(t: int) -> int | None:
            words = _split_words(w.macs, (t // call) * per_call, units, reuse)
            return None if words is None else link_time(a, words)

        # From this T on one instance can make every MAC and F(T) = f(MACs): the condition holds at the larger
        # of T and that link time. At 0 no call fits: it fails. Bisect between, keeping both so.
        hi = call * -(-w.macs // per_call)
        hi = max(hi, needed(hi))
        lo = 0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            n = needed(mid)
            if n is not None and n <= mid:
                hi = mid
            else:
                lo = mid
        best = max(best, hi)
    return best
