r"""Split filter windows: a convolution input axis over two or more split dimensions, counted exactly.

An input axis ``h = sum_g c_g * d_g`` (a convolution's ``s*p + t*r``:
stride ``s``, dilation ``t``; or three and more dimensions, ``p + r + 2*u``)
whose dimensions are all split below the top holds, for pieces ``x_g`` of
its dimensions, the interval of ``sum_g c_g (x_g - 1) + 1`` words that
starts at ``sum_g c_g * d_g0``. :mod:`mapsearch.model.traffic` counts a
buffer's words as the words of every state of its prefix minus those of the
steps that change nothing (docs/solver.md, "Split filter windows", proves
each part):

- states: ``sum over tuples of pieces of sum_g c_g (x_g - 1) + 1
  = sum_g c_g F_g prod_{h != g} N_h + (1 - sum_g c_g) prod_g N_g`` (``F``:
  sum of piece extents, ``N``: number of pieces), a sum of per-dimension
  products (``s*F_p*N_r + t*N_p*F_r + (1-s-t)*N_p*N_r`` for two);
- a loop over none of the dimensions advances: the axis stays iff every
  loop of every dimension inside it makes one trip (resetting loops only
  move the interval back, so they cannot cancel): the same terms over the
  contexts with one trip (still sums of extents ``W`` and of counts);
- a loop of one of them, ``e``, advances: its piece goes from ``a`` to the
  adjacent ``a'`` while the others' loops inside it go from their last to
  their first piece of their context pieces ``c_g``. The interval is
  unchanged iff ``c_e x_b = sum_g c_g (|c_g| - y_b,g)`` and ``c_e x_b +
  sum_g c_g y_b,g = c_e x_a + sum_g c_g y_a,g`` (``x_b``, ``x_a``: ``e``'s
  last piece inside ``a`` and first inside ``a'`` at the buffer's level;
  ``y_b,g``, ``y_a,g``: ``g``'s last and first inside ``c_g``). These are
  the *coincidences*.

The coincidences depend on the dimensions' chains jointly.
model/window_tables.py counts them, weighted by the interval's words, for
every combination of chains, from the advancing dimension's advance types
and the others' context types (both exact, from the split-with-remainder
rule); the model reads the table by an element constraint on the joint
index of the chosen chains, ``choice_p * |chains of r| + choice_r`` for two
(:func:`joint_index`, :func:`coincidences`), and model/traffic.py
multiplies it by the other axes' still factors and the other dimensions'
counts, as it does for every step that changes nothing. The table of an
axis over three or more dimensions has one entry per combination of their
chains: above :data:`JOINT_TABLE_LIMIT` entries the axis is held whole
(all but its largest dimension), a named restriction.

In a fused group's stage the tables are the same: every advance they count
of a loop below the fusion level lies inside one sub-nest run, and those of
the loops at or above it are not read below it, where the runs start empty
(model/traffic.py's ``first_loop_level``; docs/solver.md, "Split windows in
a fused stage").

Split over mesh axes (docs/spatial.md, "Split windows over mesh axes"), a
two-dimension window's dimension may have unequal parts: a view summing a
split reads the table summed over that split's digits, one instance per
class of digits on its own tree, and a link copy below a split above L0
reads its own class (window_types.InstanceClasses; model/spatial.copy_classes).
Beyond the limits of model/spatial_chains.py its parts above L0 are equal
(a named restriction, :func:`mapsearch.model.family.spatial_restriction`);
an axis over three or more dimensions under a spatial fanout is held
whole (named).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from mapsearch.model.chains import enumerate_chains
from mapsearch.model.encoding import Encoding, Q
from mapsearch.model.problem import Problem, repeated_dims
from mapsearch.model.skew import box_windows, expands
from mapsearch.model.window_tables import coincidence_table, joint_table
from mapsearch.spec.workload import Workload

# Entries of an axis's joint coincidence table (one per combination of its dimensions' chains as
# enumerated, before pruning) above which an axis over three or more dimensions is held whole. Pruning
# compares every chain on every table it takes part in, and the model reads up to 2^(2k-1) element
# constraints per loop of each of the k dimensions. Measured (docs/solver.md, "Split filter windows"):
# I[p+r+u] with r = u = 3, p = 16 over 3 levels below the top (81,600 entries) builds in 4.7 s;
# p = 28 (406,000) in 20 s; p = 14 over 4 levels (535,500) in 126 s.
JOINT_TABLE_LIMIT = 100_000


@dataclass(frozen=True)
class Window:
    """An input axis over two or more dimensions of extent > 1: ``sum_g coeffs[g] * dims[g]``."""

    tensor: str
    dims: tuple[str, ...]
    coeffs: tuple[int, ...]
    # A box window (model/skew.box_windows): part of a skewed axis, inside its tensor's expanded region, whose
    # monomials read it by its span or one per interval (model/skew.window_key).
    box: bool = False

    def coeff(self, d: str) -> int:
        return self.coeffs[self.dims.index(d)]

    def others(self, d: str) -> tuple[str, ...]:
        """The window's dimensions other than ``d``, in the window's order."""
        return tuple(g for g in self.dims if g != d)


def find_windows(w: Workload) -> tuple[Window, ...]:
    """Every input axis indexed by two or more dimensions of extent > 1 (extent-1 terms add nothing)."""
    out = []
    for t in w.einsum.inputs:
        for ix in t.indices:
            live = [(d, c) for d, c in ix.terms if w.extent[d] > 1]
            if len(live) >= 2:
                out.append(Window(t.name, tuple(d for d, _ in live), tuple(c for _, c in live)))
    return tuple(out)


def held_whole_restriction(dims, why: str | None) -> str:
    """The family restriction of windows whose smaller dimensions ``dims`` are held whole (``why``: split_windows';
    None for an affine axis that is no window, an output's)."""
    why = why or "an affine axis of an output"
    return (f"filter windows held whole: {', '.join(dims)} ({why}; such an axis is split only along its largest "
            f"dimension)")


def split_windows(p: Problem, unit_dims: frozenset[str], extra_footprints
                  ) -> tuple[tuple[Window, ...], frozenset[str], str | None]:
    """``(windows split, pinned dims, why windows are held whole)`` for this problem.

    Windows are split wherever transfers are measured in words: one einsum
    (with a spatial fanout the dimensions of two-dimension windows are split
    over mesh axes, above L0 in equal parts only beyond the limits of
    model/spatial_chains.py: model/family.spatial_restriction) and every stage of a fused group
    (below the fusion level its buffers are emptied between sub-nest runs:
    model/traffic.py then reads no coincidence of a loop at or above that
    level, docs/solver.md "Split windows in a fused stage"). Under other
    measures every window is held whole (all but its largest dimension); an
    axis over three or more dimensions also under a spatial fanout and where
    its joint table would exceed :data:`JOINT_TABLE_LIMIT`
    (:func:`joint_entries`); a window over a dimension that also indexes
    another axis of its tensor (``I[p+r,p]``) is no window here: model/skew.py
    splits it, holding (a reason) only dimensions whose pieces its box does
    not determine (``I[p+r+u,p]``'s ``u``) or the whole window under other
    measures; and a window over a dimension such an axis pins. The reasons
    become a family restriction.
    """
    from mapsearch.model.spatial import meshed_levels

    w = p.workload
    found = find_windows(w)
    reasons: list[str] = []
    if found and (unit_dims or extra_footprints):
        reasons.append("measures other than words")
    windows = () if reasons else found
    crossed = skewed_windows(w, windows)
    # I[p+r,p]: split with its tensor's region expanded into monomials where the box determines the pieces
    # (model/skew.py); otherwise held whole, p's footprint then a product over two axes (model/problem.py).
    expanded = expands(p, unit_dims, extra_footprints)
    if any(win.tensor not in expanded or expanded[win.tensor] for win in crossed):
        reasons.append("a window dimension that also indexes another axis of its tensor")
    windows = tuple(win for win in windows if win not in crossed)
    windows += tuple(Window(name, tuple(d for d, _ in terms), tuple(c for _, c in terms), box=True)
                     for name, held in sorted(expanded.items()) if not held
                     for terms in box_windows(w.tensor(name), w))
    wide = [win for win in windows if len(win.dims) > 2]
    if wide and meshed_levels(p):
        reasons.append("an axis over three or more dimensions under a spatial fanout")
        windows = tuple(win for win in windows if len(win.dims) == 2)
    for win in (win for win in wide if win in windows):
        entries = joint_entries(p, win)
        if entries > JOINT_TABLE_LIMIT:
            reasons.append(f"the joint table of ({', '.join(win.dims)}) would have {entries:,} entries, "
                           f"over the limit of {JOINT_TABLE_LIMIT:,}")
            windows = tuple(x for x in windows if x != win)
    reason = "; ".join(reasons) or None
    while True:
        pinned = pinned_with_skew(p, windows, unit_dims, extra_footprints)
        kept = tuple(win for win in windows if not set(win.dims) & pinned)
        if kept == windows:
            return windows, pinned, reason
        windows = kept


def skewed_windows(w: Workload, windows: tuple[Window, ...]) -> list[Window]:
    """The windows among ``windows`` over a dimension that also indexes another axis of their tensor
    (``I[p+r,p]``): model/skew.py's skewed axes, not split with coincidence tables."""
    return [win for win in windows if set(win.dims) & set(repeated_dims(w.tensor(win.tensor)))]


def pinned_with_skew(p: Problem, windows: tuple[Window, ...], unit_dims: frozenset[str], extra_footprints
                     ) -> frozenset[str]:
    """The dimensions held whole: problem.pinned_dims with ``windows`` split and the skewed axes of the tensors
    model/skew.py expands tiled, plus what those hold so that their box determines their pieces."""
    from mapsearch.model.problem import pinned_dims

    w = p.workload
    expanded = expands(p, unit_dims, extra_footprints)
    skewed = [win for win in skewed_windows(w, find_windows(w)) if win.tensor in expanded]
    split = frozenset((win.tensor, frozenset(win.dims)) for win in windows + tuple(skewed))
    return pinned_dims(w, split) | frozenset(d for held in expanded.values() for d in held)


def joint_entries(p: Problem, win: Window) -> int:
    """Entries of ``win``'s joint coincidence table: the product of its dimensions' chain counts as enumerated
    for a window dimension without user tile limits (model/chains.py). The model's own chains, bounded by
    the user's limits and by L0's room, may differ a little; this count depends on the problem alone, so
    every part of the solver (build, explain) holds the same axes whole."""
    return math.prod(_window_chain_count(p.workload.extent[d], p.depth) for d in win.dims)


@lru_cache(maxsize=64)
def _window_chain_count(extent: int, depth: int) -> int:
    return len(enumerate_chains(extent, depth, ((0, 1), (1, 0)), window=True))


# --------------------------------------------------------------------------- the model

def joint_index(enc: Encoding, win: Window):
    """``sum_g choice_g * prod_{h after g} |chains of h|``: one index over the combinations of the window's chains
    (``choice_p * |chains of r| + choice_r`` for two)."""
    key = ("window_pair", win.dims)
    if key not in enc.cache:
        sizes = [len(enc.chains[d]) for d in win.dims]
        strides = [math.prod(sizes[g + 1:]) for g in range(len(sizes))]
        choices = [enc.choice[d] for d in win.dims]
        if all(isinstance(c, int) for c in choices):
            enc.cache[key] = sum(c * s for c, s in zip(choices, strides))
        else:
            stem = "pair" if len(win.dims) == 2 else "joint"
            var = enc.model.new_int_var(0, math.prod(sizes) - 1, f"{stem}_{'_'.join(win.dims)}")
            enc.model.add(var == sum(c * s for c, s in zip(choices, strides)))
            enc.cache[key] = var
    return enc.cache[key]


def simplified_view(enc: Encoding, d: str, view) -> tuple[object, Q | None]:
    """``(view', instances)``: a window dimension's view with ``"sum"`` read as ``"rep"`` at the meshed levels
    where every digit does digit 0's work, and the quantity (per chain, the digits summed there) that the
    coincidences of ``view'`` are multiplied by (None: 1). Views that differ only there share one table
    (window_types.InstanceClasses.simplified)."""
    from mapsearch.model.window_tables import instances_of

    if view is None:
        return None, None
    memo = enc.cache.setdefault("window_types", {})
    reduced, factor = instances_of(memo, enc.chains[d]).simplified(view)
    if factor is None:
        return reduced, None
    return reduced, enc.lookup(d, factor, f"window_instances_{d}")


def coincidences(enc: Encoding, win: Window, e: str, j: int, le: int, others: tuple[tuple[bool, int], ...],
                 views: tuple = (), unit: bool = False) -> Q:
    """The coincidence table of the chosen chains, as a quantity.

    ``e``'s level-``j`` loop advances, the buffer holding ``e``'s
    level-``le`` pieces; ``others``: per other dimension of the window, in
    its order, ``(outer, lo)``: its level-``j`` loop is outer to ``e``'s,
    and the buffer holds its level-``lo`` pieces. ``views``: per dimension
    of the window, in its order, the instances counted (model/spatial.py;
    None or empty: instance 0), two-dimension windows only. ``unit``: one per coincidence, not the
    interval's words (a box window read one per interval, model/skew.py).
    """
    from mapsearch.model.spatial import view_key

    rest = win.others(e)
    contexts = tuple((lo, min(j if outer else j - 1, lo)) for outer, lo in others)
    views = tuple(views) or (None,) * len(win.dims)
    view_of = dict(zip(win.dims, views))
    key = ("coincidences", win.dims, win.coeffs, e, j, le, contexts, tuple(view_key(v) for v in views), unit)
    if key in enc.cache:
        return enc.cache[key]
    memo = enc.cache.setdefault("window_types", {})
    if len(win.dims) == 2:
        (outer, lo), = others
        table = coincidence_table(enc.chains[e], enc.chains[rest[0]], win.coeff(e), win.coeff(rest[0]), j, le, lo,
                                  outer, memo, (view_of[e], view_of[rest[0]]), unit)
        if e != win.dims[0]:
            table = table.T  # rows: chains of the window's first dimension
    else:
        assert not unit, "box windows have two dimensions"
        assert all(v is None or all(x == "rep" for x in v) for v in views), \
            "an axis over three or more dimensions is held whole under a spatial fanout"
        table = joint_table(enc.chains[e], win.coeff(e), j, le,
                            [(enc.chains[g], win.coeff(g), k, lo) for g, (lo, k) in zip(rest, contexts)], memo)
        table = table.transpose([([e] + list(rest)).index(d) for d in win.dims])  # axes in the window's order
    values = table.ravel()
    lo_v, hi_v = int(values.min()), int(values.max())
    if lo_v == hi_v:
        q = Q.const(lo_v)
    else:
        index = joint_index(enc, win)
        if isinstance(index, int):
            q = Q.const(int(values[index]))
        else:
            var = enc.model.new_int_var(lo_v, hi_v, enc.name(f"coincide_{win.tensor}_{e}{j}"))
            enc.model.add_element(index, values.tolist(), var)
            q = Q(var, lo_v, hi_v)
    enc.cache[key] = q
    return q
