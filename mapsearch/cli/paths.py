"""Argument types for the paths the commands write, and the check that an output never replaces an input."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Iterable

from mapsearch.errors import UsageError

__all__ = ["output_path", "output_directory", "same_file", "refuse_input_as_output", "refuse_inputs_in_directory"]


def output_path(text: str) -> str:
    """An output path: non-empty (``-o ''`` was silently ignored and nothing written)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a file path, got ''")
    return text


def output_directory(text: str) -> str:
    """An output directory: non-empty (``--out ''`` silently meant the default directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a directory path, got ''")
    return text


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether writing ``a`` would replace ``b``: the same file when both exist (symbolic and hard links
    included), else the same resolved path."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):  # an unreadable or malformed path: not known to be the same; its own error comes later
        return False


def refuse_input_as_output(output: str | os.PathLike | None, inputs: Iterable[tuple[str, object]],
                           option: str = "-o") -> None:
    """Raise a one-line UsageError (exit 2) when ``output`` is the same file as one of ``inputs``.

    ``inputs``: ``(what, path)`` pairs, e.g. ``("WORKLOAD", args.workload)``; a
    ``None`` or empty path (an input not given) is skipped. Call it before any
    work, so that nothing is written.
    """
    if output is None or not str(output).strip():
        return
    for what, path in inputs:
        if path is None or not isinstance(path, (str, os.PathLike)) or not str(path).strip():
            continue
        if same_file(output, path):
            raise UsageError(option, f"a path other than {what} {path} (writing there would replace it)",
                             str(output))


def refuse_inputs_in_directory(directory: str | os.PathLike, written: Iterable[str],
                               inputs: Iterable[tuple[str, object]], option: str = "--out") -> None:
    """Raise a one-line UsageError when an input is ``directory`` itself or one of the files the command
    writes in it (``written``: names relative to ``directory``; a name ending in ``/`` is a folder, and every
    file below it counts)."""
    inputs = [(w, p) for w, p in inputs if isinstance(p, (str, os.PathLike)) and str(p).strip()]
    refuse_input_as_output(directory, inputs, option)
    base = Path(directory)
    for what, path in inputs:
        if not os.path.exists(path):
            continue
        for name in written:
            target = base / name.rstrip("/")
            if same_file(target, path) or (name.endswith("/") and _below(path, target)):
                raise UsageError(option, f"a directory where the command would not replace {what} {path} "
                                 f"(it would write {target})", str(directory))


def _below(path: str | os.PathLike, folder: Path) -> bool:
    try:
        return Path(os.path.realpath(folder)) in Path(os.path.realpath(path)).parents
    except (OSError, ValueError):
        return False
