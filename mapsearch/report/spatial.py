"""The spatial fanouts of a schedule, as the reports show them (docs/spatial.md).

Per meshed level: its mesh axes (size, what each may and must reuse), the
dimensions split over each axis with their part extent and factor, how each
parent piece is cut (``32 -> 16 x 2``; ``29 -> 14 x 2 + 1``), how many
instances get a part and how many idle throughout, and the level's array
utilization: the op calls under one instance of the meshed level above (all
of them at the outermost) over ``instances x`` the calls under the busiest
instance of this level (the one with every part index 0, docs/spatial.md).
With one meshed level that is ``op_calls / (instances * busiest calls)``;
with several, the levels' utilizations multiply to the whole array's. Text
by :func:`spatial_lines`, JSON-ready data by :func:`spatial_dict`; both only
build, the CLI prints.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from mapsearch.schedule.figures import Figures
from mapsearch.schedule.schedule import Schedule

__all__ = ["spatial_dict", "spatial_lines"]


def _parent_pieces(s: Schedule, level: int, dim: str) -> Counter:
    """Extents (with counts) of the pieces of ``dim`` that ``level``'s splits cut: the pieces of level ``level-1``.

    Followed from the whole extent down, every tile cutting full tiles and a
    remainder and every split above cutting parts, as the replay does.
    """
    pieces = Counter({s.workload.extent[dim]: 1})
    for i in range(1, level):
        lm = s.levels[i]
        for sp in lm.spatial:
            if sp.dim == dim:
                pieces = _cut(pieces, sp.part)
        pieces = _cut(pieces, lm.tile_extent(dim))
    return pieces


def _cut(pieces: Counter, size: int) -> Counter:
    out: Counter = Counter()
    for x, n in pieces.items():
        if x // size:
            out[size] += n * (x // size)
        if x % size:
            out[x % size] += n
    return out


def _busiest_calls(s: Schedule, level: int) -> int:
    """Op calls under the busiest instance of ``level`` (part index 0 at every split at or above it).

    Per dimension, its pieces are followed from the whole extent: a split at
    or above ``level`` keeps its first part (``min(x, P)``), a split below it
    cuts every part, a tile cuts full tiles and a remainder; the calls are
    ``ceil(x / b)`` summed over the innermost pieces, multiplied over the
    dimensions. ``level = 0``: every instance, the op calls.
    """
    arch = s.architecture
    calls = 1
    for d in s.workload.dims:
        pieces = Counter({s.workload.extent[d]: 1})
        for i in range(1, len(s.levels)):
            lm = s.levels[i]
            for sp in lm.spatial:
                if sp.dim == d:
                    pieces = _first_part(pieces, sp.part) if i <= level else _cut(pieces, sp.part)
            pieces = _cut(pieces, lm.tile_extent(d))
        b = arch.compute.block_extent(d)
        calls *= sum(n * -(-x // b) for x, n in pieces.items())
    return calls


def _first_part(pieces: Counter, part: int) -> Counter:
    out: Counter = Counter()
    for x, n in pieces.items():
        out[min(x, part)] += n
    return out


def _cut_text(x: int, n: int, part: int) -> str:
    """``29 (x2) -> 14 x 2 + 1 (15 instances)``: a parent piece, how many of it, and its parts."""
    full, rest = divmod(x, part)
    text = f"{full} x {part}" if full else ""
    if rest:
        text += (" + " if text else "") + str(rest)
    many = f" (x{n})" if n > 1 else ""
    return f"{x}{many} -> {text} ({full + (rest > 0)} instances)"


def spatial_dict(s: Schedule, figures: Figures | None = None) -> list[dict[str, Any]]:
    """Per meshed level: axes, splits (dim, part, factor, parent pieces and their cuts), instances used and idle."""
    out = []
    above = _busiest_calls(s, 0)  # the calls under one instance of the meshed level above: all, at first
    for i, lv in enumerate(s.architecture.levels):
        if lv.instances <= 1:
            continue
        splits = s.levels[i].spatial
        axes = []
        for ax in lv.mesh:
            mine = []
            for sp in splits:
                if sp.axis != ax.name:
                    continue
                parents = _parent_pieces(s, i, sp.dim)
                factor = -(-max(parents) // sp.part)
                mine.append({"dim": sp.dim, "part": sp.part, "factor": factor,
                             "parent_pieces": {str(x): n for x, n in sorted(parents.items(), reverse=True)},
                             "cuts": [_cut_text(x, n, sp.part) for x, n in sorted(parents.items(), reverse=True)],
                             "equal": all(x % sp.part == 0 for x in parents)})
            used = math.prod(m["factor"] for m in mine)
            axes.append({"axis": ax.name, "size": ax.size, "may_reuse": list(ax.may_reuse),
                         "must_reuse": list(getattr(ax, "must_reuse", ())),
                         "loop_bounds": [str(rule) for rule in getattr(ax, "split_bounds", ())], "used": used,
                         "splits": mine})
        used = math.prod(a["used"] for a in axes)
        entry = {"level": lv.name, "instances": lv.instances, "used_instances": used,
                 "idle_instances": lv.instances - used, "axes": axes}
        busiest = _busiest_calls(s, i)
        entry["busiest_calls"] = busiest
        entry["array_utilization"] = above / (lv.instances * busiest) if busiest else 0.0
        above = busiest
        out.append(entry)
    return out


def spatial_lines(s: Schedule, figures: Figures | None = None) -> list[str]:
    """The spatial section of the text report; empty without a meshed level."""
    data = spatial_dict(s, figures)
    if not data:
        return []
    lines = ["spatial fanout (each instance runs the same loops in lockstep on its part):"]
    for entry in data:
        mesh = " x ".join(f"{a['axis']} {a['size']}" for a in entry["axes"])
        lines.append(f"  {entry['level']}: {entry['instances']:,} instances ({mesh}); "
                     f"{entry['used_instances']:,} get a part, {entry['idle_instances']:,} idle throughout")
        for a in entry["axes"]:
            reuse = f"may reuse {', '.join(a['may_reuse'])}"
            if a["must_reuse"]:
                reuse += f"; must reuse {', '.join(a['must_reuse'])}"
            if a["loop_bounds"]:
                reuse += f"; loop bounds: {'; '.join(a['loop_bounds'])}"
            if not a["splits"]:
                lines.append(f"    axis {a['axis']} ({a['size']}; {reuse}): not split")
                continue
            lines.append(f"    axis {a['axis']} ({a['size']}; {reuse}): {a['used']} of {a['size']} used")
            for sp in a["splits"]:
                kind = "equal parts" if sp["equal"] else "unequal parts"
                lines.append(f"      {sp['dim']} in parts of {sp['part']} over {sp['factor']} instances ({kind}; "
                             f"parent pieces {'; '.join(sp['cuts'])})")
        whole = "op calls" if entry is data[0] else "calls under one instance above"
        lines.append(f"    array utilization {entry['array_utilization'] * 100:.2f}% "
                     f"({whole} / ({entry['instances']:,} instances x {entry['busiest_calls']:,} calls under the busiest))")
    if len(data) > 1 and figures is not None:
        lines.append(f"  whole array: utilization {float(figures.array_utilization) * 100:.2f}% (op calls / "
                     f"({figures.compute_instances:,} instances x {figures.busiest_calls:,} busiest calls))")
    return lines


def spatial_loop_text(s: Schedule, level: int, split: Any) -> str:
    """One spatial loop of the loop nest: ``spatial for m in [0, 100) parts of 13 on x (8 instances)``."""
    parents = _parent_pieces(s, level, split.dim)
    factor = -(-max(parents) // split.part)
    return (f"spatial for {split.dim} in [0, {max(parents)}) parts of {split.part} on axis {split.axis} "
            f"({factor} instances{'' if all(x % split.part == 0 for x in parents) else ', unequal parts'})   "
            f"# {s.levels[level].level}: in lockstep")
