"""The ``mapsearch`` command.

    mapsearch solve WORKLOAD.yaml ARCH.yaml [-c CONSTRAINTS] [--objective time|words|energy]
                    [--time-limit S] [-o SCHEDULE.json] [--json] [--min-utilization U]
                    [--workers N] [--seed N] [--replay-mode count|events|data]
                    [--link-energy NAME=COST ...] [--op-energy X]
                    [--dram-rows off|tiebreak|before-words] [--max-dram-rows N] [--dram-layouts FILE.yaml]
                    [--density T=SPEC ...] [--format T=FMT ...] [--sparse-seed N] [--no-sparse-replay]
    mapsearch replay SCHEDULE.json [--check] [--json] [--mode count|data|events]
    mapsearch export SCHEDULE.json [--format loopnest|timeloop|json] [-o FILE]
    mapsearch trace SCHEDULE.json [--format ramulator2|ramulator1|dramsim3] [-o FILE] [--layouts FILE.yaml]
                    [--dram PRESET] [--element-order ORDER] [--request-bytes N] [--json]
    mapsearch sweep SWEEP.yaml [--out DIR] [--workers N] [--scheduler tcp://HOST:PORT]
                    [--retry-failed] [--time-limit S] [--export-only] [-q]
    mapsearch plot RESULTS [--kind parameter|roofline|lower-bound] [--param PATH] [-o FILE.png]
    mapsearch characterize MODEL PROFILE [PROFILE ...] [--out DIR] [--workers N]
                    [--scheduler tcp://HOST:PORT] [--time-limit S] [--top N] [--no-plot]

Exit codes: 0 success; 1 the replay disagrees with the prediction (``--check``,
and always after ``solve``) or the data check failed; 2 bad input, an
infeasible problem or any other deliberate error
(:class:`~mapsearch.errors.MapsearchError`), printed as one line
``mapsearch: <message>`` without a traceback unless ``--debug`` is given;
3 ``solve`` found no schedule within its time limit; 130 interrupted (Ctrl-C:
``solve`` reports and, with ``-o``, writes the best schedule so far after the
first, a second aborts with nothing written; ``sweep`` and ``characterize``
keep what finished and record what was running as interrupted); 141 the
reader of stdout went away (``mapsearch trace ... | head -1``: the program
ends quietly, as one that SIGPIPE ended: 128 + 13). A usage error is one
line too.
:func:`main` is the one place that turns a failure into an exit code
(:mod:`mapsearch.cli.exits`); each command lives in its own module.
"""

from __future__ import annotations

import argparse
import logging
import os
import select
import sys
from typing import NoReturn, Sequence

from mapsearch.cli import characterize, export, plot, replay, solve, sweep, trace
from mapsearch.cli.exits import (EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_OUTPUT_CLOSED, EXIT_TIMEOUT,
                                 CommandFailed)
from mapsearch.errors import Interrupted, MapsearchError, SolverTimeout
from mapsearch.version import __version__

__all__ = ["COMMANDS", "build_parser", "main"]

log = logging.getLogger("mapsearch")

COMMANDS = (solve, replay, export, trace, sweep, plot, characterize)


class _OneLineParser(argparse.ArgumentParser):
    """A usage error is one line and exit code 2, like any other bad input (``--help`` shows the usage)."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]
        where = f"{command}: " if command else ""
        self.exit(EXIT_BAD_INPUT, f"mapsearch: {where}{' '.join(message.split())} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="mapsearch",
        description="Optimal schedules (tilings, loop orders, residency) of einsums on memory hierarchies, and their replay.",
    )
    parser.add_argument("--version", action="version", version=f"mapsearch {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logging")
    # Subcommands accept --debug too; SUPPRESS keeps one given before the subcommand.
    common = _OneLineParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks and debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.add_parser(sub, common).set_defaults(func=command.run)
    return parser


_WORD_LIMIT = 300  # characters of one word of an error line; a hostile file's names can be megabytes


def _short_word(word: str) -> str:
    return word if len(word) <= _WORD_LIMIT else f"{word[:60]}...({len(word):,} characters)"


def _one_line(e: BaseException) -> str:
    """The error as one line of bounded width: whitespace folded, any huge word (a name copied from the input) cut."""
    return "mapsearch: " + (" ".join(_short_word(w) for w in str(e).split()) or type(e).__name__)


def _stdout_gone() -> bool:
    """Whether stdout is a pipe or socket whose reader has gone (poll reports an error or a hang-up on it)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll (Windows), or stdout is no file (a test's capture)
        return False


def _output_closed(e: BrokenPipeError) -> int:
    """The reader of an output went away. Stdout's (``| head -1``): end quietly, as Python's ``signal``
    documentation says ("Note on SIGPIPE"): point stdout at devnull, so that the interpreter's last flush of what
    is still buffered does not fail again at exit, and exit non-zero. Another pipe's (``-o`` a FIFO): one line."""
    if _stdout_gone():
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        log.debug("stdout closed by its reader; stopped")
        return EXIT_OUTPUT_CLOSED
    print(f"mapsearch: an output's reader went away: {_one_line(e).removeprefix('mapsearch: ')}", file=sys.stderr)
    return EXIT_OUTPUT_CLOSED


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code. The only place where a failure becomes one.

    Whatever the command leaves buffered on stdout is flushed here, so that a closed stdout shows as a
    ``BrokenPipeError`` here (exit 141, quietly) rather than at the interpreter's exit."""
    try:
        try:
            code = _run(argv)
        except SystemExit:  # argparse: --help, --version or a usage error, printed
            sys.stdout.flush()
            raise
        sys.stdout.flush()
        return code
    except BrokenPipeError as e:
        return _output_closed(e)


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="mapsearch: %(levelname)s: %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        args.func(args)
    except CommandFailed as e:
        sys.stdout.flush()
        for line in e.lines:
            print(f"mapsearch: {line}", file=sys.stderr)
        if debug and e.__cause__ is not None:
            raise e.__cause__
        return e.code
    except SolverTimeout as e:
        if debug:
            raise
        print(_one_line(e), file=sys.stderr)
        return EXIT_TIMEOUT
    except Interrupted as e:  # Ctrl-C before there was anything to report
        print(_one_line(e) + "; nothing written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MapsearchError as e:
        if debug:
            raise
        print(_one_line(e), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("mapsearch: interrupted; nothing written", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
