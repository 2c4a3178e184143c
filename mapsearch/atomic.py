"""Writing output files atomically: a temporary file beside the target, renamed over it at the end.

A failure at any point (bad input found late, a full disk, Ctrl-C) leaves no
partial output file, as the CLI promises.

The target is the file a path leads to: through a symbolic link (or a chain
of them) the link's target is replaced and the link stays. A path that
exists and is not a regular file (a FIFO, a device node, a socket) is
refused: renaming over it would replace the node itself (``/dev/null``, a
pipe a reader waits on), and writing into it could not be undone on failure.
"""

from __future__ import annotations

import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator

from mapsearch.budget import aborted
from mapsearch.errors import Interrupted, SpecError

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def resolve_output(path: str | Path) -> Path:
    """The file that writing ``path`` replaces: ``path`` itself, or the end of its chain of symbolic links.

    Raises a one-line SpecError when that file exists and is not a regular
    file (it is never replaced), or when the links loop.
    """
    target = Path(path)
    if target.is_symlink():
        try:
            target = Path(os.path.realpath(target, strict=False))
        except OSError as e:  # a loop of links (Python 3.13 raises; older ones return the loop's path)
            raise _cannot_write(path, e) from None
    try:
        mode = os.stat(target).st_mode  # follows links: a loop raises ELOOP here
    except FileNotFoundError:
        return target
    except OSError as e:
        raise _cannot_write(path, e) from None
    for test, kind in _KINDS:
        if test(mode):
            what = "is a directory" if kind == "a directory" else f"not a regular file ({kind}); expected a file path"
            raise SpecError(str(path), "", "", detail=f"cannot write: {what}")
    return target


@contextmanager
def atomic_open(path: str | Path, encoding: str = "utf-8", newline: str | None = None,
                binary: bool = False) -> Iterator[IO[Any]]:
    """A text file to write; it replaces ``path`` (or the file its symbolic link leads to) only if the ``with``
    block finishes. An existing file keeps its permission bits. ``binary``: a bytes file (no encoding).

    >>> with atomic_open("/tmp/mapsearch-doctest.txt") as f:
    ...     _ = f.write("done")
    """
    target = resolve_output(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise _cannot_write(path, e) from None
    try:
        opened = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding=encoding, newline=newline)
        with opened as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _mode_for(target))
        if aborted():  # a second Ctrl-C (mapsearch/solve/interrupt.py): the user wants nothing written
            raise Interrupted(f"aborted; {path} not written")
        resolve_output(path)  # still not a FIFO or a device (one made while we wrote is not replaced)
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise _cannot_write(path, e) from None
        raise


def _mode_for(target: Path) -> int:
    """The permission bits of the file being replaced; for a new file, as open() would create it (not 0600)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def check_writable(path: str | Path) -> None:
    """Fail now, before any work, if ``path`` cannot become a file: a directory, a FIFO or a device, or a parent
    that is not a directory (a symbolic link is checked at the file it leads to)."""
    target = resolve_output(path)
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.exists():
        raise SpecError(str(path), "", "", detail=f"cannot write: no directory {parent}")
    if not parent.is_dir():
        raise SpecError(str(path), "", "", detail=f"cannot write: {parent} is not a directory")


def _cannot_write(path: str | Path, e: OSError) -> SpecError:
    return SpecError(str(path), "", "", detail=f"cannot write: {e.strerror or e}")


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_open(path) as f:
        f.write(text)


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    with atomic_open(path, binary=True) as f:
        f.write(data)
