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

Running the code with stub ``load``/``store``/``zero``/``op`` functions and
tensor objects whose ``[...]`` returns the region makes exactly the op calls
and the loads, stores and zero-creations of ``replay(s, mode="events")``
(tested in ``tests/report/test_loopnest.py``).
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass, field
from typing import Iterable

from mapsearch.errors import MapsearchError
from mapsearch.report.spatial import spatial_loop_text
from mapsearch.report.text import format_exact
from mapsearch.schedule.schedule import Schedule

__all__ = ["loop_nest_code", "loop_nest_lines", "refuse_spatial", "trips_note"]

INDENT = "    "


def trips_note(parent: int, tile: int) -> str:
    """``'4 trips'`` or ``'3 trips, last piece 1'`` for a tile inside a parent piece."""
    trips = -(-parent // tile)
    rest = parent - (trips - 1) * tile
    return f"{trips} trip{'s' if trips != 1 else ''}" + (f", last piece {rest}" if rest != tile else "")


# --------------------------------------------------------------------------
# The summary (the solve report's "schedule" section).
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# Linear expressions over the code's variables (tile starts and extents).
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Lin:
    """``const + sum(coef * var)``, rendered with the variables in first-use order."""

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0

    @staticmethod
    def of(x: "str | int") -> "_Lin":
        return _Lin((), x) if isinstance(x, int) else _Lin(((x, 1),), 0)

    def __add__(self, other: "_Lin") -> "_Lin":
        terms = dict(self.terms)
        for v, c in other.terms:
            terms[v] = terms.get(v, 0) + c
        return _Lin(tuple((v, c) for v, c in terms.items() if c), self.const + other.const)

    def scale(self, k: int) -> "_Lin":
        return _Lin(tuple((v, c * k) for v, c in self.terms), self.const * k)

    def text(self) -> str:
        parts: list[str] = []
        for v, c in self.terms:
            mag = v if abs(c) == 1 else f"{abs(c)}*{v}"
            parts.append(("- " if c < 0 else "+ ") + mag if parts else ("-" if c < 0 else "") + mag)
        if self.const or not parts:
            parts.append((f"- {-self.const}" if self.const < 0 else f"+ {self.const}") if parts else str(self.const))
        return " ".join(parts)


# --------------------------------------------------------------------------
# The pseudo-code.
# --------------------------------------------------------------------------


@dataclass
class _Loop:
    level: int
    dim: str
    var: str  # tile start
    tile: int  # tile extent (the step)
    parent_start: _Lin
    parent_size: "str | int"
    size: "str | int"  # the extent expression of the tiles this loop visits
    size_line: str | None  # 'tm1 = min(...)' when the extent varies
    one_trip_possible: bool  # some parent piece is no larger than the tile


@dataclass
class _Move:
    """A (tensor, level) buffer: where its tile changes and how it moves."""

    tensor: str
    level: int
    at: int  # index of the loop it sits in; -1: before all loops
    guarded: bool
    slices: str = ""
    why: str = ""  # why the move is guarded
    first_visit: list[str] = field(default_factory=list)  # conditions: 'k1 == 0'


class _Names:
    """Unique Python identifiers: a later name that clashes gets a trailing underscore."""

    def __init__(self, taken: Iterable[str]):
        self.used = set(taken) | {"range", "min", "load", "store", "zero", "op", "None"}

    def new(self, want: str) -> str:
        name = want if want.isidentifier() else "v_" + "".join(ch if ch.isalnum() else "_" for ch in want)
        while name in self.used or keyword.iskeyword(name):
            name += "_"
        self.used.add(name)
        return name


def loop_nest_code(schedule: Schedule) -> str:
    """The schedule as Python-like pseudo-code (valid Python; see the module docstring)."""
    s = schedule
    refuse_spatial(s, "the loop-nest export")
    w, arch = s.workload, s.architecture
    depth = arch.depth
    dims = w.dims
    extent = w.extent
    level_names = arch.level_names
    tensors = {t.name: t for t in w.tensors}
    out = w.einsum.output.name
    names = _Names(w.tensor_names)
    sfx = {i: depth - 1 - i for i in range(depth)}

    # Walk the levels, building the loops and each level's tile (start, extent expression) per dim.
    cur: dict[str, tuple[_Lin, str | int]] = {d: (_Lin(), extent[d]) for d in dims}
    pieces: dict[str, set[int]] = {d: {extent[d]} for d in dims}
    loops: list[_Loop] = []
    tile_at: list[dict[str, tuple[_Lin, str | int]]] = [dict(cur)]
    single: dict[int, list[str]] = {}
    for i in range(1, depth):
        lm = s.levels[i]
        single[i] = []
        for d in lm.order:
            t = lm.tile_extent(d)
            parent_tile = s.levels[i - 1].tile_extent(d)
            if t >= parent_tile:
                single[i].append(d)
                continue
            start, size = cur[d]
            var = names.new(f"{d}{sfx[i]}")
            new_pieces = {t} | {p % t for p in pieces[d] if p % t}
            one_trip = min(pieces[d]) <= t
            if all(p % t == 0 for p in pieces[d]):  # every tile is whole (always so for t = 1)
                new_size: str | int = t
                size_line = None
            else:
                new_size = names.new(f"t{d}{sfx[i]}")
                end = start + _Lin.of(size)
                size_line = f"{new_size} = min({t}, {end.text()} - {var})"
            loops.append(_Loop(i, d, var, t, start, size, new_size, size_line, one_trip))
            pieces[d] = new_pieces
            cur[d] = (_Lin.of(var), new_size)
        tile_at.append(dict(cur))

    block = {d: arch.compute.block_extent(d) for d in dims}
    op_vars = {d: names.new(d) for d in dims}

    def slices(tensor: str, tile: dict[str, tuple[_Lin, str | int]]) -> str:
        axes = []
        for ix in tensors[tensor].indices:
            lo, hi = _Lin(), _Lin()
            for d, c in ix.terms:
                start, size = tile[d]
                lo = lo + start.scale(c)
                hi = hi + (start + _Lin.of(size) + _Lin((), -1)).scale(c)
            hi = hi + _Lin((), 1)
            axes.append(f"{lo.text()}:{hi.text()}")
        return f"{tensor}[{', '.join(axes)}]"

    # Where each kept (tensor, level) moves: inside the innermost loop outside its buffer that indexes it
    # (at its level's loops by default; a placed buffer, cost-model.md "Buffer placement", elsewhere).
    moves: list[_Move] = []
    for i in range(1, depth):
        for t in w.tensor_names:
            if not s.keeps(t, i):
                continue
            access = tensors[t]
            relevant = access.dims
            j, outside_dims = s.buffer_anchor(t, i)
            outside = [k for k, lp in enumerate(loops)
                       if lp.level < j or (lp.level == j and (outside_dims is None or lp.dim in outside_dims))]
            at = max((k for k in outside if loops[k].dim in relevant), default=-1)
            region = {d: tile_at[j][d] if j == 0 or outside_dims is None or d in outside_dims else tile_at[j - 1][d]
                      for d in dims}
            # A window over two moving dims can land where it was: p*2+r after p steps and r wraps.
            moving = {loops[k].dim for k in outside}
            affine = any(sum(d in moving for d in ix.dims) > 1 for ix in access.indices)
            repeat = _may_repeat(loops, at, relevant)
            why = "a convolution window can land where it was" if affine else "a one-trip remainder piece repeats it"
            mv = _Move(t, i, at, affine or repeat, slices(t, region), why)
            if t == out and not mv.guarded:
                mv.first_visit = [
                    f"{lp.var} == {lp.parent_start.text()}" for lp in loops[: max(at, 0)] if lp.dim not in relevant
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
        emit(f"{_held(mv, level_names)} = None  # the {mv.tensor} tile {level_names[mv.level]} holds now")
        if mv.tensor == out:
            emit(f"{_seen(mv, level_names)} = set()  # the {mv.tensor} tiles {level_names[mv.level]} has held")

    def moves_in(at: int) -> list[_Move]:
        return [mv for mv in moves if mv.at == at]  # outermost level first (the replay's fetch order)

    def enter(mvs: list[_Move], pad: str) -> None:
        for mv in mvs:
            where, src = level_names[mv.level], s.keeper_above(mv.tensor, mv.level)
            via = _via(s, mv.level, src)
            load_line = f'load({{}}, into="{where}", src="{level_names[src]}")  # {mv.tensor} tile -> {where} from {level_names[src]}{via}'
            if mv.guarded:
                held = _held(mv, level_names)
                emit(f"{pad}if {held} != {mv.slices}:  # moves only when the tile changes ({mv.why})")
                inner = pad + INDENT
                if mv.tensor == out:
                    emit(f'{inner}if {held} is not None:')
                    emit(f'{inner}{INDENT}store({held}, src="{where}", into="{level_names[src]}")  # old {mv.tensor} tile up{via}')
                    emit(f"{inner}{held} = {mv.slices}")
                    seen = _seen(mv, level_names)
                    emit(f"{inner}if {held} in {seen}:")
                    emit(f"{inner}{INDENT}" + load_line.format(held) + " (partial sums)")
                    emit(f"{inner}else:")
                    emit(f'{inner}{INDENT}zero({held}, at="{where}")  # first visit: zeros, no traffic')
                    emit(f"{inner}{seen}.add({held})")
                else:
                    emit(f"{inner}{held} = {mv.slices}")
                    emit(f"{inner}" + load_line.format(held))
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

    def leave(mvs: list[_Move], pad: str) -> None:
        for mv in sorted((m for m in mvs if m.tensor == out and not m.guarded), key=lambda m: -m.level):
            where, up = level_names[mv.level], s.keeper_above(mv.tensor, mv.level)
            emit(f'{pad}store({mv.slices}, src="{where}", into="{level_names[up]}")  # {mv.tensor} tile {where} -> {level_names[up]}{_via(s, mv.level, up)}')

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
    stack: list[tuple[str, list[_Move]]] = []
    for k, lp in enumerate(loops):
        while level_seen < lp.level:
            level_seen += 1
            header(level_seen, pad)
        parent_size = lp.parent_size
        step = f", {lp.tile}" if lp.tile != 1 else ""
        bounds = f"{lp.parent_start.text()}, {(lp.parent_start + _Lin.of(parent_size)).text()}{step}"
        end = (lp.parent_start + _Lin.of(parent_size)).text()
        note = f"{level_names[lp.level]} tile {lp.dim}={lp.tile}" if lp.size_line is None else (
            f"{level_names[lp.level]} tile {lp.dim}=min({lp.tile}, {end} - {lp.var})")
        if isinstance(parent_size, int):
            note += f": {trips_note(parent_size, lp.tile)}"
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
        emit(f"{inner_pad}for {v} in range({start.text()}, {(start + _Lin.of(size)).text()}{step}):  # op calls along {d}")
        inner_pad += INDENT
        args.append(v)
    what = "one scalar MAC" if arch.compute.block_macs == 1 else f"one {blk} block (padded where a tile cuts it)"
    emit(f"{inner_pad}op({', '.join(args)})  # {w.einsum.text()}: {what}")

    for lp_pad, mvs in reversed(stack):
        leave(mvs, lp_pad)
    leave(moves_in(-1), "")
    for mv in sorted(guarded_moves, key=lambda m: -m.level):
        if mv.tensor == out:
            held = _held(mv, level_names)
            up = s.keeper_above(mv.tensor, mv.level)
            emit(f'if {held} is not None:  # the end: the last {mv.tensor} tile at {level_names[mv.level]} goes up')
            emit(f'{INDENT}store({held}, src="{level_names[mv.level]}", into="{level_names[up]}"){_comment_via(s, mv.level, up)}')
    return "\n".join(lines) + "\n"


def refuse_spatial(s: Schedule, what: str) -> None:
    """Spatial splits are not exported yet: say so rather than drop them."""
    levels = [lm.level for lm in s.levels if getattr(lm, "spatial", ())]
    if levels:
        raise MapsearchError(f"{what} does not handle spatial splits yet (at {', '.join(levels)})")


def _may_repeat(loops: list[_Loop], at: int, relevant: frozenset[str]) -> bool:
    """True when the tile can stay the same across an entry of loop ``at``'s body.

    That needs a loop outside that does not index the tensor, with every
    indexing loop from it in to ``at`` able to make a single trip (a
    remainder parent piece no larger than its tile).
    """
    if at < 0:
        return False
    for a in range(at):
        if loops[a].dim in relevant:
            continue
        if all(lp.one_trip_possible for lp in loops[a + 1: at + 1] if lp.dim in relevant):
            return True
    return False


def _held(mv: _Move, level_names: tuple[str, ...]) -> str:
    return f"{mv.tensor}_{_ident(level_names[mv.level])}"


def _seen(mv: _Move, level_names: tuple[str, ...]) -> str:
    return f"{mv.tensor}_{_ident(level_names[mv.level])}_seen"


def _ident(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text)


def _via(s: Schedule, level: int, src: int) -> str:
    skipped = [s.architecture.levels[j].name for j in range(src + 1, level)]
    return f" (bypasses {', '.join(skipped)})" if skipped else ""


def _comment_via(s: Schedule, level: int, src: int) -> str:
    via = _via(s, level, src)
    return f"  #{via}" if via else ""
