"""Loop order per level as precedence literals.

``before[j, d, e]`` holds when, at level ``j``, the loop over ``d`` is outer to
the loop over ``e``. Only *active* dimensions (split somewhere) get
literals; pinned dimensions never advance, so their place is irrelevant and
they are decoded innermost. The literals form a strict total order:

    before[j,d,e] == not before[j,e,d]                  (antisymmetry)
    before[j,d,e] and before[j,e,g] -> before[j,d,g]    (transitivity)
"""

from __future__ import annotations

from itertools import permutations

from mapsearch.model.encoding import Encoding, Literal


def add_orders(enc: Encoding, active: tuple[str, ...]) -> None:
    J = enc.problem.depth
    dims = enc.problem.workload.dims
    for j in range(1, J + 1):
        for a in range(len(active)):
            for b in range(a + 1, len(active)):
                d, e = active[a], active[b]
                lit = enc.model.new_bool_var(f"L{j}_{d}_outer_to_{e}")
                enc.before[(j, d, e)] = lit
                enc.before[(j, e, d)] = ~lit
        for d, e, g in permutations(active, 3):
            enc.model.add_bool_or([~enc.before[(j, d, e)], ~enc.before[(j, e, g)], enc.before[(j, d, g)]])
        for d in dims:
            for e in dims:
                if d != e and (j, d, e) not in enc.before:
                    # A pinned dimension sits innermost; between two pinned ones, name order.
                    enc.before[(j, d, e)] = _fixed(d, e, active, dims)


def _fixed(d: str, e: str, active: tuple[str, ...], dims: tuple[str, ...]) -> bool:
    if d in active:
        return True
    if e in active:
        return False
    return dims.index(d) < dims.index(e)


def add_canonical_trivial_loops(enc: Encoding, active: tuple[str, ...], skip_levels: frozenset[int] = frozenset()) -> None:
    """A loop with one trip in every context may stand anywhere; put it outermost, in dimension order.

    ``single[j, d]`` holds when ``N_j[d] == N_{j-1}[d]`` (every parent piece
    gives one level-``j`` piece). Moving such a loop changes no visit, so
    fixing its place removes equivalent branches and loses no schedule:

        single[j,d] and not single[j,e]          -> before[j,d,e]
        single[j,d] and single[j,e] and d < e    -> before[j,d,e]

    "Dimension order" is the workload's, except that the shared dimensions
    of a fused stage come first, in the group's order: the stages' outer
    loops are tied (model/fusion.py), so every stage must put two
    single-trip shared loops the same way round whatever its own
    workload's order, else a schedule in which both have one trip at a
    level of the outer nest is lost when two stages list them differently.
    """
    from mapsearch.model.tiles import single_trip

    shared = enc.problem.shared_dims if enc.problem.fusion_level is not None else ()
    ranked = sorted(active, key=lambda d: shared.index(d) if d in shared else len(shared))  # stable
    for j in range(1, enc.problem.depth + 1):
        if j in skip_levels:
            continue  # the user fixed this level's order; keep it as written
        single = {d: single_trip(enc, d, j) for d in active}
        for a, d in enumerate(ranked):
            for b, e in enumerate(ranked):
                if d == e:
                    continue
                lit = enc.before[(j, d, e)]
                if single[d] is False:
                    continue
                cond = [single[d]] if single[d] is not True else []
                if a < b:
                    enc.model.add_bool_or([lit]).only_enforce_if(cond) if cond else enc.model.add_bool_or([lit])
                elif single[e] is not True:
                    enc.model.add_bool_or([lit, single[e]] if single[e] is not False else [lit]).only_enforce_if(cond) \
                        if cond else enc.model.add_bool_or([lit, single[e]] if single[e] is not False else [lit])


def before(enc: Encoding, j: int, d: str, e: str) -> Literal:
    return enc.before[(j, d, e)]


def decode_order(values: dict[tuple[int, str, str], bool], j: int, dims: tuple[str, ...]) -> tuple[str, ...]:
    """Outer -> inner: a dim is outer to as many dims as there are after it."""
    return tuple(sorted(dims, key=lambda d: -sum(values[(j, d, e)] for e in dims if e != d)))
