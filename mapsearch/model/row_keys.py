"""Exact comparison of table rows by a verified 64-bit hash, read column by column (model/dominance.py, windows.py).

The chain tables the pruning compares are wide (up to some 160 columns
with the views of three meshed levels) and tall (some 200,000 rows on the
array presets). Building them as one matrix, then sorting whole rows
(``np.unique(axis=0)``) or comparing neighbours, took seconds per dimension
(issue 16). Here a table is a list of *blocks* (1-D columns, or 2-D
arrays of a few columns each, or of very many columns over few rows) that
is never concatenated: a hash is summed block by block, rows are sorted by
it, and neighbours with equal hashes are compared block by block on those
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
    """The blocks without the columns that are the same in every row (they tell no row from another)."""
    out = []
    for c in columns:
        if c.ndim == 1:
            if c.size and bool(np.any(c != c[0])):
                out.append(c)
        elif c.shape[0] and c.shape[1]:
            live = np.any(c != c[:1], axis=0)
            if live.any():
                out.append(c if live.all() else c[:, live])
    return out


def digest(columns: list[np.ndarray], seed: int, rows: int) -> np.ndarray:
    """``sum_c w_c * column_c`` modulo 2^64 over every column of the blocks, with random odd weights
    ``w_c`` drawn from ``seed`` in column order.

    The same value as ``(np.concatenate(columns, 1) * w).sum(1)`` (int64
    wraps): addition modulo 2^64 does not depend on the order of the terms,
    and a 2-D block's share is a product in unsigned arithmetic, which
    wraps the same way.
    """
    width = sum(1 if c.ndim == 1 else c.shape[1] for c in columns)
    weights = np.random.default_rng(seed).integers(1, 2**62, size=width, dtype=np.int64) | 1
    out = np.zeros(rows, dtype=np.int64)
    term = np.empty(rows, dtype=np.int64)
    at = 0
    with np.errstate(over="ignore"):
        for c in columns:
            if c.ndim == 1:
                np.multiply(c, weights[at], out=term, casting="unsafe")
                out += term
                at += 1
            else:
                w = weights[at:at + c.shape[1]]
                out += (c.astype(np.int64, copy=False).view(np.uint64) @ w.view(np.uint64)).view(np.int64)
                at += c.shape[1]
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
            differ |= (c[a] != c[b]) if c.ndim == 1 else np.any(c[a] != c[b], axis=1)
        new[same_hash] = differ
    return new


def distinct_rows(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(first, inverse)``: the first row of each distinct value of ``columns`` and each row's index into it.

    A table whose entries depend on a row's columns alone is computed on the
    ``first`` rows and read back through ``inverse``.
    """
    rows = columns[0].shape[0]
    order, new = sorted_groups(columns, np.arange(rows))
    inverse = np.empty(rows, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


def sorted_groups(columns: list[np.ndarray], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions into ``rows`` with equal rows together (each value's in increasing order), and where a new
    value starts (True at its first position).

    Should a hash collision ever put two different values into one run of
    equal hashes, the exact sort is taken.
    """
    new = np.ones(rows.size, dtype=bool)
    columns = varying(columns)
    if rows.size == 0 or not columns:
        new[1:] = False
        return np.arange(rows.size), new
    hashes = digest(columns, 2024, columns[0].shape[0])
    order = np.argsort(hashes[rows], kind="stable")
    new = differs_from_previous(columns, rows[order], hashes)
    h = hashes[rows[order]]
    if np.any(new[1:] != (h[1:] != h[:-1])):  # a collision: different rows in one run of equal hashes
        table = np.concatenate([c[rows].reshape(rows.size, -1) for c in columns], axis=1)
        _, inverse = np.unique(table, axis=0, return_inverse=True)
        order = np.argsort(inverse.ravel(), kind="stable")
        new = np.concatenate([[True], np.diff(inverse.ravel()[order]) != 0])
    return order, new
