"""How a command fails: the exit codes, and the exception that carries a failure to :func:`mapsearch.cli.main.main`.

A command prints its report and returns ``None`` when it succeeded. Otherwise
it raises, and ``main`` alone turns the exception into stderr lines and an
exit code:

- :class:`~mapsearch.errors.MapsearchError` (bad input, infeasible): one line, exit 2;
- :class:`~mapsearch.errors.SolverTimeout`: one line, exit 3;
- :class:`CommandFailed`: the command ran and reported, but a check failed
  (a replay mismatch, a data check: exit 1) or it was interrupted (exit 130);
  its lines go to stderr;
- ``KeyboardInterrupt``: exit 130;
- ``BrokenPipeError``: the reader of the output went away (``mapsearch trace ... | head -1``): exit 141, as
  a shell reports a program that SIGPIPE ended (128 + 13), so that ``set -o pipefail`` sees the same as for
  ``cat``. A closed stdout ends the program quietly, with no line and no traceback (Python's ``signal``
  documentation, "Note on SIGPIPE"); any other pipe (``-o`` a FIFO) gets one line naming the error.

With ``--debug`` the first two keep their traceback.
"""

from __future__ import annotations

__all__ = ["EXIT_OK", "EXIT_MISMATCH", "EXIT_BAD_INPUT", "EXIT_TIMEOUT", "EXIT_INTERRUPTED", "EXIT_OUTPUT_CLOSED",
           "CommandFailed"]

EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_TIMEOUT, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_OUTPUT_CLOSED = 141  # 128 + SIGPIPE: the reader of stdout (or of another pipe written) went away


class CommandFailed(Exception):
    """A command that ran and reported but must exit non-zero; ``lines`` go to stderr, each after ``mapsearch: ``."""

    def __init__(self, code: int, lines: tuple[str, ...] | list[str] = ()):
        self.code = code
        self.lines = tuple(lines)
        super().__init__("; ".join(self.lines) or f"exit {code}")
