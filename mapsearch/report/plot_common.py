"""What every plot of sweep rows shares (plots.py, roofline.py): matplotlib, imported on first use (its absence
one :class:`MapsearchError` line); a row's figures, read from the row itself or its ``report``, and which rows are
solved; the markers (hollow: FEASIBLE, not proven optimal); the PNG, written atomically.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from mapsearch.atomic import atomic_open
from mapsearch.errors import MapsearchError

SOLVED = ("OPTIMAL", "OPTIMAL_IN_FAMILY", "FEASIBLE")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise MapsearchError("plots need matplotlib, which is not installed: pip install 'mapsearch[plot]'") from None
    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    return plt


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
