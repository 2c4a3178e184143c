"""A schedule as a loop nest: a short summary, and Python-like pseudo-code that runs.

:func:`loop_nest_lines` gives the summary printed in the solve report: per
level its loops (outer -> inner), tile, kept and bypassed tensors and homes.

:func:`loop_nest_code` gives the whole nest as pseudo-code that is also valid
Python, so a reader can see every loop with its real bounds and every load
and store where it happens, and a test can run it::

    for m1 in range(0, 97, 49):  # L1 tile m = min(49, 97 - m1): 49, then 48
        tm1 = min(49, 97 - m1)
        load(A[m1:m1 + tm1, 0:61], into="L1", src="L2")  # A tile -> L1 from L2
        ...
                    op(m, n, k)  # Z[m,n] += A[m,k] * B[k,n]: one scalar MAC

Conventions of the code:

- Loop variables are tile starts: ``m1`` is the start of the current m tile of
  the level whose loops these are (the suffix counts levels from the
  innermost, L0 = 0); ``tm1`` is that tile's extent where it can vary (a
  remainder tile), else the extent is a constant. A loop that always makes a
  single trip (the tile is as large as its parent tile) is left out and named
  in the level's header comment.
- ``A[a:b, c:d]`` is a tile of tensor A (half-open, per tensor axis, as a
  Python slice; an affine axis spans its whole window, holes included).
  ``load(tile, into=L, src=P)`` moves it down from P to L, crossing every
  level between (bypass); ``store(tile, src=L, into=P)`` moves an output tile
  up; ``zero(tile, at=L)`` creates an output tile that was never visited.
- A load sits inside the innermost loop that changes the tile (the loops
  inside it reuse the tile); an output tile is stored at the end of that
  loop's body. Where a tile can repeat across an iteration even so (a loop
  that makes one trip in a remainder piece, or a convolution window that
  lands where it was), the code keeps the held tile in a variable
  (``A_L0``) and moves only when the tile differs: exactly the replay's rule.
- ``op(m, n, k)`` is one op call on the block that starts there; a block cut
  by the end of a tile is padded (the call covers the whole block shape).

Spatial splits (docs/spatial.md) are loops too: ``for m0_x in range(0, 8, 2)``
visits the parts of the parent tile, one instance of the meshed level per
part, before that level's own loops. The instances run in lockstep; the code
runs them one after another, each with its own tiles: a buffer under a
spatial loop keeps its tile per instance (``A_PE[(m0_x // 2,)]``) and moves
only when that tile changes, so an instance that idles in a remainder piece
keeps what it holds, and output tiles still held below a keeper that leaves
its tile are stored first (the replay's flush). Its loads and stores are
each instance's own: where the replay lets instances share a crossing
(multicast, in-network reduction), it counts that crossing once.

Running the code with stub ``load``/``store``/``zero``/``op`` functions and
tensor objects whose ``[...]`` returns the region makes exactly the op calls
and the loads, stores and zero-creations of ``replay(s, mode="events")``
(tested in ``tests/report/test_loopnest.py``; for spatial schedules, on meshes
whose axes share nothing, where every instance's crossing is its own).
"""

from __future__ import annotations

from mapsearch.report.loopnest_parts import (
    Lin,
    Move,
    Names,
    NestLoop,
    held_name,
    may_repeat,
    part_index,
    seen_name,
    via_comment,
    via_note,
)
from mapsearch.report.loopnest_summary import loop_nest_lines, trips_note
from mapsearch.report.text import format_exact
from mapsearch.schedule.schedule import Schedule

__all__ = ["loop_nest_code", "loop_nest_lines", "trips_note"]  # the summary lives in loopnest_summary

INDENT = "    "


def loop_nest_code(schedule: Schedule) -> str:
    """The schedule as Python-like pseudo-code (valid Python; see the module docstring)."""
    s = schedule
    w, arch = s.workload, s.architecture
    depth = arch.depth
    dims = w.dims
    extent = w.extent
    level_names = arch.level_names
    tensors = {t.name: t for t in w.tensors}
    out = w.einsum.output.name
    names = Names(w.tensor_names)
    sfx = {i: depth - 1 - i for i in range(depth)}

    # Walk the levels, building the loops and each level's tile (start, extent expression) per dim.
    cur: dict[str, tuple[Lin, str | int]] = {d: (Lin(), extent[d]) for d in dims}
    pieces: dict[str, set[int]] = {d: {extent[d]} for d in dims}
    loops: list[NestLoop] = []
    tile_at: list[dict[str, tuple[Lin, str | int]]] = [dict(cur)]
    single: dict[int, list[str]] = {}
    for i in range(1, depth):
        lm = s.levels[i]
        single[i] = []
        split = {sp.dim: sp for sp in lm.spatial}
        steps = [(sp.dim, sp.part, sp.axis) for sp in lm.spatial] + [(d, lm.tile_extent(d), None) for d in lm.order]
        for d, t, axis in steps:  # the spatial splits first: each instance then loops over its part
            parent_tile = split[d].part if d in split and axis is None else s.levels[i - 1].tile_extent(d)
            if t >= parent_tile:
                if axis is None:
                    single[i].append(d)
                continue
            start, size = cur[d]
            var = names.new(f"{d}{sfx[i]}" + (f"_{axis}" if axis else ""))
            new_pieces = {t} | {p % t for p in pieces[d] if p % t}
            one_trip = min(pieces[d]) <= t
            if all(p % t == 0 for p in pieces[d]):  # every tile is whole (always so for t = 1)
                new_size: str | int = t
                size_line = None
            else:
                new_size = names.new(f"t{d}{sfx[i]}")
                end = start + Lin.of(size)
                size_line = f"{new_size} = min({t}, {end.text()} - {var})"
            loops.append(NestLoop(i, d, var, t, start, size, new_size, size_line, one_trip, axis))
            pieces[d] = new_pieces
            cur[d] = (Lin.of(var), new_size)
        tile_at.append(dict(cur))

    block = {d: arch.compute.block_extent(d) for d in dims}
    op_vars = {d: names.new(d) for d in dims}

    def slices(tensor: str, tile: dict[str, tuple[Lin, str | int]]) -> str:
        axes = []
        for ix in tensors[tensor].indices:
            lo, hi = Lin(), Lin()
            for d, c in ix.terms:
                start, size = tile[d]
                lo = lo + start.scale(c)
                hi = hi + (start + Lin.of(size) + Lin((), -1)).scale(c)
            hi = hi + Lin((), 1)
            axes.append(f"{lo.text()}:{hi.text()}")
        return f"{tensor}[{', '.join(axes)}]"

    # Where each kept (tensor, level) moves: inside the innermost loop outside its buffer that indexes it
    # (at its level's loops by default; a placed buffer, cost-model.md "Buffer placement", elsewhere).
    moves: list[Move] = []
    for i in range(1, depth):
        for t in w.tensor_names:
            if not s.keeps(t, i):
                continue
            access = tensors[t]
            relevant = access.dims
            j, outside_dims = s.buffer_anchor(t, i)
            outside = [k for k, lp in enumerate(loops)
                       if lp.level < j or (lp.level == j and (outside_dims is None or lp.dim in outside_dims))]
            # Per instance, the tile changes with the innermost temporal loop outside the buffer that indexes it.
            at = max((k for k in outside if loops[k].dim in relevant and not loops[k].axis), default=-1)
            region = {d: tile_at[j][d] if j == 0 or outside_dims is None or d in outside_dims else tile_at[j - 1][d]
                      for d in dims}
            # A buffer of an instance lives inside the spatial loops at or above its level (one per instance).
            # It can meet its own tile again when the loops outside its part come back to it, or after idling
            # in a remainder piece that has no part for it: it moves only when its tile differs (guarded).
            inside = max([k for k, lp in enumerate(loops) if lp.axis and lp.level <= i], default=-1)
            kept = inside >= 0
            at = max(at, inside)
            # A window over two moving dims can land where it was: p*2+r after p steps and r wraps.
            moving = {loops[k].dim for k in outside}
            affine = any(sum(d in moving for d in ix.dims) > 1 for ix in access.indices)
            repeat = may_repeat(loops, at, relevant)
            why = ("a convolution window can land where it was" if affine else "a one-trip remainder piece repeats it"
                   if repeat else "each instance keeps its tile while it idles or the loops outside its part move")
            mv = Move(t, i, at, affine or repeat or kept, slices(t, region), why)
            mine = [part_index(lp) for lp in loops if lp.axis and lp.level <= i]  # the instance this buffer belongs to
            if mv.guarded and mine:
                mv.instance = "(" + ", ".join(mine) + ("," if len(mine) == 1 else "") + ")"
                mv.digits = len(mine)
            if t == out and not mv.guarded:  # a first visit is the instance's own: spatial loops do not count
                mv.first_visit = [
                    f"{lp.var} == {lp.parent_start.text()}" for lp in loops[: max(at, 0)]
                    if lp.dim not in relevant and not lp.axis
                ]
            moves.append(mv)

    lines: list[str] = []
    emit = lines.append
    blk = " ".join(f"{d}={block[d]}" for d in dims)
    homes_at = {i: [t for t in w.tensor_names if s.home(t) == i] for i in range(depth)}
    emit(f"# {w.name}: {w.einsum.text()}  ({' '.join(f'{d}={e}' for d, e in w.extents)}; {w.macs:,} MACs)")
    emit(f"# on {arch.name}: levels outermost first {', '.join(level_names)}; the op covers "
         f"{'one scalar MAC' if arch.compute.block_macs == 1 else 'a block ' + blk} in "
         f"{format_exact(arch.compute.clocks_per_call)} clock(s) per call")
    for i in range(depth):
        if homes_at[i]:
            emit(f"# {level_names[i]} holds {', '.join(homes_at[i])} whole for the whole run (home)")
    guarded_moves = [mv for mv in moves if mv.guarded]
    for mv in guarded_moves:
        if mv.instance:
            emit(f"{held_name(mv, level_names)} = {{}}  # per instance {mv.instance}: the {mv.tensor} tile "
                 f"{level_names[mv.level]} holds now")
        else:
            emit(f"{held_name(mv, level_names)} = None  # the {mv.tensor} tile {level_names[mv.level]} holds now")
        if mv.tensor == out:
            emit(f"{seen_name(mv, level_names)} = set()  # the {mv.tensor} tiles {level_names[mv.level]} has held")

    def moves_in(at: int) -> list[Move]:
        return [mv for mv in moves if mv.at == at]  # outermost level first (the replay's fetch order)

    def enter(mvs: list[Move], pad: str) -> None:
        for mv in mvs:
            where, src = level_names[mv.level], s.keeper_above(mv.tensor, mv.level)
            via = via_note(s, mv.level, src)
            load_line = f'load({{}}, into="{where}", src="{level_names[src]}")  # {mv.tensor} tile -> {where} from {level_names[src]}{via}'
            if mv.guarded:
                held = held_name(mv, level_names)
                # Per instance under spatial loops: the held tile is keyed by the instance's part starts.
                now = f"{held}.get({mv.instance})" if mv.instance else held
                tile = f"{held}[{mv.instance}]" if mv.instance else held
                emit(f"{pad}if {now} != {mv.slices}:  # moves only when the tile changes ({mv.why})")
                inner = pad + INDENT
                if mv.tensor == out:
                    emit(f'{inner}if {now} is not None:')
                    flush(mv.level, mv.instance, mv.digits, inner + INDENT)
                    emit(f'{inner}{INDENT}store({now}, src="{where}", into="{level_names[src]}")  # old {mv.tensor} tile up{via}')
                    emit(f"{inner}{tile} = {mv.slices}")
                    seen = seen_name(mv, level_names)
                    key = f"({mv.instance}, {tile})" if mv.instance else tile
                    emit(f"{inner}if {key} in {seen}:")
                    emit(f"{inner}{INDENT}" + load_line.format(tile) + " (partial sums)")
                    emit(f"{inner}else:")
                    emit(f'{inner}{INDENT}zero({tile}, at="{where}")  # first visit: zeros, no traffic')
                    emit(f"{inner}{seen}.add({key})")
                else:
                    emit(f"{inner}{tile} = {mv.slices}")
                    emit(f"{inner}" + load_line.format(tile))
            elif mv.tensor == out:
                if mv.first_visit:
                    emit(f"{pad}if {' and '.join(mv.first_visit)}:  # first visit of this {mv.tensor} tile")
                    emit(f'{pad}{INDENT}zero({mv.slices}, at="{where}")  # zeros, no traffic')
                    emit(f"{pad}else:")
                    emit(f"{pad}{INDENT}" + load_line.format(mv.slices) + " (partial sums)")
                else:
                    emit(f'{pad}zero({mv.slices}, at="{where}")  # {mv.tensor} tile at {where}: first visit, zeros, no traffic')
            else:
                emit(pad + load_line.format(mv.slices))

    def flush(level: int, key: str, digits: int, pad: str, depth: int = 0) -> None:
        """The output tile at ``level`` (instance ``key``) is about to leave: the instances below that still
        hold partial sums in it store them first, theirs before them (docs/spatial.md, the flush of idle
        instances), so a later visit reloads them."""
        for mv in guarded_moves:
            if mv.tensor != out or not mv.instance or s.keeper_above(out, mv.level) != level:
                continue
            held, where, var = held_name(mv, level_names), level_names[mv.level], f"inst{depth or ''}"
            mine = f" if {var}[:{digits}] == {key}" if digits else ""
            emit(f"{pad}for {var} in [{var} for {var} in {held}{mine}]:  # {where} instances still holding {out} "
                 "tiles flush them")
            flush(mv.level, var, mv.digits, pad + INDENT, depth + 1)
            emit(f'{pad}{INDENT}store({held}.pop({var}), src="{where}", into="{level_names[level]}")'
                 f"{via_comment(s, mv.level, level)}")

    def leave(mvs: list[Move], pad: str) -> None:
        for mv in sorted((m for m in mvs if m.tensor == out and not m.guarded), key=lambda m: -m.level):
            where, up = level_names[mv.level], s.keeper_above(mv.tensor, mv.level)
            flush(mv.level, mv.instance, mv.digits, pad)
            emit(f'{pad}store({mv.slices}, src="{where}", into="{level_names[up]}")  # {mv.tensor} tile {where} -> {level_names[up]}{via_note(s, mv.level, up)}')

    def header(i: int, pad: str) -> None:
        lm = s.levels[i]
        kept = [t for t in w.tensor_names if s.keeps(t, i)]
        bypass = [t for t in w.tensor_names if i > s.home(t) and not s.keeps(t, i)]
        parts = [f"tile {' '.join(f'{d}={e}' for d, e in lm.tile)}", f"order {', '.join(lm.order)}",
                 f"keeps {', '.join(kept) if kept else 'nothing'}"]
        if bypass:
            parts.append(f"bypasses {', '.join(bypass)}")
        if single[i]:
            parts.append(f"{', '.join(single[i])} whole (one trip)")
        emit(f"{pad}# {lm.level} tiles: {'; '.join(parts)}")

    level_seen = 1
    if depth > 1:
        header(1, "")
    enter(moves_in(-1), "")
    pad = ""
    stack: list[tuple[str, list[Move]]] = []
    for k, lp in enumerate(loops):
        while level_seen < lp.level:
            level_seen += 1
            header(level_seen, pad)
        parent_size = lp.parent_size
        step = f", {lp.tile}" if lp.tile != 1 else ""
        bounds = f"{lp.parent_start.text()}, {(lp.parent_start + Lin.of(parent_size)).text()}{step}"
        end = (lp.parent_start + Lin.of(parent_size)).text()
        note = f"{level_names[lp.level]} tile {lp.dim}={lp.tile}" if lp.size_line is None else (
            f"{level_names[lp.level]} tile {lp.dim}=min({lp.tile}, {end} - {lp.var})")
        if isinstance(parent_size, int):
            note += f": {trips_note(parent_size, lp.tile)}"
        if lp.axis:
            note = (f"spatial: one {level_names[lp.level]} instance per part of {lp.tile} along axis {lp.axis}; "
                    "the instances run in lockstep, here one after another")
        emit(f"{pad}for {lp.var} in range({bounds}):  # {note}")
        pad += INDENT
        if lp.size_line:
            emit(pad + lp.size_line)
        mvs = moves_in(k)
        enter(mvs, pad)
        stack.append((pad, mvs))
    while level_seen < depth - 1:
        level_seen += 1
        header(level_seen, pad)

    # The op calls inside the innermost tile.
    tile0 = tile_at[depth - 1]
    inner_pad = pad
    args = []
    for d in dims:
        start, size = tile0[d]
        if s.levels[depth - 1].tile_extent(d) <= block[d]:
            args.append(start.text())
            continue
        v = op_vars[d]
        step = f", {block[d]}" if block[d] != 1 else ""
        emit(f"{inner_pad}for {v} in range({start.text()}, {(start + Lin.of(size)).text()}{step}):  # op calls along {d}")
        inner_pad += INDENT
        args.append(v)
    what = "one scalar MAC" if arch.compute.block_macs == 1 else f"one {blk} block (padded where a tile cuts it)"
    emit(f"{inner_pad}op({', '.join(args)})  # {w.einsum.text()}: {what}")

    for lp_pad, mvs in reversed(stack):
        leave(mvs, lp_pad)
    leave(moves_in(-1), "")
    for mv in sorted(guarded_moves, key=lambda m: -m.level):
        if mv.tensor == out:
            held = held_name(mv, level_names)
            up = s.keeper_above(mv.tensor, mv.level)
            store = f'store({{}}, src="{level_names[mv.level]}", into="{level_names[up]}"){via_comment(s, mv.level, up)}'
            if mv.instance:
                emit(f"for last in {held}.values():  # the end: each instance's last {mv.tensor} tile at "
                     f"{level_names[mv.level]} goes up")
                emit(INDENT + store.format("last"))
                continue
            emit(f'if {held} is not None:  # the end: the last {mv.tensor} tile at {level_names[mv.level]} goes up')
            emit(INDENT + store.format(held))
    return "\n".join(lines) + "\n"
