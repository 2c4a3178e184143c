"""Batch sweeps: many cases, solved in parallel, stored as they end, resumable, exported.

``mapsearch sweep SWEEP.yaml`` (:mod:`mapsearch.cli.sweep`) expands a
sweep file (:mod:`mapsearch.sweep.spec`) into frozen, picklable
:class:`~mapsearch.sweep.case.Case` s, each identified by a hash of its fully
resolved content, runs the ones not yet finished with
:func:`~mapsearch.sweep.case.run_case` (solve, replay in count mode,
compare) in a local process pool or on a Dask cluster
(:mod:`mapsearch.sweep.runner`), stores each result in SQLite as it ends
(:mod:`mapsearch.sweep.store`) and exports (:mod:`mapsearch.sweep.export`).

Sweep file::

    name: l1-capacity                      # optional; default: the file's stem
    workloads: [../matmul-97x193x61.yaml]  # files (a file with `layers:` is a suite),
                                           # or inline {name, einsum, extents, homes}
    architectures: [../arch-three-level.yaml, edge-3level]   # files or preset names
    objectives: [time]                     # optional; time (default) and/or words
    constraints: [null, ../../constraints/weight-stationary.yaml]   # optional; null: none
    params:                                # optional; a path into the specs -> values
      architectures.L1.capacity: {range: [1024, 65536], scale: log2}
      workloads.extents.k: [16, 32]        # or {values: [...]}, {range: [lo, hi], step: S}
    mode: grid                             # grid (every combination) or list (i-th values together)
    time_limit: 60                         # seconds per case; --time-limit overrides
    work_limit: 5                          # optional; CP-SAT deterministic seconds per phase
    warm_start: true                       # optional; start each case from the schedule of the case
                                           # before it that differs only in capacities (sweep/neighbours.py)

A parameter applies to the specs that have its path and is crossed only
with them. Paths are relative to the sweep file.

Output directory (``--out DIR``):

- ``results.sqlite``: every stored result (see :mod:`mapsearch.sweep.store`).
- ``results.jsonl``: one JSON object per finished case, in the sweep's case
  order, with these keys:

  ============== ==============================================================
  case_id        16 hex digits, the hash of the case's resolved content
  workload       the workload's name
  architecture   the architecture's name
  objective      ``time`` or ``words``
  constraints    the constraints' name, or null
  params         {path: value} applied to this case, e.g.
                 ``{"architectures.L1.capacity": 4096}``; ``{}`` for none
  status         OPTIMAL, OPTIMAL_IN_FAMILY (proven over a restricted family: see
                 family_restrictions), FEASIBLE (time limit; not proven), INFEASIBLE,
                 TIMEOUT (no schedule in time), MISMATCH (the replay
                 disagreed) or ERROR
  error          ``"Type: one line"`` for a failed case, else null
  solve_seconds  the solver's wall time (null if it did not finish)
  time           clocks: max(compute time, slowest link time)
  utilization    compute time / time, a float in [0, 1]
  words_total    words moved over all links
  compute_time   clocks of compute
  op_calls       calls of the compute op
  mac_efficiency useful MACs / (op calls x block MACs)
  macs           MACs of the workload
  bound          ``compute`` or the name of the slowest link
  gap            relative gap to the solver's bound (0 when proven)
  extents        {dim: extent} of the workload as solved
  capacities     {level: words or null} of the architecture as solved
  links          [{name, words_down, words_up, words, time}], outermost
                 first (``"L1->L0"``)
  ============== ==============================================================

  The figure keys (time ... gap, links) are null / [] for a failed case,
  except MISMATCH, which has the replayed figures. Times are JSON numbers
  (floats where not integral); the exact values are in the stored report.
- ``results.csv``: the same rows flattened: the scalar keys, then
  ``param:PATH``, ``extent:DIM``, ``capacity:LEVEL`` and
  ``link:NAME:{words_down,words_up,words,time}`` columns.
- ``schedules/<case_id>.json``: the schedule file of each solved case
  (``mapsearch replay --check`` reads it); those of cases not in this sweep
  (an earlier, different sweep into the same DIR) are removed, while their
  results stay in ``results.sqlite``.
- ``summary.txt``: one line per finished case (status, time, utilization,
  words, solve seconds), totals and the failed cases' errors.

Reading the rows::

    import pandas as pd
    rows = pd.read_json("DIR/results.jsonl", lines=True)
"""

from mapsearch.sweep.case import FAILED_STATUSES, OK_STATUSES, Case, run_case

__all__ = ["Case", "run_case", "OK_STATUSES", "FAILED_STATUSES"]
