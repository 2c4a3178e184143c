"""The console script's entry point (``mapsearch.__main__:run``): a Ctrl-C while the command line loads."""

from __future__ import annotations

import builtins
import subprocess
import sys

import mapsearch.__main__ as entry


def test_ctrl_c_while_the_command_line_loads_is_one_line_and_130(monkeypatch, capsys) -> None:
    """The modules behind the command line take about a second to load (numpy, OR-Tools, pandas); a Ctrl-C
    then printed a KeyboardInterrupt traceback and exited -2 (the exam's finding). Now: one line, 130."""
    real_import = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name == "mapsearch.cli":
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    assert entry.run() == 130
    assert capsys.readouterr().err == "mapsearch: interrupted; nothing written\n"


def test_python_dash_m_runs_the_command_line() -> None:
    done = subprocess.run([sys.executable, "-m", "mapsearch", "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("mapsearch ")
