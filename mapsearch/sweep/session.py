"""A sweep in one call: read the sweep, run what is not finished, store, export, and hand back the rows.

:func:`run_sweep_file` is what ``mapsearch sweep`` and
:func:`mapsearch.api.sweep` run. The sweep is a file, a dict in the sweep
format (paths relative to the working directory) or an expanded
:class:`~mapsearch.sweep.spec.Sweep`. Results go to ``out_dir/results.sqlite``
as each case ends (rerunning skips the finished ones) and the exports of
:mod:`mapsearch.sweep.export` are written at the end, even after an
interrupt. One process at a time holds ``out_dir`` (:mod:`mapsearch.sweep.lock`);
a run that fails before storing a case removes what it created there.
"""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Union

from mapsearch.errors import MapsearchError

from mapsearch.report.plots import plot_rows
from mapsearch.sweep.case import FAILED_STATUSES
from mapsearch.sweep.export import export, flat_rows, result_rows, summary_text
from mapsearch.sweep.lock import LOCK_NAME, DirectoryLock, check_out_directory
from mapsearch.sweep.runner import Progress, check_scheduler, default_workers, run_sweep
from mapsearch.sweep.spec import Sweep, load_sweep, sweep_from_dict
from mapsearch.sweep.store import DB_NAME, ResultStore

if TYPE_CHECKING:  # pandas is optional at run time: imported by to_dataframe
    import pandas

__all__ = ["SweepSource", "SweepStart", "SweepResult", "run_sweep_file", "rows_dataframe", "results_directory"]

SweepSource = Union[str, Path, Mapping[str, Any], Sweep]


@dataclass(frozen=True)
class SweepStart:
    """What a run is about to do, handed to ``on_start`` before the first case runs."""

    name: str
    total: int  # cases in the sweep
    skipped: int  # finished in an earlier run (kept)
    todo: int  # to run now
    store: Path  # the results database
    where: str  # "N local worker(s)" or the Dask scheduler's address


@dataclass(frozen=True)
class SweepResult:
    """The finished rows of a sweep (keys in :mod:`mapsearch.sweep`), its exports and how the run ended."""

    name: str
    cases: tuple[Any, ...]
    rows: list[dict[str, Any]]
    out_dir: Path
    paths: dict[str, Path] = field(default_factory=dict)
    interrupted: bool = False

    @property
    def store(self) -> Path:
        """The results database (``out_dir/results.sqlite``): rerun into it to go on."""
        return self.out_dir / DB_NAME

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["status"] in FAILED_STATUSES]

    @property
    def mismatched(self) -> list[dict[str, Any]]:
        """Cases whose replay disagreed with the prediction: a bug to report."""
        return [r for r in self.rows if r["status"] == "MISMATCH"]

    def summary(self) -> str:
        """The table of ``summary.txt``: one line per finished case, then totals and failures."""
        return summary_text(self.name, self.cases, self.rows)

    def plot(self, out_png: str | Path, kind: str | None = None, param: str | None = None) -> Path:
        """Write a plot of the rows (:func:`mapsearch.report.plots.plot_rows`: against the swept parameter,
        a roofline, or against a lower bound); needs matplotlib (``pip install 'mapsearch[plot]'``)."""
        return plot_rows(self.rows, out_png, kind, param)

    def to_dataframe(self) -> "pandas.DataFrame":
        """One row per finished case, the columns of ``results.csv`` (pandas is imported here, on first use)."""
        return rows_dataframe(self.rows)


def rows_dataframe(rows: list[dict[str, Any]]) -> "pandas.DataFrame":
    """The rows as a DataFrame with the columns of ``results.csv`` (:func:`mapsearch.sweep.export.flat_rows`)."""
    try:
        import pandas as pd
    except ModuleNotFoundError:  # pragma: no cover - pandas comes with ortools
        from mapsearch.errors import MapsearchError

        raise MapsearchError("to_dataframe needs pandas, which is not installed: pip install pandas") from None
    columns, flats = flat_rows(rows)
    return pd.DataFrame(flats, columns=columns)


def _sweep_of(source: SweepSource, time_limit: float | None, work_limit: float | None) -> Sweep:
    if isinstance(source, Sweep):
        return source
    if isinstance(source, Mapping):
        return sweep_from_dict(dict(source), "<dict>", time_limit=time_limit, work_limit=work_limit)
    return load_sweep(source, time_limit=time_limit, work_limit=work_limit)


@contextmanager
def results_directory(out: Path, option: str = "out_dir", what: str = "sweep") -> Iterator[ResultStore]:
    """The :class:`ResultStore` of ``out``, held by this process alone (:mod:`mapsearch.sweep.lock`).

    If this run created the directory, its database or its lock and ends in
    an error before any case is stored, they are removed again: a failed run
    leaves nothing behind.
    """
    check_out_directory(out, option)
    made = [p for p in (out, out / DB_NAME, out / LOCK_NAME) if not p.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MapsearchError(f"{option}: cannot create {out}: {e.strerror or e}") from None
    lock = DirectoryLock(out, what)
    lock.acquire()  # a busy directory is left as it is: it is the other process's
    store = None
    try:
        store = ResultStore(out / DB_NAME)
        yield store
    except BaseException:
        if store is None or not store.statuses():  # nothing stored: remove what this run made
            if store is not None:
                store.close()
                store = None
            if out in made:
                shutil.rmtree(out, ignore_errors=True)
            else:
                wal = [out / f"{DB_NAME}-wal", out / f"{DB_NAME}-shm"] if out / DB_NAME in made else []
                for path in made + wal:
                    path.unlink(missing_ok=True)
        raise
    finally:
        if store is not None:
            store.close()
        lock.release()


def run_sweep_file(source: SweepSource, out_dir: str | Path | None = None, *, workers: int | None = None,
                   scheduler: str | None = None, time_limit: float | None = None, work_limit: float | None = None,
                   retry_failed: bool = False, export_only: bool = False,
                   on_start: Callable[[SweepStart], None] | None = None,
                   progress: Callable[[Progress], None] | None = None) -> SweepResult:
    """Run the sweep (module docstring); ``out_dir`` defaults to ``./<sweep name>-results``.

    ``workers``: local processes (default: the usable cores); ``scheduler``:
    a Dask scheduler's address instead. ``time_limit``/``work_limit``
    override the file's per case. ``export_only`` runs nothing and exports
    what is stored. ``on_start`` is called once before the first case,
    ``progress`` after each stored result.
    """
    check_scheduler(scheduler)
    sweep = _sweep_of(source, time_limit, work_limit)
    out = Path(out_dir) if out_dir is not None else Path(f"{sweep.name}-results")
    interrupted = False
    if export_only and not (out / DB_NAME).exists():  # nothing to export: refused before anything is created
        raise MapsearchError(f"{out}: nothing to export: no results in {out} (no {DB_NAME}); run the sweep first")
    with results_directory(out) as store:
        ids = [c.case_id for c in sweep.cases]
        stored = store.rows(ids)  # a damaged row is one error before anything runs or is written
        if export_only and not stored:
            raise MapsearchError(f"{out}: nothing to export: no results of sweep {sweep.name} in {out / DB_NAME}; "
                                 "run the sweep first")
        if not export_only:
            todo, skipped = store.to_run(sweep.cases, retry_failed)
            where = scheduler if scheduler else f"{workers or default_workers()} local worker(s)"
            if on_start is not None:
                on_start(SweepStart(sweep.name, len(sweep.cases), len(skipped), len(todo), out / DB_NAME, where))
            outcome = run_sweep(sweep.cases, store, sweep=str(sweep.source), workers=workers, scheduler=scheduler,
                                retry_failed=retry_failed, progress=progress)
            interrupted = outcome.interrupted
        paths = export(sweep.name, sweep.cases, store, out)
        rows = result_rows(sweep.cases, store)
    return SweepResult(sweep.name, sweep.cases, rows, out, paths, interrupted)
