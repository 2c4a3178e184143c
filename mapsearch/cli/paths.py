"""Argument types for the paths the commands write."""

from __future__ import annotations

import argparse


def output_path(text: str) -> str:
    """An output path: non-empty (``-o ''`` was silently ignored and nothing written)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a file path, got ''")
    return text
