"""Reading a spec file's text: a missing, unreadable or non-UTF-8 file is one SpecError line."""

from __future__ import annotations

from pathlib import Path

from mapsearch.errors import SpecError

__all__ = ["read_text"]


def _unreadable(source: str, detail: str) -> SpecError:
    return SpecError(source, "", "", None, detail=detail)


def read_text(path: str | Path) -> str:
    """The file's text; a missing or unreadable file is a one-line SpecError."""
    source = str(path)
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _unreadable(source, "no such file") from None
    except IsADirectoryError:
        raise _unreadable(source, "is a directory, expected a file") from None
    except UnicodeDecodeError as e:
        raise _unreadable(source, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise _unreadable(source, f"cannot read: {e.strerror or e}") from None
