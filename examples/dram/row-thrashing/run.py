"""Row activations of the seed's scenario: the thrashing order against the fix.

    python examples/dram/row-thrashing/run.py
"""

from pathlib import Path

from mapsearch.dram.options import load_trace_options
from mapsearch.schedule.json_io import load_schedule
from mapsearch.sim.dram_trace import row_activations

HERE = Path(__file__).resolve().parent


def activations(options: str):
    schedule = load_schedule(HERE / "schedule.json")
    opts = load_trace_options(schedule, HERE / options)
    return row_activations(schedule, opts.dram, opts.layouts, opts.element_order)


if __name__ == "__main__":
    for name in ("thrash.yaml", "fix.yaml"):
        stats = activations(name)
        print(f"== {name}: {stats.activations} activations ({stats.tensor('I').activations} for the input)")
        print(stats.text())


def solver_choice():
    """The solver's own schedule for the layer, its tile transfers in address order."""
    from mapsearch.model.problem import Problem
    from mapsearch.solve.run import solve
    from mapsearch.spec.load import load_problem

    w, arch, homes = load_problem(HERE / "workload.yaml", HERE / "arch.yaml")
    schedule = solve(Problem(w, arch, tuple(homes.items()))).schedule
    opts = load_trace_options(schedule, HERE / "fix.yaml")
    return row_activations(schedule, opts.dram, opts.layouts, "layout")


def solver_rows(seed_input_layout: bool):
    """The solver with DRAM rows as a tiebreak: its own layouts, or the seed's input layout fixed."""
    from mapsearch.dram.layout import LayoutSpec
    from mapsearch.model.problem import Problem
    from mapsearch.report.dram_rows import dram_rows_check
    from mapsearch.model.options import SolveOptions
    from mapsearch.solve.run import solve
    from mapsearch.spec.load import load_problem

    w, arch, homes = load_problem(HERE / "workload.yaml", HERE / "arch.yaml")
    fixed = (("I", LayoutSpec("row_aligned", (0, 1, 2, 3), (), 2)),) if seed_input_layout else ()
    result = solve(Problem(w, arch, tuple(homes.items())), options=SolveOptions(dram_rows="tiebreak", dram_layouts=fixed))
    return dram_rows_check(result.schedule)


if __name__ == "__main__":
    stats = solver_choice()
    print(f"== the solver's schedule, transfers in address order: {stats.activations} activations "
          f"({stats.tensor('I').activations} for the input)")
    for fixed in (True, False):
        title = "the seed's input layout (a row per channel)" if fixed else "layouts chosen by the solver"
        print(f"== DRAM rows in the solver (tiebreak), {title}:")
        print(solver_rows(fixed).text(), end="")
