"""DRAM trace generation speed on a ResNet-50 layer, and the size of the trace on disk per format.

The layer is ``examples/conv-resnet50-3x3.yaml`` (conv2_x 3x3, 64 -> 64
channels, 56x56 output) on DRAM / GlobalBuffer / L0 with a hand-written
schedule: global-buffer tiles of 16 output channels x 16 input channels x
14 rows (``k``, ``c``, ``p`` tiled; everything else whole), L0 tiles of one
output row. Everything crosses the DRAM link once per global-buffer tile
(inputs reloaded per ``k`` tile): 1.3 M addresses with DDR4-3200, 2-byte elements,
row-major layouts.

    python benchmarks/dram_trace.py [--formats ramulator2,ramulator1,dramsim3] [--element-order layout]

Prints addresses per second for generating the stream (with the row-buffer
count), and for each format the seconds to write it and its bytes on disk.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from mapsearch.dram.geometry import preset
from mapsearch.dram.rowbuffer import RowBuffer
from mapsearch.dram.trace import write_trace
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.sim.dram_trace import address_chunks
from mapsearch.spec.architecture import Architecture, Level, Link
from mapsearch.spec.load import load_workload

ROOT = Path(__file__).resolve().parents[1]


def benchmark_schedule() -> Schedule:
    wl = load_workload(ROOT / "examples" / "conv-resnet50-3x3.yaml")
    dram = preset("ddr4-3200")
    arch = Architecture("dram-glb-l0", (Level("DRAM", None), Level("GLB", 1 << 20, Link()), Level("L0", 1 << 14, Link())), dram=dram)
    ext = wl.extent
    glb = dict(ext, k=16, c=16, p=14)
    l0 = dict(glb, p=1)
    levels = (
        LevelMapping("DRAM", tuple(wl.extents)),
        LevelMapping("GLB", tuple((d, glb[d]) for d in wl.dims), ("n", "k", "p", "c", "q", "r", "s"), frozenset("IWO")),
        LevelMapping("L0", tuple((d, l0[d]) for d in wl.dims), ("n", "k", "p", "c", "q", "r", "s"), frozenset("IWO")),
    )
    return Schedule(wl, arch, levels, ())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formats", default="ramulator2,ramulator1,dramsim3")
    ap.add_argument("--element-order", default="layout", help="layout | nest")
    args = ap.parse_args()
    s = benchmark_schedule()
    dram = s.architecture.dram
    t0 = time.perf_counter()
    n = 0
    for ch in address_chunks(s, None, args.element_order, dram=dram):
        n += len(ch.addresses)
    gen = time.perf_counter() - t0
    print(f"layer {s.workload.name}: {n:,} addresses across the DRAM link")
    print(f"stream only:        {gen:6.2f} s  {n / gen / 1e6:6.2f} M addresses/s")
    t0 = time.perf_counter()
    rb = RowBuffer(dram, s.workload.tensor_names)
    for ch in address_chunks(s, None, args.element_order, dram=dram):
        rb.feed(ch.addresses, ch.is_write, ch.tensor)
    cnt = time.perf_counter() - t0
    st = rb.stats()
    print(f"stream + row count: {cnt:6.2f} s  {n / cnt / 1e6:6.2f} M addresses/s  "
          f"({st.activations:,} activations, {st.hits:,} hits)")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            path = Path(tmp) / f"trace.{fmt}"
            t0 = time.perf_counter()
            written = write_trace(((c.addresses, c.is_write) for c in address_chunks(s, None, args.element_order, dram=dram)), path, fmt)
            sec = time.perf_counter() - t0
            size = os.path.getsize(path)
            print(f"{fmt:11s} {sec:6.2f} s  {written / sec / 1e6:5.2f} M lines/s  {size / 1e6:8.1f} MB  ({size / written:.1f} B/line)")
            path.unlink()


if __name__ == "__main__":
    main()
