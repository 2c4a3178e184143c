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
"""

from __future__ import annotations

from pathlib import Path

from mapsearch.errors import SpecError
from mapsearch.spec.architecture import Architecture

__all__ = ["PRESET_DIR", "preset_names", "preset_path", "load_preset", "resolve_architecture"]

PRESET_DIR = Path(__file__).resolve().parent


def preset_names() -> tuple[str, ...]:
    """The names of the shipped presets, sorted."""
    return tuple(sorted(p.stem for p in PRESET_DIR.glob("*.yaml")))


def preset_path(name: str) -> Path:
    """The YAML file of preset ``name``; SpecError listing the presets if there is none."""
    path = PRESET_DIR / f"{name}.yaml"
    if "/" in name or "\\" in name or not path.is_file():
        raise SpecError(str(name), "", "", detail=f"no such file or preset; presets: {', '.join(preset_names())}")
    return path


def load_preset(name: str) -> Architecture:
    """The architecture of preset ``name``, a flat architecture file or a one-path tree."""
    return _load_file(preset_path(name))


def _load_file(path: Path) -> Architecture:
    """A flat architecture file, or a tree file (``docs/tree-format.md``) with one compute."""
    from mapsearch.spec.load import load_architecture

    try:
        from mapsearch.spec.tree import is_tree_file, load_tree, single_architecture
    except ImportError:  # pragma: no cover - a build without the tree format
        return load_architecture(path)
    if is_tree_file(path):
        return single_architecture(load_tree(path))
    return load_architecture(path)


def resolve_architecture(name_or_path: str | Path) -> tuple[Architecture, str]:
    """``(architecture, source)`` for a file path if it exists, else a preset name.

    ``source`` is the path as given, or ``preset:NAME``. Neither a file nor a
    preset: one SpecError line, ``NAME: no such file or preset; presets: ...``.
    """
    path = Path(name_or_path)
    if path.exists():
        return _load_file(path), str(name_or_path)
    name = str(name_or_path)
    return load_preset(name), f"preset:{name}"
