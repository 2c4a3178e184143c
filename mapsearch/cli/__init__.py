"""The ``mapsearch`` command line: argument parsing and rendering, one module per command.

- :mod:`~mapsearch.cli.main`: the parser and ``main``, the one place where a
  failure becomes an exit code (:mod:`~mapsearch.cli.exits`);
- :mod:`~mapsearch.cli.solve` (with :mod:`~mapsearch.cli.solve_chain` and
  :mod:`~mapsearch.cli.solve_sparse`), :mod:`~mapsearch.cli.replay`,
  :mod:`~mapsearch.cli.export`, :mod:`~mapsearch.cli.trace`,
  :mod:`~mapsearch.cli.sweep`, :mod:`~mapsearch.cli.characterize`: each
  command's ``add_parser(sub, common)`` and ``run(args)``.

``mapsearch.__main__:run`` is the console script's entry point; it loads :func:`main`.
"""

from mapsearch.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
