"""Tile extents: one choice of chain per dimension, and the exact per-dimension quantities.

Encodes ``choice[d] in [0, len(chains[d]))`` and, by element constraints,
``T_j = tiles[choice][j]``, ``N_j = counts[choice][j]`` and the piece sums of
:mod:`mapsearch.model.chains`. Every count there is exact for remainder
tiles, so everything built from these is exact too.
"""

from __future__ import annotations

import numpy as np

from mapsearch.model.chains import Footprint
from mapsearch.model.encoding import Encoding, Q
from mapsearch.model.footprints import footprint_values


def add_tile_choices(enc: Encoding) -> None:
    """``choice[d]`` per dimension; ``T_j`` and ``N_j`` for every level below the top."""
    J = enc.problem.depth
    for d, ch in enc.chains.items():
        n = len(ch)
        enc.choice[d] = 0 if n == 1 else enc.model.new_int_var(0, n - 1, f"chain_{d}")
        enc.count[(d, 0)] = Q.const(1)
        for j in range(1, J + 1):
            enc.tile[(d, j)] = enc.lookup(d, ch.tiles[:, j - 1], f"tile_L{j}")
            enc.count[(d, j)] = enc.lookup(d, ch.counts[:, j], f"pieces_L{j}")


def _table(enc: Encoding, d: str, view: tuple[str, ...] | None) -> dict:
    """The chain table of ``d`` seen plainly (``None``) or through a view: per meshed level, by the
    representative instance (``"rep"``) or summed over instances (``"sum"``), model/spatial_chains.py."""
    ch = enc.chains[d]
    if view is None or ch.flavoured is None:
        return {"counts": ch.counts, "sums": ch.sums, "small": ch.small, "calls": ch.calls}
    return ch.flavoured[view]


def piece_sum(enc: Encoding, d: str, f: Footprint, j: int, view: tuple[str, ...] | None = None) -> Q:
    """``sum over level-j pieces x of f(x)``."""
    key = ("sum", d, f, j, view)
    if key not in enc.cache:
        enc.cache[key] = enc.lookup(d, _table(enc, d, view)["sums"][f][:, j], f"sum_L{j}")
    return enc.cache[key]


def small_sum(enc: Encoding, d: str, f: Footprint, k: int, i: int, view: tuple[str, ...] | None = None,
              idle: bool = True) -> Q:
    """``sum over level-k pieces x <= T_i of f(x)``; for ``k == i`` every piece counts.

    ``idle=False`` leaves out the pieces still only while an instance idles (:func:`idle_sums`)."""
    if k == i:
        return piece_sum(enc, d, f, i, view)
    key = ("small", d, f, k, i, view, idle)
    if key not in enc.cache:
        table = _table(enc, d, view)["small"][f]
        col = table[(k, i)]
        if idle:
            col = col + sum((v for w, v in table.items() if len(w) == 3 and w[:2] == (k, i)), np.zeros_like(col))
        enc.cache[key] = enc.lookup(d, col, f"small_L{k}_{i}")
    return enc.cache[key]


def idle_sums(enc: Encoding, d: str, f: Footprint, k: int, i: int,
              view: tuple[str, ...] | None = None) -> list[tuple[tuple[int, ...], Q]]:
    """The still sums ``small_sum`` leaves out: pieces an instance idles through, per set of levels.

    ``(levels, sum)`` pairs (model/spatial_chains.py, ``Instance.single``):
    those pieces are still for an input, and for an output only when none of
    ``levels`` keeps it (a keeper there moves on while the instance idles,
    which flushes the instance's partial sums).
    """
    if k == i or view is None or enc.chains[d].flavoured is None:
        return []
    key = ("idle", d, f, k, i, view)
    if key not in enc.cache:
        table = _table(enc, d, view)["small"][f]
        masks = sorted(w[2] for w in table if len(w) == 3 and w[:2] == (k, i))
        enc.cache[key] = [(tuple(j for j in range(i) if bits >> j & 1),
                           enc.lookup(d, table[(k, i, bits)], f"idle_L{k}_{i}")) for bits in masks]
    return enc.cache[key]


def piece_count(enc: Encoding, d: str, j: int, view: tuple[str, ...] | None = None) -> Q:
    """``N_j``: level-``j`` pieces (``view``: per instance, see :func:`_table`)."""
    if view is None or enc.chains[d].flavoured is None:
        return enc.count[(d, j)]
    key = ("count", d, j, view)
    if key not in enc.cache:
        enc.cache[key] = enc.lookup(d, _table(enc, d, view)["counts"][:, j], f"pieces_L{j}_{'_'.join(view)}")
    return enc.cache[key]


def count_step(enc: Encoding, d: str, j: int, view: tuple[str, ...] | None = None) -> Q:
    """``N_j - N_{j-1}``: how many times the level-``j`` loop over ``d`` advances in the whole run."""
    key = ("step", d, j, view if enc.chains[d].flavoured is not None else None)
    if key not in enc.cache:
        c = _table(enc, d, view)["counts"]
        enc.cache[key] = enc.lookup(d, c[:, j] - c[:, j - 1], f"advances_L{j}")
    return enc.cache[key]


def footprint_at(enc: Encoding, d: str, f: Footprint, j: int) -> Q:
    """``f(T_j)``: the axis extent of the largest level-``j`` tile."""
    key = ("fp", d, f, j)
    if key not in enc.cache:
        tiles = enc.chains[d].tiles[:, j - 1]
        enc.cache[key] = enc.lookup(d, footprint_values(f, tiles), f"footprint_L{j}")
    return enc.cache[key]


def whole_at(enc: Encoding, d: str, j: int) -> Q:
    """1 when ``T_j = E_d`` (a single piece), else 0."""
    key = ("whole", d, j)
    if key not in enc.cache:
        enc.cache[key] = enc.lookup(d, (enc.chains[d].counts[:, j] == 1).astype(int), f"whole_L{j}")
    return enc.cache[key]


def calls_along(enc: Encoding, d: str, view: tuple[str, ...] | None = None) -> Q:
    """``sum over innermost pieces x of ceil(x / b_d)`` (per instance view where split)."""
    key = ("calls", d, view if enc.chains[d].flavoured is not None else None)
    if key not in enc.cache:
        enc.cache[key] = enc.lookup(d, _table(enc, d, view)["calls"], "calls")
    return enc.cache[key]


def single_trip(enc: Encoding, d: str, j: int):
    """Literal: the level-``j`` loop over ``d`` has one trip in every context (``N_j == N_{j-1}``)."""
    key = ("single", d, j)
    if key not in enc.cache:
        c = enc.chains[d].counts
        flags = (c[:, j] == c[:, j - 1]).astype(int)
        if flags.min() == flags.max():
            enc.cache[key] = bool(flags[0])
        else:
            lit = enc.model.new_bool_var(f"single_trip_{d}_L{j}")
            enc.model.add_element(enc.choice[d], flags.tolist(), lit)
            enc.cache[key] = lit
    return enc.cache[key]
