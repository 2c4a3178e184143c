"""Errors the simulator raises when a program breaks a rule of the memory model.

Each one names the level (the cache's name), the tensor and the numbers, so a
replay that fails tells the user which buffer did not fit or was missing.
"""

from __future__ import annotations

from mapsearch.errors import MapsearchError


class SimulatorError(MapsearchError):
    """Base class of the errors of the explicit-cache simulator."""


class CapacityError(SimulatorError):
    """An allocation would take a level past its capacity (words).

    >>> str(CapacityError("L0", "Z[0:2,0:2]", 8, 4, 11))
    'L0: no room for Z[0:2,0:2]: 8 words used + 4 needed > capacity 11'
    """

    def __init__(self, level: str, tensor: str, used: int, needed: int, capacity: int):
        self.level = level
        self.tensor = tensor
        self.used = used
        self.needed = needed
        self.capacity = capacity
        super().__init__(
            f"{level}: no room for {tensor}: {used} words used + {needed} needed > capacity {capacity}"
        )


class NotResidentError(SimulatorError):
    """A tensor is used (loaded, stored, freed, computed on) where it does not reside.

    >>> str(NotResidentError("L0", "A[0:2,0:2]", "free"))
    'L0: cannot free A[0:2,0:2]: it is not resident here'
    """

    def __init__(self, level: str, tensor: str, action: str):
        self.level = level
        self.tensor = tensor
        self.action = action
        super().__init__(f"{level}: cannot {action} {tensor}: it is not resident here")


class LevelError(SimulatorError):
    """A tensor's level is not the one the operation expects (e.g. an op operand)."""


class ShapeError(SimulatorError):
    """Two views that must match (an op operand and its declared shape, store_to) do not."""


class WalkTooLong(SimulatorError):
    """The replay would walk more steps than it can in reasonable time: nothing was counted.

    Not a verdict on the schedule: it is neither checked nor refuted.
    """


class UnknownModeError(SimulatorError, ValueError):
    """``replay`` was asked for a mode it does not know; names the known ones."""
