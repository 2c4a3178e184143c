"""One process at a time per sweep directory: ``DIR/.mapsearch.lock`` holds the owner's pid and host.

Two sweeps on one ``--out`` would both solve every case; the second one is
told who holds the directory instead (:class:`DirectoryBusy`, one line, exit
2). The lock is an ``flock`` on the file: the kernel releases it when its
process ends however it ends (``kill -9`` included), so a lock left by a dead
process is simply taken over and its pid overwritten (the file itself stays). Where ``fcntl`` is
missing, the file is created exclusively and a lock whose pid is no longer
alive on this host is taken over.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from mapsearch.errors import MapsearchError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["DirectoryLock", "DirectoryBusy", "LOCK_NAME", "check_out_directory"]

LOCK_NAME = ".mapsearch.lock"

# What a results directory holds (the lock, the exports of mapsearch/sweep/export.py): name -> a directory?
_ENTRIES = ((LOCK_NAME, False, "the directory's lock file"), ("results.jsonl", False, "a file"),
            ("results.csv", False, "a file"), ("summary.txt", False, "a file"),
            ("schedules", True, "a directory (of schedule files)"))


class DirectoryBusy(MapsearchError):
    """Another live process holds the directory."""


def check_out_directory(out: Path, option: str = "out_dir") -> None:
    """``out`` must be, or be creatable as, a directory: not a file, not below one (``option`` names it).

    In an existing ``out``, the lock and the exports must be files and ``schedules`` a directory: a damaged
    directory is one error naming the path before anything runs.
    """
    if out.exists() and not out.is_dir():
        raise MapsearchError(f"{option}: expected a directory, got a file: {out}")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise MapsearchError(f"{option}: {out} is below {parent}, which is a file, not a directory")
            break
    if out.is_dir():  # a damaged directory is refused before anything runs, not when the exports are written
        for name, directory, expected in _ENTRIES:
            path = out / name
            if path.exists() and path.is_dir() != directory:
                got = "a directory" if path.is_dir() else "a file"
                raise MapsearchError(f"{path}: expected {expected}, got {got}; move it away, or give another "
                                     "output directory")


def _owner(path: Path) -> tuple[int | None, str]:
    """(pid, host) written in the lock file, (None, '') when unreadable."""
    try:
        pid, _, host = path.read_text(encoding="utf-8").strip().partition(" ")
        return int(pid), host
    except (OSError, ValueError):
        return None, ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


class DirectoryLock:
    """``with DirectoryLock(dir):`` holds ``dir`` for this process (the directory must exist)."""

    def __init__(self, directory: str | Path, what: str = "sweep"):
        self.directory = Path(directory)
        self.path = self.directory / LOCK_NAME
        self.what = what
        self._fd: int | None = None

    def _busy(self) -> DirectoryBusy:
        pid, host = _owner(self.path)
        who = f"process {pid}" + (f" on {host}" if host else "") if pid is not None else "another process"
        return DirectoryBusy(f"{self.directory}: in use by {who} (lock {self.path}); wait for that {self.what} "
                             f"to end, or give another --out")

    def _unusable(self, e: OSError) -> MapsearchError:
        if isinstance(e, IsADirectoryError) or self.path.is_dir():
            return MapsearchError(f"{self.path}: expected the directory's lock file, got a directory; move it away, "
                                  "or give another output directory")
        return MapsearchError(f"{self.path}: cannot create the lock file: {e.strerror or e}")

    def acquire(self) -> None:
        mine = f"{os.getpid()} {socket.gethostname()}\n"
        if fcntl is not None:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError as e:
                raise self._unusable(e) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise self._busy() from None
            os.ftruncate(fd, 0)
            os.write(fd, mine.encode())
            self._fd = fd
            return
        for _ in range(2):  # pragma: no cover - not POSIX
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                if self.path.is_dir():
                    raise self._unusable(IsADirectoryError()) from None
                pid, host = _owner(self.path)
                if pid is not None and host == socket.gethostname() and not _alive(pid):
                    self.path.unlink(missing_ok=True)  # stale: its process is gone
                    continue
                raise self._busy() from None
            os.write(fd, mine.encode())
            self._fd = fd
            return
        raise self._busy()  # pragma: no cover

    def release(self) -> None:
        """Let go. With ``flock`` the file stays (unlinking it would let two processes lock two inodes)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        if fcntl is None:  # pragma: no cover - not POSIX: the file is the lock
            self.path.unlink(missing_ok=True)
        os.close(fd)  # releases the flock

    def __enter__(self) -> "DirectoryLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
