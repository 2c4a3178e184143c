"""Architecture presets shipped with mapsearch, by name.

Each preset is an architecture YAML file in this package (``<name>.yaml``),
read like any other architecture file; its header cites where its numbers
come from. Use a preset wherever an architecture file is asked for:
``mapsearch solve W.yaml gpu-sm``, or ``architectures: [edge-3level]`` in a
sweep file.

- ``cpu-core``: one x86 core (Golden Cove), DRAM, L3, L2, L1, registers; an
  8-wide fp32 FMA over ``n`` as the op (5 levels: slow to prove, tens of
  seconds and more for a 256^3 matmul).
- ``gpu-sm``: one A100 SM, HBM, L2, shared memory, registers; the tensor
  cores' ``mma m16n8k16`` over ``m, n, k`` as the op.
- ``edge-3level``, ``server-3level``: small and large three-level
  accelerators with a scalar MAC, fast to solve, for sweeps.
- Tree-format presets (``docs/tree-format.md``) with one compute, e.g.
  ``eyeriss-like`` and ``tpu-v4i-like``, load as their single flat
  architecture.

A block op names dimensions (``n``; ``m, n, k``): a workload whose
dimensions have other names runs each call on one point of the block, and
the report's MAC efficiency shows it.

This package is the presets' data (``*.yaml``). The functions that read them
live in :mod:`mapsearch.spec.load` (``load_problem`` resolves a preset name
without importing this package); they are re-exported here because
``from mapsearch.presets import load_preset`` is how scripts load a preset.
"""

from mapsearch.spec.load import PRESET_DIR, load_preset, preset_names, preset_path, resolve_architecture

__all__ = ["PRESET_DIR", "preset_names", "preset_path", "load_preset", "resolve_architecture"]
