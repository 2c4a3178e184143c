"""One base class for every error mapsearch raises on purpose.

The CLI turns a :class:`MapsearchError` into one line and exit code 2; anything
else is a bug and keeps its traceback.
"""

from __future__ import annotations

import math


def short_repr(value: object, limit: int | None = None) -> str:
    """``repr`` on one line (cut to ``limit`` characters); a huge int by its number of digits.

    Python refuses to turn an int of more than 4,300 digits into text, and a
    message must never fail while it reports bad input.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an int of {int(value.bit_length() * math.log10(2)) + 1} digits"
    try:
        text = repr(value).replace("\n", " ")
    except ValueError:  # a huge int nested in a list or a mapping
        text = f"a {type(value).__name__} holding an int too long to print"
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."


class MapsearchError(Exception):
    """Base class of every error the tool raises deliberately."""


class SpecError(MapsearchError):
    """Bad input: names the file, the field and what was expected.

    >>> str(SpecError("arch.yaml", "levels[2].capacity", "int > 0", -4))
    'arch.yaml: levels[2].capacity: expected int > 0, got -4'
    """

    def __init__(self, source: str, field: str, expected: str, got: object = None, *, detail: str | None = None):
        self.source = source
        self.field = field
        self.expected = expected
        self.got = got
        self.detail = detail
        where = f"{source}: {field}" if field else source
        if detail is not None:
            message = f"{where}: {detail}"
        else:
            message = f"{where}: expected {expected}, got {short_repr(got, GOT_LIMIT)}"
        super().__init__(message)


GOT_LIMIT = 80  # characters of a bad value in a message (then "..."): a whole random document is not one readable line
OPTION_LIMIT = 300  # an option's value: often paths, typed by the user, so cut later


class UsageError(MapsearchError):
    """An option's value out of range (a command-line flag or an API argument); one line naming the option.

    >>> str(UsageError("--time-limit", "seconds > 0", -1))
    '--time-limit: expected seconds > 0, got -1'
    """

    def __init__(self, option: str, expected: str, got: object):
        self.option = option
        super().__init__(f"{option}: expected {expected}, got {short_repr(got, OPTION_LIMIT)}")


class ScheduleError(MapsearchError):
    """A schedule that breaks the rules of the cost model (illegal tiling, order, residency)."""


class InfeasibleError(MapsearchError):
    """The requirements cannot all hold; ``core`` names the ones that conflict.

    ``limits`` holds the user's tile limits (``spec.constraints.TileLimit``) that take part, where they are
    known, so a message can name them in their file (``solve/explain.py``, ``with_core``).
    """

    def __init__(self, message: str, core: tuple[str, ...] = (), limits: tuple[object, ...] = ()):
        self.core = core
        self.limits = limits
        super().__init__(message)


class NoScheduleInFamily(InfeasibleError):
    """No schedule of the searched family fits, but the family is restricted: a legal schedule outside it may exist."""

    def __init__(self, message: str, core: tuple[str, ...] = (), restrictions: tuple[str, ...] = (),
                 limits: tuple[object, ...] = ()):
        self.restrictions = restrictions
        super().__init__(message, core, limits)


class SolverTimeout(MapsearchError):
    """The solver ran out of time before finding any schedule."""


class Interrupted(MapsearchError):
    """The user stopped the work (Ctrl-C) before there was anything to report; the CLI exits 130."""


class ReplayMismatch(MapsearchError):
    """Predicted and replayed figures differ: names the (first) field and both values.

    ``mismatches`` holds every ``(field, predicted, replayed)`` that differs.
    """

    def __init__(self, field: str, predicted: object, replayed: object,
                 mismatches: tuple[tuple[str, object, object], ...] = ()):
        self.field = field
        self.predicted = predicted
        self.replayed = replayed
        self.mismatches = mismatches or ((field, predicted, replayed),)
        more = f" (and {len(self.mismatches) - 1} more field(s))" if len(self.mismatches) > 1 else ""
        super().__init__(f"replay mismatch in {field}: predicted {predicted}, replayed {replayed}{more}")
