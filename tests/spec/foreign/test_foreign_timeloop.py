"""Timeloop v0.4: problems, architectures (the exercises' eyeriss_like) and constraints."""

from __future__ import annotations

from fractions import Fraction

import pytest

from mapsearch import api
from mapsearch.errors import SpecError
from mapsearch.spec.foreign import detect_format, load_foreign_arch, load_foreign_workload
from mapsearch.spec.foreign.common import Untranslatable, parse_tagged_yaml
from mapsearch.spec.tree_paths import flatten

from foreign_helpers import PEERS, solve_peer, workload_error

T = PEERS / "timeloop"
PROBLEM = T / "cnn_layer_small.prob.yaml"
ARCH = T / "eyeriss_like.arch.yaml"


def test_a_cnn_problem_with_strides_and_dilations_from_coefficients():
    w = load_foreign_workload(PROBLEM).workload
    assert w.einsum.text() == "Outputs[N,M,Q,P] += Weights[C,M,R,S] * Inputs[N,C,R+P,S+Q]"
    assert w.tensor_shape("Inputs") == (1, 2, 6, 2)  # R + P - 1 = 3 + 4 - 1; S + Q - 1 = 1 + 2 - 1


def test_the_operand_level_holds_one_word_of_each_operand():
    """The MAC reads one word of each operand per op: the level under it holds 3 words for this convolution (it
    held the R x S window whole, 7 words, when windows were held whole: a buffer the hardware does not have).
    An axis over three dimensions keeps all but its largest whole there, as the search family may hold them."""
    from mapsearch.spec.foreign.operands import held_dims, operand_words
    from mapsearch.spec.workload import Workload

    (path,) = flatten(load_foreign_arch(ARCH, load_foreign_workload(PROBLEM)).tree)
    assert path.architecture.levels[-1].name.endswith("_operands") and path.architecture.levels[-1].capacity == 3
    w = Workload.from_text("w", "O[p] += I[p+r+u] * W[r,u]", {"p": 8, "r": 3, "u": 2})
    assert held_dims(w.einsum, dict(w.extents)) == {"r", "u"}
    assert operand_words(w.einsum, dict(w.extents)) == 1 + (1 + (3 - 1) + (2 - 1)) + 3 * 2  # O 1, I's span 4, W 6
    skew = Workload.from_text("s", "O[p] += I[p+r+u,p] * W[r,u]", {"p": 8, "r": 3, "u": 2})
    assert held_dims(skew.einsum, dict(skew.extents)) == set()  # a skewed axis is split (its hidden window r+u)
    assert operand_words(skew.einsum, dict(skew.extents)) == 3


def test_eyeriss_like_capacities_bandwidths_and_meshes():
    fa = load_foreign_arch(ARCH, load_foreign_workload(PROBLEM))
    (path,) = flatten(fa.tree)
    levels = {lv.name: lv for lv in path.architecture.levels}
    assert levels["DRAM"].capacity is None  # no depth: unbounded
    assert levels["shared_glb"].capacity == 16384 * 64 // 8
    assert levels["ifmap_spad"].capacity == 12 * 16 // 8 and levels["psum_spad"].capacity == 16 * 16 // 16
    # 16 words per cycle out of shared_glb, 2 into each spad: the slower side binds each link.
    assert levels["shared_glb"].link.input_clocks_per_word == Fraction(1, 16)
    assert levels["ifmap_spad"].link.input_clocks_per_word == Fraction(1, 2)
    assert [(a.name, a.size) for a in levels["ifmap_spad"].mesh] == [("PE_column_X", 14), ("PE_Y", 12)]
    rules = {k.level: (k.keep.text if k.keep else None, k.bypass.text if k.bypass else None) for k in path.keep_rules}
    assert rules["shared_glb"] == ("Inputs | Outputs", "Weights")
    assert rules["psum_spad"] == ("Outputs", "Nothing")
    # A full temporal permutation orders the child's loops (Timeloop lists inner to outer).
    assert ("weights_spad", ("S", "R", "Q", "P", "C", "M", "N")) in fa.constraints.orders
    limits = {(t.level, t.dim): (t.lo, t.hi) for t in fa.constraints.tiles}
    assert limits == {("psum_spad", "C"): (1, 1), ("psum_spad", "P"): (1, 1), ("psum_spad", "Q"): (1, 1),
                      ("psum_spad", "R"): (1, 1)}  # a window dimension's tile: windows are split (issue 15)
    # The containers' spatial constraints become split bounds: PE_column (meshX 14, split 7: every dimension on X)
    # splits only M and Q; PE (meshY 12, split 4: N, P, Q, R on its X of fanout 1) splits only S, C, M on Y.
    bounds = {a.name: [(r.dims, r.operator, r.value) for r in a.split_bounds] for a in levels["ifmap_spad"].mesh}
    assert bounds["PE_column_X"] == [((d,), "==", 1) for d in "NCPRS"]
    assert bounds["PE_Y"] == [(("N", "Q", "P", "R"), "==", 1)] + [((d,), "==", 1) for d in "NPQR"]
    assert not any("spatial" in n for n in fa.notes)


def test_eyeriss_like_solves_a_small_layer_and_honours_the_constraints():
    best, result, _ = solve_peer(PROBLEM, ARCH)
    s = result.schedule
    keep = {lv.level: lv.keep for lv in s.levels}
    assert "Weights" not in keep["shared_glb"] and {"Inputs", "Outputs"} <= keep["shared_glb"]
    psum = next(lv for lv in s.levels if lv.level == "psum_spad")
    assert dict(psum.tile)["P"] == dict(psum.tile)["Q"] == dict(psum.tile)["C"] == 1
    assert dict(psum.tile)["R"] == 1  # Timeloop's psum_spad factor R=1
    splits = {(sp.dim, sp.axis) for lv in s.levels for sp in lv.spatial}
    assert all((axis == "PE_column_X" and d in "MQ") or (axis == "PE_Y" and d in "SCM") for d, axis in splits)
    # 192 MACs over the PE array: 24 calls on the busiest PE is the time (compute bound).
    assert s.predicted.time == 24 and s.predicted.macs == 192


@pytest.mark.parametrize("constraint, bounds, note", [
    # One axis: a factor above 1 bounds the parts of its dimension there.
    ("{target: PE_column, type: spatial, factors: [M=2, Q<=1]}", {"PE_column_X": [(("M",), "==", 2), (("Q",), "<=", 1)]},
     None),
    # M>=2 on PE, whose split puts M on X (no fanout): a bound of 1 must meet it, on the one axis PE has.
    ("{target: PE, type: spatial, permutation: [M, N, P, Q, R, S, C], split: 1, factors: [M>=2]}",
     {"PE_Y": [(("M",), "==", 1), (("M",), ">=", 2)]}, None),
    ("{target: PE, type: spatial, factors: [M=0]}", {}, "M=0: a spatial factor of 0 (the rest)"),
    ("{target: PE, type: spatial, permutation: [M, C], split: 1}", {}, "does not name every dimension: left out"),
])
def test_a_container_spatial_constraint_becomes_split_bounds(tmp_path, constraint, bounds, note):
    text = ARCH.read_text()
    for block in ("        permutation: [N, C, P, R, S, Q, M]\n        factors: [N=1, C=1, P=1, R=1, S=1]\n        split: 7\n",
                  "        split: 4\n        permutation: [N, P, Q, R, S, C, M]\n        factors: [N=1, P=1, Q=1, R=1]\n"):
        assert block in text
        text = text.replace(block, "        {}\n")
    path = tmp_path / "a.yaml"
    path.write_text(text + f"constraints:\n  targets:\n  - {constraint}\n")
    fa = load_foreign_arch(path, load_foreign_workload(PROBLEM))
    (flat,) = flatten(fa.tree)
    got = {a.name: [(r.dims, r.operator, r.value) for r in a.split_bounds]
           for lv in flat.architecture.levels for a in lv.mesh if a.split_bounds}
    assert got == bounds
    assert note is None or any(note in n for n in fa.notes)


@pytest.mark.parametrize("text, message", [
    ("problem:\n  shape: {dimensions: [A], data_spaces: [{name: X, projection: [[[A]]]}, {name: Y, projection: [[[A]]], read_write: true}]}\n  instance: {A: 0}\n",
     "problem.instance.A: expected int >= 1, got 0"),
    ("problem:\n  shape: {dimensions: [A], data_spaces: [{name: X, projection: [[[B]]]}, {name: Y, projection: [[[A]]], read_write: true}]}\n  instance: {A: 4}\n",
     "problem.shape.data_spaces[0].projection[0][0]: expected [DIMENSION] or [DIMENSION, COEFFICIENT] with a dimension of ['A'], got ['B']"),
    ("problem:\n  shape: {dimensions: [A], data_spaces: [{name: X, projection: [[[A]]]}, {name: Y, projection: [[[A]]]}]}\n  instance: {A: 4}\n",
     "problem.shape.data_spaces: expected one data space with read_write: true (the output), got None"),
])
def test_bad_problems_are_one_line(tmp_path, text, message):
    path, error = workload_error(tmp_path, text)
    assert error == f"{path}: {message}"


def test_bad_constraint_target_is_one_line(tmp_path):
    text = ARCH.read_text() + "constraints:\n  targets:\n  - {target: L9, type: temporal, factors: M=1}\n"
    path = tmp_path / "a.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as e:
        load_foreign_arch(path, load_foreign_workload(PROBLEM))
    assert str(e.value) == (f"{path}: constraints.targets[0].target: expected a storage of the architecture "
                            f"(DRAM, shared_glb, ifmap_spad, weights_spad, psum_spad), got 'L9'")


def test_densities_are_refused():
    text = PROBLEM.read_text().replace("    Q: 2\n", "    Q: 2\n    densities: {Inputs: 0.5}\n")
    data = parse_tagged_yaml(text, "p.yaml")
    assert detect_format(data) == "timeloop"
    from mapsearch.spec.foreign.timeloop import timeloop_problem

    with pytest.raises(Untranslatable, match="problem.instance.densities: cannot be translated exactly"):
        timeloop_problem(data, "p.yaml", "p")


def test_a_separate_constraints_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("constraints:\n  targets:\n  - {target: shared_glb, type: temporal, permutation: SRQPCMN}\n"
                    "  - {target: DRAM, type: bypass, keep: [Weights, Inputs, Outputs]}\n")
    fa = load_foreign_arch(ARCH, load_foreign_workload(PROBLEM), constraints=path)
    # shared_glb's temporal loops step ifmap_spad's tiles: mapsearch's ifmap_spad loops, outer to inner.
    assert ("ifmap_spad", ("N", "M", "C", "P", "Q", "R", "S")) in fa.constraints.orders
    rules = {k.level: k.keep.text for k in flatten(fa.tree)[0].keep_rules}
    assert rules["DRAM"] == "Weights | Inputs | Outputs"


def test_a_nothing_branch_of_a_parallel_holds_nothing(tmp_path):
    """timeloop-accelergy-exercises' simba_like puts ``!Nothing {constraints: {dataspace: {keep: [Inputs]}}}`` beside
    its weight and accumulator buffers in a ``!Parallel``: the inputs pass that stage without a buffer. It was
    refused ("expected !Container, !Component, !Parallel or !Hierarchical"); it is left out, with a note."""
    arch = tmp_path / "arch.yaml"
    arch.write_text("""architecture:
  version: 0.4
  nodes:
  - !Component {name: DRAM, class: DRAM, attributes: {width: 64, datawidth: 8}}
  - !Parallel
    nodes:
    - !Component
      name: WeightBuffer
      class: storage
      attributes: {depth: 64, width: 8, datawidth: 8}
      constraints: {dataspace: {keep: [Weights], bypass: [Inputs, Outputs]}}
    - !Nothing {constraints: {dataspace: {keep: [Inputs]}}}
  - !Component {name: Regs, class: storage, attributes: {depth: 16, width: 8, datawidth: 8}}
  - !Component {name: mac, class: intmac, attributes: {width: 8}}
""")
    fa = load_foreign_arch(arch, load_foreign_workload(PROBLEM))
    (path,) = flatten(fa.tree)
    assert [lv.name for lv in path.architecture.levels] == ["DRAM", "WeightBuffer", "Regs", "mac_operands"]
    assert any("architecture.nodes[1].nodes[1]: a !Nothing node holds nothing" in n for n in fa.notes)


@pytest.mark.parametrize("design, levels", [
    ("simple_weight_stationary", ["DRAM", "shared_glb", "pe_spad", "weight_reg", "input_activation_reg",
                                  "output_activation_reg", "mac_operands"]),
    ("simple_output_stationary", ["DRAM", "shared_glb", "pe_spad", "weight_reg", "input_activation_reg",
                                  "output_activation_reg", "mac_operands"]),
    ("simba_like", ["DRAM", "GlobalBuffer", "PEInputBuffer", "PEWeightBuffer", "PEAccuBuffer", "PEWeightRegs",
                    "mac_operands"]),
])
def test_the_exercises_other_designs_are_read(design, levels):
    fa = load_foreign_arch(T / f"{design}.arch.yaml", load_foreign_workload(PROBLEM))
    (path,) = flatten(fa.tree)
    assert [lv.name for lv in path.architecture.levels] == levels
    assert sum(lv.instances > 1 for lv in path.architecture.levels) >= 1


def test_the_weight_stationary_design_solves_and_replays():
    """cnn_layer_small on the exercises' simple_weight_stationary: the time is the compute floor over its PEs (24
    clocks), and the schedule replays to its prediction (solve_peer checks it)."""
    _, result, _ = solve_peer(PROBLEM, T / "simple_weight_stationary.arch.yaml")
    assert result.phases[0].value == 24 and result.phases[0].status == "OPTIMAL"


TUTORIAL_05 = T / "tutorial_2020_05"


def test_a_mapspace_constraints_file_is_read_and_its_notes_name_it():
    """The 2020 tutorial's exercise 05 gives its constraints as ``mapspace_constraints:`` (with ``-c``): they were
    refused as mapsearch's own constraints. RegisterFile's factors R=3 P=1 K=2 fix its tile; the factors above it
    are left out with notes naming the constraints file. 32 x 16 outputs of a 3-tap filter: 1,536 MACs on one MAC."""
    c = TUTORIAL_05 / "conv1d+oc-3level-1mapping.constraints.yaml"
    assert detect_format(parse_tagged_yaml(c.read_text(), str(c))) == "timeloop"
    problem = api.load_problem(TUTORIAL_05 / "conv1d+oc.prob.yaml", TUTORIAL_05 / "3level.arch.yaml", c)
    assert {(t.level, t.dim): (t.lo, t.hi) for t in problem.constraints.tiles} == {
        ("RegisterFile", "R"): (3, 3), ("RegisterFile", "P"): (1, 1), ("RegisterFile", "K"): (2, 2)}
    assert ("GlobalBuffer", ("K", "R", "P")) in problem.constraints.orders  # MainMemory's PRK, inner to outer
    notes = [n for n in problem.notes if "factors" in n]
    assert notes == [f"{c}: mapspace_constraints.targets[0].factors: R=1 P=1 K=1 bound loops of MainMemory above the "
                     f"innermost storage; mapsearch fixes tile extents, not factors: left out",
                     f"{c}: mapspace_constraints.targets[1].factors: R=1 P=16 K=16 bound loops of GlobalBuffer above "
                     f"the innermost storage; mapsearch fixes tile extents, not factors: left out"]
    levels = {lv.name: lv.capacity for lv in flatten(problem.architecture)[0].architecture.levels}
    assert levels == {"MainMemory": None, "GlobalBuffer": 32768 * 64 // 8, "RegisterFile": 64, "MACC_operands": 3}
    result = api.solve(problem.workload, problem.architecture, problem.constraints, time_limit=30)
    assert result.time == 1536
    rf = next(lv for lv in result.schedule.levels if lv.level == "RegisterFile")
    assert (dict(rf.tile)["R"], dict(rf.tile)["P"], dict(rf.tile)["K"]) == (3, 1, 2)


def test_a_constraints_file_for_another_format_is_refused(tmp_path):
    c = TUTORIAL_05 / "conv1d+oc-3level-1mapping.constraints.yaml"
    with pytest.raises(SpecError) as e:
        load_foreign_arch(PEERS / "accelforge" / "arches" / "simple.yaml", load_foreign_workload(PROBLEM), constraints=c)
    assert str(e.value) == (f"{c}: a Timeloop constraints or variables file goes with a Timeloop architecture; "
                            f"{PEERS / 'accelforge' / 'arches' / 'simple.yaml'} is accelforge's")


def test_sparse_optimizations_are_refused():
    """Sparseloop's spMspM exercise: compressed formats (UOP, CP) and skipping at Buffer change what moves."""
    arch = T / "sparse" / "spMspM.arch.yaml"
    with pytest.raises(Untranslatable) as e:
        load_foreign_arch(arch, load_foreign_workload(PROBLEM))
    assert str(e.value).startswith(f"{arch}: architecture.nodes[1].sparse_optimizations: cannot be translated exactly: "
                                   "Sparseloop's sparse optimizations (representation_format, action_optimization, "
                                   "compute_optimization) change the words moved and stored and the ops done")


def test_a_top_level_sparse_optimizations_block_is_refused(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text(ARCH.read_text() + "sparse_optimizations:\n  targets:\n  - name: psum_spad\n"
                    "    action_optimization: [{type: gating, options: [{target: Weights, condition_on: [Inputs]}]}]\n")
    with pytest.raises(Untranslatable, match=r"a.yaml: sparse_optimizations: cannot be translated exactly"):
        load_foreign_arch(path, load_foreign_workload(PROBLEM))


def test_metadata_storage_without_sparse_optimizations_is_noted(tmp_path):
    """sparse_tensor_core_like gives SMEM and LRF metadata storage but no representation format: Timeloop stores no
    metadata, so the data storage is read as it is (SMEM: 8192 rows of 256 / 8 words), with a note."""
    prob = tmp_path / "mm.yaml"
    prob.write_text("problem:\n  shape:\n    name: gemm_ABZ\n    dimensions: [M, N, K]\n    data_spaces:\n"
                    "    - {name: A, projection: [[[M]], [[K]]]}\n    - {name: B, projection: [[[N]], [[K]]]}\n"
                    "    - {name: Z, projection: [[[M]], [[N]]], read_write: true}\n  instance: {M: 64, N: 1, K: 16}\n")
    fa = load_foreign_arch(T / "sparse" / "sparse_tensor_core_like.arch.yaml", load_foreign_workload(prob))
    (path,) = flatten(fa.tree)
    assert {lv.name: lv.capacity for lv in path.architecture.levels}["SMEM"] == 8192 * 256 // 8
    source = T / "sparse" / "sparse_tensor_core_like.arch.yaml"
    assert f"{source}: architecture.nodes[2].attributes: metadata_storage_depth, metadata_storage_width: metadata " \
           f"storage for a compressed format; with no sparse_optimizations Timeloop stores no metadata: left out" \
           in fa.notes
