"""Specs written back in their file formats (the architecture and workload embedded in a schedule file), every
default written out, so that ``architecture_from_dict(architecture_to_dict(a), src) == a``. Re-exported by load.py.
"""

from __future__ import annotations

from typing import Any

from mapsearch.spec.architecture import Architecture, Link
from mapsearch.spec.energy import energy_to_dict
from mapsearch.spec.reading import fraction_to_json
from mapsearch.spec.workload import Workload

__all__ = ["workload_to_dict", "architecture_to_dict"]


def workload_to_dict(workload: Workload) -> dict[str, Any]:
    """The workload in its file format (without homes)."""
    return {"name": workload.name, "einsum": workload.einsum.text(), "extents": dict(workload.extents)}


def _link_to_dict(link: Link) -> dict[str, Any]:
    return {
        "input_clocks_per_word": fraction_to_json(link.input_clocks_per_word),
        "output_clocks_per_word": fraction_to_json(link.output_clocks_per_word),
        "lines": link.lines,
    }


def architecture_to_dict(architecture: Architecture) -> dict[str, Any]:
    """The architecture in its file format, every default written out."""
    levels = []
    for lv in architecture.levels:
        entry: dict[str, Any] = {"name": lv.name, "capacity": lv.capacity}
        if lv.mesh:
            entry["mesh"] = [{"name": a.name, "size": a.size, "may_reuse": list(a.may_reuse)} for a in lv.mesh]
        elif lv.instances != 1:
            entry["instances"] = lv.instances
        if lv.link is not None:
            entry["link"] = _link_to_dict(lv.link)
        levels.append(entry)
    return {
        "name": architecture.name,
        "levels": levels,
        "compute": {
            **({"block_roles": dict(architecture.compute.block_roles)} if architecture.compute.block_roles
               else {"block": dict(architecture.compute.block)}),
            "clocks_per_call": fraction_to_json(architecture.compute.clocks_per_call),
        },
        "double_buffering": architecture.double_buffering,
        **({"dram": _dram_to_dict(architecture.dram)} if architecture.dram is not None else {}),
        **({"energy": energy_to_dict(architecture.energy)} if architecture.energy is not None else {}),
    }


def _dram_to_dict(spec: Any) -> dict[str, Any]:
    from mapsearch.dram.spec import dram_to_dict

    return dram_to_dict(spec)
