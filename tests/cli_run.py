"""Running the command line inside a test: its exit code and what it printed, and the one-line refusal."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from mapsearch.cli.main import main


def run_cli(argv: list[object]) -> tuple[int, str, str]:
    """``mapsearch ARGV`` in this process: ``(exit code, stdout, stderr)`` (argparse's exits included)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def one_line_refusal(argv: list[object], output: Path | None = None) -> str:
    """Exit 2, one line on stderr (returned without ``mapsearch: ``), no traceback, ``output`` not written."""
    code, _, err = run_cli(argv)
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("mapsearch: "), err
    assert output is None or not output.exists()
    return lines[0][len("mapsearch: "):]


def run_captured(argv: list[str], capsys) -> tuple[int, str, str]:
    """``main(argv)`` with pytest's ``capsys`` catching what it prints: ``(exit code, stdout, stderr)``."""
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's refusals
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err
