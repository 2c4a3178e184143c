"""Assemble the CP-SAT model of one einsum on one architecture.

``build(problem, constraints, options) -> Encoding``; :mod:`decode` is its
inverse for a solution. The families, each in its own module:
tiles (chains) -> order -> residency -> traffic (via residency) -> links ->
capacity -> compute -> user constraints -> time.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping

import numpy as np
from ortools.sat.python import cp_model

from mapsearch.budget import checkpoint
from mapsearch.errors import InfeasibleError
from mapsearch.model.bounds import add_bounds
from mapsearch.model.capacity import add_capacity, add_compute, home_words
from mapsearch.model.chains import DimChains, Footprint, enumerate_chains
from mapsearch.model.coarse_chains import coarse_rows
from mapsearch.model.dram_rows import add_max_row_openings, add_row_openings, unit_dims_needed
from mapsearch.model.encoding import Encoding, Q
from mapsearch.model.order import add_canonical_trivial_loops, add_orders
from mapsearch.model.placement import add_placements
from mapsearch.model.problem import Problem, check_supported, footprint, scale_of
from mapsearch.model.residency import add_link_times, add_link_words, add_residency
from mapsearch.model.chain_limits import admit_a_chain, check_held_whole_limits, innermost_fit, innermost_overflow
from mapsearch.model.skew import expanded_regions
from mapsearch.model.spatial import add_mesh_factors, chain_spatial, meshed_levels
from mapsearch.model.tiles import add_tile_choices
from mapsearch.model.traffic import UNIT
from mapsearch.model.spatial_chains import WINDOW_COPIES_LIMIT, copies_of
from mapsearch.model.window_pruning import prune_window_chains
from mapsearch.model.windows import Window, pinned_with_skew, split_windows
from mapsearch.model.user import add_orders_fixed, add_stationary
from mapsearch.spec.constraints import Constraints, resolve_level, resolve_tensor
from mapsearch.model.options import SolveOptions


@lru_cache(maxsize=256)
def _chains_cached(extent: int, depth: int, footprints: tuple[Footprint, ...], block: int,
                   bounds: tuple[tuple[int, int], ...], pinned: bool,
                   spatial: tuple[tuple, ...] = (), window: bool = False, tied: int = 0,
                   unequal_above: bool = True) -> DimChains:
    return enumerate_chains(extent, depth, footprints, block, list(bounds), pinned, spatial, window, tied,
                            unequal_above)


def dimension_chains(p: Problem, constraints: Constraints,
                     unit_dims: frozenset[str] = frozenset(),
                     extra_footprints: Mapping[str, tuple] | None = None,
                     windows: tuple[Window, ...] | None = None,
                     held_whole: str | None = None,
                     windows_over_mesh: bool = True,
                     coarse_only: bool = False) -> tuple[dict[str, DimChains], frozenset[str]]:
    """Tile chains per dimension; ``unit_dims`` also get the one-per-piece footprint (model/traffic.py),
    and dimension ``d`` the footprints ``extra_footprints[d]`` (e.g. table footprints of the sparse solver).

    ``windows``: the split filter windows (model/windows.py; default: those
    this problem splits). Their dimensions' chains carry the extent and the
    one-per-piece footprints and their coincidence types; ``held_whole``:
    why the others are held whole (split_windows' reason);
    ``windows_over_mesh=False`` keeps window dimensions unsplit over mesh
    axes (a narrower family, for a first schedule: solve/narrow.py), and
    ``coarse_only`` keeps the coarse chains alone (the same use; taken before
    the window pruning, which then compares fewer chains). The active budget
    (:mod:`mapsearch.budget`) is checked per dimension: building counts
    against the solve's time limit.
    """
    if windows is None:
        windows, _, held_whole = split_windows(p, unit_dims, extra_footprints)
    pinned = pinned_with_skew(p, windows, unit_dims, extra_footprints)
    J = p.depth
    meshed = bool(meshed_levels(p))
    out = _chains_of(p, constraints, unit_dims, extra_footprints, windows, held_whole, windows_over_mesh, pinned, True)
    window_dims = {d: out[d] for win in windows for d in win.dims}
    if max((copies_of(window_dims, a) for a in range(1, J + 1)), default=1) > WINDOW_COPIES_LIMIT:
        # Too many classes of link copies to time each: the window dimensions keep equal parts above L0.
        out.update(_chains_of(p, constraints, unit_dims, extra_footprints, windows, held_whole, windows_over_mesh,
                              pinned, False, only=frozenset(window_dims)))
    if coarse_only:
        out = {d: _coarse(ch, meshed) for d, ch in out.items()}
    if windows:
        out = prune_window_chains(out, windows, J)
    return out, pinned


def _chains_of(p: Problem, constraints: Constraints, unit_dims: frozenset[str], extra_footprints, windows,
               held_whole: str | None, windows_over_mesh: bool, pinned: frozenset[str], unequal_above: bool,
               only: frozenset[str] | None = None) -> dict[str, DimChains]:
    """The chains of every dimension (of ``only``), before the window pruning (:func:`dimension_chains`)."""
    w, arch = p.workload, p.architecture
    in_window = {(win.tensor, d) for win in windows for d in win.dims}
    expanded = expanded_regions(p, unit_dims, extra_footprints, pinned, windows)
    J = p.depth
    out: dict[str, DimChains] = {}
    for d, extent in w.extents:
        if only is not None and d not in only:
            continue
        bounds = [(1, extent)] * J
        on_d = tuple(lim for lim in constraints.tiles if lim.dim == d)  # named by an error they take part in
        for lim in on_d:
            j = resolve_level(lim.level, arch, "constraints", f"tiles.{lim.level}")
            if j == 0:
                if not lim.lo <= extent <= lim.hi:
                    raise InfeasibleError(f"tile limit on {d} at the top ({lim.lo}..{lim.hi}) excludes its extent {extent}",
                                          ("user tile limits",), (lim,))
                continue
            lo, hi = bounds[j - 1]
            bounds[j - 1] = (max(lo, lim.lo), min(hi, lim.hi))
        if p.fusion_level is not None and d not in p.shared_dims:
            for j in range(1, p.fusion_level + 1):
                bounds[j - 1] = (extent, extent)  # a fused group's outer loops tile shared dims only
        if not admit_a_chain(extent, bounds):
            raise InfeasibleError(f"the tile limits on {d} leave no legal tile extent (need 1 <= T <= parent <= {extent})",
                                  ("user tile limits",), on_d)
        if d in pinned:
            try:
                check_held_whole_limits(p, d, extent, bounds, held_whole)
            except InfeasibleError as e:
                e.limits = e.limits or on_d
                raise
        else:
            lo, hi = bounds[J - 1]
            fit = innermost_fit(p, d, pinned)
            if fit < lo <= hi:
                error = innermost_overflow(p, d, lo, fit, pinned, held_whole)
                error.limits = error.limits or on_d  # lo > 1 is a user's limit (a fused group has none)
                raise error
            bounds[J - 1] = (lo, min(hi, fit))
        fps = {footprint(t, d, w) for t in w.tensors if d in t.dims and (t.name, d) not in in_window}
        fps |= {f for t in expanded for _, per_dim in expanded[t] for e, f in per_dim if e == d}
        windowed = any(dd == d for _, dd in in_window)
        fps |= {(1, 0), UNIT} if windowed else set()
        fps |= ({UNIT} if d in unit_dims else set()) | set((extra_footprints or {}).get(d, ()))
        # A fused group ties a shared dimension's outer tiles across its stages: prune only among equal ones.
        tied = p.fusion_level if p.fusion_level is not None and d in p.shared_dims else 0
        # A window's dimensions are split over mesh axes, above L0 in equal parts unless unequal_above (within
        # the limits of model/spatial_chains.py; else a named restriction, model/family.spatial_restriction).
        spatial = chain_spatial(p) if windows_over_mesh or not windowed else ()
        chains = _chains_cached(extent, J, tuple(sorted(fps)), arch.compute.block_extent(d), tuple(bounds), d in pinned,
                                spatial, windowed, tied, unequal_above)
        if len(chains) == 0:
            raise InfeasibleError(f"the tile limits on {d} leave no legal tile extent (need 1 <= T <= parent <= {extent})",
                                  ("user tile limits",), on_d)
        out[d] = chains
        checkpoint(f"enumerating the tile chains of {d}")
    return out


def _coarse(chains: DimChains, meshed: bool) -> DimChains:
    """A dimension's coarse rows (model/coarse_chains.py); all of them where it has none."""
    rows = coarse_rows(chains, meshed)
    return chains.take(np.asarray(rows, dtype=np.int64)) if 0 < len(rows) < len(chains) else chains


def build(p: Problem, constraints: Constraints = Constraints(), options: SolveOptions = SolveOptions(),
          unit_dims: frozenset[str] = frozenset(), extra_footprints: Mapping[str, tuple] | None = None,
          default_positions: str | None = None, windows_over_mesh: bool = True,
          coarse_only: bool = False) -> Encoding:
    """The whole model of one einsum: its stage, link times, capacity, time.

    ``unit_dims``: dimensions whose chains also carry the one-per-piece
    footprint, for callers that measure transfers by something other than
    words (:func:`mapsearch.model.residency.link_measure`);
    ``extra_footprints[d]``: more footprints for ``d``'s chains (same use).
    ``default_positions``: why every buffer keeps its default position (the
    caller measures transfers the placement search does not count); the
    result names it as a family restriction. ``windows_over_mesh=False``:
    window dimensions are not split over mesh axes (dimension_chains).
    ``coarse_only``: the model of the coarse chains alone
    (model/coarse_chains.py), a subset of the family for a first schedule
    (solve/narrow.py). The active budget is checked between the model's parts.
    """
    layouts = dict(options.dram_layouts)
    if options.models_dram_rows:
        unit_dims = unit_dims | unit_dims_needed(p, layouts)
        default_positions = default_positions or "DRAM row model"
    enc = build_stage(p, constraints, cp_model.CpModel(), unit_dims, extra_footprints, options, default_positions,
                      windows_over_mesh, coarse_only)
    add_link_times(enc)
    add_capacity(enc)
    _add_time(enc)
    add_bounds(enc)  # redundant floors on link words and time (docs/solver.md, "Lower bounds")
    _add_min_utilization(enc, options)
    if options.models_dram_rows:
        enc.rows = add_row_openings(enc, layouts)
        if options.max_dram_rows is not None:
            add_max_row_openings(enc, enc.rows, options.max_dram_rows)
    return enc


def clock_scale(arch) -> int:
    costs = [arch.compute.clocks_per_call] + [lv.link.input_clocks_per_word for lv in arch.levels[1:]] \
        + [lv.link.output_clocks_per_word for lv in arch.levels[1:]]
    return scale_of(costs)


def build_stage(p: Problem, constraints: Constraints, model: cp_model.CpModel,
                unit_dims: frozenset[str] = frozenset(), extra_footprints: Mapping[str, tuple] | None = None,
                options: SolveOptions | None = None, default_positions: str | None = None,
                windows_over_mesh: bool = True, coarse_only: bool = False) -> Encoding:
    """Tiles, orders, residency, link words and compute of one einsum on ``model``.

    Link times, capacity constraints and the time are left to the caller: one
    einsum (:func:`build`) or a fused group (:mod:`mapsearch.model.fusion`).
    """
    check_supported(p)
    windows, _, held_whole = split_windows(p, unit_dims, extra_footprints)
    chains, pinned = dimension_chains(p, constraints, unit_dims, extra_footprints, windows, held_whole,
                                      windows_over_mesh, coarse_only)
    arch = p.architecture
    enc = Encoding(model, p, chains, pinned, clock_scale(arch), spatial_levels=meshed_levels(p), windows=windows)
    enc.cache["expanded"] = expanded_regions(p, unit_dims, extra_footprints, pinned, windows)  # model/skew.py
    if held_whole:
        enc.cache["windows_off"] = held_whole
    _check_homes_fit(enc)
    add_tile_choices(enc)
    add_mesh_factors(enc)
    # A dimension whose innermost tile is whole in every chain never advances: no order literal.
    active = tuple(d for d in p.workload.dims if int(chains[d].counts[:, -1].max()) > 1)
    enc.cache["active"] = active
    add_orders(enc, active)
    fixed_levels = frozenset(resolve_level(level, arch, "constraints", "orders") for level, _ in constraints.orders)
    add_canonical_trivial_loops(enc, active, fixed_levels)
    forced = {}
    for level, tensor, flag in constraints.keep:
        forced[(resolve_tensor(tensor, p.workload, "constraints", "keep"), resolve_level(level, arch, "constraints", "keep"))] = flag
    add_residency(enc, forced)
    if default_positions is not None:
        enc.cache["placement_off"] = default_positions
    elif unit_dims or extra_footprints:
        enc.cache["placement_off"] = "measures other than words"
    elif options is not None and not options.placement:
        enc.cache["placement_off"] = "turned off"
    add_placements(enc)
    checkpoint("building the orders, residency and buffer positions")
    add_link_words(enc)
    checkpoint("building the words of every link")
    add_compute(enc)
    for level, dims in constraints.orders:
        j = resolve_level(level, arch, "constraints", "orders")
        if j > 0:
            add_orders_fixed(enc, j, dims, active, f"loop order {list(dims)} at {arch.levels[j].name}")
    for tensor, level in constraints.stationary:
        j = resolve_level(level, arch, "constraints", "stationary")
        t = resolve_tensor(tensor, p.workload, "constraints", "stationary")
        if j > 0:
            add_stationary(enc, t, j, active, f"{t} stationary at {arch.levels[j].name}")
    enc.cache["active"] = active
    return enc


def _check_homes_fit(enc: Encoding) -> None:
    """Homes are constants: a level they overflow is infeasible before any search."""
    p = enc.problem
    for i, lv in enumerate(p.architecture.levels):
        words = home_words(enc, i)
        if lv.capacity is not None and words > lv.capacity:
            names = [f"{t} ({p.workload.tensor_words(t)} words)" for t in p.workload.tensor_names if p.home(t) == i]
            raise InfeasibleError(
                f"the tensors homed at {lv.name}, {', '.join(names)}, need {words} words; its capacity is {lv.capacity}",
                (f"capacity of {lv.name}", "homes"))


def _add_time(enc: Encoding) -> None:
    """``time = max(compute_time, max link time)`` (scaled); ``words_total`` over all links."""
    parts = [enc.compute_time] + list(enc.link_time.values())
    lo = max(q.lo for q in parts)
    hi = max(q.hi for q in parts)
    t = enc.model.new_int_var(lo, hi, "time")
    enc.model.add_max_equality(t, [q.expr for q in parts])
    enc.time = Q(t, lo, hi)
    names = enc.problem.workload.tensor_names
    enc.words_total = enc.total([enc.link_tensor_down[(x, a)] for x in names for a in enc.link_time]
                                + [enc.link_tensor_up[(x, a)] for x in names for a in enc.link_time])


def _add_min_utilization(enc: Encoding, options: SolveOptions) -> None:
    """``compute_time >= u * time`` with ``u = a/b``: ``b * compute_time >= a * time``."""
    u = options.min_utilization
    if u is None or u <= 0:
        return
    guard = enc.model.new_bool_var("min_utilization")
    enc.guards[f"utilization >= {float(u):g}"] = guard
    enc.model.add(u.denominator * enc.compute_time.expr >= u.numerator * enc.time.expr).only_enforce_if(guard)
