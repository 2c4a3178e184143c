"""The per-instance tables of chains split over meshed levels, every view at once (model/spatial_chains.py).

Instance ``q`` (one digit per split) walks its own tree (docs/spatial.md):
at a split it keeps its own part of each parent piece, then tiles it. What
the model reads of a dimension below a split is a *view*: per meshed level,
``"rep"`` (digit 0, whose part is the largest in every piece) or ``"sum"``
(summed over every digit). A view's tables are sums over the view's
instances of that instance's counts, footprint sums, still sums and calls,
vectorised over the chain rows. Digits that get the same part of every
parent piece do the same work, so the tables walk the lowest digit of each
such class and weigh it by the class's size: the cost is per class (a few
per split), whatever the instance count. Why these views are all the model
needs is proved in docs/spatial.md ("Several meshed levels").

Why every view at once (:func:`all_view_tables`): an instance is the same
tree in every view that walks it (a ``"rep"`` level walks the class of
digit 0, which a ``"sum"`` level walks too), and walking it is the costly
part, so each instance is walked once, on the rows where some view weighs
it, and every view adds its weight times the instance's quantities, in the
order a view-by-view walk would (so even the order of the idle keys is
the same). On the array presets this took the tables from seconds to a
fraction (issue 16).
"""

from __future__ import annotations

import itertools

import numpy as np

from mapsearch.model.footprints import footprint_values

Pieces = list[tuple[np.ndarray, np.ndarray]]  # (extent, count) per entry, one value per chain row


def cut(pieces: Pieces, t: np.ndarray) -> Pieces:
    """Split every piece into full pieces of ``t`` and a remainder (a tiling, or all the parts of a split)."""
    full_count = np.zeros_like(t)
    out = []
    for size, count in pieces:
        full = size // t
        rem = size - full * t
        full_count = full_count + count * full
        out.append((rem, count * (rem > 0)))
    return [(t, full_count)] + out


class Instance:
    """One instance (a digit per meshed level, per chain row) and the quantities of its own tree.

    Its tree cuts, at each level ``k``, every parent piece into its own part
    (at a meshed level) and then into tiles of ``T_k``; a piece belongs to it
    when it has a part below it (it is *active*).
    """

    def __init__(self, tiles: np.ndarray, extent: int, parts: dict[int, np.ndarray], digits: dict[int, np.ndarray]):
        self.tiles = tiles
        self.depth = tiles.shape[1]
        self.parts = parts
        # Digit q's part of a piece x is clip(x - q*P, 0, P): the offset q*P per meshed level, once.
        self.offsets = {k: digits[k] * parts[k] for k in parts}
        rows = tiles.shape[0]
        level: Pieces = [(np.full(rows, extent, dtype=np.int64), np.ones(rows, dtype=np.int64))]
        self.levels = [level]
        for k in range(1, self.depth + 1):
            level = cut([(self.own(x, k), c) for x, c in level], tiles[:, k - 1])
            self.levels.append(level)

    def own(self, x: np.ndarray, k: int) -> np.ndarray:
        """The instance's part of a level-``(k-1)`` piece at level ``k``'s split (the piece itself without one)."""
        if k not in self.parts:
            return x
        return np.minimum(np.maximum(x - self.offsets[k], 0), self.parts[k])

    def active(self, x: np.ndarray, k: int) -> np.ndarray:
        """Whether the instance has a part below a level-``k`` piece of extent ``x``.

        Parts and tiles are non-decreasing in the piece's extent, so it has one
        below the piece exactly when it has one below the piece's first
        (largest) tile: follow that one down.
        """
        for m in range(k + 1, self.depth + 1):
            x = np.minimum(self.own(x, m), self.tiles[:, m - 1])
        return x > 0

    def idle_from(self, x: np.ndarray, k: int) -> np.ndarray:
        """The first level below ``k`` where the instance has no part below a level-``k`` piece ``x`` (depth+1: none)."""
        first = np.full(x.shape, self.depth + 1, dtype=np.int64)
        for m in range(k + 1, self.depth + 1):
            x = np.minimum(self.own(x, m), self.tiles[:, m - 1])
            first = np.where((x <= 0) & (first > self.depth), m, first)
        return first

    def singles(self, x: np.ndarray, k: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Per level ``i`` below ``k``: the one level-``i`` piece of the instance below a level-``k`` piece of
        extent ``x`` (0 if it has several), and the levels whose keepers end its stillness (a bit mask, 0
        when nothing does).

        A tile cuts ``y`` into ``floor(y/T)`` full tiles and a remainder; the
        instance keeps one piece when ``y <= T``, or when there is one full
        tile and the instance has no part below the remainder. In the second
        case it idles in the level-``m`` remainder tile, keeping its region,
        unless it holds an output and a keeper of it at a level from ``m`` to
        just above the level ``l`` where the instance's part ends moves into
        the remainder (docs/spatial.md, "Replay decisions": the flush): the
        mask has the bits ``m .. min(l, i)-1`` of every such remainder. The
        path down to level ``i`` is the path down to ``i - 1`` and one more
        step, so every ``i`` is read off one walk.
        """
        out = {}
        idles = []  # (m, one_full, first idle level) of every remainder the instance may idle in
        for m in range(k + 1, self.depth + 1):
            y = self.own(x, m)
            t = self.tiles[:, m - 1]
            rem = y - t
            one_full = (y > t) & (y < 2 * t) & ~self.active(rem, m)
            if one_full.any():
                idles.append((m, one_full, self.idle_from(np.maximum(rem, 0), m)))
            x = np.where(y <= t, y, np.where(one_full, t, 0))
            mask = np.zeros(x.shape, dtype=np.int64)
            for level, full, idle in idles:
                mask |= np.where(full, (1 << np.minimum(idle, m)) - (1 << level), 0)
            y_m = np.where(self.active(x, m), x, 0)
            out[m] = (y_m, np.where(y_m > 0, mask, 0))
        return out


def digit_classes(zs: Pieces, part: np.ndarray, factor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Digits of a split that do the same work, per row: ``(lowest digit, digits in the class)`` per column.

    Digit ``q``'s part of a parent piece ``z`` is ``P`` when ``q < floor(z/P)``,
    ``z mod P`` when ``q == floor(z/P)`` and nothing after: between the
    breakpoints ``floor(z/P)`` and ``floor(z/P) + 1`` of every parent extent
    ``z`` (and 0, the factor) every digit has the same part of every parent
    piece, so the same tree (docs/spatial.md, as ``sim/spatial.split_classes``).
    Repeated breakpoints give empty classes (size 0). Column 0 is the class
    of digit 0 in every row.
    """
    cols = [np.zeros_like(part), factor]
    for z, count in zs:
        b = np.where(count > 0, z // part, factor)
        cols += [np.minimum(b, factor), np.minimum(b + 1, factor)]
    points = np.sort(np.stack(cols, axis=1), axis=1)
    return points[:, :-1], np.diff(points, axis=1)


def expanded_pieces(tiles: np.ndarray, extent: int, parts: dict[int, np.ndarray], level: int) -> Pieces:
    """Every instance's level-``level`` pieces together: each split cuts every part (the summed tree)."""
    rows = tiles.shape[0]
    pieces: Pieces = [(np.full(rows, extent, dtype=np.int64), np.ones(rows, dtype=np.int64))]
    for k in range(1, level + 1):
        if k in parts:
            pieces = cut(pieces, parts[k])
        pieces = cut(pieces, tiles[:, k - 1])
    return pieces


def view_tables(tiles: np.ndarray, extent: int, parts: dict[int, np.ndarray], view: dict[int, str],
                footprints, block: int) -> dict:
    """Counts ``N[k]``, footprint sums ``F[f][k]``, still sums ``W[f][(k, i)]`` and calls of one view.

    Each is the sum over the view's instances (digit 0 at a ``"rep"`` level,
    every digit at a ``"sum"`` level) of that instance's own quantity
    (``model/chains.py`` defines them for one tree; a piece counts where the
    instance is active, and a level-``k`` piece is still up to ``i`` when the
    instance has one level-``i`` piece below it). A piece still only
    because the instance idles through remainders is summed apart, under
    ``W[f][(k, i, mask)]`` (:meth:`Instance.singles`: an output's keeper at a
    level of ``mask`` flushes it).
    """
    levels = sorted(parts)
    name = tuple(view[s] for s in levels)
    return all_view_tables(tiles, extent, parts, [name], footprints, block)[name]


class _Tables:
    """The tables of several views being summed: one array per quantity, views x columns x rows.

    Rows last, so that adding an instance's quantities to a view that walks
    it is one contiguous operation per table, not a strided scatter per
    column (measured several times slower). Still sums of pieces an
    instance idles through are rare: a dict per view, in the order their
    keys appear (as a walk of that view alone adds them).
    """

    def __init__(self, views: list, rows: int, depth: int, footprints):
        self.views, self.rows, self.depth, self.footprints = views, rows, depth, footprints
        self.pairs = [(k, i) for i in range(1, depth + 1) for k in range(i)]
        self.counts = np.zeros((len(views), depth + 1, rows), dtype=np.int64)
        self.sums = {f: np.zeros((len(views), depth + 1, rows), dtype=np.int64) for f in footprints}
        self.still = {f: np.zeros((len(views), len(self.pairs), rows), dtype=np.int64) for f in footprints}
        self.calls = np.zeros((len(views), 1, rows), dtype=np.int64)
        self.idle = [{f: {} for f in footprints} for _ in views]

    @staticmethod
    def add(table: np.ndarray, views: np.ndarray, at, weights: np.ndarray, values: np.ndarray) -> None:
        """``table[view, :, at] += weight * values`` for each walking view and its weight (rows of ``at``)."""
        for view, weight in zip(views, weights):
            if isinstance(at, slice):
                table[view] += weight * values
            else:
                table[view][:, at] += weight * values

    def result(self) -> dict:
        """The tables per view, as :func:`view_tables` gives them (rows first)."""
        out = {}
        for n, v in enumerate(self.views):
            small = {f: {**{pair: self.still[f][n, p] for p, pair in enumerate(self.pairs)}, **self.idle[n][f]}
                     for f in self.footprints}
            out[v] = {"counts": np.ascontiguousarray(self.counts[n].T),
                      "sums": {f: np.ascontiguousarray(a[n].T) for f, a in self.sums.items()},
                      "small": small, "calls": self.calls[n, 0]}
        return out


# An instance working on more than this share of the rows is walked on all of them (its weights are 0
# elsewhere): adding whole rows is cheaper than gathering and scattering most of them.
_WHOLE_ROWS = 0.5


def all_view_tables(tiles: np.ndarray, extent: int, parts: dict[int, np.ndarray], views, footprints,
                    block: int) -> dict[tuple[str, ...], dict]:
    """:func:`view_tables` of each of ``views`` (a ``"rep"``/``"sum"``/``"cls<c>"`` per meshed level, outermost
    first).

    Every class combination of the meshed levels is one instance; a view
    walks those whose class at each ``"rep"`` level is digit 0's (column 0
    of :func:`digit_classes`) and at each ``"cls<c>"`` level column ``c``
    (one instance of that class: a link copy's, model/window_types.py),
    weighted by the product of the class sizes at its ``"sum"`` levels. Each instance is walked once, on the rows some view
    weighs it at, and each view adds its share in the order a walk of that
    view alone would.
    """
    rows, depth = tiles.shape
    levels = sorted(parts)
    views = [tuple(v) for v in views]
    factors = {s: -(-(np.full(rows, extent) if s == 1 else tiles[:, s - 2]) // parts[s]) for s in levels}
    summed = {s: digit_classes(expanded_pieces(tiles, extent, parts, s - 1), parts[s], factors[s])
              for lv, s in enumerate(levels) if any(v[lv] != "rep" for v in views)}
    out = _Tables(views, rows, depth, footprints)
    # Rows where a class has digits (size > 0), per summed level and column: a combination's instance
    # does work only where every class off digit 0's has digits (each view sums those levels).
    has_digits = {s: summed[s][1] > 0 for s in summed}
    every_row = np.ones(rows, dtype=bool)
    for combo in itertools.product(*(range(summed[s][0].shape[1]) if s in summed else range(1) for s in levels)):
        support = every_row
        for s, c in zip(levels, combo):
            if c:
                support = support & has_digits[s][:, c]
        on_rows = np.flatnonzero(support)
        if on_rows.size == 0:
            continue
        if on_rows.size > _WHOLE_ROWS * rows:
            on_rows = np.arange(rows)
        walking, weights = [], []
        for n, v in enumerate(views):
            if any(v[lv] != "sum" and c != class_column(v[lv]) for lv, c in enumerate(combo)):
                continue  # a rep level walks digit 0's class only, a class level its class
            weight = np.ones(on_rows.size, dtype=np.int64)
            for lv, (s, c) in enumerate(zip(levels, combo)):
                if v[lv] == "sum":
                    weight = weight * summed[s][1][on_rows, c]
                elif v[lv] != "rep":  # one class: one of its instances, where it has digits beyond digit 0
                    weight = weight * beyond_digit_zero(summed[s][0][on_rows, c], summed[s][1][on_rows, c])
            if weight.any():
                walking.append(n)
                weights.append(weight)
        if not walking:
            continue
        digits = {s: (summed[s][0][on_rows, c] if s in summed else np.zeros(on_rows.size, dtype=np.int64))
                  for s, c in zip(levels, combo)}
        inst = Instance(tiles[on_rows], extent, {s: p[on_rows] for s, p in parts.items()}, digits)
        at = slice(None) if on_rows.size == rows else on_rows
        _add_instance(inst, at, np.array(walking), np.stack(weights), out, block)
    return out.result()


def is_class_entry(entry: object) -> bool:
    """A view entry that walks one class of digits alone (``"cls<c>"``: a link copy's, model/spatial.copy_classes)."""
    return isinstance(entry, str) and entry.startswith("cls")


def class_column(entry: str) -> int:
    """The class column a ``"rep"`` (0) or one-class entry (``"cls<c>"``) walks alone."""
    return 0 if entry == "rep" else int(entry[3:])


def beyond_digit_zero(lowest: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """1 where a class column of :func:`digit_classes` has digits other than digit 0 (its lowest digit is above
    0), else 0. A row whose parent pieces are all smaller than the part puts digit 0 in a later column (column
    0 is then empty); that column is the ``rep`` view's instance there, not a class of its own."""
    return ((sizes > 0) & (lowest > 0)).astype(np.int64)


def _add_instance(inst: Instance, at, walking: np.ndarray, weights: np.ndarray, out: _Tables, block: int) -> None:
    """Add one instance's quantities, times each walking view's weight (a row each), at rows ``at``.

    The instance's own quantities are summed over its pieces first, then
    weighed once per view (integer sums: the same as weighing every piece).
    A view's weight is a product of class sizes, never negative, so a row's
    term is positive exactly where its weight and the instance's term are.
    """
    depth, n = inst.depth, inst.tiles.shape[0]
    pair_index = {pair: p for p, pair in enumerate(out.pairs)}
    counts = np.zeros((depth + 1, n), dtype=np.int64)
    sums = {f: np.zeros((depth + 1, n), dtype=np.int64) for f in out.footprints}
    still_sums = {f: np.zeros((len(out.pairs), n), dtype=np.int64) for f in out.footprints}
    for k, level in enumerate(inst.levels):
        for size, count in level:
            present = count * inst.active(size, k)
            if not present.any():
                continue  # no such piece on any row (a remainder where the tile divides): adds nothing
            below = inst.singles(size, k) if k < depth else {}
            counts[k] += present
            for f in out.footprints:
                sums[f][k] += present * footprint_values(f, size)
                for i, (y, mask) in below.items():
                    still = present * ((y > 0) * footprint_values(f, y))
                    still_sums[f][pair_index[(k, i)]] += np.where(mask == 0, still, 0)
                    idle = (mask > 0) & (still > 0)
                    if not idle.any():
                        continue
                    for view, weight in zip(walking, weights):
                        idle_masks = mask[idle & (weight > 0)]
                        for bits in np.flatnonzero(np.bincount(idle_masks)) if idle_masks.size else ():
                            column = out.idle[view][f].setdefault((k, i, int(bits)), np.zeros(out.rows, dtype=np.int64))
                            column[at] += np.where(mask == bits, weight * still, 0)
    out.add(out.counts, walking, at, weights, counts)
    for f in out.footprints:
        out.add(out.sums[f], walking, at, weights, sums[f])
        out.add(out.still[f], walking, at, weights, still_sums[f])
    out.add(out.calls, walking, at, weights, sum(c * (-(-x // block)) for x, c in inst.levels[-1])[None, :])
