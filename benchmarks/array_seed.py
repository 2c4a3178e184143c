"""First schedules on the 128x128 array under a short limit, with and without seeded searches.

    python benchmarks/array_seed.py [--time-limit 10] [--layers conv1_7x7s2,conv3_3x3_128] [--no-compare]
                                    [--arch tpu|PRESET]

ResNet-50's window layers (and one 1x1 layer) from ``suites/resnet50_conv.yaml``
on the ``tpu`` characterize profile (``tpu-v4i-like``: 4 cores of 128x128
PEs), one worker, solved as ``mapsearch solve --time-limit`` does: seeded
(mapsearch/solve/spatial_seed.py, the default) and, with ``--compare``
(the default), again with the seeding off. Per layer: the time in clocks,
the contract's time floor, their ratio, and the wall seconds. Under a wall
limit the unseeded figures move a lot from run to run (the search is cut
where the clock says); the seeded ones land where a fixed-factor search
proves its optimum, so they move little. Run it on an idle machine: both
columns share the load.

``--arch`` takes a preset instead of the ``tpu`` profile: ``--arch simba-like
--layers conv2_1x1_64to256_and_proj,conv2_3x3_64,conv3_1x1_128to512,conv3_3x3s2_128,conv4_1x1_256to1024,conv4_3x3_256,conv5_1x1_512to2048,conv5_3x3_512``
gives docs/solver.md's table of the link-counting ranking (36 chiplets that
share nothing, three meshed levels).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mapsearch.characterize.profiles import load_profile  # noqa: E402
from mapsearch.model.build import clock_scale  # noqa: E402
from mapsearch.model.family import phase_floors  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.presets import resolve_architecture  # noqa: E402
from mapsearch.solve import spatial_seed  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.load import architecture_from_dict  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402

LAYERS = ("conv1_7x7s2", "conv2_3x3_64", "conv3_3x3_128", "conv3_3x3s2_128", "conv4_3x3s2_256", "conv5_3x3_512",
          "conv4_1x1_256to1024")


def _layers(names) -> list[tuple[str, Workload]]:
    suite = yaml.safe_load((ROOT / "benchmarks" / "suites" / "resnet50_conv.yaml").read_text())
    by_name = {layer["name"]: layer for layer in suite["layers"]}
    return [(n, Workload.from_text(n, by_name[n]["einsum"], by_name[n]["extents"])) for n in names]


def _solve(problem: Problem, limit: float, seeded: bool):
    saved = spatial_seed.SEED_INSTANCES
    spatial_seed.SEED_INSTANCES = saved if seeded else 10**12
    try:
        started = time.perf_counter()
        result = solve(problem, options=SolveOptions(time_limit=limit, workers=1, seed=0))
        return result.figures.time, time.perf_counter() - started
    finally:
        spatial_seed.SEED_INSTANCES = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--layers", default=",".join(LAYERS))
    ap.add_argument("--no-compare", action="store_true", help="the seeded solves only")
    ap.add_argument("--arch", default="tpu", help="the tpu characterize profile (default) or a preset name")
    args = ap.parse_args()
    if args.arch == "tpu":
        arch = architecture_from_dict(load_profile("tpu").architecture)
    else:
        arch = resolve_architecture(args.arch)[0]
    runs = [("seeded", True)] + ([] if args.no_compare else [("unseeded", False)])
    print(f"{'layer':<22} {'floor':>10} " + " ".join(f"{name + ' clocks':>18} {'x floor':>8} {'s':>5}" for name, _ in runs))
    for name, w in _layers(args.layers.split(",")):
        problem = Problem(w, arch)
        floor = phase_floors(problem, clock_scale(arch))["time"]
        cells = []
        for _, seeded in runs:
            clocks, seconds = _solve(problem, args.time_limit, seeded)
            cells.append(f"{float(clocks):>18,.1f} {float(clocks / floor):>8.2f} {seconds:>5.1f}")
        print(f"{name:<22} {float(floor):>10,.1f} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
