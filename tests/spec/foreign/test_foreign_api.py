"""`mapsearch.api.load_problem`: a peer's files read together, in the shape `api.solve` and `api.solve_chain` take."""

from __future__ import annotations

import pytest

from mapsearch import api

from foreign_helpers import PEERS

T = PEERS / "timeloop"
AF = PEERS / "accelforge"
EXAMPLES = PEERS.parents[2] / "examples"


def test_a_timeloop_problem_architecture_and_constraints_file_solve_together(tmp_path):
    constraints = tmp_path / "c.yaml"
    constraints.write_text("constraints:\n  targets:\n  - {target: shared_glb, type: temporal, permutation: SRQPCMN}\n")
    problem = api.load_problem(T / "cnn_layer_small.prob.yaml", T / "eyeriss_like.arch.yaml", constraints)
    assert problem.formats == ("timeloop", "timeloop") and problem.is_peer and not problem.is_chain
    # The Timeloop constraints file is read with the architecture: shared_glb's permutation orders ifmap_spad.
    assert ("ifmap_spad", ("N", "M", "C", "P", "Q", "R", "S")) in problem.constraints.orders
    assert all(n.startswith(str(T)) or "no bits per value" in n for n in problem.notes)
    result = api.solve(problem.workload, problem.architecture, problem.constraints, time_limit=60)
    # 192 MACs over eyeriss_like's PE array: 24 calls on the busiest PE (compute bound), as without the constraint.
    assert result.time == 24 and [o.compute_name for o in result.paths] == ["mac"]


def test_an_accelforge_chain_is_one_flat_architecture():
    problem = api.load_problem(AF / "workloads" / "matmuls.yaml", AF / "arches" / "simple.yaml",
                               variables={"N_EINSUMS": 2, "M": 16, "KN": 16})
    assert problem.is_chain and isinstance(problem.architecture, api.Architecture)
    assert problem.architecture.level_names == ("MainMemory", "GlobalBuffer", "MAC_operands")
    result = api.solve_chain(problem.workload, problem.architecture)
    # Two 16x16x16 matmuls, one MAC per clock: 8192 clocks whichever way; fusing at GlobalBuffer saves T1's words.
    assert result.best == "fused at GlobalBuffer"
    assert {name: (time, words) for name, time, words in result.candidates()}["unfused"] == (8192, 18432)
    assert {name: words for name, _, words in result.candidates()}["fused at GlobalBuffer"] == 17920


def test_mapsearch_files_read_as_they_are():
    problem = api.load_problem(EXAMPLES / "matmul-4x4x4.yaml", EXAMPLES / "trees" / "two-paths.yaml")
    assert problem.formats == (None, None) and problem.notes == () and isinstance(problem.architecture, api.Tree)
    assert api.peer_format_of(EXAMPLES / "matmul-4x4x4.yaml") is None and api.peer_format_of("edge-3level") is None
    assert api.peer_format_of(T / "cnn_layer_small.prob.yaml") == "timeloop"


def test_a_peer_file_given_to_the_plain_loaders_points_to_load_problem():
    with pytest.raises(api.SpecError) as e:
        api.load_architecture(T / "eyeriss_like.arch.yaml")
    assert str(e.value) == (f"{T / 'eyeriss_like.arch.yaml'}: a timeloop file: a peer's files are translated by "
                            f"mapsearch.api.load_problem(workload, architecture) (docs/peer-formats.md)")


def test_an_unknown_format_is_one_line():
    with pytest.raises(api.UsageError, match=r"^--format: expected a peer's format \(accelforge, timeloop, zigzag\), "
                       r"got 'gem5'$"):
        api.load_problem(EXAMPLES / "matmul-4x4x4.yaml", "edge-3level", format="gem5")
