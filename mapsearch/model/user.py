"""User constraints on orders and stationarity, each guarded by its own literal.

An order ``[d1, d2, ...]`` at level ``j`` fixes ``before[j, d_a, d_b]`` for
``a < b`` (dimensions that never advance are skipped: their place changes
nothing). A stationary tensor ``X`` at level ``j`` requires that the
innermost advancing loop there does not index ``X``:

    for every active d in R_X:  OR_{e active, e != d} before[j, d, e]
"""

from __future__ import annotations

from mapsearch.model.encoding import Encoding


def add_orders_fixed(enc: Encoding, level: int, dims: tuple[str, ...], active: tuple[str, ...], label: str) -> None:
    listed = [d for d in dims if d in active]
    guard = enc.model.new_bool_var(label)
    enc.guards[label] = guard
    for a in range(len(listed)):
        for b in range(a + 1, len(listed)):
            enc.model.add_bool_or([enc.before[(level, listed[a], listed[b])]]).only_enforce_if(guard)


def add_stationary(enc: Encoding, tensor: str, level: int, active: tuple[str, ...], label: str) -> None:
    guard = enc.model.new_bool_var(label)
    enc.guards[label] = guard
    relevant = enc.problem.workload.tensor(tensor).dims
    for d in active:
        if d in relevant:
            others = [enc.before[(level, d, e)] for e in active if e != d]
            if others:
                enc.model.add_bool_or(others).only_enforce_if(guard)
            else:
                enc.model.add_bool_or([~guard])
