"""mapsearch: proven-optimal schedules for tensor kernels on memory hierarchies.

The sub-packages follow the data path, and imports point one way along it
(docs/modules.md; tests/test_layering.py checks it):

``spec`` (workload, architecture, constraints; ``presets``) -> ``schedule``
(the data model, JSON) -> ``model`` (the CP-SAT encoding) and ``sim`` (the
explicit-cache simulator, the replay) side by side -> ``solve`` (run,
explain, chains, trees) -> ``report`` -> ``sweep`` -> ``characterize`` ->
``cli`` (the ``mapsearch`` command).
"""

from mapsearch.version import __version__

__all__ = ["__version__"]
