"""The seed's row-thrashing layer: the solver's schedule, with tile transfers in address order,
activates no more DRAM rows than the seed's fix (and far fewer than the thrashing order)."""

from __future__ import annotations

from pathlib import Path

from mapsearch.dram.options import load_trace_options
from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import differences
from mapsearch.schedule.json_io import load_schedule
from mapsearch.sim.dram_trace import row_activations
from mapsearch.sim.replay import replay
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.spec.load import load_problem

HERE = Path(__file__).resolve().parents[2] / "examples" / "dram" / "row-thrashing"


def test_solver_schedule_activates_at_most_the_fix():
    w, arch, homes = load_problem(HERE / "workload.yaml", HERE / "arch.yaml")
    # A work limit keeps the schedule the same under any load. Since window dimensions may be split
    # over the PE mesh the family is larger and the time is no longer proven in a minute (bound 4,928);
    # 5,632 clocks is the proven optimum of the family before (window dimensions off the mesh).
    result = solve(Problem(w, arch, tuple(homes.items())), options=SolveOptions(time_limit=300, work_limit=5))
    assert result.schedule.predicted.time <= 5632
    assert differences(result.schedule.predicted, replay(result.schedule, mode="count").figures) == []

    fix = load_trace_options(load_schedule(HERE / "schedule.json"), HERE / "fix.yaml")
    fix_input = row_activations(load_schedule(HERE / "schedule.json"), fix.dram, fix.layouts,
                                fix.element_order).tensor("I").activations
    ours = load_trace_options(result.schedule, HERE / "fix.yaml")
    chosen = row_activations(result.schedule, ours.dram, ours.layouts, "layout").tensor("I").activations
    thrash = load_trace_options(result.schedule, HERE / "thrash.yaml")
    thrashing = row_activations(result.schedule, thrash.dram, thrash.layouts, thrash.element_order).tensor("I").activations

    assert fix_input == 64  # the seed's fix on the seed's own mapping: 2 rows per DRAM tile, 32 tiles
    # Address order never comes back to a row inside a transfer; the solved schedule loads the
    # input once, so each of the 16 channel rows opens exactly once: the least any schedule can do.
    assert chosen == 16 <= fix_input
    assert thrashing == 160 > chosen
