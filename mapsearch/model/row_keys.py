"""Exact comparison of table rows by a verified 64-bit hash, read column by column (model/dominance.py, windows.py).

The chain tables the pruning compares are wide (up to some 160 columns
with the views of three meshed levels) and tall (some 200,000 rows on the
array presets). Building them as one matrix, then sorting whole rows
(``np.unique(axis=0)``) or comparing neighbours, took seconds per dimension
(issue 16). Here a table is a list of 1-D columns that is never
concatenated: a hash is summed column by column, rows are sorted by it,
and neighbours with equal hashes are compared column by column on those
pairs only, so a hash collision can never make two different rows equal.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np


def columns_of(blocks: Iterable) -> list[np.ndarray]:
    """The 1-D columns of ``blocks`` (1-D arrays, 2-D arrays by column, lists of 1-D arrays), in order."""
    out: list[np.ndarray] = []
    for b in blocks:
        if isinstance(b, (list, tuple)):
            out += list(b)
        elif b.ndim == 1:
            out.append(b)
        else:
            out += [b[:, j] for j in range(b.shape[1])]
    return out


def varying(columns: list[np.ndarray]) -> list[np.ndarray]:
    """The columns that are not the same in every row (the others tell no row from another)."""
    return [c for c in columns if c.size and bool(np.any(c != c[0]))]


def digest(columns: list[np.ndarray], seed: int, rows: int) -> np.ndarray:
    """``sum_c w_c * column_c`` modulo 2^64 (int64 wraps), with random odd weights ``w_c`` drawn from ``seed``.

    The same value as ``(np.stack(columns, 1) * w).sum(1)``: addition modulo
    2^64 does not depend on the order of the terms.
    """
    weights = np.random.default_rng(seed).integers(1, 2**62, size=len(columns), dtype=np.int64) | 1
    out = np.zeros(rows, dtype=np.int64)
    term = np.empty(rows, dtype=np.int64)
    with np.errstate(over="ignore"):
        for c, w in zip(columns, weights):
            np.multiply(c, w, out=term, casting="unsafe")
            out += term
    return out


def differs_from_previous(columns: list[np.ndarray], order: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Per position ``r`` of ``order``: row ``order[r]`` differs from row ``order[r-1]`` in some column (True at 0).

    ``hashes``: any function of the row's columns (equal rows, equal
    hashes), so only neighbours with equal hashes are compared.
    """
    h = hashes[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = h[1:] != h[:-1]
    same_hash = np.flatnonzero(~new[1:]) + 1
    if same_hash.size:
        a, b = order[same_hash], order[same_hash - 1]
        differ = np.zeros(same_hash.size, dtype=bool)
        for c in columns:
            differ |= c[a] != c[b]
        new[same_hash] = differ
    return new


def row_groups(columns: list[np.ndarray], rows: np.ndarray) -> list[np.ndarray]:
    """The rows ``rows`` (an index into the columns) grouped by equal columns, as positions into ``rows``.

    Each group lists its positions in increasing order, as a stable sort of
    ``np.unique(table[rows], axis=0, return_inverse=True)[1]`` would (the
    groups come in another order). Should a hash collision ever put two
    different values into one run of equal hashes, the exact sort is taken.
    """
    if rows.size == 0:
        return []
    columns = varying(columns)
    if not columns:
        return [np.arange(rows.size)]
    hashes = digest(columns, 2024, columns[0].size)
    order = np.argsort(hashes[rows], kind="stable")
    new = differs_from_previous(columns, rows[order], hashes)
    h = hashes[rows[order]]
    if np.any(new[1:] != (h[1:] != h[:-1])):  # a collision: different rows in one run of equal hashes
        _, inverse = np.unique(np.stack([c[rows] for c in columns], axis=1), axis=0, return_inverse=True)
        order = np.argsort(inverse.ravel(), kind="stable")
        new = np.concatenate([[True], np.diff(inverse.ravel()[order]) != 0])
    return np.split(order, np.flatnonzero(new)[1:])
