"""User constraints on orders and stationarity, each guarded by its own literal.

An order ``[d1, d2, ...]`` at level ``j`` fixes ``before[j, d_a, d_b]`` for
``a < b`` (dimensions that never advance are skipped: their place changes
nothing). A stationary tensor ``X`` at level ``j`` requires that the
innermost loop that advances there (more than one trip) does not index ``X``.
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
    """The innermost loop that advances (more than one trip) at ``level`` does not index ``tensor``.

        for every active d in R_X:
            single[j,d] or OR_{e != d} (before[j,d,e] and not single[j,e])
    """
    from mapsearch.model.encoding import negate
    from mapsearch.model.tiles import single_trip

    guard = enc.model.new_bool_var(label)
    enc.guards[label] = guard
    relevant = enc.problem.workload.tensor(tensor).dims
    single = {d: single_trip(enc, d, level) for d in active}
    for d in active:
        if d not in relevant or single[d] is True:
            continue
        outer_to_advancing = [enc.bool_and([enc.before[(level, d, e)], negate(single[e])], f"{d}_outer_to_moving_{e}")
                              for e in active if e != d]
        lits = [l for l in outer_to_advancing + [single[d]] if l is not False]
        if any(l is True for l in lits):
            continue
        enc.model.add_bool_or(lits if lits else [~guard]).only_enforce_if(guard)
