"""mapsearch: proven-optimal schedules for tensor kernels on memory hierarchies.

The Python API is :mod:`mapsearch.api` (docs/tutorial.md)::

    import mapsearch
    result = mapsearch.api.solve("examples/matmul-97x193x61.yaml", "edge-3level")
    print(result.status, result.time, result.words)

Its names are also here (``mapsearch.replay``, ``mapsearch.load_workload``,
``mapsearch.SolveResult``, ...), except its three verbs ``solve``, ``sweep``
and ``characterize``, whose names here are the sub-packages. They are
imported on first use, so ``import mapsearch`` stays cheap.

The sub-packages follow the data path, and imports point one way along it
(docs/modules.md; tests/test_layering.py checks it): ``spec`` (workload,
architecture, constraints; ``presets``) -> ``schedule`` -> ``model`` (the
CP-SAT encoding) and ``sim`` (the explicit-cache simulator) side by side ->
``solve`` -> ``report`` -> ``sweep`` -> ``characterize`` -> ``api`` -> ``cli``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mapsearch.version import __version__

if TYPE_CHECKING:  # what __getattr__ hands out, for type checkers
    from mapsearch import api
    from mapsearch.api import *  # noqa: F401,F403

_SUB_PACKAGES = ("solve", "sweep", "characterize")  # the verbs of the same names: mapsearch.api.solve, ...


def __getattr__(name: str) -> Any:
    """The API's names, imported on first use (the API pulls in ortools and numpy)."""
    import importlib

    if name == "api":
        return importlib.import_module("mapsearch.api")
    if name not in _SUB_PACKAGES:
        api = importlib.import_module("mapsearch.api")
        if name in api.__all__:
            return getattr(api, name)
    raise AttributeError(f"module 'mapsearch' has no attribute {name!r}")


def __dir__() -> list[str]:
    import importlib

    return sorted(set(globals()) | {"api"} | set(importlib.import_module("mapsearch.api").__all__))


__all__ = ["__version__", "api"]
