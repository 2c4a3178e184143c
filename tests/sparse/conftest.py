"""Shared schedules for the sparse tests: the Tensaurus kernels solved by mapsearch.solve (per einsum)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from mapsearch.model.problem import Problem
from mapsearch.presets import load_preset
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.spec.teaal import load_teaal

TEAAL = Path(__file__).resolve().parents[2] / "examples/chains/teaal"


@lru_cache(maxsize=None)
def kernel_schedules(name: str, extents: tuple[tuple[str, int], ...]):
    """(spec, schedules per einsum) of a notebook kernel on edge-3level, its TeAAL mapping as constraints."""
    arch = load_preset("edge-3level")
    spec = load_teaal(TEAAL / f"{name}.yaml", extents=dict(extents))
    cons = spec.constraints(arch)
    scheds = tuple(solve(Problem(spec.graph.stage(i), arch, ()), c, SolveOptions(time_limit=20)).schedule
                   for i, c in enumerate(cons))
    return spec, scheds
