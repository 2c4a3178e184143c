"""Spatial fanout: which dimensions split across a meshed level's instances, on which axis.

One meshed level ``s`` is supported. Each dimension's chain carries a part
extent and a factor (``model/spatial_chains.py``); here a split
dimension is mapped to one mesh axis and

    prod_{d on axis a} factor_d <= size_a                 for every axis a

(the product per axis by ``add_multiplication_equality`` over
``select(on[d, a], factor_d, 1)``). An unsplit dimension sits on axis 0, so
equivalent mappings are not searched twice.

How a split dimension's pieces count toward a tensor's words (docs/spatial.md),
as the *view* of :func:`mapsearch.model.traffic.region_words`:

- below the meshed level, per instance copy of a link: summed over instances
  for the words, the representative instance for the time;
- on links down to the meshed level: an input is seen by the representative
  when the dimension does not index it and its axis may reuse it
  (multicast), else summed; an output's stores likewise for reduction
  dimensions (in-network reduction); its partial sums come back to the
  lowest instance of such a group only, on every link (the others start
  from zeros; stores add up above), and to every instance otherwise.
"""

from __future__ import annotations

from mapsearch.model.encoding import Encoding, Literal, Q, negate
from mapsearch.model.problem import Problem


def meshed_level(p: Problem) -> int | None:
    """Index of the one level with a mesh, or None."""
    levels = [i for i, lv in enumerate(p.architecture.levels) if lv.mesh or lv.instances > 1]
    return levels[0] if levels else None


def max_factor(p: Problem) -> int:
    s = meshed_level(p)
    if s is None:
        return 1
    lv = p.architecture.levels[s]
    return max((a.size for a in lv.mesh), default=lv.instances)


def split_dims(enc: Encoding) -> list[str]:
    return [d for d, ch in enc.chains.items() if ch.factors is not None and int(ch.factors.max()) > 1]


def axes(enc: Encoding) -> list:
    lv = enc.problem.architecture.levels[enc.spatial_level]
    return list(lv.mesh) if lv.mesh else []


def add_mesh_factors(enc: Encoding) -> None:
    """``on[d, a]`` per split dimension and axis; the product of factors per axis fits the axis."""
    if enc.spatial_level is None:
        return
    mesh = axes(enc)
    for d in split_dims(enc):
        factor = enc.lookup(d, enc.chains[d].factors, "factor")
        enc.factor[d] = factor
        if len(mesh) == 1:
            enc.on_axis[(d, 0)] = True
        else:
            first = enc.model.new_bool_var(f"{d}_on_{mesh[0].name}")
            unsplit = enc.lookup(d, (enc.chains[d].factors == 1).astype(int), "unsplit")
            if not unsplit.is_const:
                enc.model.add(first == 1).only_enforce_if(_as_bool(enc, unsplit, f"{d}_unsplit"))
            enc.on_axis[(d, 0)] = first
            enc.on_axis[(d, 1)] = ~first
    add_must_reuse(enc)
    for a, axis in enumerate(mesh):
        parts = [enc.select(enc.on_axis[(d, a)], enc.factor[d], Q.const(1), f"factor_{d}_{axis.name}")
                 for d in split_dims(enc) if (d, a) in enc.on_axis]
        used = enc.product(parts, f"fanout_{axis.name}")
        if not used.is_const:
            guard = enc.model.new_bool_var(f"mesh_{axis.name}")
            enc.model.add(used.expr <= axis.size).only_enforce_if(guard)
            enc.guards[f"mesh axis {axis.name} of {enc.problem.architecture.levels[enc.spatial_level].name}"] = guard
        elif int(used.expr) > axis.size:
            enc.model.add_bool_or([False])


def add_must_reuse(enc: Encoding) -> None:
    """An axis's ``must_reuse`` tensors are shared by all its instances: no split on it indexes one.

    For every split dimension ``d`` that indexes a tensor in axis ``a``'s
    ``must_reuse``:  ``on[d, a] => factor_d == 1``  (``d`` is then not split
    on ``a``; an unsplit dimension sits on axis 0 and constrains nothing).
    One guard literal per axis names the family in an infeasibility core.
    """
    w = enc.problem.workload
    lv = enc.problem.architecture.levels[enc.spatial_level]
    for a, axis in enumerate(axes(enc)):
        shared = [t for t in w.tensor_names if axis.must_share(t, w.is_output(t))]
        banned = [d for d in split_dims(enc) if (d, a) in enc.on_axis and any(d in w.tensor(t).dims for t in shared)]
        if not banned:
            continue
        guard = enc.model.new_bool_var(f"must_reuse_{axis.name}")
        enc.guards[f"must_reuse of mesh axis {axis.name} of {lv.name}"] = guard
        for d in banned:
            on = enc.on_axis[(d, a)]
            when = [guard] if on is True else [guard, on]
            factor = enc.factor[d]
            if not factor.is_const:
                enc.model.add(factor.expr == 1).only_enforce_if(when)
            elif int(factor.expr) > 1:  # always split: never on this axis
                enc.model.add_bool_or([negate(x) for x in when])


def _as_bool(enc: Encoding, q: Q, stem: str):
    b = enc.model.new_bool_var(stem)
    enc.model.add(q.expr == 1).only_enforce_if(b)
    enc.model.add(q.expr == 0).only_enforce_if(~b)
    return b


def reuse_literal(enc: Encoding, d: str, tensor: str) -> Literal:
    """True when ``d``'s mesh axis may reuse ``tensor`` (multicast / in-network reduction)."""
    w = enc.problem.workload
    is_out = w.is_output(tensor)
    mesh = axes(enc)
    if not mesh:
        return True
    lits = [enc.bool_and([enc.on_axis[(d, a)]], f"{d}_axis{a}") for a, ax in enumerate(mesh)
            if (d, a) in enc.on_axis and ax.reuses(tensor, is_out)]
    return enc.bool_or(lits, f"{d}_reuses_{tensor}")


def views(enc: Encoding, tensor: str, level: int, link: int, purpose: str) -> dict:
    """Per split dimension, how its pieces count for ``tensor``'s buffer at ``level`` on the link into ``link``.

    ``purpose``: ``"words"`` (inputs down, outputs up), ``"back"`` (output
    partial sums down: only the lowest instance of a reduction group reloads,
    on every link, docs/spatial.md replay decision 5) or ``"time"`` (the
    busiest copy of a per-instance link).
    """
    s = enc.spatial_level
    if s is None or level < s:
        return {}
    relevant = enc.problem.workload.tensor(tensor).dims
    out: dict = {}
    for d in split_dims(enc):
        if link > s and purpose != "back":
            out[d] = "rep" if purpose == "time" else "sum"
        elif d in relevant:
            out[d] = "sum"
        else:
            lit = reuse_literal(enc, d, tensor)
            out[d] = "rep" if lit is True else "sum" if lit is False else lit
    return out


def representative(enc: Encoding) -> dict:
    return {d: "rep" for d in split_dims(enc)}


def total(enc: Encoding) -> dict:
    return {d: "sum" for d in split_dims(enc)}


__all__ = ["meshed_level", "max_factor", "add_mesh_factors", "add_must_reuse", "views", "representative", "total", "negate"]
