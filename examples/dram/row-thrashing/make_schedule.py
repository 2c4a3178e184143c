"""Write schedule.json: the seed's conv mapping as a mapsearch schedule (see README.md).

    python examples/dram/row-thrashing/make_schedule.py
"""

from pathlib import Path

from mapsearch.schedule.json_io import save_schedule
from mapsearch.schedule.schedule import LevelMapping, Schedule, SpatialSplit
from mapsearch.spec.load import load_architecture, load_workload

HERE = Path(__file__).resolve().parent


def seed_schedule() -> Schedule:
    wl = load_workload(HERE / "workload.yaml")
    arch = load_architecture(HERE / "arch.yaml")
    glb = dict(n=1, k=4, c=2, p=8, q=8, r=3, s=3)  # DRAM loops: K:4 (outer), C:8
    levels = (
        LevelMapping("DRAM", tuple(wl.extents)),
        LevelMapping("GlobalBuffer", tuple((d, glb[d]) for d in wl.dims), ("k", "c", "n", "p", "q", "r", "s"), frozenset("IWO")),
        LevelMapping(
            "PE",
            tuple((d, 1) for d in wl.dims),
            ("n", "k", "c", "q", "r", "p", "s"),  # temporal R:3, P:2, S:3 (R -> P -> S)
            frozenset("IWO"),
            # H = {Q:8, C:2}, W = {P:4, K:4}
            (SpatialSplit("q", 1, "H"), SpatialSplit("c", 1, "H"), SpatialSplit("p", 2, "W"), SpatialSplit("k", 1, "W")),
        ),
    )
    return Schedule(wl, arch, levels, ())


if __name__ == "__main__":
    save_schedule(seed_schedule(), HERE / "schedule.json")
    print(f"wrote {HERE / 'schedule.json'}")
