"""The explicit-cache simulator and the replay of schedules on it.

``from mapsearch import sim as simulator`` gives the seed's API:
``Tensor``, ``Cache``, ``Bandwidth``, ``BinOpx``, ``utilization``,
``reset_counters``; and ``replay(schedule, mode)`` counts a schedule's
figures by running it on that simulator. Nothing here imports the solver.
"""

from mapsearch.sim.bandwidth import Bandwidth
from mapsearch.sim.cache import Cache
from mapsearch.sim.compute import BinOpx, ComputeNode, TileOp
from mapsearch.sim.counters import ReplayResult, reset_counters, utilization
from mapsearch.sim.errors import (
    CapacityError,
    LevelError,
    NotResidentError,
    ShapeError,
    SimulatorError,
    UnknownModeError,
)
from mapsearch.sim.replay import replay
from mapsearch.sim.tensor import Tensor

__all__ = [
    "Bandwidth",
    "BinOpx",
    "Cache",
    "CapacityError",
    "ComputeNode",
    "LevelError",
    "NotResidentError",
    "ReplayResult",
    "ShapeError",
    "SimulatorError",
    "Tensor",
    "TileOp",
    "UnknownModeError",
    "replay",
    "reset_counters",
    "utilization",
]
