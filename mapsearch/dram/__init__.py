"""DRAM as a first-class level: geometry and timing, layouts, the row-buffer machine, traces (docs/dram.md).

- :mod:`mapsearch.dram.geometry`: :class:`DramSpec` (rows, banks, channels,
  address mapping, open/closed page, costs) and cited presets.
- :mod:`mapsearch.dram.spec`: the architecture YAML's ``dram:`` entry.
- :mod:`mapsearch.dram.layout`: row-major, tiled and row-aligned layouts.
- :mod:`mapsearch.dram.rowbuffer`: hits, misses, conflicts, activations, time.
- :mod:`mapsearch.dram.trace`: Ramulator 1/2 and DRAMsim3 trace writers and parsers.
- :mod:`mapsearch.sim.dram_trace`: the replay side (the address stream of a schedule, ``row_activations``);
  the options of ``mapsearch trace`` are :mod:`mapsearch.dram.options`.
"""

from mapsearch.dram.geometry import CLOSED, OPEN, PRESETS, DramSpec, DramSpecError, preset, simple_dram

__all__ = ["DramSpec", "DramSpecError", "PRESETS", "preset", "simple_dram", "OPEN", "CLOSED"]

