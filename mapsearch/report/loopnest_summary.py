"""The loop nest as the solve report shows it: per level its loops (outer -> inner), tile, kept tensors, homes."""

from __future__ import annotations

from mapsearch.report.spatial import spatial_loop_text
from mapsearch.report.text import format_exact
from mapsearch.schedule.schedule import Schedule

__all__ = ["loop_nest_lines", "trips_note"]


def trips_note(parent: int, tile: int) -> str:
    """``'4 trips'`` or ``'3 trips, last piece 1'`` for a tile inside a parent piece."""
    trips = -(-parent // tile)
    rest = parent - (trips - 1) * tile
    return f"{trips} trip{'s' if trips != 1 else ''}" + (f", last piece {rest}" if rest != tile else "")


def loop_nest_lines(s: Schedule) -> list[str]:
    """The schedule as a loop nest: per level its loops (outer -> inner), tile, kept tensors and homes."""
    arch, w = s.architecture, s.workload
    top = s.levels[0]
    homes_at = {i: [t for t in w.tensor_names if s.home(t) == i] for i in range(arch.depth)}
    lines = []
    whole = " ".join(f"{d}={e}" for d, e in top.tile)
    homes = f"; home of {', '.join(homes_at[0])}" if homes_at[0] else ""
    lines.append(f"{top.level}: the whole space {whole}{homes}")
    indent = "  "
    placed = _placed_buffers(s)
    loops = 0
    lines += [f"{indent}{text}" for text in placed.get(0, ())]
    for i in range(1, arch.depth):
        lv, parent = s.levels[i], s.levels[i - 1].tile_extents
        split = {sp.dim: sp for sp in lv.spatial}
        for sp in lv.spatial:  # spatial loops first: each instance then loops over its part
            lines.append(f"{indent}{spatial_loop_text(s, i, sp)}")
            indent += "  "
        for d in lv.order:
            t, p = lv.tile_extent(d), split[d].part if d in split else parent[d]
            lines.append(f"{indent}for {d} in [0, {p}) step {t}   # {lv.level}: {trips_note(p, t)}")
            indent += "  "
            loops += 1
            lines += [f"{indent}{text}" for text in placed.get(loops, ())]
        tile = " ".join(f"{d}={e}" for d, e in lv.tile)
        kept = sorted(t if dict(lv.positions).get(t, i * len(w.dims)) == i * len(w.dims) else f"{t} (placed above)"
                      for t in w.tensor_names if s.keeps(t, i))
        bypass = sorted(t for t in w.tensor_names if i > s.home(t) and not s.keeps(t, i))
        parts = [f"tile {tile}", f"keeps {', '.join(kept) if kept else 'nothing'}"]
        if bypass:
            parts.append(f"bypasses {', '.join(bypass)}")
        if homes_at[i]:
            parts.append(f"home of {', '.join(homes_at[i])}")
        lines.append(f"{indent}{lv.level}: {'; '.join(parts)}")
    lines.append(f"{indent}  op: {_op_text(s)}, {format_exact(arch.compute.clocks_per_call)} clock(s) per call")
    return lines


def _placed_buffers(s: Schedule) -> dict[int, list[str]]:
    """Nest position -> lines naming the buffers placed there, away from their level's default."""
    D = len(s.workload.dims)
    out: dict[int, list[str]] = {}
    for i, lv in enumerate(s.levels):
        for t, p in lv.positions:
            if p != i * D:
                holds = "the whole tensor" if p == 0 else "its part of the loops inside"
                out.setdefault(p, []).append(f"[{lv.level} buffer of {t} sits here: holds {holds}]")
    return out


def _op_text(s: Schedule) -> str:
    block = dict(s.architecture.compute.block)
    return "block " + " ".join(f"{d}={block.get(d, 1)}" for d in s.workload.dims) if block else "scalar MAC"
