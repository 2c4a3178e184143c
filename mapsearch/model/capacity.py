"""Capacity per level: homes plus the largest tile of every kept tensor.

    occupancy[i] = sum_{X home at i} |X|
                 + sum_{X kept at i} buffers(X, i) * prod_{d in R_X} f_{X,d}(T_i[d])
                 <= capacity[i]

(with a searched position, ``T_i[d]`` reads the piece of the buffer's region
along ``d``: model/placement.py)

``buffers`` is 2 with double buffering when the tile is smaller than the
tensor (some ``d`` in ``R_X`` has ``T_i[d] < E_d``), else 1. The largest tile
is the first one, where every piece is whole, so this is the replay's peak.
Each level's constraint is guarded by a literal so an infeasible core can
name it.
"""

from __future__ import annotations

from mapsearch.model.encoding import Encoding, Q
from mapsearch.model.placement import buffer_region
from mapsearch.model.regions import region_of
from mapsearch.model.tiles import footprint_at, whole_at


def tile_words(enc: Encoding, tensor: str, i: int) -> Q:
    """Words of ``tensor``'s largest level-``i`` tile: per axis its footprint at the first (full) pieces."""
    return region_of(enc, tensor, lambda d, f: footprint_at(enc, d, f, i), f"tile_{tensor}_L{i}")


def home_words(enc: Encoding, i: int) -> int:
    """Words of the tensors homed whole at level ``i`` (fused intermediates hold a tile instead)."""
    p = enc.problem
    counted = p.homes_counted
    return sum(p.workload.tensor_words(t) for t in p.workload.tensor_names
               if p.home(t) == i and t not in p.fused and (counted is None or t in counted))


def add_capacity(enc: Encoding, constrain_up_to: int = -1) -> None:
    """Occupancy per level; constrained at levels deeper than ``constrain_up_to``.

    A fused group (model/fusion.py) passes its fusion level and constrains
    the levels it shares itself, summing its stages. A fused intermediate
    counts its level-``f`` tile in the stage that produces it.
    """
    p = enc.problem
    w = p.workload
    double = p.architecture.double_buffering
    for i, level in enumerate(p.architecture.levels):
        parts: list[Q] = [Q.const(home_words(enc, i))]
        if i > 0 and i == p.fusion_level:
            parts += [tile_words(enc, t, i) for t in p.fused if w.is_output(t)]
        if i > 0:
            for t in w.tensor_names:
                kept = enc.kept[(t, i)]
                if kept is False:
                    continue
                placed = buffer_region(enc, t, i)
                words = tile_words(enc, t, i) if placed is None else placed[0]
                if double:
                    access = w.tensor(t)
                    whole = [whole_at(enc, d, i) for d in w.dims if d in access.dims]
                    # 1 iff the buffer's region is the whole tensor
                    all_whole = enc.product(whole, f"whole_{t}_L{i}") if placed is None else placed[1]
                    twice = Q(2 - all_whole.expr, 2 - all_whole.hi, 2 - all_whole.lo) if not all_whole.is_const \
                        else Q.const(2 - int(all_whole.expr))
                    words = enc.product([words, twice], f"buffers_{t}_L{i}")
                parts.append(enc.select(kept, words, Q.const(0), f"held_{t}_L{i}"))
        occ = enc.total(parts)
        enc.occupancy[i] = occ
        if level.capacity is not None and i > constrain_up_to:
            guard = enc.model.new_bool_var(f"capacity_{level.name}")
            if occ.is_const:  # every tile is forced: the level fits or it never will
                if int(occ.expr) > level.capacity:
                    enc.model.add_bool_or([~guard])
            else:
                enc.model.add(occ.expr <= level.capacity).only_enforce_if(guard)
            enc.capacity_guard[i] = guard
            enc.guards[f"capacity of {level.name}"] = guard


def add_compute(enc: Encoding) -> None:
    """``calls = prod_d sum_{innermost pieces x of d} ceil(x / b_d)``; ``compute_time = busiest calls * t``.

    With a spatial split, ``calls`` sums over instances and the busiest
    instance (the representative) sets the compute time.
    """
    from mapsearch.model.tiles import calls_along

    from mapsearch.model.spatial import split_dims

    p = enc.problem
    split = set(split_dims(enc))
    enc.calls = enc.product([calls_along(enc, d, "sum" if d in split else None) for d in p.workload.dims], "calls")
    # All active instances do the same work in lockstep: the representative is the busiest.
    enc.busiest_calls = enc.product([calls_along(enc, d, "rep" if d in split else None) for d in p.workload.dims],
                                    "busiest_calls") if split else enc.calls
    t = int(p.architecture.compute.clocks_per_call * enc.scale)
    enc.compute_time = enc.scaled(enc.busiest_calls, t)
