r"""Words a tensor's buffer at one level takes in: exact, remainders included.

Fix tensor ``X`` and level ``i``. ``R`` are the dimensions that index ``X``,
``I`` the others. The loops of levels ``1..i`` form one odometer; ``X``'s
level-``i`` region changes on a step unless the loop that advances is in
``I`` and every loop of ``R`` inner to it has one trip in that context
(those loops go from their last to their first value, i.e. stay put). The
prefix ``P`` of the nest up to the innermost ``R`` loop of level ``i``
contains, per dimension, the loops of levels ``1..k_d``, where
``k_d = i`` for ``d`` in ``R`` and, for ``e`` in ``I``, ``k_e = i`` when ``e``
is outer to some ``R`` loop at level ``i`` and ``i-1`` otherwise. Loops
after the prefix only give reuse. So the words loaded are

    words(X, i) = prod_{d in R} F_d[i] * prod_{e in I} N_e[k_e]
                  - sum_{e in I} sum_{j <= i, e's level-j loop in P}  C(e, j)

    C(e, j) = prod_{d in R} W_d[k_d(e,j), i] * prod_{e' in I, e' != e} N_e'[k_e'(e,j)]
              * (N_e[j] - N_e[j-1])

where ``k_g(e, j) = j`` if ``g`` is outer to ``e`` at level ``j``, else ``j-1``;
``F_d[i]`` is the sum of the footprints of ``d``'s level-``i`` pieces (``E_d``
for a plain axis), ``N`` counts pieces, and ``W_d[k, i]`` sums the footprints
of the level-``k`` pieces no longer than ``T_i`` (those are the contexts in
which every deeper loop over ``d`` has one trip; ``W_d[i, i] = F_d[i]``).
``C(e, j)`` counts, with their words, the advances of ``e``'s level-``j``
loop in which nothing moves. For an output the same count is the words
stored up; the words loaded back are those minus the output's size, because
every region is created once, as zeros, on its first visit (plain output
indices partition the output at every level).
"""

from __future__ import annotations

import math

from mapsearch.model.chains import Footprint
from mapsearch.model.encoding import Encoding, Q
from mapsearch.model.order import before
from mapsearch.model.cuts import flush_class, unflushed
from mapsearch.model.problem import footprint, repeated_dims
from mapsearch.model.skew import window_key
from mapsearch.model.spatial import resolve_view, view_key
from mapsearch.model.tiles import count_step, idle_sums, piece_count, piece_sum, small_sum


View = object  # None (plain), or a tuple per meshed level of "rep", "sum" or a literal (model/spatial.py)


UNIT: Footprint = (0, 1)  # one per piece, whatever its extent


def region_words(enc: Encoding, tensor: str, i: int, views: dict[str, View] | None = None,
                 unit_dims: frozenset[str] = frozenset(), footprints: dict[str, Footprint] | None = None,
                 outside: dict[str, object] | None = None) -> Q:
    """``words(X, i)`` above, as an exact quantity.

    ``outside[d]`` (a literal, default true for every ``d`` in ``R``) places
    the buffer inside level ``i``'s loops (docs/solver.md, "Buffer
    placement"): when it is false, ``d``'s level-``i`` loop is inside the
    buffer, whose region along ``d`` is then the level-``(i-1)`` piece. The
    count is the formula above with, for such ``d``, ``F_d[i-1]`` for
    ``F_d[i]``, ``W_d[k, i-1]`` for ``W_d[k, i]``, ``F_d[i-1]`` for every
    level-``i`` still factor, and ``d`` left out of the prefix test of the
    ``I`` loops at level ``i``: exactly the default count of the schedule in
    which ``d``'s level-``i`` loop has one trip.

    ``unit_dims`` measures a region by something other than its words: a
    dimension in it counts one per piece instead of its footprint, so the
    result is the sum over region changes of ``prod_{d not in unit_dims}
    f_d(x_d)``. With the dimensions of a DRAM slice's inner axes as
    ``unit_dims`` that is the number of slices (rows) each transfer touches
    (model/dram_rows.py). The chains must carry the ``(0, 1)`` footprint.

    ``views[d]`` says how dimension ``d``'s pieces are seen below spatial
    splits (docs/spatial.md, model/spatial.py): per meshed level, ``"sum"``
    over instances, ``"rep"`` for the representative instance, or a literal
    choosing between them (multicast depends on the mesh axis a dimension is
    mapped to). ``None``: plain.

    ``footprints[d]`` replaces dimension ``d``'s footprint outright (any
    footprint its chains carry, e.g. a table footprint): the result is the
    sum over region changes of ``prod_d footprints[d](x_d)``.
    """
    w = enc.problem.workload
    views = views or {}
    key = (tensor, i, tuple((d, view_key(views.get(d))) for d in w.dims), unit_dims)
    if footprints:
        key += (tuple(sorted(footprints.items())),)
    if outside is not None and any(v is not True for v in outside.values()):
        key += (("outside",) + tuple((d, view_key(v)) for d, v in sorted(outside.items())),)
    else:
        outside = None
    if key in enc.words:
        return enc.words[key]
    expanded = enc.cache.get("expanded", {}).get(tensor)
    if expanded and not unit_dims and not footprints:
        # A skewed axis (model/skew.py): the region is a sum of monomials, each one footprint per dimension,
        # and its words the same sum of the monomials' words. Never negative: each region's words are.
        enc.words[key] = enc.linear([(coeff, region_words(enc, tensor, i, views, unit_dims, dict(per_dim), outside))
                                     for coeff, per_dim in expanded], floor=0)
        return enc.words[key]
    access = w.tensor(tensor)
    is_output = w.is_output(tensor)
    relevant = [d for d in w.dims if d in access.dims]
    irrelevant = [d for d in w.dims if d not in access.dims]
    if not relevant:  # a scalar: one load of one word
        enc.words[key] = Q.const(w.tensor_words(tensor))
        return enc.words[key]
    windows = [win for win in enc.windows if win.tensor == tensor]
    in_window = {d for win in windows for d in win.dims}
    fp = {d: UNIT if d in unit_dims else footprint(access, d, w) for d in relevant if d not in in_window}
    fp.update({d: f for d, f in (footprints or {}).items() if d in fp})
    # The tensor's axes: a dimension of its own (a plain axis, or the carrier of an axis whose other
    # dimensions are pinned, with their footprint (0, 1)), or a split window (model/windows.py).
    axes: list = [d for d in relevant if d not in in_window] + windows
    # Box windows a monomial reads one per interval (model/skew.py): their states and coincidences count 1 each.
    counted = [win for win in windows if win.box and (footprints or {}).get(window_key(win.dims)) == UNIT]

    def seen(d: str, get) -> Q:
        return resolve_view(enc, views.get(d), get, f"{tensor}_L{i}_{d}")

    def count(d: str, j: int) -> Q:
        return seen(d, lambda v: piece_count(enc, d, j, v))

    out = outside or {}

    def placed(d: str, at_i, at_parent, stem: str) -> Q:
        """``at_i()`` when ``d``'s level-i loop is outside the buffer, else ``at_parent()``."""
        lit = out.get(d, True)
        if lit is True:
            return at_i()
        if lit is False:
            return at_parent()
        return enc.select(lit, at_i(), at_parent(), f"{tensor}_L{i}_{d}_{stem}")

    def main_of(d: str, f) -> Q:
        """``F_d[i]`` under footprint ``f``: the sum over the buffer's pieces of ``d``."""
        return placed(d, lambda: seen(d, lambda v: piece_sum(enc, d, f, i, v)),
                      lambda: seen(d, lambda v: piece_sum(enc, d, f, i - 1, v)), f"F{f[0]}{f[1]}")

    def still_sum(d: str, f, k: int, at: int, v) -> Q:
        """``W_d[k, at]``: the ordinary still sums, plus those of pieces an instance idles through
        where no keeper of the tensor there can flush it (an output's: model/tiles.idle_sums)."""
        if not is_output:
            return small_sum(enc, d, f, k, at, v)
        key = ("still_sum", tensor, d, f, k, at, view_key(v))
        if key not in enc.cache:
            # The idle sums of masks flushed alike together, then one choice per flush condition.
            groups: dict[tuple, tuple] = {}
            for levels, idle in idle_sums(enc, d, f, k, at, v):
                groups.setdefault(flush_class(enc, tensor, levels), (levels, []))[1].append(idle)
            parts = [small_sum(enc, d, f, k, at, v, idle=False)]
            parts += [enc.select(unflushed(enc, tensor, levels, d), enc.total(idles), Q.const(0), f"{tensor}_{d}_idle")
                      for levels, idles in groups.values()]
            enc.cache[key] = enc.total(parts)
        return enc.cache[key]

    def still(d: str, k: int, f) -> Q:
        """``W_d[k, i]`` of the buffer's region (``W_d[k, i-1]`` when d's level-i loop is inside it)."""
        return placed(d, lambda: seen(d, lambda v: still_sum(d, f, k, i, v)),
                      lambda: seen(d, lambda v: still_sum(d, f, min(k, i - 1), i - 1, v)), f"W{k}{f[0]}{f[1]}")

    def context_of(e: str, j: int):
        """Per dimension ``d`` of the tensor: its still sum when loop ``(e, j)`` advances."""
        def ctx(d: str, f) -> Q:
            if j < i or out.get(d, True) is True:
                return enc.select(before(enc, j, d, e), still(d, j, f), still(d, j - 1, f), f"{tensor}_L{i}_{d}_still")
            # d's level-i loop may sit inside the buffer: then only its level-(i-1) pieces count
            return placed(d, lambda: enc.select(before(enc, i, d, e), still(d, i, f), still(d, i - 1, f),
                                                f"{tensor}_L{i}_{d}_still"),
                          lambda: seen(d, lambda v: piece_sum(enc, d, f, i - 1, v)), f"Fi{f[0]}{f[1]}")
        return ctx

    def axis(a, per_dim) -> Q:
        """One axis's factor from a per-dimension quantity ``per_dim(d, footprint)``.

        A split window ``sum_g c_g d_g`` sums ``sum_g c_g (x_g - 1) + 1`` over
        tuples of pieces: ``sum_g c_g X_g prod_{h != g} U_h + (1 - sum_g c_g)
        prod_g U_g`` with ``X`` the quantity over extents and ``U`` over counts
        (one per piece); ``s*X_p*U_r + t*U_p*X_r + (1-s-t)*U_p*U_r`` for two.
        """
        if isinstance(a, str):
            return per_dim(a, fp[a])
        if a in counted:  # one per interval (a box window's monomial, model/skew.py): the tuples of pieces
            return enc.product([per_dim(d, UNIT) for d in a.dims], f"win_{tensor}_L{i}")
        x, u = {}, {}
        for d in a.dims:
            x[d], u[d] = per_dim(d, (1, 0)), per_dim(d, UNIT)
        terms = [(c, enc.product([x[g] if h == g else u[h] for h in a.dims], f"win_{tensor}_L{i}"))
                 for g, c in zip(a.dims, a.coeffs)]
        terms.append((1 - sum(a.coeffs), enc.product([u[h] for h in a.dims], f"win_{tensor}_L{i}")))
        return enc.linear(terms, floor=0)

    def counts_around(e: str, j: int, skip: str | None = None) -> list[Q]:
        """The other dimensions' contexts when loop ``(e, j)`` advances: their pieces outside it."""
        return [enc.select(before(enc, j, g, e), count(g, j), count(g, j - 1), f"{tensor}_L{i}_{g}_ctx")
                for g in irrelevant if g != skip]

    # The prefix reaches e's level-i loop when e is outer to some relevant loop outside the buffer there.
    in_prefix = {e: enc.bool_or([enc.bool_and([before(enc, i, e, d), out.get(d, True)], f"{tensor}_L{i}_{e}{d}_out")
                                 for d in relevant], f"{tensor}_L{i}_{e}_in_prefix")
                 for e in irrelevant}
    main = [axis(a, main_of) for a in axes]
    main += [enc.select(in_prefix[e], count(e, i), count(e, i - 1), f"{tensor}_L{i}_{e}_trips")
             for e in irrelevant]
    total = enc.product(main, f"words_{tensor}_L{i}_all")

    # Below a fusion level, buffers are emptied between sub-nest runs (docs/fusion.md):
    # an outer loop that advances always reloads, so only the sub-nest's loops give reuse,
    # window coincidences included (docs/solver.md, "Split windows in a fused stage").
    reset = enc.problem.fusion_level
    first_loop_level = reset + 1 if reset is not None and i > reset else 1
    corrections: list[Q] = []
    for e in irrelevant:
        for j in range(first_loop_level, i + 1):
            step = seen(e, lambda v, e=e, j=j: count_step(enc, e, j, v))
            if step.is_const and int(step.expr) == 0:
                continue  # e's level-j loop never advances
            factors = [step] + [axis(a, context_of(e, j)) for a in axes] + counts_around(e, j, skip=e)
            c = enc.product(factors, f"reuse_{tensor}_L{i}_{e}{j}")
            if j == i:
                c = enc.select(in_prefix[e], c, Q.const(0), f"reuse_{tensor}_L{i}_{e}{j}_on")
            corrections.append(c)
    corrections += _coincidences(enc, tensor, i, windows, axes, axis, context_of, counts_around, views, out,
                                 first_loop_level, counted)

    if corrections:
        sub = enc.total(corrections)
        result = Q(total.expr - sub.expr if not (total.is_const and sub.is_const) else int(total.expr) - int(sub.expr),
                   max(0, total.lo - sub.hi), total.hi)
    else:
        result = total
    if not result.is_const:
        # Every region is visited, so a tensor with plain axes moves at least its own size
        # (the representative instance of a split sees only its share: no floor then; the regions of a
        # dimension that indexes two axes, A[m,m], cover only boxes along the diagonal: none either).
        split = any(views.get(d) is not None for d in w.dims)
        # (A measure counts at least one per distinct value of its measured axes.)
        plain = all(ix.is_plain for ix in access.indices) and not split and not repeated_dims(access)
        floor = (w.tensor_words(tensor) if not unit_dims else
                 math.prod(w.extent[d] for d in relevant if d not in unit_dims)) if plain and not footprints else 0
        v = enc.model.new_int_var(max(result.lo, floor), max(result.hi, floor), f"words_{tensor}_L{i}")
        enc.model.add(v == result.expr)
        result = Q(v, result.lo, result.hi)
    enc.words[key] = result
    return result


def _coincidences(enc: Encoding, tensor: str, i: int, windows, axes, axis, context_of, counts_around, views: dict,
                  out: dict, first_loop_level: int, counted=()) -> list[Q]:
    """Steps where a window dimension's loop advances and the buffer's region stays (model/windows.py).

    For a window and the loop of its dimension ``e`` at level ``j``: the
    coincidences of the chosen chains (each other dimension's context is its
    level-``j`` piece when its loop is outer to ``e``'s there, else its
    level-``(j-1)`` piece; each dimension's pieces are the buffer's level
    ``i``, or ``i-1`` where its level-``i`` loop is inside the buffer), times every other
    axis's still factor and every other dimension's contexts, as for the
    corrections of :func:`region_words`. At ``j = i`` only a loop outside
    the buffer moves its region. Loops above ``first_loop_level`` give no
    coincidence: below a fusion level each of their advances starts a new
    sub-nest run, which enters every region afresh.

    Split over mesh axes (docs/spatial.md, "Split windows over mesh
    axes"), the table is the sum over the instances of the view, one per
    class of digits at each meshed level, of their own coincidences
    (model/windows.coincidences with the window dimensions' views); at a
    level where every digit does digit 0's work the sum is digit 0's table
    times the digits (model/windows.simplified_view), so views that differ
    only there read one table. A window in ``counted`` weighs each coincidence 1 (one per interval) instead
    of the interval's words.
    """
    from mapsearch.model.windows import coincidences, simplified_view

    def pick(lit, if_true, if_false, stem: str) -> Q:
        if lit is True:
            return if_true()
        if lit is False:
            return if_false()
        return enc.select(lit, if_true(), if_false(), stem)

    terms: list[Q] = []
    for win in windows:
        others = [a for a in axes if a is not win]
        # The windowed tensor is indexed by every window dimension: their views are "rep", "sum" or one class of
        # digits per meshed level, never a literal (model/spatial.views).
        simple = [simplified_view(enc, d, views.get(d)) for d in win.dims]
        seen = tuple(v for v, _ in simple)
        instances = [q for _, q in simple if q is not None]
        for e in win.dims:
            for j in range(first_loop_level, i + 1):
                if j == i and out.get(e, True) is False:
                    continue  # e's level-i loop is inside the buffer: it moves nothing

                def table(le: int, rest: tuple[str, ...], chosen: tuple = (), e=e, j=j) -> Q:
                    """Picks, per other dimension ``g`` in turn, the buffer's level of its pieces, then whether
                    its level-j loop is outer to e's: the table of those choices."""
                    if not rest:
                        return coincidences(enc, win, e, j, le, chosen, seen, unit=win in counted)
                    g = rest[0]

                    def placed(lo: int) -> Q:
                        return pick(before(enc, j, g, e), lambda: table(le, rest[1:], chosen + ((True, lo),)),
                                    lambda: table(le, rest[1:], chosen + ((False, lo),)),
                                    f"coincide_{tensor}_{e}{j}_order")
                    return pick(out.get(g, True), lambda: placed(i), lambda: placed(i - 1),
                                f"coincide_{tensor}_{g}_placed")

                rest = win.others(e)
                h = table(i, rest) if j == i else pick(out.get(e, True), lambda t=table, r=rest: t(i, r),
                                                       lambda t=table, r=rest: t(i - 1, r),
                                                       f"coincide_{tensor}_{e}_placed")
                if h.is_const and int(h.expr) == 0:
                    continue
                factors = [h] + instances + [axis(a, context_of(e, j)) for a in others] + counts_around(e, j)
                c = enc.product(factors, f"coincide_{tensor}_L{i}_{e}{j}")
                if j == i and out.get(e, True) is not True:
                    c = pick(out[e], lambda c=c: c, lambda: Q.const(0), f"coincide_{tensor}_L{i}_{e}_on")
                terms.append(c)
    return terms
