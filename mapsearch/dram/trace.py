"""DRAM trace files: writers and parsers for the formats DRAM simulators read (docs/dram.md).

| format | a read | a write | simulator |
| --- | --- | --- | --- |
| ``ramulator2`` | ``LD 0x1a2b3c40`` | ``ST 0x1a2b3c40`` | Ramulator 2 ``LoadStoreTrace`` frontend |
| ``ramulator1`` | ``0x1a2b3c40 R`` | ``0x1a2b3c40 W`` | Ramulator 1 ``--mode=dram`` |
| ``dramsim3`` | ``0x1A2B3C40 READ 30`` | ``0x1A2B3C40 WRITE 31`` | DRAMsim3 trace CPU (last field: the cycle) |

DRAMsim3's cycle is a simple issue clock: request ``i`` (0-based, in stream
order) is issued at ``start_cycle + i * cycles_per_request`` (default one
request per cycle); the DRAM model itself decides when it is served.

Writers take the chunks of :func:`mapsearch.sim.dram_trace.address_chunks`
(or any ``(addresses, is_write)`` pairs) and stream them to disk, one chunk
at a time, through a temporary file renamed at the end. Parsers read a file
back in chunks of numpy arrays. :func:`coalesce` merges consecutive accesses
to one aligned request (e.g. 64-byte lines) before writing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

FORMATS = ("ramulator2", "ramulator1", "dramsim3")
_I64 = np.int64


def _pairs(chunks: Iterable) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    for ch in chunks:
        a = np.asarray(ch[0], _I64)
        w = np.asarray(ch[1], bool)
        yield a, w


def coalesce(chunks: Iterable, request_bytes: int) -> Iterator[tuple]:
    """Merge runs of consecutive accesses to one ``request_bytes``-aligned block (same direction) into one request.

    Chunks are ``(addresses, is_write)`` or ``(addresses, is_write, tensor)``; with the tensor index, a run
    also ends where the tensor changes (two tensors' accesses are never one request, even where their
    bytes share an aligned block), and each request keeps its tensor: ``(requests, is_write, tensor)``.
    """
    if request_bytes < 1:
        raise ValueError(f"request_bytes: expected >= 1, got {request_bytes}")
    prev: tuple | None = None  # (block, is_write, tensor) of the last access of the previous chunk
    for ch in chunks:
        a = np.asarray(ch[0], _I64)
        w = np.asarray(ch[1], bool)
        t = np.asarray(ch[2]) if len(ch) > 2 and ch[2] is not None else None
        if len(a) == 0:
            continue
        block = a // request_bytes
        keep = np.ones(len(a), bool)
        keep[1:] = (block[1:] != block[:-1]) | (w[1:] != w[:-1])
        if t is not None:
            keep[1:] |= t[1:] != t[:-1]
        first = (int(block[0]), bool(w[0]), None if t is None else int(t[0]))
        if prev is not None and first == prev:
            keep[0] = False
        prev = (int(block[-1]), bool(w[-1]), None if t is None else int(t[-1]))
        if t is None:
            yield block[keep] * request_bytes, w[keep]
        else:
            yield block[keep] * request_bytes, w[keep], t[keep]


def _lines(fmt: str, a: np.ndarray, w: np.ndarray, first: int, cycles_per_request: int, start_cycle: int) -> str:
    addrs = a.tolist()
    writes = w.tolist()
    if fmt == "ramulator2":
        body = [("ST 0x%x" if x else "LD 0x%x") % v for v, x in zip(addrs, writes)]
    elif fmt == "ramulator1":
        body = [("0x%x W" if x else "0x%x R") % v for v, x in zip(addrs, writes)]
    elif fmt == "dramsim3":
        c0 = start_cycle + first * cycles_per_request
        body = [
            ("0x%X WRITE %d" if x else "0x%X READ %d") % (v, c0 + i * cycles_per_request)
            for i, (v, x) in enumerate(zip(addrs, writes))
        ]
    else:
        raise ValueError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    return "\n".join(body) + "\n" if body else ""


def write_trace(chunks: Iterable, path: str | Path, fmt: str, *, cycles_per_request: int = 1, start_cycle: int = 0) -> int:
    """Stream ``(addresses, is_write)`` chunks to ``path`` in ``fmt``; returns the number of requests written."""
    if fmt not in FORMATS:
        raise ValueError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    from mapsearch.atomic import atomic_open

    n = 0
    with atomic_open(path, encoding="ascii", newline="\n") as f:
        for a, w in _pairs(chunks):
            f.write(_lines(fmt, a, w, n, cycles_per_request, start_cycle))
            n += len(a)
    return n


def write_trace_text(chunks: Iterable, fmt: str, **kw) -> str:
    """The trace as one string (small traces, tests)."""
    n = 0
    parts = []
    for a, w in _pairs(chunks):
        parts.append(_lines(fmt, a, w, n, kw.get("cycles_per_request", 1), kw.get("start_cycle", 0)))
        n += len(a)
    return "".join(parts)


class TraceFormatError(ValueError):
    """A line that is not in the expected format (``line`` is 1-based)."""

    def __init__(self, path: str, line: int, detail: str):
        super().__init__(f"{path}: line {line}: {detail}")


def _parse_line(fmt: str, text: str, path: str, lineno: int) -> tuple[int, bool, int | None]:
    parts = text.split()
    try:
        if fmt == "ramulator2":
            if len(parts) != 2 or parts[0] not in ("LD", "ST"):
                raise ValueError
            return int(parts[1], 0), parts[0] == "ST", None
        if fmt == "ramulator1":
            if len(parts) != 2 or parts[1] not in ("R", "W"):
                raise ValueError
            return int(parts[0], 16), parts[1] == "W", None
        if fmt == "dramsim3":
            if len(parts) != 3 or parts[1] not in ("READ", "WRITE"):
                raise ValueError
            return int(parts[0], 16), parts[1] == "WRITE", int(parts[2])
    except ValueError:
        want = {"ramulator2": "'LD 0x...' or 'ST 0x...'", "ramulator1": "'0x... R' or '0x... W'",
                "dramsim3": "'0x... READ cycle' or '0x... WRITE cycle'"}[fmt]
        raise TraceFormatError(path, lineno, f"expected {want}, got {text.strip()!r}") from None
    raise ValueError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")


def read_trace(path: str | Path, fmt: str, *, chunk: int = 1 << 18) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """Chunks ``(addresses, is_write, cycles)`` of a trace file (``cycles`` only for dramsim3, else None)."""
    if fmt not in FORMATS:
        raise ValueError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    a: list[int] = []
    w: list[bool] = []
    c: list[int] = []
    with open(path, encoding="ascii") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            addr, write, cycle = _parse_line(fmt, line, str(path), lineno)
            a.append(addr)
            w.append(write)
            if cycle is not None:
                c.append(cycle)
            if len(a) >= chunk:
                yield np.array(a, _I64), np.array(w, bool), (np.array(c, _I64) if fmt == "dramsim3" else None)
                a, w, c = [], [], []
    if a:
        yield np.array(a, _I64), np.array(w, bool), (np.array(c, _I64) if fmt == "dramsim3" else None)


def read_trace_all(path: str | Path, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """The whole trace as two arrays (small traces, tests)."""
    got = list(read_trace(path, fmt))
    if not got:
        return np.zeros(0, _I64), np.zeros(0, bool)
    return np.concatenate([g[0] for g in got]), np.concatenate([g[1] for g in got])
