r"""Redundant lower bounds on link words and time, valid for every schedule of the contract.

The bounds are computed from the einsum and the capacities only, never from
the encoding's closed forms, so they hold for every schedule the contract
allows (any tile extents, orders, keep/bypass, buffer placement, split
windows, uneven spatial parts). Proofs: docs/solver.md, "Lower bounds".

Per tensor ``X`` and link into level ``a`` (``home(X) < a <= L0``):

    down[X, a] >= touched(X)      (X an input)
    up[X, a]   >= |X|             (X the output)

``touched(X)`` counts the elements some MAC reads (a stride larger than the
dilation leaves holes that no schedule has to load).

Per link ``a``, for einsums that are matmul-like once some window
dimensions are fixed (:func:`segment_reuse` gives ``K``: 1 for matmuls,
``R S`` for convolutions), when every tensor's home is above ``a`` and the
levels ``a..L0`` are all bounded (:func:`copy_union`):

    sum_X down[X, a] + up[X, a] >= ceil(2 MACs / sqrt(K S_a)) - 2 n_a S_a,
    n_a = the link's copies (instances above a),
    S_a = sum_{i >= a} capacity_i x (level-i instances under one copy)

Time, per link: the link has ``n_a`` copies (the instances of the levels
above it: 1 above every meshed level), its words are summed over them and
its time is the largest copy's, at least the average (a fanout below only
multicasts or reduces, and each element still crosses once, on some copy):

    shared:    time >= F_a * icpw / n_a
    separate:  time * (icpw + ocpw) * n_a >= F_a * icpw * ocpw,  time >= D_a * icpw / n_a,  time >= U_a * ocpw / n_a

with ``F_a`` the link's floor and ``D_a``/``U_a`` its down/up floors. Into
instances that share nothing, the time is also at least the least ``T`` at
which the link can carry what the instances need to make the MACs within
``T`` (model/fanout_bound.py).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from mapsearch.model.encoding import Encoding, Q
from mapsearch.model.fanout_bound import fanout_time_floor
from mapsearch.model.problem import Problem
from mapsearch.model.lower_bound import segment_floor, segment_reuse, touched_elements
from mapsearch.spec.workload import Workload

_ENUMERATE = 200_000  # iteration points walked to count the touched elements of axes that share a dimension

__all__ = ["LinkFloor", "link_floors", "add_bounds", "words_floor", "time_floor", "contract_floors"]


@dataclass(frozen=True)
class LinkFloor:
    """Floors on the words crossing the link into level ``child`` (summed over its copies)."""

    child: int
    down: int  # sum of the inputs' compulsory words
    up: int  # the output's compulsory words
    io: int  # the Smith et al. bound on down + up (0 where it does not apply)

    @property
    def total(self) -> int:
        return max(self.down + self.up, self.io)


def touched(w: Workload, tensor: str) -> int:
    """Elements of ``tensor`` some MAC reads or writes, or a lower bound on them.

    Axes that share no dimension vary independently: the product of their
    value counts (``touched_elements``). Axes that share one (``A[m, m]``,
    ``I[p + r, p]``): the exact count where the iteration points are few,
    else the most values any one axis takes (a projection of the set).
    """
    access = w.tensor(tensor)
    dims = access.dims_in_order()
    if len(dims) == len(set(dims)):
        return touched_elements(w, tensor)
    ext = w.extent
    names = sorted(set(dims))
    if math.prod(ext[d] for d in names) <= _ENUMERATE:
        return len({tuple(sum(c * point[names.index(d)] for d, c in ix.terms) for ix in access.indices)
                    for point in itertools.product(*(range(ext[d]) for d in names))})
    return max(len({sum(c * v for (d, c), v in zip(ix.terms, vals))
                    for vals in itertools.product(*(range(ext[d]) for d, _ in ix.terms))})
               if math.prod(ext[d] for d, _ in ix.terms) <= _ENUMERATE else max(ext[d] for d, _ in ix.terms)
               for ix in access.indices)


def tensor_floors(p: Problem) -> dict[tuple[str, int], tuple[int, int]]:
    """``(down, up)`` floors per (tensor, link): compulsory words, see the module docstring."""
    w = p.workload
    out: dict[tuple[str, int], tuple[int, int]] = {}
    if p.fusion_level is not None:
        return out  # fused stages share buffers across einsums: no floors claimed
    for t in w.tensor_names:
        n = touched(w, t)
        for a in range(p.home(t) + 1, p.depth + 1):
            out[(t, a)] = (0, n) if w.is_output(t) else (n, 0)
    return out


def copy_union(p: Problem, a: int) -> tuple[int, int] | None:
    """``(n_a, S_a)``: link ``a``'s copies and the words one copy's subtree holds (levels ``a..L0``, every
    instance under one parent instance), or None when a level there is unbounded."""
    levels = p.architecture.levels
    if any(lv.capacity is None for lv in levels[a:]):
        return None
    copies = math.prod(lv.instances for lv in levels[:a])
    held, per_copy = 0, 1
    for lv in levels[a:]:
        per_copy *= lv.instances
        held += lv.capacity * per_copy
    return copies, held


def link_floors(p: Problem) -> dict[int, LinkFloor]:
    """The floor of every link (child level ``1..L0``)."""
    w = p.workload
    per_tensor = tensor_floors(p)
    out: dict[int, LinkFloor] = {}
    if p.fusion_level is not None:
        return out
    reuse = segment_reuse(w)  # K: matmul-like once the window dims are fixed (None: no segment floor)
    for a in range(1, p.depth + 1):
        down = sum(per_tensor.get((t, a), (0, 0))[0] for t in w.tensor_names)
        up = sum(per_tensor.get((t, a), (0, 0))[1] for t in w.tensor_names)
        io = 0
        union = copy_union(p, a)
        if reuse is not None and union is not None and all(p.home(t) < a for t in w.tensor_names) and union[1] >= 1:
            copies, s = union
            # per copy Q_i >= 2 M_i / sqrt(K S) - 2 S, and the copies' MACs M_i add up to the einsum's
            io = max(0, segment_floor(w.macs, reuse, s, copies))
        out[a] = LinkFloor(a, down, up, io)
    return out


def words_floor(enc: Encoding) -> int:
    """The floor on the total words over all links (0 where none is known)."""
    return enc.cache.get("bounds_words", 0)


def time_floor(enc: Encoding) -> int:
    """The floor on the scaled time from the links (0 where none is known)."""
    return enc.cache.get("bounds_time", 0)


def add_bounds(enc: Encoding) -> None:
    """Post every floor above on the model (call after the time and the words total exist)."""
    p = enc.problem
    _add_tensor_floors(enc)
    floors = link_floors(p)
    _add_link_word_floors(enc, floors)
    _add_time_floors(enc, floors)


def _add_tensor_floors(enc: Encoding) -> None:
    """``down[X, a] >= touched(X)`` (inputs), ``up[X, a] >= |X|`` (output)."""
    for (t, a), (down, up) in tensor_floors(enc.problem).items():
        for q, floor in ((enc.link_tensor_down.get((t, a)), down), (enc.link_tensor_up.get((t, a)), up)):
            if q is not None and floor > 0 and not q.is_const and q.lo < floor:
                enc.model.add(q.expr >= floor)


def _add_link_word_floors(enc: Encoding, floors: dict[int, LinkFloor]) -> None:
    r"""``W_a = sum_X down[X, a] + up[X, a] >= F_a`` as a variable per link; the words total becomes ``sum_a W_a``.

    Summing the per-link variables (whose domains carry the floors) lets the
    search see ``sum_a F_a`` as the objective's bound from the start.
    """
    if not floors or enc.words_total is None:
        return
    names = enc.problem.workload.tensor_names
    parts: list[Q] = []
    total_floor = 0
    for a in sorted(floors):
        q = enc.total([enc.link_tensor_down[(t, a)] for t in names] + [enc.link_tensor_up[(t, a)] for t in names])
        floor = floors[a].total
        total_floor += max(floor, q.lo)
        if q.is_const or floor <= q.lo:
            parts.append(q)
            continue
        v = enc.model.new_int_var(floor, max(floor, q.hi), f"link_words_L{a}")
        enc.model.add(v == q.expr)
        parts.append(Q(v, floor, max(floor, q.hi)))
    enc.words_total = enc.total(parts)
    enc.cache["bounds_words"] = total_floor


def link_time_floor(p: Problem, floors: dict[int, LinkFloor], scale: int) -> int:
    """Each link's least time given its floors and copies (shared and separate lines), in clocks x ``scale``."""
    levels = p.architecture.levels
    best = 0
    for a, f in floors.items():
        link = levels[a].link
        i = int(link.input_clocks_per_word * scale)
        o = int(link.output_clocks_per_word * scale)
        n = math.prod(lv.instances for lv in levels[:a])  # copies of the link: the busiest carries the average
        if link.lines == "shared":
            best = max(best, -(-f.total * i // n))
        else:
            best = max(best, -(-f.down * i // n), -(-f.up * o // n))
            if i + o > 0:
                best = max(best, -(-f.total * i * o // ((i + o) * n)))
    return best


def compute_time_floor(p: Problem, scale: int, instances: int | None = None) -> int:
    """``ceil(prod_d ceil(E_d / b_d) / instances) * clocks_per_call``, in clocks x ``scale``.

    Any tiling splits a dimension's extent into pieces whose op calls
    ``sum ceil(piece / b)`` are at least ``ceil(E / b)``; the calls of the
    whole nest are the product over dimensions, spread over at most every
    instance, and the busiest instance takes at least the average.
    ``instances``: at most this many take part (default: every instance).
    """
    arch = p.architecture
    calls = math.prod(-(-e // arch.compute.block_extent(d)) for d, e in p.workload.extents)
    if instances is None:
        instances = math.prod(lv.instances for lv in arch.levels)
    return -(-calls // instances) * int(arch.compute.clocks_per_call * scale)


def contract_floors(p: Problem, scale: int) -> tuple[int, int]:
    """``(time x scale, words)`` floors that hold for every schedule of the contract for ``p``.

    Computed from the problem alone (never from an encoding's chains), so
    they also bound the schedules a restricted family leaves out: a
    restricted search whose optimum meets them has lost nothing.
    """
    floors = link_floors(p)
    time_floor_ = max(link_time_floor(p, floors, scale), compute_time_floor(p, scale),
                      fanout_time_floor(p, scale, _link_time(p, floors, scale)))
    return time_floor_, sum(f.total for f in floors.values())


def _link_time(p: Problem, floors: dict[int, LinkFloor], scale: int):
    """``(a, words) ->`` link ``a``'s least time carrying at least ``words`` and its floors (for model/fanout_bound.py)."""
    def time(a: int, words: int) -> int:
        f = floors[a]
        return link_time_floor(p, {a: LinkFloor(a, f.down, f.up, max(f.io, words))}, scale)
    return time


def _add_time_floors(enc: Encoding, floors: dict[int, LinkFloor]) -> None:
    """``time >= `` each link's least time given its floors and copies (:func:`link_time_floor`) and the
    compute time of the fewest calls spread over every instance (:func:`compute_time_floor`)."""
    if enc.time is None:
        return
    best = link_time_floor(enc.problem, floors, enc.scale)
    if enc.problem.fusion_level is None:  # a fused stage's time is not its own: no floor claimed (as for words)
        best = max(best, compute_time_floor(enc.problem, enc.scale),
                   fanout_time_floor(enc.problem, enc.scale, _link_time(enc.problem, floors, enc.scale)))
    if best > enc.time.lo:
        enc.model.add(enc.time.expr >= best)
    enc.cache["bounds_time"] = best
