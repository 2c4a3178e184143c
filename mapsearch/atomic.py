"""Writing output files atomically: a temporary file beside the target, renamed over it at the end.

A failure at any point (bad input found late, a full disk, Ctrl-C) leaves no
partial output file, as the CLI promises.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from mapsearch.budget import aborted
from mapsearch.errors import Interrupted, SpecError


@contextmanager
def atomic_open(path: str | Path, encoding: str = "utf-8", newline: str | None = None) -> Iterator[IO[str]]:
    """A text file to write; it replaces ``path`` only if the ``with`` block finishes.

    >>> with atomic_open("/tmp/mapsearch-doctest.txt") as f:
    ...     _ = f.write("done")
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise _cannot_write(path, e) from None
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline=newline) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as open() would create it, not mkstemp's 0600
        if aborted():  # a second Ctrl-C (mapsearch/solve/interrupt.py): the user wants nothing written
            raise Interrupted(f"aborted; {path} not written")
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise _cannot_write(path, e) from None
        raise


def check_writable(path: str | Path) -> None:
    """Fail now, before any work, if ``path`` cannot become a file: a directory, or a parent that is not one."""
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise SpecError(str(path), "", "", detail="cannot write: is a directory")
    if not parent.exists():
        raise SpecError(str(path), "", "", detail=f"cannot write: no directory {parent}")
    if not parent.is_dir():
        raise SpecError(str(path), "", "", detail=f"cannot write: {parent} is not a directory")


def _cannot_write(path: str | Path, e: OSError) -> SpecError:
    return SpecError(str(path), "", "", detail=f"cannot write: {e.strerror or e}")


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_open(path) as f:
        f.write(text)
