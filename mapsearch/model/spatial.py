"""Spatial fanout: which dimensions split across each meshed level's instances, on which axis.

Every level with more than one instance is a *meshed level* ``s``; there
may be several in a path (docs/spatial.md, "Several meshed levels"). Each
dimension's chain carries one part extent and factor per meshed level
(``model/spatial_chains.py``); here a dimension split at level ``s`` is
mapped to one of that level's mesh axes and

    prod_{d on axis a of s} factor_{d,s} <= size_a          for every meshed level s and axis a

(the product per axis by ``add_multiplication_equality`` over
``select(on[d, s, a], factor_{d,s}, 1)``). An unsplit dimension sits on
axis 0, so equivalent mappings are not searched twice.

How a split dimension's pieces count toward a tensor's words is its *view*
(docs/spatial.md): per meshed level ``s``, ``"rep"`` (the lowest part
index, whose part is the largest) or ``"sum"`` (summed over the part
indices), as the argument of :func:`mapsearch.model.traffic.region_words`.
For the buffer of tensor ``X`` at level ``i`` and the link into level ``a``:

- a split below ``i`` (``s > i``) is not an instance of that buffer: ``rep``
  (it changes none of the quantities up to level ``i``);
- a split above the link (``s < a``) tells the link's copies apart: summed
  for the words, the lowest copy (the busiest) for the time;
- a split at or below the link (``a <= s <= i``) is inside one copy: its
  instances share a crossing (``rep``) when the dimension does not index
  ``X`` and its axis may reuse ``X`` (multicast, in-network reduction),
  else each crosses (``sum``);
- partial sums of an output come back to the lowest instance of a
  reduction group only, on every link (the others start from zeros): a
  shareable split is ``rep`` wherever it is, the others ``sum``.

Whether a split is shareable depends on the axis it is mapped to, so a view
entry may be a literal (``rep`` when true); :func:`resolve_view` turns such
a view into selects between the tables.
"""

from __future__ import annotations

import itertools
import math

from mapsearch.errors import InfeasibleError
from mapsearch.model.encoding import Encoding, Literal, Q, negate
from mapsearch.model.problem import Problem
from mapsearch.spec.architecture import COMPARISONS

REP, SUM = "rep", "sum"


def meshed_levels(p: Problem) -> tuple[int, ...]:
    """Indices of the levels with more than one instance, outermost first."""
    return tuple(i for i, lv in enumerate(p.architecture.levels) if lv.instances > 1)


def chain_spatial(p: Problem) -> tuple[tuple[int, int, tuple[int, ...]], ...]:
    """``(meshed level, largest mesh axis, the axes' sizes)`` per meshed level: what the chains split
    (model/spatial_chains.py)."""
    levels = p.architecture.levels
    out = []
    for s in meshed_levels(p):
        sizes = tuple(a.size for a in levels[s].mesh) or (levels[s].instances,)
        out.append((s, max(sizes), sizes))
    return tuple(out)


def split_dims(enc: Encoding, lv: int | None = None) -> list[str]:
    """Dimensions some chain splits at meshed level number ``lv`` (at any meshed level when None)."""
    key = ("split_dims", lv)
    if key in enc.cache:
        return enc.cache[key]
    out = []
    for d, ch in enc.chains.items():
        if ch.factors is None:
            continue
        cols = ch.factors if lv is None else ch.factors[:, lv:lv + 1]
        if int(cols.max()) > 1:
            out.append(d)
    enc.cache[key] = out
    return out


def axes(enc: Encoding, lv: int) -> list:
    return list(enc.problem.architecture.levels[enc.spatial_levels[lv]].mesh)


def add_mesh_factors(enc: Encoding) -> None:
    """``on[d, s, a]`` per split dimension, meshed level and axis; the product of factors per axis fits the axis."""
    for lv, s in enumerate(enc.spatial_levels):
        mesh = axes(enc, lv)
        level_name = enc.problem.architecture.levels[s].name
        for d in split_dims(enc, lv):
            factors = enc.chains[d].factors[:, lv]
            enc.factor[(d, lv)] = enc.lookup(d, factors, f"factor_L{s}")
            if len(mesh) == 1:
                enc.on_axis[(d, lv, 0)] = True
                continue
            first = enc.model.new_bool_var(f"{d}_on_{level_name}_{mesh[0].name}")
            unsplit = enc.lookup(d, (factors == 1).astype(int), f"unsplit_L{s}")
            if not unsplit.is_const:
                enc.model.add(first == 1).only_enforce_if(_as_bool(enc, unsplit, f"{d}_unsplit_L{s}"))
            enc.on_axis[(d, lv, 0)] = first
            enc.on_axis[(d, lv, 1)] = ~first
        add_must_reuse(enc, lv)
        add_split_bounds(enc, lv)
        for a, axis in enumerate(mesh):
            parts = [enc.select(enc.on_axis[(d, lv, a)], enc.factor[(d, lv)], Q.const(1), f"factor_{d}_{level_name}_{axis.name}")
                     for d in split_dims(enc, lv) if (d, lv, a) in enc.on_axis]
            used = enc.product(parts, f"fanout_{level_name}_{axis.name}")
            if not used.is_const:
                guard = enc.model.new_bool_var(f"mesh_{level_name}_{axis.name}")
                enc.model.add(used.expr <= axis.size).only_enforce_if(guard)
                enc.guards[f"mesh axis {axis.name} of {level_name}"] = guard
            elif int(used.expr) > axis.size:
                enc.model.add_bool_or([False])


def add_must_reuse(enc: Encoding, lv: int) -> None:
    """An axis's ``must_reuse`` tensors are shared by all its instances: no split on it indexes one.

    For every dimension ``d`` split at meshed level ``lv`` that indexes a
    tensor in axis ``a``'s ``must_reuse``:  ``on[d, s, a] => factor_{d,s} == 1``
    (``d`` is then not split on ``a``; an unsplit dimension sits on axis 0
    and constrains nothing). One guard literal per axis names the family in
    an infeasibility core.
    """
    w = enc.problem.workload
    level = enc.problem.architecture.levels[enc.spatial_levels[lv]]
    for a, axis in enumerate(axes(enc, lv)):
        shared = [t for t in w.tensor_names if axis.must_share(t, w.is_output(t))]
        banned = [d for d in split_dims(enc, lv)
                  if (d, lv, a) in enc.on_axis and any(d in w.tensor(t).dims for t in shared)]
        if not banned:
            continue
        guard = enc.model.new_bool_var(f"must_reuse_{level.name}_{axis.name}")
        enc.guards[f"must_reuse of mesh axis {axis.name} of {level.name}"] = guard
        for d in banned:
            on = enc.on_axis[(d, lv, a)]
            when = [guard] if on is True else [guard, on]
            factor = enc.factor[(d, lv)]
            if not factor.is_const:
                enc.model.add(factor.expr == 1).only_enforce_if(when)
            elif int(factor.expr) > 1:  # always split: never on this axis
                enc.model.add_bool_or([negate(x) for x in when])


def add_split_bounds(enc: Encoding, lv: int) -> None:
    """An axis's ``split_bounds`` (AccelForge's ``loop_bounds``) hold for the splits on it.

    The bound of dimension ``d`` on axis ``a`` of meshed level ``s`` is

        b[d, a] = factor_{d,s}  if on[d, s, a]  else 1

    (a dimension no chain splits at ``s`` has ``b = 1``), and each bound
    ``(D, op, v)`` posts ``b[d, a] op v`` for every ``d`` in ``D``, or
    ``prod_{d in D} b[d, a] op v`` for a ``product`` operator. Chain pruning
    compares chains only at equal factors (model/dominance.py: the factors are in every signature), so no
    chain that satisfies a bound is pruned for one that does not. One guard
    literal per axis names the bounds in an infeasibility core.
    """
    level = enc.problem.architecture.levels[enc.spatial_levels[lv]]
    for a, axis in enumerate(axes(enc, lv)):
        if not axis.split_bounds:
            continue
        guard = enc.model.new_bool_var(f"split_bounds_{level.name}_{axis.name}")
        enc.guards[f"loop bounds of mesh axis {axis.name} of {level.name}"] = guard

        def bound(d: str) -> Q:
            if (d, lv, a) not in enc.on_axis:  # never split at this level, or never on this axis
                return Q.const(1)
            return enc.select(enc.on_axis[(d, lv, a)], enc.factor[(d, lv)], Q.const(1),
                              f"bound_{d}_{level.name}_{axis.name}")

        for rule in axis.split_bounds:
            op = rule.operator.removeprefix("product")
            # Bounds (and their products, within the axis by the mesh constraint) lie in 1..size: a value past
            # size + 1 compares as size + 1 does, and CP-SAT takes no integer beyond 64 bits.
            value = min(rule.value, axis.size + 1)
            terms = ([enc.product([bound(d) for d in rule.dims], f"bounds_{level.name}_{axis.name}")]
                     if rule.operator.startswith("product") else [bound(d) for d in rule.dims])
            for q in terms:
                if q.is_const:
                    if not COMPARISONS[op](int(q.expr), value):
                        enc.model.add_bool_or([negate(guard)])
                    continue
                enc.model.add(COMPARISONS[op](q.expr, value)).only_enforce_if(guard)


def unmeetable_split_bounds(p: Problem):
    """The infeasibility of an axis whose split bounds no schedule of the contract meets, or None.

    Necessary for any legal schedule: the factors of the dimensions split on
    one axis multiply to at most its size, and a dimension's factor is at
    most its extent (any factor from 1 to the extent is some split: ``ceil(T
    / P)`` with the tile above ``T`` equal to it and parts of 1). So when no
    assignment ``f_d`` in ``1..min(E_d, size)`` of the dimensions a bound
    names (the others at 1) with ``prod f_d <= size`` meets the axis's
    bounds, no schedule exists, whatever the searched family. Where the
    search for such an assignment would pass :data:`_FACTORINGS_LIMIT`
    tuples, nothing is claimed (None).
    """
    w = p.workload
    for lv in p.architecture.levels:
        for axis in lv.mesh:
            if not axis.split_bounds:
                continue
            if _some_split_meets(axis, w):
                continue
            rules = "; ".join(str(rule) for rule in axis.split_bounds)
            name = f"loop bounds of mesh axis {axis.name} of {lv.name}"
            return InfeasibleError(f"infeasible: {name} conflict: no split of at most {axis.size} instances "
                                   f"meets {rules}", (name,))
    return None


# Factor tuples tried by unmeetable_split_bounds before it gives up claiming anything.
_FACTORINGS_LIMIT = 1_000_000


def _some_split_meets(axis, w) -> bool:
    """Whether some factors of the dimensions ``axis``'s bounds name meet them with their product within its size
    (True also where the search passes :data:`_FACTORINGS_LIMIT` tuples: nothing is claimed then).

    A per-dimension rule restricts its dimension's own factor; a dimension in
    no product rule then takes its least allowed factor (a larger one only
    grows the product), so only the dimensions of product rules are
    enumerated, with the product within the size.
    """
    named = sorted({d for rule in axis.split_bounds for d in rule.dims})
    allowed = {d: [f for f in range(1, min(w.extent[d], axis.size) + 1)
                   if all(rule.holds({d: f}) for rule in axis.split_bounds
                          if not rule.operator.startswith("product") and d in rule.dims)] for d in named}
    if any(not values for values in allowed.values()):
        return False
    in_products = sorted({d for rule in axis.split_bounds if rule.operator.startswith("product") for d in rule.dims})
    fixed = {d: allowed[d][0] for d in named if d not in in_products}
    room = axis.size // math.prod(fixed.values())
    if room < 1:
        return False
    products = [rule for rule in axis.split_bounds if rule.operator.startswith("product")]
    for tried, f in enumerate(_factorings([allowed[d] for d in in_products], room)):
        if tried >= _FACTORINGS_LIMIT:
            return True
        if all(rule.holds(dict(zip(in_products, f))) for rule in products):
            return True
    return False


def _factorings(values: list[list[int]], size: int):
    """Every tuple ``f`` with ``f[n]`` in ``values[n]`` (ascending) and ``prod f <= size``."""
    if not values:
        yield ()
        return
    for first in values[0]:
        if first > size:
            break
        for rest in _factorings(values[1:], size // first):
            yield (first,) + rest


def _as_bool(enc: Encoding, q: Q, stem: str):
    b = enc.model.new_bool_var(stem)
    enc.model.add(q.expr == 1).only_enforce_if(b)
    enc.model.add(q.expr == 0).only_enforce_if(~b)
    return b


def reuse_literal(enc: Encoding, d: str, lv: int, tensor: str) -> Literal:
    """True when the axis ``d`` is mapped to at meshed level ``lv`` may reuse ``tensor``."""
    key = ("reuses", d, lv, tensor)
    if key not in enc.cache:
        w = enc.problem.workload
        is_out = w.is_output(tensor)
        mapped = [(a, ax) for a, ax in enumerate(axes(enc, lv)) if (d, lv, a) in enc.on_axis]
        lits = [enc.on_axis[(d, lv, a)] for a, ax in mapped if ax.reuses(tensor, is_out)]
        # d sits on exactly one of its axes: when every one of them reuses the tensor, so does d's.
        enc.cache[key] = True if len(lits) == len(mapped) else enc.bool_or(lits, f"{d}_L{lv}_reuses_{tensor}")
    return enc.cache[key]


def _shared(enc: Encoding, d: str, lv: int, tensor: str):
    """The view entry of a split inside one link copy: ``rep`` when its instances share ``tensor``'s crossing."""
    if d in enc.problem.workload.tensor(tensor).dims:
        return SUM
    lit = reuse_literal(enc, d, lv, tensor)
    return REP if lit is True else SUM if lit is False else lit


def copy_classes(enc: Encoding, link: int) -> list[dict[tuple[str, int], str]]:
    """The copies of the link into ``link`` whose time the model takes: one per combination of classes.

    A copy's words are its own instance's. Along a plain dimension the
    lowest instance, whose part is the largest in every piece, is the
    busiest (docs/spatial.md, fact 3); along a filter window's dimension
    split unequally above the link it need not be (a smaller part can lose
    a coincidence), so every class of digits there is a copy of its own
    (``"cls<c>"`` views of the chains, model/spatial_chains.py). Each
    combination maps ``(dimension, meshed level number)`` to its entry
    (absent: ``"rep"``); ``[{}]`` where no dimension has such classes.
    """
    key = ("copy_classes", link)
    if key not in enc.cache:
        from mapsearch.model.spatial_chains import class_entries

        choices = []
        for d in sorted({d for win in enc.windows for d in win.dims}):
            for lv, s in enumerate(enc.spatial_levels):
                # The classes some chain of the model has (a model of fewer rows may have none).
                classes = class_entries(enc.chains[d], lv) if s < link and enc.chains[d].flavoured else []
                if classes:
                    choices.append([((d, lv), entry) for entry in [REP] + classes])
        enc.cache[key] = [dict(combo) for combo in itertools.product(*choices)]
    return enc.cache[key]


def views(enc: Encoding, tensor: str, level: int, link: int, purpose: str,
          copy: dict[tuple[str, int], str] | None = None) -> dict:
    """Per split dimension, how its pieces count for ``tensor``'s buffer at ``level`` on the link into ``link``.

    A tuple with one entry per meshed level (see the module docstring).
    ``purpose``: ``"words"`` (inputs down, outputs up, summed over the
    link's copies), ``"time"`` (one copy, ``copy`` of :func:`copy_classes`,
    by default the lowest; partial sums back to it too) or ``"back"``
    (output partial sums down, over all copies).
    """
    if not enc.spatial_levels or level < enc.spatial_levels[0]:
        return {}
    out: dict = {}
    for d in split_dims(enc):
        entries = []
        for lv, s in enumerate(enc.spatial_levels):
            if s > level or d not in split_dims(enc, lv):
                entries.append(REP)
            elif s < link and purpose == "words":
                entries.append(SUM)
            elif s < link and purpose == "time":
                entries.append((copy or {}).get((d, lv), REP))
            else:
                entries.append(_shared(enc, d, lv, tensor))
        out[d] = tuple(entries)
    return out


def resolve_view(enc: Encoding, view: tuple | None, get, stem: str) -> Q:
    """``get(view)`` with every literal entry of ``view`` resolved by a select (rep when true)."""
    if view is None:
        return get(None)
    for n, entry in enumerate(view):
        if not isinstance(entry, str):
            rep = resolve_view(enc, view[:n] + (REP,) + view[n + 1:], get, stem)
            summed = resolve_view(enc, view[:n] + (SUM,) + view[n + 1:], get, stem)
            return enc.select(entry, rep, summed, f"{stem}_view")
    return get(view)


def view_key(view) -> object:
    """A hashable key of a view (a literal by its index)."""
    if view is None or isinstance(view, (str, bool)):
        return view
    if isinstance(view, tuple):
        return tuple(view_key(v) for v in view)
    return ("lit", view.index)


def all_views(enc: Encoding, d: str, entry: str) -> tuple | None:
    """The view with ``entry`` at every meshed level (None for a dimension no chain splits)."""
    return (entry,) * len(enc.spatial_levels) if d in split_dims(enc) else None


__all__ = ["meshed_levels", "chain_spatial", "split_dims", "add_mesh_factors", "add_must_reuse", "views", "copy_classes",
           "resolve_view", "view_key", "all_views", "negate"]
