"""Keep or bypass per tensor and level, and the words each link carries.

``kept[X, i]`` is a decision for levels strictly between ``X``'s home and
L0, true at L0 (unless L0 is the home) and false at or above the home.
A load into level ``i`` comes from the nearest holder above, so it crosses
the link into level ``a`` (``home < a <= i``) exactly when no level in
``a..i-1`` keeps ``X``:

    through[X, a, i] = kept[X, i] and not kept[X, j] for all a <= j < i
    down[X, a] = sum_i through[X, a, i] * words(X, i)            (inputs)
    up[X, a]   = sum_i through[X, a, i] * words(X, i)            (output)
    down[X, a] = sum_i through[X, a, i] * (words(X, i) - |X|)    (output)
"""

from __future__ import annotations

from mapsearch.model.encoding import Encoding, Q, negate
from mapsearch.model.traffic import region_words


def add_residency(enc: Encoding, forced: dict[tuple[str, int], bool]) -> None:
    """``kept`` literals; ``forced[(X, i)]`` fixes a keep (True) or bypass (False)."""
    p = enc.problem
    J = p.depth
    for t in p.workload.tensor_names:
        home = p.home(t)
        for i in range(p.architecture.depth):
            if i <= home:
                enc.kept[(t, i)] = False
            elif i == J:
                enc.kept[(t, i)] = True
            elif (t, i) in forced:
                enc.kept[(t, i)] = forced[(t, i)]
            else:
                enc.kept[(t, i)] = enc.model.new_bool_var(f"keep_{t}_L{i}")


def add_link_words(enc: Encoding) -> None:
    """``link_tensor_down/up[(X, a)]`` for every tensor and link into level ``a``.

    Below a meshed level a link has one copy per instance of its parent:
    the words are summed over the copies and each copy the model tells
    apart (``*_busiest[(X, a, n)]``, the ``n``-th of
    :func:`~mapsearch.model.spatial.copy_classes`: the lowest copy, and one
    per class of a window dimension's unequal parts) sets a floor of the
    time. Partial sums of an output come back per instance, less the first
    visit of each region the instance owns (:func:`first_visits`). The
    views of model/spatial.py give per link the copies, multicast and
    in-network reduction.
    """
    from mapsearch.model.spatial import copy_classes, views

    p = enc.problem
    w = p.workload
    J = p.depth
    for t in w.tensor_names:
        home = p.home(t)
        is_out = w.is_output(t)
        for a in range(1, J + 1):
            per_copy = any(s < a for s in enc.spatial_levels)
            copies = copy_classes(enc, a) if per_copy else [{}]
            down: list[Q] = []
            up: list[Q] = []
            down_time: list[list[Q]] = [[] for _ in copies]
            up_time: list[list[Q]] = [[] for _ in copies]
            if a > home:
                for i in range(a, J + 1):
                    through = through_literal(enc, t, a, i)
                    if through is False:
                        continue
                    words = _words(enc, t, i, views(enc, t, i, a, "words"))
                    moved = enc.select(through, words, Q.const(0), f"cross_{t}_{a}_{i}")
                    if is_out:
                        # Every instance that is not grouped with others (for in-network
                        # reduction) creates each region of its share as zeros once.
                        seen = views(enc, t, i, a, "back")
                        back = _minus(_words(enc, t, i, seen), first_visits(enc, t, i, seen))
                        down.append(enc.select(through, back, Q.const(0), f"back_{t}_{a}_{i}"))
                        up.append(moved)
                    else:
                        down.append(moved)
                    for n, copy in enumerate(copies):
                        busy = views(enc, t, i, a, "time", copy) if per_copy else None
                        busiest = region_words(enc, t, i, busy) if per_copy else words
                        moved_time = enc.select(through, busiest, Q.const(0), f"cross_time_{t}_{a}_{i}") if per_copy else moved
                        if not is_out:
                            down_time[n].append(moved_time)
                            continue
                        up_time[n].append(moved_time)
                        back_time = _minus(busiest, first_visits(enc, t, i, busy)) if per_copy else back
                        down_time[n].append(enc.select(through, back_time, Q.const(0), f"back_time_{t}_{a}_{i}"))
            enc.link_tensor_down[(t, a)] = enc.total(down)
            enc.link_tensor_up[(t, a)] = enc.total(up)
            for n in range(len(copies)):
                enc.link_tensor_down_busiest[(t, a, n)] = enc.total(down_time[n])
                enc.link_tensor_up_busiest[(t, a, n)] = enc.total(up_time[n])


def _words(enc: Encoding, t: str, i: int, seen: dict) -> Q:
    """Words of ``t``'s level-``i`` buffer: at its searched position (model/placement.py) or its default one."""
    from mapsearch.model.placement import buffer_words

    placed = buffer_words(enc, t, i) if not any(v is not None for v in seen.values()) else None
    return placed if placed is not None else region_words(enc, t, i, seen)


def through_literal(enc: Encoding, t: str, a: int, i: int):
    """``through[X, a, i]``: ``X``'s loads into level ``i`` cross the link into ``a``."""
    key = ("through", t, a, i)
    if key not in enc.cache:
        enc.cache[key] = enc.bool_and([enc.kept[(t, i)]] + [negate(enc.kept[(t, j)]) for j in range(a, i)],
                                      f"through_{t}_{a}_{i}")
    return enc.cache[key]


def first_visits(enc: Encoding, t: str, i: int, seen: dict, unit_dims: frozenset[str] = frozenset(),
                 footprints: dict | None = None) -> Q:
    """What the first visits of output ``t``'s level-``i`` regions measure (they create zeros, load nothing).

    Each instance of the view creates each region of its share once
    (docs/spatial.md, "Several meshed levels"). Its share is the product of
    its pieces along the dimensions of ``t``, and it has one only when it is
    active along every other dimension; summed over the view's instances
    that factors per dimension: ``prod_{d in R} piece_sum(d, f_d, i) *
    prod_{e not in R} (active instances along e)`` (``N[0]`` of the view).
    In words with every split of ``R`` summed that is ``|t|`` times the
    active instances; under ``unit_dims`` (see :func:`region_words`) every
    region counts ``prod_{d not in unit_dims} f_d(x_d)``.
    """
    from mapsearch.model.problem import footprint, repeated_dims
    from mapsearch.model.spatial import SUM, resolve_view
    from mapsearch.model.tiles import piece_count, piece_sum
    from mapsearch.model.traffic import UNIT

    w = enc.problem.workload
    relevant = w.tensor(t).dims
    seen = seen or {}
    alone = [resolve_view(enc, v, lambda view, d=d: piece_count(enc, d, 0, view), f"alone_{t}_{d}")
             for d, v in seen.items() if d not in relevant]
    summed = all(seen.get(d) is None or all(e == SUM or s > i for e, s in zip(seen[d], enc.spatial_levels))
                 for d in w.dims if d in relevant)
    if not unit_dims and not footprints and summed and not repeated_dims(w.tensor(t)):
        # The distinct regions partition the tensor (A[m,m]'s cover boxes along the diagonal only: summed below).
        regions = Q.const(w.tensor_words(t))
    else:
        fp = {d: UNIT if d in unit_dims else footprint(w.tensor(t), d, w) for d in relevant}
        fp.update({d: f for d, f in (footprints or {}).items() if d in fp})
        regions = enc.product([resolve_view(enc, seen.get(d), lambda view, d=d: piece_sum(enc, d, fp[d], i, view),
                                            f"first_{t}_{d}") for d in w.dims if d in relevant],
                              f"first_regions_{t}_L{i}")
    return enc.product([regions] + alone, f"first_visits_{t}_L{i}")


def link_measure(enc: Encoding, t: str, a: int, unit_dims: frozenset[str],
                 footprints: dict | None = None) -> tuple[Q, Q]:
    """``(down, up)`` of :func:`add_link_words` measured under ``unit_dims`` and ``footprints`` (:func:`region_words`).

    Summed over all copies of the link (the ``"words"`` and ``"back"``
    views), which is what crosses a link above the meshed level.
    """
    from mapsearch.model.spatial import views

    p = enc.problem
    down: list[Q] = []
    up: list[Q] = []
    if a <= p.home(t):
        return Q.const(0), Q.const(0)
    for i in range(a, p.depth + 1):
        through = through_literal(enc, t, a, i)
        if through is False:
            continue
        moved = enc.select(through, region_words(enc, t, i, views(enc, t, i, a, "words"), unit_dims, footprints), Q.const(0),
                           f"cross_{t}_{a}_{i}_measure")
        if not p.workload.is_output(t):
            down.append(moved)
            continue
        up.append(moved)
        seen = views(enc, t, i, a, "back")
        back = _minus(region_words(enc, t, i, seen, unit_dims, footprints), first_visits(enc, t, i, seen, unit_dims, footprints))
        down.append(enc.select(through, back, Q.const(0), f"back_{t}_{a}_{i}_measure"))
    return enc.total(down), enc.total(up)


def _minus(q: Q, r: Q) -> Q:
    """``q - r`` where ``r <= q`` is known to hold."""
    if q.is_const and r.is_const:
        return Q.const(int(q.expr) - int(r.expr))
    return Q(q.expr - r.expr, max(0, q.lo - r.hi), max(0, q.hi - r.lo))


def add_link_times(enc: Encoding) -> None:
    """Scaled link time per line model, from the busiest copy's words.

    shared:   time = (down + up) * input_clocks_per_word
    separate: time = max(down * input_clocks_per_word, up * output_clocks_per_word)

    taken per copy of :func:`~mapsearch.model.spatial.copy_classes` and
    then the largest over them (the link's time is its busiest copy's).
    """
    from mapsearch.model.spatial import copy_classes

    p = enc.problem
    for a in range(1, p.depth + 1):
        link = p.architecture.levels[a].link
        icpw = int(link.input_clocks_per_word * enc.scale)
        ocpw = int(link.output_clocks_per_word * enc.scale)
        times = []
        for n in range(len(copy_classes(enc, a)) if any(s < a for s in enc.spatial_levels) else 1):
            down = enc.total([enc.link_tensor_down_busiest[(t, a, n)] for t in p.workload.tensor_names])
            up = enc.total([enc.link_tensor_up_busiest[(t, a, n)] for t in p.workload.tensor_names])
            if link.lines == "shared":
                times.append(enc.scaled(enc.total([down, up]), icpw))
            else:
                times.append(_largest(enc, [enc.scaled(down, icpw), enc.scaled(up, ocpw)], f"link_time_L{a}"))
        enc.link_time[a] = times[0] if len(times) == 1 else _largest(enc, times, f"link_time_L{a}_copies")


def _largest(enc: Encoding, qs: list[Q], stem: str) -> Q:
    """``max(qs)`` as a quantity."""
    lo, hi = max(q.lo for q in qs), max(q.hi for q in qs)
    v = enc.model.new_int_var(lo, hi, stem)
    enc.model.add_max_equality(v, [q.expr for q in qs])
    return Q(v, lo, hi)
