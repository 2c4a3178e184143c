"""How a command fails: the exit codes, and the exception that carries a failure to :func:`mapsearch.cli.main.main`.

A command prints its report and returns ``None`` when it succeeded. Otherwise
it raises, and ``main`` alone turns the exception into stderr lines and an
exit code:

- :class:`~mapsearch.errors.MapsearchError` (bad input, infeasible): one line, exit 2;
- :class:`~mapsearch.errors.SolverTimeout`: one line, exit 3;
- :class:`CommandFailed`: the command ran and reported, but a check failed
  (a replay mismatch, a data check: exit 1) or it was interrupted (exit 130);
  its lines go to stderr;
- ``KeyboardInterrupt``: exit 130.

With ``--debug`` the first two keep their traceback.
"""

from __future__ import annotations

__all__ = ["EXIT_OK", "EXIT_MISMATCH", "EXIT_BAD_INPUT", "EXIT_TIMEOUT", "EXIT_INTERRUPTED", "CommandFailed"]

EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_TIMEOUT, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class CommandFailed(Exception):
    """A command that ran and reported but must exit non-zero; ``lines`` go to stderr, each after ``mapsearch: ``."""

    def __init__(self, code: int, lines: tuple[str, ...] | list[str] = ()):
        self.code = code
        self.lines = tuple(lines)
        super().__init__("; ".join(self.lines) or f"exit {code}")
