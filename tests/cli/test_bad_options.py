"""Options found wrong by a hostile-input run: one line, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

import subprocess
import sys

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SOLVE = ["solve", str(EXAMPLES / "matmul-4x4x4.yaml"), str(EXAMPLES / "arch-worked-example.yaml")]


@pytest.mark.parametrize("extra, words", [
    (["-o", ""], "-o/--output: expected a file path, got ''"),  # was ignored: exit 0, nothing written
    (["--time-limit", "1e308"], "--time-limit: expected at most 10,000,000 seconds, got 1e+308"),  # OverflowError
])
def test_a_bad_option_is_one_line_and_exit_2(extra, words, tmp_path) -> None:
    out = _mapsearch(SOLVE + extra, tmp_path)
    err = out.stderr.strip()
    assert out.returncode == 2 and words in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_export_refuses_an_empty_output_path(tmp_path) -> None:
    out = _mapsearch(["export", str(EXAMPLES / "worked-example-mnk.schedule.json"), "-o", ""], tmp_path)
    assert out.returncode == 2 and "expected a file path" in out.stderr


def _mapsearch(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mapsearch"] + argv, cwd=cwd, capture_output=True, text=True,
                          timeout=120)
