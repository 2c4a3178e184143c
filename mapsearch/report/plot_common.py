"""What every plot of sweep rows shares (plots.py, roofline.py): matplotlib, imported on first use (its absence
one :class:`MapsearchError` line); a row's figures, read from the row itself or its ``report``, and which rows are
solved; the markers (hollow: FEASIBLE, not proven optimal); the PNG, written atomically.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from mapsearch.atomic import atomic_open
from mapsearch.errors import GOT_LIMIT, MapsearchError, SpecError, short_repr

SOLVED = ("OPTIMAL", "OPTIMAL_IN_FAMILY", "FEASIBLE")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise MapsearchError("plots need matplotlib, which is not installed: pip install 'mapsearch[plot]'") from None
    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    return plt


def check_plot_path(out_png: str | Path) -> None:
    """The file name must end in a format matplotlib writes (``.png``, ``.pdf``, ``.svg``, ...; none: PNG):
    checked before anything is drawn, one error naming the file."""
    _pyplot()
    from matplotlib.backend_bases import FigureCanvasBase

    out = Path(out_png)
    suffix = out.suffix[1:].lower()
    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    if suffix and suffix not in formats:
        raise MapsearchError(f"{out}: expected a file name ending in a format matplotlib writes "
                             f"(.{', .'.join(formats)}), got {short_repr(out.suffix, GOT_LIMIT)}")


# The figures a plot reads from a row (or its report): a number, exact text 'a/b', or null.
NUMBER_KEYS = ("time", "utilization", "words_total", "compute_time", "op_calls", "macs", "block_macs",
               "mac_efficiency", "gap", "lower_bound_words")
_LINK_NUMBERS = ("words_down", "words_up", "words", "time")
_NUMBER = "a number (or exact text 'a/b') or null"


def _numeric(x: Any) -> bool:
    if x is None or (isinstance(x, (int, float)) and not isinstance(x, bool)):
        return True
    return isinstance(x, str) and _num(x) is not None


def _figures_problem(row: Mapping[str, Any], prefix: str) -> tuple[str, str, Any] | None:
    for key in NUMBER_KEYS:
        if not _numeric(row.get(key)):
            return prefix + key, _NUMBER, row[key]
    links = row.get("links")
    if links is not None:
        if not isinstance(links, list):
            return prefix + "links", "a list of links {name, words_down, words_up, words, time} or null", links
        for n, link in enumerate(links):
            if not isinstance(link, Mapping) or not isinstance(link.get("name"), str):
                return f"{prefix}links[{n}]", "a link {name, words_down, words_up, words, time}", link
            for key in _LINK_NUMBERS:
                if not _numeric(link.get(key)):
                    return f"{prefix}links[{n}].{key}", _NUMBER, link[key]
    return None


def row_problem(row: Any) -> tuple[str, str, Any] | None:
    """(field, expected, got) of the first value of a sweep row the plots cannot read, else None."""
    if not isinstance(row, Mapping):
        return "", "a JSON object (one row of a sweep's results)", row
    if row.get("status") is not None and not isinstance(row["status"], str):
        return "status", "text (OPTIMAL, FEASIBLE, ...)", row["status"]
    for key in ("workload", "architecture"):
        if row.get(key) is not None and not isinstance(row[key], (str, Mapping)):
            return key, "a name or an object", row[key]
    if row.get("lower_bound_link") is not None and not isinstance(row["lower_bound_link"], str):
        return "lower_bound_link", "a link's name or null", row["lower_bound_link"]
    params = row.get("params")
    if params is not None and not isinstance(params, Mapping) and not (
            isinstance(params, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                             for p in params)):
        return "params", "an object {path: value} or a list of [path, value] pairs", params
    problem = _figures_problem(row, "")
    if problem is None and row.get("report") is not None:
        if not isinstance(row["report"], Mapping):
            return "report", "an object (the solve report) or null", row["report"]
        problem = _figures_problem(row["report"], "report.")
    return problem


def check_rows(rows: Sequence[Any], source: str = "rows") -> None:
    """Every row must be one the plots can read; the first that is not is one :class:`SpecError` naming
    ``source[i]`` and the field."""
    for n, row in enumerate(rows):
        problem = row_problem(row)
        if problem is not None:
            field, expected, got = problem
            raise SpecError(f"{source}[{n}]", field, expected, got)


def _get(row: Mapping[str, Any], key: str) -> Any:
    if row.get(key) is not None:
        return row[key]
    report = row.get("report")
    return report.get(key) if isinstance(report, Mapping) else None


def _num(x: Any) -> float | None:
    """A number from a JSON value: int, float or exact text ``'a/b'``."""
    if x is None or isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        return float(x)
    try:
        return float(Fraction(str(x)))
    except (ValueError, ZeroDivisionError):
        return None


def _params(row: Mapping[str, Any]) -> dict[str, Any]:
    p = row.get("params") or {}
    return dict(p) if isinstance(p, Mapping) else {k: v for k, v in p}


def _solved(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in rows if r.get("status") in SOLVED]


def _name(x: Any) -> str:
    if isinstance(x, Mapping):
        return str(x.get("name", "?"))
    return str(x)


def _series_key(row: Mapping[str, Any]) -> str:
    return f"{_name(row.get('workload'))} on {_name(row.get('architecture'))}"


def _save(fig: Any, out_png: str | Path) -> Path:
    out = Path(out_png)
    try:
        with atomic_open(out, binary=True) as f:  # never a half-written PNG; a FIFO or a device is refused
            fig.savefig(f, format=out.suffix[1:].lower() or None, dpi=120, bbox_inches="tight")
    except OSError as e:
        raise MapsearchError(f"{out}: cannot write: {e.strerror or e}") from None
    finally:
        _pyplot().close(fig)
    return out


def _markers(plt: Any, ax: Any, xs: list, ys: list, feasible: list[bool], color: Any, label: str, line: bool) -> None:
    if line:
        ax.plot(xs, ys, "-", color=color, alpha=0.7, label=label)
    else:
        ax.plot([], [], "o", color=color, label=label)
    solid = [(x, y) for x, y, f in zip(xs, ys, feasible) if not f]
    hollow = [(x, y) for x, y, f in zip(xs, ys, feasible) if f]
    if solid:
        ax.plot(*zip(*solid), "o", color=color, ms=5)
    if hollow:
        ax.plot(*zip(*hollow), "o", color=color, ms=6, mfc="none")


def _wide(values: Sequence[float]) -> bool:
    """True when positive values span two decades or more (then a log axis reads better)."""
    pos = [v for v in values if v > 0]
    return len(pos) == len(values) and len(pos) > 1 and max(pos) / min(pos) >= 100
