"""The Timeloop v0.4 export: problem, architecture and mapping that pass the format's rules and state the schedule exactly.

Exactness is checked against an independent replay of Timeloop's residual
rule (``timeloop_v04.tile_sequences``): at every level, the pieces of every
dimension, in order, equal mapsearch's split with remainder.
"""

from __future__ import annotations

import dataclasses
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mapsearch.errors import MapsearchError
from mapsearch.report.export_timeloop import timeloop_files, timeloop_yaml
from mapsearch.report.timeloop_nest import Cut, Loop, dimension_letters, dimension_loops, residual_product
from mapsearch.schedule.json_io import load_schedule
from mapsearch.schedule.schedule import Schedule
from mapsearch.spec.architecture import Architecture, Compute, Level, Link
from mapsearch.spec.workload import Workload

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import timeloop_v04  # noqa: E402
from schedule_builder import build_schedule  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Fixed array schedules with placed buffers (tests/data/export/README.md): not the solver's pick among optima.
PLACED_128x96x64 = Path(__file__).resolve().parents[1] / "data" / "export" / "array-128x96x64-placed.schedule.json"
PLACED_100x37x61 = Path(__file__).resolve().parents[1] / "data" / "export" / "array-100x37x61-placed.schedule.json"
MATMUL = "Z[m,n] += A[m,k] * B[k,n]"


def arch(*names: str) -> Architecture:
    levels = tuple(Level(n, None if i == 0 else 10**9, None if i == 0 else Link()) for i, n in enumerate(names))
    return Architecture("test", levels, Compute((), Fraction(1)))


def split_pieces(extent: int, cuts: list[int]) -> list[list[int]]:
    """mapsearch's rule: every piece splits as ``for x0 in range(0, s, T): min(T, s - x0)``; pieces after each cut."""
    pieces, out = [extent], []
    for c in cuts:
        pieces = [min(c, p - x0) for p in pieces for x0 in range(0, p, c)]
        out.append(pieces)
    return out


def mapsearch_tiles(s: Schedule, d: str) -> dict[str, list[int]]:
    """The pieces of ``d`` each level holds, in order: cut by the level's parts (where it splits ``d``), then its tile."""
    pieces = [s.workload.extent[d]]
    out = {s.levels[0].level: pieces}
    for lm in s.levels[1:]:
        for c in [sp.part for sp in lm.spatial if sp.dim == d] + [lm.tile_extent(d)]:
            pieces = [min(c, p - x0) for p in pieces for x0 in range(0, p, c)]
        out[lm.level] = pieces
    out["MAC"] = [1] * s.workload.extent[d]
    return out


def at_default_positions(path) -> Schedule:
    """A placed schedule with every buffer at its level's tile (Timeloop keeps tiles at level boundaries); the
    fixed array schedules hold A and B whole at the GLB (an optimum the solver once picked), which Timeloop
    cannot state. The prediction is dropped: it was made for the placed buffers."""
    s = load_schedule(path)
    return dataclasses.replace(s, levels=tuple(dataclasses.replace(lm, positions=()) for lm in s.levels), predicted=None)


def check_exact(s: Schedule) -> dict:
    files = timeloop_files(s)
    docs = {name: timeloop_v04.load(text) for name, text in files.items()}
    problem, arch_doc, mapping = docs["problem.yaml"], docs["arch.yaml"], docs["mapping.yaml"]
    assert timeloop_v04.violations(problem, arch_doc, mapping) == []
    letters = dimension_letters(s.workload.dims)
    assert problem["problem"]["instance"] == {letters[d]: e for d, e in s.workload.extent.items()}  # the true extents
    for d in s.workload.dims:
        theirs = timeloop_v04.tile_sequences(mapping, arch_doc, letters[d], s.workload.extent[d])
        for level, pieces in mapsearch_tiles(s, d).items():
            assert theirs[level] == pieces, (d, level)
    one = timeloop_v04.load(timeloop_yaml(s))  # the single-file form holds the same three sections
    assert one["mapping"] == mapping["mapping"] and one["problem"] == problem["problem"]
    return docs


def entry(mapping: dict, target: str, kind: str) -> dict:
    return next(e for e in mapping["mapping"] if e["target"] == target and e["type"] == kind)


def test_97x193x61_with_remainder_tiles_uses_residual_factors():
    s = load_schedule(EXAMPLES / "matmul-97x193x61.schedule.json")
    docs = check_exact(s)
    mapping = docs["mapping.yaml"]
    # L1 tile m=49 n=7 k=61, L0 tile m=7 n=7 k=1 (examples/matmul-97x193x61.schedule.json):
    # m: 97 = 49 + 48 at L2; 49 = 7 x 7 and 48 = 6 x 7 + 6 below: M=2, M=7, M=7,6.
    # n: 193 = 27 x 7 + 4: N=28 at L2, N=1 at L1, N=7,4 at L0.
    assert entry(mapping, "L2", "temporal")["factors"] == ["M=2", "N=28", "K=1"]
    assert entry(mapping, "L1", "temporal")["factors"] == ["M=7", "N=1", "K=61"]
    assert entry(mapping, "L0", "temporal")["factors"] == ["M=7,6", "N=7,4", "K=1"]
    assert entry(mapping, "L2", "temporal")["permutation"] == ["N", "M", "K"]  # L1's order k, m, n, innermost first
    assert entry(mapping, "L1", "dataspace") == {"target": "L1", "type": "dataspace", "keep": ["A", "B", "Z"], "bypass": []}
    assert "timeloopfe 0.4 checks factors as NAME=INT and rejects them" in timeloop_files(s)["mapping.yaml"]
    assert docs["problem.yaml"]["problem"]["instance"] == {"M": 97, "N": 193, "K": 61}


def test_16x16_array_schedule_with_a_pass_through_level():
    s = at_default_positions(PLACED_128x96x64)
    docs = check_exact(s)
    arch_nodes = docs["arch.yaml"]["architecture"]["nodes"]
    assert [n["name"] for n in arch_nodes] == ["system", "DRAM", "GLB", "PE_parts_array", "PE_parts", "PE", "MAC"]
    assert arch_nodes[3]["spatial"] == {"meshX": 16, "meshY": 16}
    mapping = docs["mapping.yaml"]
    # The GLB holds the whole matmul; n (96) in parts of 6 on x (16 parts), k (64) in parts of 4 on y; each PE
    # then loops over its part's tiles (m by 1: 128 trips; n by 2: 3 trips; k by 2: 2 trips).
    spatial = entry(mapping, "GLB", "spatial")
    assert spatial["factors"] == ["M=1", "N=16", "K=16"] and spatial["permutation"][:1] == ["N"] and spatial["split"] == 1
    assert entry(mapping, "PE_parts", "dataspace")["keep"] == []
    assert entry(mapping, "PE_parts", "temporal")["factors"] == ["M=128", "N=3", "K=2"]


def test_16x16_array_schedule_with_residual_spatial_factors():
    s = load_schedule(EXAMPLES / "array" / "matmul-100x37x61-glb16.schedule.json")
    docs = check_exact(s)
    spatial = entry(docs["mapping.yaml"], "GLB", "spatial")
    # GLB tile m=16 (100 = 6 x 16 + 4) in parts of 1 on x; k=16 (61 = 3 x 16 + 13) in parts of 1 on y.
    assert spatial["factors"] == ["M=16,4", "N=1", "K=16,13"]
    assert [n["name"] for n in docs["arch.yaml"]["architecture"]["nodes"]] == ["system", "DRAM", "GLB", "PE_array", "PE", "MAC"]


def test_a_remainder_inside_a_full_tile_is_refused_not_padded():
    # m: L1 tiles of 49 cut into 16s leave 1 in the first (full) L1 tile: no residual factor says that.
    w = Workload.from_text("mm", MATMUL, {"m": 97, "n": 8, "k": 61})
    s = build_schedule(w, arch("L2", "L1", "L0"), [({"m": 49, "n": 8, "k": 61}, "mkn", "AZ"), ({"m": 16, "n": 4, "k": 1}, "nmk", "ABZ")])
    with pytest.raises(MapsearchError, match=r"^levels\[2\]\.tile\.m: Timeloop cannot express the temporal cut of m into 16 "
                                             r"\(a loop at L1 in Timeloop's nest\): it leaves a remainder in pieces of 49 "
                                             r"that are not the last one"):
        timeloop_files(s)
    s2 = at_default_positions(PLACED_100x37x61)
    with pytest.raises(MapsearchError, match="cannot be stated exactly"):
        timeloop_files(s2)


def test_placed_buffers_homes_below_the_top_and_scalars_are_refused():
    s = load_schedule(EXAMPLES / "worked-example-mnk.schedule.json")
    placed = dataclasses.replace(s, levels=(s.levels[0], dataclasses.replace(s.levels[1], positions=(("A", 1),))))
    with pytest.raises(MapsearchError, match=r"buffers placed away from their level's tile \(A at L0\)"):
        timeloop_files(placed)
    w = Workload.from_text("mm", MATMUL, {"m": 4, "n": 4, "k": 4})
    homed = build_schedule(w, arch("L2", "L1", "L0"), [({"m": 4, "n": 4, "k": 2}, "mnk", ""), ({"m": 2, "n": 2, "k": 2}, "mnk", "ABZ")],
                           homes=(("Z", "L1"),))
    with pytest.raises(MapsearchError, match=r"homes below the top \(Z at L1\)"):
        timeloop_files(homed)
    dot = Workload.from_text("dot", "Z[] += A[k] * B[k]", {"k": 4})
    with pytest.raises(MapsearchError, match=r"rank-0 tensors \(Z\)"):
        timeloop_files(build_schedule(dot, arch("L1", "L0"), [({"k": 2}, "k", "ABZ")]))


def test_convolution_projection_and_letters():
    w = Workload.from_text("conv", "O[k,p] += I[c,p*2+r] * W[k,c,r]", {"k": 4, "c": 2, "p": 6, "r": 3})
    s = build_schedule(w, arch("L2", "L1", "L0"), [({"k": 2, "c": 2, "p": 6, "r": 3}, "kcpr", "IWO"), ({"k": 1, "c": 1, "p": 3, "r": 3}, "pkcr", "IWO")])
    docs = check_exact(s)
    shape = docs["problem.yaml"]["problem"]["shape"]
    assert shape["coefficients"] == [{"name": "Coef2", "default": 2}]
    assert next(ds for ds in shape["data_spaces"] if ds["name"] == "I")["projection"] == [[["C"]], [["P", "Coef2"], ["R"]]]
    assert dimension_letters(("m", "mm", "b1", "x")) == {"m": "M", "mm": "A", "b1": "B", "x": "X"}


def test_dimension_loops_by_hand():
    # 97 cut into 49, then 7, then 1: 97 = 49 + 48; 49 = 7 x 7; 48 = 6 x 7 + 6.
    loops = dimension_loops(97, [Cut("L2", "temporal", 49), Cut("L1", "temporal", 7), Cut("L0", "temporal", 1)], "m")
    assert loops == [Loop(2, 2), Loop(7, 7), Loop(7, 6)] and residual_product(loops) == 97
    # Only the last chain exists (one trip at the top): ends are the residuals.
    assert dimension_loops(10, [Cut("a", "temporal", 10), Cut("b", "temporal", 4), Cut("c", "temporal", 1)], "m") == [
        Loop(1, 1), Loop(3, 3), Loop(4, 2)]


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40), st.lists(st.integers(1, 40), min_size=1, max_size=4))
def test_dimension_loops_are_exact_or_refused(extent, sizes):
    cuts = sorted({min(c, extent) for c in sizes}, reverse=True) + [1]
    ours = split_pieces(extent, cuts)
    try:
        loops = dimension_loops(extent, [Cut(f"L{i}", "temporal", c) for i, c in enumerate(cuts)], "m")
    except MapsearchError:
        # Refused only when some piece off the last chain does not split evenly.
        assert any(len(set(prev[:-1])) and any(p % c for p in prev[:-1]) for prev, c in zip([[extent]] + ours, cuts))
        return
    assert residual_product(loops) == extent
    mapping = {"mapping": [{"target": f"L{i}", "type": "temporal", "factors": [lp.text("M")], "permutation": ["M"]}
                           for i, lp in enumerate(loops)]}
    arch_doc = {"architecture": {"nodes": [{"_tag": "!Container", "name": "s"}] + [
        {"_tag": "!Component", "name": f"L{i}", "class": "SRAM", "attributes": {}} for i in range(len(cuts))]}}
    theirs = timeloop_v04.tile_sequences(mapping, arch_doc, "M", extent)
    assert [theirs[f"L{i + 1}"] if i + 1 < len(cuts) else theirs["MAC"] for i in range(len(cuts))] == ours
