r"""The kernel of the coincidence tables of split filter windows (model/window_tables.py): per pair of a
row of advance types and a row of context types, ``sum m * n * [coincidence] * words`` over their types.

An advance type ``(x_b, x_a, m, gap)`` and a context type ``(reach, y_b, y_a, n)`` coincide iff
``se * gap == so * (reach - y_b)`` and ``se * x_b + so * y_b == se * x_a + so * y_a`` (the derivation:
window_tables.py's docstring); the interval then holds ``se (x_a - 1) + so (y_a - 1) + 1`` words.

The kernel never compares every pair of types of every pair of rows. With
coefficients ``se`` (advancing) and ``so`` (context) the two equalities
say that the advance type's *key* ``(se * gap, se * (x_a - x_b))`` equals
the context type's ``(so * (reach - y_b), so * (y_b - y_a))``, and the
words split into an advance and a context share, ``(se (x_a - 1) + 1) +
so (y_a - 1)``. So with, per row and key ``K``, ``A[r, K] = sum m`` and
``Aw[r, K] = sum m * (se (x_a - 1) + 1)`` over the row's advance types
with key ``K``, and ``B[c, K] = sum n``, ``Bw[c, K] = sum n * so (y_a - 1)``
over the column's context types,

    table = Aw @ B.T + A @ Bw.T

over the keys found on both sides (a key on one side alone, or a type
counted 0 times, adds nothing). It sums the pairwise terms, regrouped, in
int64, whose sums and products wrap alike in any order: the same table
bit for bit. Where the keys are too many for that to be cheaper, the
pairwise broadcast (:func:`_dense_kernel`) computes it.
"""

from __future__ import annotations

import numpy as np

from mapsearch.budget import checkpoint

# Entries of the (rows, columns, type, type) block computed at once.
_BLOCK = 1 << 24
# The dense form's cost per pair of types, in products over one key (measured, roughly).
_DENSE_PER_KEY = 8


def _kernel(advance, context, se: int, so: int, what: str, unit: bool = False) -> np.ndarray:
    """``table[row, col] = sum over types of m * n * [coincidence] * words``, one row per advance row, one
    column per context row: ``se * gap == so * (reach - y_b)`` and ``se * x_b + so * y_b == se * x_a + so * y_a``,
    words ``se * (x_a - 1) + so * (y_a - 1) + 1`` (module docstring; a composite context has ``so = 1``).

    A key match and two products over the keys (module docstring); the dense form where the keys are too
    many for the products to be cheaper. ``unit``: words 1 per coincidence (advance share 1, context 0)."""
    checkpoint(f"tabling the coincidences of {what} window chains")
    keys = _match_keys(advance, context, se, so)
    if keys is None:
        return _dense_kernel(advance, context, se, so, what, unit)
    (_, xa, m, _), (_, _, ya, n) = advance, context
    key_a, key_c, k = keys
    count_a, words_a = _by_key(key_a, k, m, np.ones_like(xa) if unit else se * (xa - 1) + 1)
    count_c, words_c = _by_key(key_c, k, n, np.zeros_like(ya) if unit else so * (ya - 1))
    return words_a @ count_c.T + count_a @ words_c.T


def _match_keys(advance, context, se: int, so: int):
    """Each advance and context type's key among the ``k`` keys found on both sides (``k`` where a type's key
    is found on one side only, or its count is 0): ``(key_a, key_c, k)``, or None where the dense form is cheaper.

    An advance type's key is ``(se * gap, se * (x_a - x_b))``, a context type's ``(so * (reach - y_b),
    so * (y_b - y_a))``: equal keys are the two equalities of a coincidence. Each pair is coded as one
    integer, ``first * span + second - low``, distinct for distinct pairs while it does not overflow."""
    xb, xa, m, gap = advance
    reach, yb, ya, n = context
    firsts = (se * gap, so * (reach - yb))
    seconds = (se * (xa - xb), so * (yb - ya))
    if not all(f.size for f in firsts):
        return None
    low = min(int(s.min()) for s in seconds)
    span = max(int(s.max()) for s in seconds) - low + 1
    if max(abs(int(f.min())) + abs(int(f.max())) for f in firsts) * span >= 1 << 62:
        return None
    code_a, code_c = (f * span + (s - low) for f, s in zip(firsts, seconds))
    key_a, key_c, k = _common_keys(code_a, m != 0, code_c, n != 0)
    if 2 * k > _DENSE_PER_KEY * xb.shape[1] * reach.shape[1]:
        return None
    return key_a, key_c, k


def _common_keys(code_a: np.ndarray, live_a: np.ndarray, code_c: np.ndarray, live_c: np.ndarray):
    """The codes found on both sides among the live ones (keys on one side alone match nothing, and a type
    counted 0 times adds nothing), numbered in increasing order: ``(key_a, key_c, k)``, each code's number
    or ``k`` where it is not one of the ``k`` common codes.

    Codes within a small range are looked up in a table over it, others by a search of the sorted common ones."""
    low = min(int(code_a.min()), int(code_c.min()))
    size = max(int(code_a.max()), int(code_c.max())) - low + 1
    if size > 4 * (code_a.size + code_c.size) + 4096:
        common = np.intersect1d(code_a[live_a], code_c[live_c])
        return _position(code_a, common), _position(code_c, common), common.size
    on_both = (np.bincount(code_a[live_a] - low, minlength=size) > 0) & (np.bincount(code_c[live_c] - low, minlength=size) > 0)
    k = int(on_both.sum())
    number = np.full(size, k, dtype=np.int64)
    number[on_both] = np.arange(k)
    return number[code_a - low], number[code_c - low], k


def _position(code: np.ndarray, common: np.ndarray) -> np.ndarray:
    """Each code's position in the sorted ``common``, or ``common.size`` where it is not there."""
    at = np.searchsorted(common, code)
    found = at < common.size
    found[found] = common[at[found]] == code[found]
    return np.where(found, at, common.size)


def _by_key(key: np.ndarray, k: int, count: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row and key: the sum of the counts of the row's types with that key, and of counts times words
    (types whose key matches nothing go to a column ``k``, dropped).

    One type column at a time: a row's entries in it are at one key each, so an indexed ``+=`` adds them all."""
    rows = np.arange(key.shape[0])
    counts = np.zeros((key.shape[0], k + 1), dtype=np.int64)
    weighted = np.zeros_like(counts)
    for t in range(key.shape[1]):
        counts[rows, key[:, t]] += count[:, t]
        weighted[rows, key[:, t]] += count[:, t] * words[:, t]
    return counts[:, :k], weighted[:, :k]


def _dense_kernel(advance, context, se: int, so: int, what: str, unit: bool = False) -> np.ndarray:
    """:func:`_kernel` by broadcasting every pair of types of every pair of rows (the straightforward form)."""
    xb, xa, m, gap = advance
    c, yb, ya, n = context
    rows, cols = xb.shape[0], c.shape[0]
    out = np.zeros((rows, cols), dtype=np.int64)
    per_row = max(1, cols * xb.shape[1] * c.shape[1])
    step = max(1, _BLOCK // per_row)
    for lo_row in range(0, rows, step):
        checkpoint(f"tabling the coincidences of {what} window chains")
        sl = slice(lo_row, lo_row + step)
        XB, XA, M, G = xb[sl, None, :, None], xa[sl, None, :, None], m[sl, None, :, None], gap[sl, None, :, None]
        C, YB, YA, N = c[None, :, None, :], yb[None, :, None, :], ya[None, :, None, :], n[None, :, None, :]
        same_start = se * G == so * (C - YB)
        same_length = se * XB + so * YB == se * XA + so * YA
        words = 1 if unit else se * (XA - 1) + so * (YA - 1) + 1
        out[sl] = np.sum(M * N * (same_start & same_length) * words, axis=(2, 3))
    return out
