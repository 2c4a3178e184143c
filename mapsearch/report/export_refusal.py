"""The refusal of a schedule a peer's format cannot state, one line naming the file and the field."""

from __future__ import annotations

from mapsearch.errors import MapsearchError

__all__ = ["ExportRefusal"]


class ExportRefusal(MapsearchError):
    """A schedule a peer's format cannot state exactly: ``SOURCE: FIELD: PEER cannot express ...`` on one line.

    ``field`` is the schedule file's field that asks for it (``levels[2].positions.A``); ``source`` the file
    (``Schedule.source``; left out for a schedule built in memory). Each export names its peer (``PEER``).
    """

    PEER = "the export"

    def __init__(self, field: str, what: str, source: str = ""):
        self.field, self.what, self.source = field, what, source
        where = ": ".join(p for p in (source, field) if p)
        said = f"{self.PEER} cannot express {what}"
        super().__init__(f"{where}: {said}" if where else said)
