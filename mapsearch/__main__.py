"""``python -m mapsearch`` runs the command line; :func:`run` is also the console script's entry point."""

import sys

# The command line's exit code for Ctrl-C (mapsearch.cli.exits.EXIT_INTERRUPTED, not imported: see run).
_INTERRUPTED = 130


def run() -> int:
    """:func:`mapsearch.cli.main`, loaded here so that a Ctrl-C while its modules load (numpy, OR-Tools, pandas:
    about a second) also exits 130 with one line, not a traceback: nothing has started, nothing is written."""
    try:
        from mapsearch.cli import main
    except KeyboardInterrupt:
        print("mapsearch: interrupted; nothing written", file=sys.stderr)
        return _INTERRUPTED
    return main()


if __name__ == "__main__":
    sys.exit(run())
