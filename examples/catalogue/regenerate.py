"""Solve every catalogue problem and (re)write its schedule JSON.

    python examples/catalogue/regenerate.py          # writes NAME.schedule.json
    python examples/catalogue/regenerate.py --check  # only compares with the shipped files

Each item is NAME.workload.yaml (with homes) + NAME.arch.yaml; the schedule
is solved with the default options (objective time then words, one worker,
seed 0: deterministic) and replayed before it is written: a schedule whose
replay differs from its prediction is never shipped. The figures printed are
the ones docs/catalogue.md quotes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import differences
from mapsearch.schedule.json_io import load_schedule, save_schedule
from mapsearch.sim.replay import replay
from mapsearch.solve.run import solve
from mapsearch.spec.load import load_problem

HERE = Path(__file__).resolve().parent
ITEMS = ("output-in-l1", "l2-to-l2", "input-in-l1")


def solve_item(name: str):
    workload, arch, homes = load_problem(HERE / f"{name}.workload.yaml", HERE / f"{name}.arch.yaml")
    return solve(Problem(workload, arch, tuple(sorted(homes.items()))))


def report(name: str, result) -> str:
    s, f = result.schedule, result.schedule.predicted
    lines = [f"{name}: {result.status} in {result.solve_seconds:.1f} s; time {f.time}, utilization {f.utilization} "
             f"({float(f.utilization):.4f}), words {f.words_total}"]
    for link in f.links:
        per = ", ".join(f"{t.tensor} {t.words_down}/{t.words_up}" for t in link.tensors)
        lines.append(f"  {link.name}: down {link.words_down}, up {link.words_up}, time {link.time} ({per})")
    for lm in s.levels[1:]:
        placed = f", positions {dict(lm.positions)}" if lm.positions else ""
        lines.append(f"  {lm.level}: tile {dict(lm.tile)}, order {list(lm.order)}, keep {sorted(lm.keep)}{placed}")
    lines += [f"  {b.describe()}" for b in result.binding]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    bad = 0
    for name in ITEMS:
        result = solve_item(name)
        s = result.schedule
        diff = differences(s.predicted, replay(s, mode="count").figures)
        print(report(name, result))
        if diff:
            print(f"  predicted != replayed: {diff}")
            bad += 1
            continue
        path = HERE / f"{name}.schedule.json"
        if check:
            shipped = load_schedule(path).predicted
            if (shipped.time, shipped.words_total) != (s.predicted.time, s.predicted.words_total):
                print(f"  shipped {path.name} has time {shipped.time}, words {shipped.words_total}")
                bad += 1
        else:
            save_schedule(s, path)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
