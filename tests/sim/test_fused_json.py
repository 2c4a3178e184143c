"""Fused schedule files: versioned round trip and one-line errors for the stage agreement rules."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fused_helpers import fused  # noqa: E402

from mapsearch.errors import SpecError
from mapsearch.schedule.fused_json import FORMAT, dumps_fused, fused_from_dict, fused_to_dict, load_fused, save_fused
from mapsearch.sim.fused import replay_fused
from mapsearch.spec.architecture import Architecture, Compute, Level, Link
from mapsearch.spec.workload import WorkloadGraph

MM3 = ["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n] * C[n,p]"]


def make():
    g = WorkloadGraph.from_texts("mm3", MM3, {"m": 4, "n": 2, "k": 3, "p": 2})
    a = Architecture("a", (Level("DRAM", None), Level("L1", 100, Link()), Level("L0", 10, Link())))
    homes = {"T": "L1"}
    s0 = ([{"m": 2}, {"m": 1, "n": 1, "k": 1}], [["m", "n", "k"], ["m", "n", "k"]], [{"A", "B"}, {"A", "B", "T"}], homes)
    s1 = ([{"m": 2}, {"m": 1, "n": 1, "p": 1}], [["m", "n", "p"], ["m", "p", "n"]], [{"C", "Y"}, {"T", "C", "Y"}], homes)
    fs = fused(g, a, 1, [s0, s1])
    return fs.with_predicted(replay_fused(fs, "count").figures)


def test_round_trip(tmp_path):
    fs = make()
    d = fused_to_dict(fs)
    assert d["format"] == FORMAT and d["version"] == 1 and d["fusion_level"] == "L1"
    assert fused_from_dict(json.loads(dumps_fused(fs)), "f.json") == fs
    p = tmp_path / "f.json"
    save_fused(fs, p)
    assert load_fused(p) == fs


def test_a_stage_need_not_have_the_chain_s_block_dimension(tmp_path):
    """The architecture is checked against the whole chain, once, as solve_chain checks it: a block on k
    (stage 0's only dimension) read before, and reads again (each stage was checked alone for a while)."""
    fs = make()
    arch = dataclasses.replace(fs.architecture, compute=Compute((("k", 1),)))
    fs = dataclasses.replace(fs, architecture=arch, stages=tuple(dataclasses.replace(s, architecture=arch) for s in fs.stages))
    p = tmp_path / "f.json"
    save_fused(fs, p)
    assert load_fused(p) == fs


def test_the_chain_check_still_names_its_field():
    d = json.loads(dumps_fused(make()))
    d["architecture"]["compute"] = {"block": {"q": 2}, "clocks_per_call": 1}
    with pytest.raises(SpecError, match=r"architecture\.compute\.block\.q: unknown dimension"):
        fused_from_dict(d, "f.json")


def edit(path, value):
    d = json.loads(dumps_fused(make()))
    node = d
    for k in path[:-1]:
        node = node[k]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return d


@pytest.mark.parametrize(
    "path, value, message",
    [
        (["format"], "mapsearch-schedule", r"^f\.json: format: expected 'mapsearch-fused-schedule'"),
        (["version"], 2, r"^f\.json: version: expected 1, got 2$"),
        (["fusion_level"], "L7", r"^f\.json: fusion_level: expected a level of a"),
        (["stages", 1, "levels", 1, "tile", "m"], 1,
         r"^f\.json: stages\[1\]\.levels\[1\]\.tile\.m: shared dimension m must have stage 0's tile 2 at levels <= L1, got 1$"),
        (["stages", 1, "levels", 1, "tile", "p"], 1,
         r"^f\.json: stages\[1\]\.levels\[1\]\.tile\.p: p is not shared by every einsum; it must be whole \(2\) at levels <= L1, got 1$"),
        (["stages", 1, "levels", 1, "order"], ["n", "m", "p"],
         r"^f\.json: stages\[1\]\.levels\[1\]\.order: the shared dimensions must be ordered as in stage 0 \['m', 'n'\]"),
        (["stages", 0, "homes", "T"], "DRAM", r"^f\.json: stages\[0\]\.homes\.T: the intermediate T must be homed at the fusion level L1, got DRAM$"),
        (["stages", 0, "levels", 2, "tile", "k"], 9, r"^f\.json: stages\[0\]\.levels\[2\]\.tile\.k: expected 1 <= tile <= 3"),
        (["stages", 0, "levels", 2, "keep"], ["A", "B"], r"^f\.json: stages\[0\]\.levels\[2\]\.keep: every tensor must be kept"),
        (["stages"], [], r"^f\.json: stages: expected a list of 2 stages"),
        (["graph", "einsums", 1], "Y[m,p] += T[m,n,k] * C[n,p]", r"^f\.json: einsums\[1\]: tensor T has 3 axes"),
        (["predicted", "op_calls"], KeyError, r"^f\.json: predicted\.op_calls: missing; expected int >= 0$"),
        (["extra"], 1, r"^f\.json: extra: unknown field"),
    ],
)
def test_errors_are_one_line(path, value, message):
    with pytest.raises(SpecError, match=message) as info:
        fused_from_dict(edit(path, value), "f.json")
    assert "\n" not in str(info.value)


def test_summed_dimension_of_a_producer_must_be_whole():
    # T[m] += A[m,k] * B[k]; Y[m,k] += T[m] * C[m,k]: k is shared but summed by T's producer.
    g = WorkloadGraph.from_texts("x", ["T[m] += A[m,k] * B[k]", "Y[m,k] += T[m] * C[m,k]"], {"m": 2, "k": 2})
    a = Architecture("a", (Level("DRAM", None), Level("L0", 100, Link())))
    homes = {"T": "L0"}
    fs = fused(g, a, 1, [([{"m": 1, "k": 1}], [["m", "k"]], [{"A", "B"}], homes),
                         ([{"m": 1, "k": 1}], [["m", "k"]], [{"C", "Y"}], homes)])
    with pytest.raises(SpecError, match=r"stages\[0\]\.levels\[1\]\.tile\.k: einsum 0 sums over k to produce the intermediate T"):
        fused_from_dict(fused_to_dict(fs), "f.json")


def test_homes_below_the_fusion_level_are_rejected():
    d = edit(["stages", 0, "homes", "A"], "L0")
    d["stages"][0]["levels"][1]["keep"] = ["B"]
    d["stages"][0]["levels"][2]["keep"] = ["B", "T"]
    with pytest.raises(SpecError, match=r"^f\.json: stages\[0\]\.homes\.A: homes must be at or above the fusion level L1"):
        fused_from_dict(d, "f.json")
