"""mapsearch: proven-optimal schedules for tensor kernels on memory hierarchies.

The data flows through the sub-packages in this order:

``spec`` (workload and architecture) -> ``model`` (the CP-SAT encoding) ->
``solve`` (run, explain) -> ``schedule`` (the data model, JSON) ->
``sim`` (the explicit-cache simulator and the replay) -> ``report``.
"""

__version__ = "0.1.0"
