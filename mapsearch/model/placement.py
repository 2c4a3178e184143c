r"""Buffer placement: where in the whole nest each tensor's buffer at each level sits.

The contract (section "Buffer placement") lets the buffer of tensor ``X`` at
level ``i`` sit at any position of the whole nest (level 1's loops, then
level 2's, ..., then L0's), between the positions of ``X``'s buffers at the
keepers above and below. Which positions can matter (docs/solver.md, "Buffer
placement", proves each step):

1. The buffer's contents depend only on the loops outside it that index
   ``X`` (the ``R`` loops): moving a buffer across a loop that does not
   index ``X`` changes neither its regions nor their sequence. So a
   position is a *cut* of the sequence of ``R`` loops.
2. Loops that never advance (inactive dimensions: whole at every level)
   change nothing either, so only active ``R`` dimensions count.

With ``r = |R_active|`` a cut is ``c in [0, J*r]``: ``c = 0`` holds the whole
tensor; ``c = (j-1)*r + m`` with ``1 <= m <= r`` has every ``R`` loop of
levels ``< j`` outside and, at level ``j``, the first ``m`` ``R`` loops of
the level's order (its *anchor* is ``j``). The buffer's region along ``d``
is then the level-``j`` piece when ``d``'s level-``j`` loop is among those
``m``, else the level-``(j-1)`` piece; so its words are
:func:`~mapsearch.model.traffic.region_words` at level ``j`` with
``outside[d] = (rank_j(d) < m)``, where ``rank_j(d)`` counts the ``R``
loops outer to ``d`` at level ``j``. The default position of level ``i``
is ``c = i*r``.

On a path with meshed levels only the buffers above the outermost one are
placed, at cuts whose loops all lie above it (:func:`searched_levels`;
docs/spatial.md, "Buffer placement above the mesh").

Encoding, per tensor ``X`` and level ``i`` strictly below its home:

    sum_c at[X, i, c] = 1
    not kept[X, i] -> at[X, i, i*r]                        (canonical)
    kept[X, i] and kept[X, i'] and i < i' -> cut[X, i] <= cut[X, i']   (nesting)
    words(X, i) = sum_c at[X, i, c] * words_at_cut(X, c)
    region(X, i) = sum_c at[X, i, c] * prod_d f_d(piece_d(c))          (capacity)
"""

from __future__ import annotations

import numpy as np

from mapsearch.model.cuts import outside_at_cut, placed_dims
from mapsearch.model.encoding import Encoding, Literal, Q
from mapsearch.model.regions import region_of
from mapsearch.model.footprints import footprint_values
from mapsearch.model.tiles import footprint_at, whole_at


def placement_disabled_reason(enc: Encoding) -> str | None:
    """Why this model keeps every buffer at its default position, or None when positions are searched."""
    p = enc.problem
    if enc.cache.get("placement_off"):
        return enc.cache["placement_off"]
    if p.fusion_level is not None:
        return "fused chain stage"
    return None


def searched_levels(enc: Encoding, tensor: str) -> dict[int, int]:
    """Per level whose buffer of ``tensor`` has its position searched: its largest cut.

    Without a mesh every level below the home, every cut. With one, only the
    levels above the outermost meshed level ``s``, at cuts whose loops are
    all above it (``c <= (s-1)*r``), docs/spatial.md "Buffer placement above
    the mesh"; an output's buffers too, whose positions decide when the idle
    instances below are flushed (:func:`flushers`). Empty for a tensor no
    advancing loop indexes.
    """
    p = enc.problem
    J, r = p.depth, len(placed_dims(enc, tensor))
    if r == 0:
        return {}
    first = enc.spatial_levels[0] if enc.spatial_levels else J + 1
    last = J * r if first > J else (first - 1) * r
    return {i: last for i in range(p.home(tensor) + 1, min(first, J + 1)) if enc.kept[(tensor, i)] is not False}


# The restriction's words, read back by solve/unsplit.py when it narrows the restriction.
MESHED_PLACEMENT = "buffer placement: default positions only"
FANOUT = "(spatial fanout)"


def meshed_placement_restriction(enc: Encoding) -> str | None:
    """The family restriction of placement on a meshed path, or None where every position is searched."""
    if not enc.spatial_levels or placement_disabled_reason(enc) is not None:
        return None
    if not any(placed_dims(enc, t) for t in enc.problem.workload.tensor_names):
        return None
    return f"{MESHED_PLACEMENT} at and below the meshed levels {FANOUT}"


def add_placements(enc: Encoding) -> None:
    """The one-hot cut ``at[X, i, c]`` of every buffer, canonical when bypassed, nested across levels."""
    enc.at = {}
    if placement_disabled_reason(enc) is not None:
        return
    p = enc.problem
    for t in p.workload.tensor_names:
        r = len(placed_dims(enc, t))
        cuts: dict[int, object] = {}
        for i, last in searched_levels(enc, t).items():
            kept = enc.kept[(t, i)]
            lits = {c: enc.model.new_bool_var(f"at_{t}_L{i}_c{c}") for c in range(last + 1)}
            enc.model.add_exactly_one(lits.values())
            if kept is not True:
                enc.model.add_implication(~kept, lits[i * r])
            enc.at[(t, i)] = lits
            cut = enc.model.new_int_var(0, last, f"cut_{t}_L{i}")
            enc.model.add(cut == sum(c * lit for c, lit in lits.items()))
            cuts[i] = (cut, kept)
        _add_nesting(enc, cuts)


def _add_nesting(enc: Encoding, cuts: dict[int, tuple]) -> None:
    """The nesting rule, strict where the keep is the solver's choice.

        kept[i] and kept[i'] -> cut[i] <= cut[i']      for i < i'
        kept[i] and kept[i'] -> cut[i] <  cut[i']      when kept[i] is a free decision

    Strictness loses no optimum: two buffers at one cut hold the same region
    at every step, so bypassing the upper one moves the same words over the
    same links at the same moments and frees its capacity (docs/solver.md).
    """
    levels = sorted(cuts)
    for a, i in enumerate(levels):
        for k in levels[a + 1:]:
            (ci, ki), (ck, kk) = cuts[i], cuts[k]
            enforce = [lit for lit in (ki, kk) if lit is not True]
            if ki is True:
                enc.model.add(ci <= ck).only_enforce_if(enforce)
            else:
                enc.model.add(ci + 1 <= ck).only_enforce_if(enforce)


def cut_words(enc: Encoding, tensor: str, c: int) -> Q:
    """Words a buffer of ``tensor`` at cut ``c`` takes in (or stores, for an output) over the run."""
    from mapsearch.model.traffic import region_words

    j, out = outside_at_cut(enc, tensor, c)
    return region_words(enc, tensor, j, outside=out)


def cut_region(enc: Encoding, tensor: str, c: int) -> tuple[Q, Q]:
    """``(largest region words, 1 if the region is the whole tensor else 0)`` of a buffer at cut ``c``."""
    key = ("cut_region", tensor, c)
    if key in enc.cache:
        return enc.cache[key]
    w = enc.problem.workload
    access = w.tensor(tensor)
    j, out = outside_at_cut(enc, tensor, c)

    def extent_at(d: str, f) -> Q:
        return _pick(enc, out.get(d, True), lambda: footprint_at(enc, d, f, j), lambda: _footprint_at(enc, d, f, j - 1),
                     f"region_{tensor}_c{c}_{d}")

    wholes = [_pick(enc, out.get(d, True), lambda d=d: whole_at(enc, d, j), lambda d=d: whole_at(enc, d, j - 1),
                    f"whole_{tensor}_c{c}_{d}") for d in w.dims if d in access.dims]
    enc.cache[key] = (region_of(enc, tensor, extent_at, f"region_{tensor}_c{c}"),
                      enc.product(wholes, f"whole_{tensor}_c{c}"))
    return enc.cache[key]


def _footprint_at(enc: Encoding, d: str, f, j: int) -> Q:
    """``f(T_j)``, with ``T_0 = E`` (the top holds the whole extent)."""
    if j == 0:
        return Q.const(int(footprint_values(f, np.array([enc.chains[d].extent]))[0]))
    return footprint_at(enc, d, f, j)


def _pick(enc: Encoding, lit: Literal, if_true, if_false, stem: str) -> Q:
    if lit is True:
        return if_true()
    if lit is False:
        return if_false()
    return enc.select(lit, if_true(), if_false(), stem)


def buffer_sum(enc: Encoding, tensor: str, i: int, per_cut, stem: str) -> Q | None:
    """``sum_c at[X, i, c] * per_cut(c)``, or None when the buffer's position is not searched."""
    lits = enc.at.get((tensor, i)) if getattr(enc, "at", None) else None
    if not lits:
        return None
    values = {c: per_cut(c) for c in lits}
    lo = min(q.lo for q in values.values())
    hi = max(q.hi for q in values.values())
    v = enc.model.new_int_var(lo, hi, enc.name(stem))
    for c, lit in lits.items():
        enc.model.add(v == values[c].expr).only_enforce_if(lit)
    return Q(v, lo, hi)


def buffer_words(enc: Encoding, tensor: str, i: int) -> Q | None:
    """Words of ``tensor``'s level-``i`` buffer at its chosen cut (None: default position)."""
    key = ("buffer_words", tensor, i)
    if key not in enc.cache:
        enc.cache[key] = buffer_sum(enc, tensor, i, lambda c: cut_words(enc, tensor, c), f"words_{tensor}_L{i}_placed")
    return enc.cache[key]


def buffer_region(enc: Encoding, tensor: str, i: int) -> tuple[Q, Q] | None:
    """``(largest region words, whole flag)`` of ``tensor``'s level-``i`` buffer (None: default position)."""
    if not getattr(enc, "at", None) or (tensor, i) not in enc.at:
        return None
    size = buffer_sum(enc, tensor, i, lambda c: cut_region(enc, tensor, c)[0], f"region_{tensor}_L{i}")
    whole = buffer_sum(enc, tensor, i, lambda c: cut_region(enc, tensor, c)[1], f"whole_{tensor}_L{i}")
    return size, whole


def _cut_range(dims: list[str], D: int, J: int, c: int, orders: dict[int, tuple[str, ...]]) -> tuple[int, int]:
    """The nest positions equivalent to cut ``c``: after its last ``R`` loop, up to the next ``R`` loop."""
    def nth_r(j: int, n: int) -> int:  # index in level j's order of its n-th R loop (1-based n)
        return [k for k, d in enumerate(orders[j]) if d in dims][n - 1]

    r = len(dims)
    if c == 0:
        return 0, nth_r(1, 1)
    j, m = (c - 1) // r + 1, (c - 1) % r + 1
    lo = (j - 1) * D + nth_r(j, m) + 1
    if m < r:
        return lo, (j - 1) * D + nth_r(j, m + 1)
    return lo, (j * D + nth_r(j + 1, 1) if j < J else J * D)


def decode_positions(enc: Encoding, tensor: str, cuts: dict[int, int], orders: dict[int, tuple[str, ...]]) -> dict[int, int]:
    """Nest positions of ``tensor``'s buffers (level -> cut), outermost first: the default where it is equivalent.

    Every position in a cut's range holds the same regions in the same
    sequence; taking the default where it lies in the range, else the
    outermost position not outside the buffer above, keeps the nesting rule.
    """
    dims = placed_dims(enc, tensor)
    D, J = len(enc.problem.workload.dims), enc.problem.depth
    out: dict[int, int] = {}
    previous = 0
    for i in sorted(cuts):
        lo, hi = _cut_range(dims, D, J, cuts[i], orders)
        pos = i * D if lo <= i * D <= hi and i * D >= previous else max(lo, previous)
        out[i] = previous = pos
    return out
