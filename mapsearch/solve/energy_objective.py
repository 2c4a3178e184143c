"""``--objective energy`` from the architecture's energy model (mapsearch/spec/energy.py).

Built from the encoding's own quantities, nothing else: the words of each
tensor on each link (``link_tensor_down``/``up``), the ``kept`` literals, the
op calls and the time. A word of ``t`` moving down the link into level ``j``
is a read at ``j-1`` and a write at ``j``, each only where ``t`` is held
(its home, or kept); moving up it is a read at ``j`` and a write at ``j-1``.
Where holding is a decision, ``held * words`` is a new variable equal to the
words when held, else 0. An op call costs ``mac * prod(block)``; leakage per
clock (every instance of every level and compute) times the time.

The objective is scaled to integers by the least common multiple of the
costs' denominators (the time is already scaled by the encoding's
``scale``); :func:`energy_terms` returns the expression and that scale.
"""

from __future__ import annotations

import math
from fractions import Fraction

from mapsearch.model.encoding import Encoding, Q
from mapsearch.spec.energy import EnergyModel, leakage_per_clock

__all__ = ["energy_terms"]

_LIMIT = 2**62


def energy_terms(enc: Encoding, model: EnergyModel) -> tuple[object, int]:
    """``(integer linear expression, scale)``: the schedule's energy is ``expression / scale``."""
    p = enc.problem
    arch = p.architecture
    names = p.workload.tensor_names
    per_level = [model.level(lv.name) for lv in arch.levels]
    terms: list[tuple[Fraction, Q]] = []  # (cost, quantity)
    for t in names:
        home = p.home(t)
        for j in enc.link_time:  # j: the child level of the link
            down, up = enc.link_tensor_down[(t, j)], enc.link_tensor_up[(t, j)]
            above, below = per_level[j - 1], per_level[j]
            for words, at_above, at_below in ((down, above.read, below.write), (up, above.write, below.read)):
                for level, cost in ((j - 1, at_above), (j, at_below)):
                    if cost:
                        terms.append((cost, _held(enc, t, level, home, words)))
    block = math.prod(b for _, b in arch.compute.block)
    costs = [c for c, _ in terms]
    mac = model.mac * block
    leak = leakage_per_clock(model, arch) / enc.scale  # enc.time counts clocks * scale
    k = math.lcm(*[c.denominator for c in costs + [mac, leak]])
    expr: object = 0
    high = 0
    for c, q in terms:
        expr = expr + int(c * k) * q.expr
        high += int(c * k) * q.hi
    if mac:
        expr = expr + int(mac * k) * enc.calls.expr
        high += int(mac * k) * enc.calls.hi
    if leak:
        expr = expr + int(leak * k) * enc.time.expr
        high += int(leak * k) * enc.time.hi
    if high >= _LIMIT:
        from mapsearch.model.problem import UnsupportedProblem

        raise UnsupportedProblem(f"the energy model's costs need a scale of {k} to be integers, which overflows the "
                                 f"solver's 64-bit objective; give the energies in a coarser unit")
    return expr, k


def _held(enc: Encoding, t: str, level: int, home: int, words: Q) -> Q:
    """``words`` where level ``level`` holds ``t`` (its home or a buffer), else 0."""
    if level == home:
        return words
    if level < home:
        return Q.const(0)
    return enc.select(enc.kept[(t, level)], words, Q.const(0), f"held_{t}_{level}")
