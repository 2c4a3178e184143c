"""Spatial splits of the tile chains: part extents at every meshed level, counted per instance view.

At each meshed level ``s`` a chain may cut each level-``(s-1)`` piece ``x``
into parts of extent ``P_s`` (``T_s <= P_s <= T_{s-1}``; ``P_s = T_{s-1}`` is
"not split"), one part per instance along a mesh axis, by the contract's
split-with-remainder rule: digit ``q`` gets ``e_q(x) = clip(x - q*P_s, 0,
P_s)``. The *factor* is ``ceil(T_{s-1} / P_s)``, the parts of a full parent
piece, at most the level's largest mesh axis. Parts need not divide
anything: the last instances may get smaller or no parts.

What the model reads of a dimension below a split is a *view* per
meshed level, the representative instance (``"rep"``) or the sum over
instances (``"sum"``); the tables of every view are
:mod:`mapsearch.model.spatial_views`' (the cost is per class of instances
that do the same work, a few per split, whatever the instance count).

Which parts are enumerated per meshed level: the widest combination of
part families within the row limits (model/part_families.py). A filter window's
dimension gets every part at every level within :data:`WINDOW_ROWS_LIMIT`
and :data:`WINDOW_CLASSES_LIMIT` (its link copies' classes, each a view
``"cls<c>"``: :func:`copy_classes`), else :data:`EQUAL_PARTS` above L0
(:func:`equal_part_choices`) and the widest family within
:data:`WINDOW_ROWS_LIMIT` at L0.
``parts_family`` names what was cut per level (a family restriction of the
result unless every level has :data:`ALL_PARTS`).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from mapsearch.model.part_families import (ALL_PARTS, EVEN_PARTS, _choice_counts, _parents, axis_sizes,
                                           choose_families, part_choices)
from mapsearch.model.spatial_views import (Pieces, all_view_tables, beyond_digit_zero, digit_classes, expanded_pieces,
                                          is_class_entry)

# A window dimension's parts above L0 (model/windows.py): every instance the same part of every parent piece.
EQUAL_PARTS = "equal parts only"
# A window dimension's split rows at L0, where its parts may be unequal, in every family. Its coincidence
# tables pair every row with every row of its partner, and CP-SAT slows with them: on eyeriss-like's
# ResNet-50 3x3 layers with the plain limits (p and q: 4,585 balanced parts of 56, 4,046 parts of 28)
# three of five layers ended 30 s with more words than with equal parts only (280 rows); with this limit
# (p of 56: even divisions, 424 rows; of 28: balanced parts) four end as with equal parts, conv5 with fewer words.
WINDOW_ROWS_LIMIT = 2_000
# A window dimension's parts above L0 may be unequal where every part at every level stays within
# WINDOW_ROWS_LIMIT and its classes of link copies (the digits of each class do the same work) number at most
# this, counted as the product over the levels above L0 of 1 + the classes beyond digit 0's: each combination
# of the window dimensions' classes is one more link time the model posts (model/residency.py).
WINDOW_CLASSES_LIMIT = 8
# The link copies the model times on their own below a split above L0 (model/spatial.copy_classes): the
# product over the window dimensions of their classes. Each is one more set of words per link: ResNet-50's
# window layers on tpu-v4i-like and simba-like have 16 to 64 (conv1 on tpu-v4i-like then built in 167 s
# instead of 17 s), so they keep equal parts; a 1-D window, or a 2-D one with one dimension split unequally,
# has at most 4.
WINDOW_COPIES_LIMIT = 4

# ----------------------------------------------------------------------------- which parts
def _common_divisor(pieces: Pieces) -> np.ndarray:
    """Per row, the gcd of the extents of the pieces present (0 when none)."""
    rows = pieces[0][0].shape[0]
    common = np.zeros(rows, dtype=np.int64)
    for size, count in pieces:
        common = np.gcd(common, np.where(count > 0, size, 0))
    return common


# ----------------------------------------------------------------------------- equal parts
def _uniform_above(tiles: np.ndarray, extent: int, parts: dict[int, np.ndarray], s: int) -> np.ndarray:
    """Per row: every level-``(s-1)`` piece of instance 0's tree has extent ``T_{s-1}``.

    ``parts``: the part per row at the meshed levels above ``s`` (the parent
    tile where unsplit), themselves equal parts. Going down, a level's
    pieces stay all equal exactly when its tile divides their parent (the
    part, at a split).
    """
    ok = np.ones(tiles.shape[0], dtype=bool)
    parent = np.full(tiles.shape[0], extent, dtype=np.int64)
    for m in range(1, s):
        parent = parts.get(m, parent)
        ok &= parent % tiles[:, m - 1] == 0
        parent = tiles[:, m - 1]
    return ok


def equal_part_choices(tiles: np.ndarray, extent: int, s: int, max_factor: int,
                       above: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(row, part)`` pairs of :data:`EQUAL_PARTS` at level ``s`` and whether every part would have been one.

    A part ``P`` with ``T_s <= P < T_{s-1}`` and factor at most ``max_factor``
    is *equal* when every level-``(s-1)`` piece of instance 0's tree is
    ``T_{s-1}`` and ``P`` divides it: then every instance gets ``P`` of every
    parent piece, so every instance's tree along the dimension is instance
    0's (docs/spatial.md, "Split windows over mesh axes"). The flag is False
    when some row has a legal part that is not equal (the family
    restriction can matter).
    """
    parent = _parents(tiles, extent, s)
    inner = tiles[:, s - 1]
    rows, parts = part_choices(parent, inner, max_factor, EVEN_PARTS, parent)
    ok = _uniform_above(tiles, extent, above, s)[rows]
    rows, parts = rows[ok], parts[ok]
    every = _choice_counts(tiles, extent, s, max_factor, ALL_PARTS, parent)
    return rows, parts, bool(np.array_equal(every, np.bincount(rows, minlength=tiles.shape[0])))


# ----------------------------------------------------------------------------- the chains
def spatial_quantities(q: dict, spatial: tuple[tuple[int, int], ...], footprints, block: int,
                       window: bool = False, unequal_above: bool = True) -> dict:
    """Add a part per meshed level to every chain: one row per (chain, parts); the unsplit part is the parent.

    ``spatial``: ``(level, largest mesh axis)`` per meshed level, outermost
    first. The rows gain ``parts``/``factors`` (one column per meshed level)
    and ``flavoured``: the tables of every view, keyed by a tuple of
    ``"rep"``/``"sum"`` per meshed level. ``window`` (a filter window's
    dimension, docs/spatial.md "Split windows over mesh axes"): every part
    at every level where those rows stay within :data:`WINDOW_ROWS_LIMIT`
    and the classes of digits above L0 within
    :data:`WINDOW_CLASSES_LIMIT` (each class of a link copy is then a view
    too, ``"cls<c>"``: model/window_types.py); otherwise
    :data:`EQUAL_PARTS` at every meshed level but the innermost level (the
    family is named :data:`ALL_PARTS` at a level where it leaves no part
    out), the widest family within the row limits there (so too with
    ``unequal_above=False``: model/build.py keeps equal parts where the
    classes of every window dimension together pass
    :data:`WINDOW_COPIES_LIMIT`).
    """
    if window and unequal_above:
        unequal = _with_parts(q, spatial, footprints, block, window=True, unequal=True)
        if unequal is not None:
            return unequal
    return _with_parts(q, spatial, footprints, block, window=window, unequal=False)


def _with_parts(q: dict, spatial, footprints, block: int, window: bool, unequal: bool) -> dict | None:
    """:func:`spatial_quantities` with a window dimension's parts above L0 unequal (``unequal``; None where the
    rows or the classes pass their limits) or equal."""
    tiles, extent = q["tiles"], q["extent"]
    levels = [entry[0] for entry in spatial]
    commons = [_common_divisor(q["pieces"][s - 1]) for s in levels]
    if unequal:
        families = list(choose_families(tiles, extent, spatial, commons, (WINDOW_ROWS_LIMIT, 0)))
        if any(f != ALL_PARTS for f in families):
            return None
    elif window:
        families = [EQUAL_PARTS] * len(levels)
    else:
        families = list(choose_families(tiles, extent, spatial, commons))
    sel = np.arange(tiles.shape[0])
    part_cols: list[np.ndarray] = []
    split_rows = 0
    for lv, (entry, family) in enumerate(zip(spatial, families)):
        s, mf = entry[0], entry[1]
        parent = _parents(tiles[sel], extent, s)
        if window and not unequal and s == tiles.shape[1]:  # no link below: any part is exact (model/windows.py)
            family = families[lv] = choose_families(tiles[sel], extent, (entry,), (commons[lv][sel],),
                                                    (WINDOW_ROWS_LIMIT, WINDOW_ROWS_LIMIT))[0]
        if family == EQUAL_PARTS:
            above = {levels[n]: part_cols[n] for n in range(lv)}
            rows, parts, complete = equal_part_choices(tiles[sel], extent, s, mf, above)
            families[lv] = ALL_PARTS if complete else EQUAL_PARTS
        else:
            rows, parts = part_choices(parent, tiles[sel, s - 1], mf, family, commons[lv][sel], axis_sizes(entry))
        keep = np.concatenate([np.arange(sel.size), rows])
        part_cols = [c[keep] for c in part_cols] + [np.concatenate([parent, parts])]
        sel = sel[keep]
        split_rows = sel.size - tiles.shape[0]
    out = {k: (v[sel] if isinstance(v, np.ndarray) else v) for k, v in q.items() if k not in ("sums", "small", "pieces")}
    out["sums"] = {f: v[sel] for f, v in q["sums"].items()}
    out["small"] = {f: {k: v[sel] for k, v in d.items()} for f, d in q["small"].items()}
    out["pieces"] = [[(sz[sel], c[sel]) for sz, c in lv] for lv in q["pieces"]]
    part = np.stack(part_cols, axis=1)
    parents = np.stack([_parents(out["tiles"], extent, s) for s in levels], axis=1)
    out["parts"], out["factors"] = part, -(-parents // part)
    out["parts_family"] = tuple(families)
    out["part_levels"] = tuple(levels)
    out["part_rows"] = int(split_rows)
    by_level = {s: part[:, lv] for lv, s in enumerate(levels)}
    entries = [("rep", "sum")] * len(levels)
    if unequal:  # one class of digits per link copy below a meshed level above L0 (model/residency.py)
        copies = copy_classes(out["tiles"], extent, by_level, out["factors"])
        if math.prod(1 + len(c) for c in copies) > WINDOW_CLASSES_LIMIT:
            return None
        entries = [("rep", "sum") + tuple(f"cls{c}" for c in columns) for columns in copies]
    out["flavoured"] = all_view_tables(out["tiles"], extent, by_level, list(itertools.product(*entries)),
                                       footprints, block)
    return out


def class_entries(ch, lv: int) -> list[str]:
    """The ``"cls<c>"`` views of a dimension's chains at meshed level number ``lv`` that some chain row has digits
    in: the classes of its link copies there (model/spatial.copy_classes)."""
    table = ch.flavoured or {}
    return sorted({v[lv] for v in table if is_class_entry(v[lv]) and table[v]["counts"].any()})


def copies_of(chains: dict, link: int) -> int:
    """How many link copies the model times on the link into ``link`` for these chains (model/spatial.copy_classes):
    the product over the dimensions and meshed levels above the link of one plus their classes."""
    return math.prod(1 + len(class_entries(ch, lv)) for ch in chains.values() if ch.flavoured
                     for lv, s in enumerate(ch.part_levels) if s < link)


def _beyond_by_level(tiles: np.ndarray, extent: int, parts: dict[int, np.ndarray], factors: np.ndarray
                     ) -> list[np.ndarray | None]:
    """Per meshed level (outermost first), the ``(rows, class columns)`` mask of classes with digits beyond digit
    0 (spatial_views.beyond_digit_zero); None at the innermost level and where nothing is split."""
    depth = tiles.shape[1]
    out: list[np.ndarray | None] = []
    for lv, s in enumerate(sorted(parts)):
        if s == depth or int(factors[:, lv].max(initial=1)) <= 1:
            out.append(None)
            continue
        lowest, sizes = digit_classes(expanded_pieces(tiles, extent, parts, s - 1), parts[s], factors[:, lv])
        out.append(beyond_digit_zero(lowest, sizes) > 0)
    return out


def unequal_above(tiles: np.ndarray, extent: int, parts: dict[int, np.ndarray], factors: np.ndarray) -> np.ndarray:
    """Per row: at some meshed level above the innermost a digit outside digit 0's class has work, i.e. the
    row's parts there are unequal."""
    out = np.zeros(tiles.shape[0], dtype=bool)
    for mask in _beyond_by_level(tiles, extent, parts, factors):
        if mask is not None:
            out |= mask.any(axis=1)
    return out


def copy_classes(tiles: np.ndarray, extent: int, parts: dict[int, np.ndarray], factors: np.ndarray
                 ) -> list[tuple[int, ...]]:
    """Per meshed level (outermost first), the class columns of digits beyond digit 0 that some row has, at levels
    above the innermost; none at the innermost level."""
    return [() if mask is None else tuple(int(c) for c in np.flatnonzero(mask.any(axis=0)))
            for mask in _beyond_by_level(tiles, extent, parts, factors)]
