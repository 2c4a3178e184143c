"""A schedule as a Timeloop (v0.4) mapping, and the way back for checking.

:func:`timeloop_mapping` gives the mapping as a dict; :func:`timeloop_yaml`
its YAML text with explanatory comments; :func:`read_timeloop_mapping` reads
such a mapping back into tile extents, loop orders and held tensors per
level (the round trip the tests check).

How a mapsearch schedule maps onto Timeloop's directives, per level
(``target`` is the level's name, outermost first):

- ``type: temporal``: the loops *at* a level iterate over its child's tiles
  inside its own tile, so the factors at level ``i`` are
  ``T[i][d] / T[i+1][d]`` and the innermost level's factors are its tile
  (the loops over the op). The ``permutation`` is Timeloop's:
  **innermost loop first**, so it is the child level's ``order`` reversed.
  The innermost level's permutation (the op's loops, which move nothing)
  lists the dimensions innermost-first in reverse workload order.
- ``type: bypass``: ``keep`` the tensors the level holds (its homes and
  buffers), ``bypass`` the others.
- Dimensions are renamed to upper case (``m -> M``), Timeloop's style for
  problem dimensions; tensor (data-space) names are kept, so the Timeloop
  problem spec must name its data spaces the same.

What cannot be said exactly: Timeloop requires the factors of a dimension
to multiply to its extent. A schedule with remainder tiles (``97 = 49 + 48``)
is emitted with the ceil factors (``2 x 49``), i.e. for a problem padded to
the product of the factors; every padded dimension is listed in
``warnings`` (and in the YAML's header comment) with its padding and the
padded MACs. Timeloop also keeps every data space at its outermost level; a
tensor whose home is below the top is bypassed there, with a warning.
mapsearch's block op has no Timeloop counterpart (Timeloop counts MACs);
the header comment names it.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from mapsearch.errors import MapsearchError
from mapsearch.report.loopnest import refuse_spatial
from mapsearch.report.text import format_exact
from mapsearch.schedule.schedule import Schedule

__all__ = ["timeloop_mapping", "timeloop_yaml", "read_timeloop_mapping", "timeloop_dim_names"]


def timeloop_dim_names(schedule: Schedule) -> dict[str, str]:
    """mapsearch dimension -> Timeloop problem dimension (upper case); a clash is an error."""
    names = {d: d.upper() for d in schedule.workload.dims}
    if len(set(names.values())) != len(names):
        raise MapsearchError(f"dimensions {list(names)} clash once upper-cased for Timeloop; rename them")
    return names


def _held(s: Schedule, i: int) -> list[str]:
    """Tensors level ``i`` holds: its homes and its buffers, in workload order."""
    return [t for t in s.workload.tensor_names if s.home(t) == i or s.keeps(t, i)]


def timeloop_mapping(schedule: Schedule) -> dict[str, Any]:
    """The schedule as ``{"mapping": [...], "instance": {...}, "warnings": [...]}``.

    ``mapping`` is the Timeloop v0.4 mapping list; ``instance`` the problem
    extents the factors multiply to (the workload's extents, padded where the
    schedule has remainder tiles); ``warnings`` says what the mapping cannot
    state exactly (empty when it is exact).
    """
    s = schedule
    refuse_spatial(s, "the Timeloop export")
    w, arch = s.workload, s.architecture
    depth = arch.depth
    up = timeloop_dim_names(s)
    multi = [d for d in w.dims if len(up[d]) != 1]
    tiles = [s.tile_extents(i) for i in range(depth)]

    mapping: list[dict[str, Any]] = []
    padded = {d: 1 for d in w.dims}
    for i in range(depth):
        if i < depth - 1:
            factors = {d: -(-tiles[i][d] // tiles[i + 1][d]) for d in w.dims}
            order_inner_first = list(reversed(s.levels[i + 1].order))
        else:
            factors = dict(tiles[i])
            order_inner_first = list(reversed(w.dims))
        for d in w.dims:
            padded[d] *= factors[d]
        sep = " " if multi else ""
        mapping.append(
            {
                "target": s.levels[i].level,
                "type": "temporal",
                "factors": " ".join(f"{up[d]}={factors[d]}" for d in w.dims),
                "permutation": sep.join(up[d] for d in order_inner_first),
            }
        )
        held = _held(s, i)
        mapping.append(
            {
                "target": s.levels[i].level,
                "type": "bypass",
                "keep": held,
                "bypass": [t for t in w.tensor_names if t not in held],
            }
        )

    warnings: list[str] = []
    extent = w.extent
    pads = [d for d in w.dims if padded[d] != extent[d]]
    if pads:
        padded_macs = math.prod(padded.values())
        detail = ", ".join(f"{up[d]} {extent[d]} -> {padded[d]} (+{padded[d] - extent[d]})" for d in pads)
        warnings.append(
            f"remainder tiles: Timeloop needs factors that multiply to the extent, so these are the ceil factors "
            f"of a padded problem: {detail}; {padded_macs:,} MACs instead of {w.macs:,} "
            f"(+{padded_macs - w.macs:,} padded MACs). Timeloop's figures for it are not mapsearch's"
        )
    for t in w.tensor_names:
        if s.home(t) != 0:
            warnings.append(
                f"{t} lives at {arch.levels[s.home(t)].name} (its home), so it is bypassed at "
                f"{', '.join(arch.level_names[: s.home(t)])}; Timeloop keeps every data space at its outermost level"
            )
    if multi:
        warnings.append(f"dimension names longer than one letter ({', '.join(up[d] for d in multi)}): "
                        "the permutations are written with spaces between the names")
    return {"mapping": mapping, "instance": {up[d]: padded[d] for d in w.dims}, "warnings": warnings}


def _flow(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def timeloop_yaml(schedule: Schedule) -> str:
    """The Timeloop mapping file: header comments (what it is, warnings), then ``mapping:``."""
    s = schedule
    w, arch = s.workload, s.architecture
    data = timeloop_mapping(s)
    up = timeloop_dim_names(s)
    lines = [
        f"# Timeloop v0.4 mapping of a mapsearch schedule: {w.name} ({w.einsum.text()}) on {arch.name}",
        "# dimensions renamed: " + ", ".join(f"{d} -> {up[d]}" for d in w.dims) + "; data spaces keep their names",
        "# permutations list the loops innermost first; the innermost level's factors are the loops over the op",
        "# problem instance these factors multiply to: "
        + ", ".join(f"{k}: {v}" for k, v in data["instance"].items()),
    ]
    if arch.compute.block_macs != 1:
        block = " ".join(f"{up[d]}={arch.compute.block_extent(d)}" for d in w.dims)
        lines.append(f"# mapsearch's op covers a block {block} in {format_exact(arch.compute.clocks_per_call)} clock(s) per call; "
                     "Timeloop counts single MACs")
    for text in data["warnings"]:
        lines.append(f"# WARNING: {text}")
    lines.append("mapping:")
    for entry in data["mapping"]:
        lines.append(f"  - target: {entry['target']}")
        lines.append(f"    type: {entry['type']}")
        if entry["type"] == "temporal":
            lines.append(f"    factors: {entry['factors']}")
            lines.append(f"    permutation: {entry['permutation']}")
        else:
            lines.append(f"    keep: {_flow(entry['keep'])}")
            lines.append(f"    bypass: {_flow(entry['bypass'])}")
    return "\n".join(lines) + "\n"


def read_timeloop_mapping(data: Mapping[str, Any], dims: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
    """Read a mapping (as parsed from YAML) back: per target level, outermost first,
    ``{"level", "tile": {dim: extent}, "order": [dims outer -> inner], "keep": [tensors]}``.

    ``dims`` are the mapsearch dimension names (upper-cased in the mapping).
    The tile at a level is the product of its factors and those of every
    level below it; the order at a level is the parent's permutation reversed
    (empty at the top). A padded mapping reads back as its padded tiles.
    """
    by_upper = {d.upper(): d for d in dims}
    levels: list[str] = []
    factors: dict[str, dict[str, int]] = {}
    perms: dict[str, list[str]] = {}
    keeps: dict[str, list[str]] = {}
    for entry in data["mapping"]:
        target = entry["target"]
        if target not in levels:
            levels.append(target)
        if entry["type"] == "temporal":
            pairs = (item.split("=") for item in str(entry["factors"]).split())
            factors[target] = {by_upper[k]: int(v) for k, v in pairs}
            text = str(entry["permutation"])
            names = text.split() if " " in text else list(text)
            perms[target] = [by_upper[n] for n in names]
        elif entry["type"] == "bypass":
            keeps[target] = list(entry.get("keep") or [])
    out: list[dict[str, Any]] = []
    tile = {d: 1 for d in dims}
    for level in reversed(levels):
        f = factors.get(level, {})
        tile = {d: tile[d] * f.get(d, 1) for d in dims}
        out.append({"level": level, "tile": dict(tile), "keep": keeps.get(level, [])})
    out.reverse()
    for i, entry in enumerate(out):
        entry["order"] = [] if i == 0 else list(reversed(perms.get(levels[i - 1], [])))
    return out
