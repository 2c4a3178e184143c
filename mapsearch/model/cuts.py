"""Cuts of the nest, and when a placed output buffer above a mesh flushes the idle instances below it.

Shared by ``model/placement.py`` (a buffer's words and region at a cut) and
``model/traffic.py`` (the idle pieces an output's keeper flushes), which
both read which loops lie outside a cut; kept apart from both so that
neither imports the other for it. The rules and their proofs:
docs/solver.md "Buffer placement" and docs/spatial.md "Buffer placement
above the mesh", point 3.
"""

from __future__ import annotations

from mapsearch.model.encoding import Encoding, Literal, negate
from mapsearch.model.order import before


def placed_dims(enc: Encoding, tensor: str) -> list[str]:
    """The active dimensions indexing ``tensor``, in workload order: those whose loops can cut its buffer."""
    active = enc.cache.get("active", ())
    return [d for d in enc.problem.workload.dims if d in active and d in enc.problem.workload.tensor(tensor).dims]


def outside_at_cut(enc: Encoding, tensor: str, c: int) -> tuple[int, dict[str, Literal]]:
    """The anchor level of cut ``c`` and, per placed dim, the literal 'its anchor-level loop is outside the buffer'."""
    dims = placed_dims(enc, tensor)
    r = len(dims)
    if c == 0:
        return 1, {d: False for d in dims}
    j, m = (c - 1) // r + 1, (c - 1) % r + 1
    if m == r:
        return j, {d: True for d in dims}
    key = ("outside", tensor, j, m)
    if key not in enc.cache:
        out = {}
        for d in dims:
            # rank_j(d) < m: fewer than m of the other placed dims are outer to d at level j.
            outer = [before(enc, j, e, d) for e in dims if e != d]
            fixed = sum(1 for o in outer if o is True)
            free = [o for o in outer if not isinstance(o, bool)]
            if fixed >= m:
                out[d] = False
            elif fixed + len(free) < m:
                out[d] = True
            else:
                lit = enc.model.new_bool_var(f"{tensor}_L{j}_{d}_within_{m}")
                enc.model.add(sum(free) <= m - 1 - fixed).only_enforce_if(lit)
                enc.model.add(sum(free) >= m - fixed).only_enforce_if(~lit)
                out[d] = lit
        enc.cache[key] = out
    return j, enc.cache[key]


def loop_outside(enc: Encoding, tensor: str, i: int, m: int, d: str) -> Literal:
    """Literal: the level-``m`` loop over ``d`` (a placed dim of ``tensor``) is outside the level-``i`` buffer.

    Its default cut ``i*r`` has it outside iff ``m <= i``; a cut ``(j-1)*r + m'`` has it outside iff
    ``m < j``, or ``m == j`` and ``d`` is among the first ``m'`` ``R`` loops of level ``j`` (cut 0: never).
    The buffer's region along ``d`` then moves whenever that loop advances (docs/spatial.md, "Buffer
    placement above the mesh", 3).
    """
    lits = enc.at.get((tensor, i)) if getattr(enc, "at", None) else None
    if not lits:
        return m <= i
    key = ("loop_outside", tensor, i, m, d)
    if key not in enc.cache:
        terms = []
        for c, at in lits.items():
            if c == 0:
                continue
            j, out = outside_at_cut(enc, tensor, c)
            if m < j:
                terms.append(at)
            elif m == j:
                terms.append(enc.bool_and([at, out[d]], f"{tensor}_L{i}_c{c}_{d}{m}_outside"))
        enc.cache[key] = enc.bool_or(terms, f"{tensor}_L{i}_{d}{m}_outside")
    return enc.cache[key]


def flush_class(enc: Encoding, tensor: str, levels: tuple[int, ...]) -> tuple:
    """What :func:`flushers` reads of a mask: its lowest level and its levels whose buffer keeps its default
    position. Masks of one class are flushed alike."""
    return min(levels), tuple(j for j in levels if not _placed(enc, tensor, j))


def unflushed(enc: Encoding, tensor: str, levels: tuple[int, ...], d: str) -> Literal:
    """Literal: no buffer of output ``tensor`` flushes the idle pieces of ``d`` with mask ``levels``
    (:func:`flushers`)."""
    key = ("unflushed", tensor, flush_class(enc, tensor, levels), d)
    if key not in enc.cache:
        enc.cache[key] = enc.bool_and([negate(x) for x in flushers(enc, tensor, levels, d)], f"{tensor}_unflushed")
    return enc.cache[key]


def _placed(enc: Encoding, tensor: str, j: int) -> bool:
    return bool(getattr(enc, "at", None)) and (tensor, j) in enc.at


def flushers(enc: Encoding, tensor: str, levels: tuple[int, ...], d: str) -> list[Literal]:
    """Literals, one of which holds exactly when an idle instance holding output ``tensor`` through
    remainders of ``d`` at ``levels`` (the mask of ``model/tiles.idle_sums``) is flushed.

    A keeper at a default position flushes it when it is kept at a level of the mask (docs/spatial.md,
    "Several meshed levels", fact 6). A placed buffer (above the mesh, every mask level is below it or
    its cut's loops) flushes it when kept with the outermost remainder's loop, over ``d`` at level
    ``min(levels)``, outside its cut (docs/spatial.md, "Buffer placement above the mesh", 3).
    """
    p = enc.problem
    out = []
    for j in range(p.home(tensor) + 1, p.depth + 1):
        kept = enc.kept[(tensor, j)]
        if kept is False:
            continue
        if _placed(enc, tensor, j):
            key = ("flushes", tensor, j, min(levels), d)
            if key not in enc.cache:
                enc.cache[key] = enc.bool_and([kept, loop_outside(enc, tensor, j, min(levels), d)],
                                              f"{tensor}_L{j}_flushes")
            out.append(enc.cache[key])
        elif j in levels:
            out.append(kept)
    return out
