"""The tree architecture format: loading, flattening into one path per compute, binding to a workload."""

from __future__ import annotations

import textwrap
from fractions import Fraction
from pathlib import Path

import pytest

from mapsearch.spec.architecture import Compute, Link, MeshAxis
from mapsearch.spec.tree import is_tree_file, load_tree, tree_from_text
from mapsearch.spec.tree_paths import (
    FlatPath,
    UnusablePath,
    flatten,
    path_architecture,
    path_constraints,
    path_must_reuse,
    single_architecture,
)
from mapsearch.spec.tree_yaml import TreeError
from mapsearch.spec.workload import Workload

ROOT = Path(__file__).resolve().parents[2]
TWO_PATHS = ROOT / "examples" / "trees" / "two-paths.yaml"
MATMUL = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})
CONV = Workload.from_text("conv", "O[k,p] += I[c,p+r] * W[k,c,r]", {"k": 2, "c": 2, "p": 4, "r": 3})


def tree(text: str, source: str = "t.yaml"):
    return tree_from_text(textwrap.dedent(text), source)


def paths(text: str) -> dict[str, FlatPath]:
    return {p.compute_name: p for p in flatten(tree(text))}


def test_two_paths_example_flattens_into_two_architectures():
    t = load_tree(TWO_PATHS)
    assert t.name == "two-paths"
    got = flatten(t)
    assert [p.compute_name for p in got] == ["scalar_unit", "mac_array"]
    scalar, array = (p.architecture for p in got)
    assert scalar.level_names == ("DRAM", "GLB")
    assert array.level_names == ("DRAM", "GLB", "L0")
    assert scalar.levels[0].capacity is None and scalar.levels[0].link is None
    assert scalar.levels[1] == array.levels[1]  # the shared buffer is the same level on both paths
    assert array.levels[2].capacity == 256
    assert array.levels[2].link == Link(Fraction(2), Fraction(2), "shared")
    assert scalar.compute == Compute((), Fraction(1))
    assert array.compute == Compute((("m", 4), ("n", 4), ("k", 4)), Fraction(1))
    assert array.name == "two-paths/mac_array"


def test_is_tree_file():
    assert is_tree_file(TWO_PATHS)
    assert is_tree_file(ROOT / "mapsearch" / "presets" / "tpu-v4i-like.yaml")
    assert not is_tree_file(ROOT / "examples" / "arch-three-level.yaml")
    assert not is_tree_file(ROOT / "no-such-file.yaml")


FULL = """\
name: full
arch:
  nodes:
  - !Memory {name: DRAM, size: inf}
  - !Memory
    name: L2
    attributes: {size: 64*1024, input_clocks_per_word: 1/4}
  - !Parallel
    nodes:
    - !Hierarchical
      nodes:
      - !Memory {name: L1, size: 1024, input_clocks_per_word: 1, tensors: {keep: input, bypass: output}}
      - !Compute {name: c1, block: {m: 2}, clocks_per_call: 1/2}
    - !Compute {name: c2}
    - !Parallel
      nodes:
      - !Compute {name: c3}
  - !Memory {name: L1b, size: 512}
  - !Hierarchical
    nodes:
    - !Memory {name: L0b, size: 16}
  - !Compute {name: c4, attributes: {clocks_per_call: 2}}
"""


def test_parallel_branches_and_the_chain_after_a_parallel():
    got = paths(FULL)
    # After a !Parallel the chain goes on from the node above it (the seed's rule):
    # L1b is a child of L2, not of the branches.
    assert list(got) == ["c1", "c2", "c3", "c4"]
    assert got["c1"].architecture.level_names == ("DRAM", "L2", "L1")
    assert got["c2"].architecture.level_names == ("DRAM", "L2")
    assert got["c3"].architecture.level_names == ("DRAM", "L2")
    assert got["c4"].architecture.level_names == ("DRAM", "L2", "L1b", "L0b")  # nested chain spliced in
    assert got["c4"].architecture.compute.clocks_per_call == 2
    assert got["c1"].architecture.compute == Compute((("m", 2),), Fraction(1, 2))
    l2 = got["c1"].architecture.levels[1]
    assert l2.capacity == 65536 and l2.link == Link(Fraction(1, 4), Fraction(1, 4), "shared")
    assert got["c4"].architecture.levels[2].link == Link()  # default: 1 clock per word, shared


def test_processing_stage_folds_into_the_link_it_sits_on():
    got = paths("""\
        arch:
          nodes:
          - !Memory {name: DRAM, size: inf}
          - !ProcessingStage {name: compress, input_clocks_per_word: 3, output_clocks_per_word: 1/2, lines: separate}
          - !ProcessingStage {name: crc, output_clocks_per_word: 2, input_clocks_per_word: 1, lines: separate}
          - !Memory {name: L1, size: 100, input_clocks_per_word: 1, output_clocks_per_word: 1, lines: separate}
          - !Compute {name: mac}
        """)
    arch = got["mac"].architecture
    assert arch.level_names == ("DRAM", "L1")  # the stages hold nothing: no level
    # Every word on DRAM->L1 passes both stages: the slowest cost per word binds, per direction.
    assert arch.levels[1].link == Link(Fraction(3), Fraction(2), "separate")


def test_spatial_fanouts_become_the_mesh_of_their_level():
    got = paths("""\
        name: arr
        arch:
          nodes:
          - !Memory {name: DRAM, size: inf}
          - !Memory
            name: GLB
            size: 4096
            spatial: [{name: z, fanout: 2, may_reuse: Nothing}]
          - !Memory
            name: PE
            size: 8
            spatial:
            - {name: x, fanout: 4, may_reuse: input}
            - {name: y, fanout: 3, may_reuse: output | A, must_reuse: output}
          - !Compute {name: mac}
        """)
    p = got["mac"]
    glb, pe = p.architecture.levels[1:]
    assert glb.mesh == (MeshAxis("z", 2, ("none",)),) and glb.instances == 2
    assert pe.mesh == (MeshAxis("x", 4, ("input",)), MeshAxis("y", 3, ("output", "A")))
    assert pe.instances == 12
    assert path_must_reuse(p, MATMUL) == {("PE", "y"): frozenset({"Z"})}
    # Bound to a workload, may_reuse lists tensor names.
    bound = path_architecture(p, MATMUL)
    assert bound.levels[2].mesh == (MeshAxis("x", 4, ("A", "B")), MeshAxis("y", 3, ("A", "Z"), ("Z",)))
    assert bound.levels[1].mesh == (MeshAxis("z", 2, ("none",)),)


def test_default_may_reuse_is_all_and_complex_expressions_wait_for_a_workload():
    p = paths("""\
        arch:
          nodes:
          - !Memory {name: DRAM, size: inf}
          - !Memory
            name: PE
            size: 8
            spatial: [{name: x, fanout: 4}, {name: y, fanout: 2, may_reuse: ~W}]
          - !Compute {name: mac}
        """)["mac"]
    x, y = p.architecture.levels[1].mesh
    assert x.may_reuse == ("all",)
    assert y.may_reuse == ("none",)  # not a plain union: no multicast until bound
    assert path_must_reuse(p, CONV) == {}
    bound = path_architecture(p, CONV)
    assert bound.levels[1].mesh[1].may_reuse == ("I", "O")


def test_single_architecture_names_it_after_the_tree():
    arch = single_architecture(load_tree(ROOT / "mapsearch" / "presets" / "eyeriss-like.yaml"))
    assert arch.name == "eyeriss-like"
    with pytest.raises(TreeError, match=r"2 computes \(scalar_unit, mac_array\)"):
        single_architecture(load_tree(TWO_PATHS))


KEEPS = """\
arch:
  nodes:
  - !Memory {name: DRAM, size: inf, tensors: {keep: All}}
  - !Memory {name: L2, size: 4096, tensors: {keep: input, bypass: output}}
  - !Memory {name: L1, size: 1024, tensors: {may_keep: ~B}}
  - !Memory {name: L0, size: 64, tensors: {keep: All}}
  - !Compute {name: mac}
"""


def test_tensors_rules_become_keep_constraints():
    p = paths(KEEPS)["mac"]
    c = path_constraints(p, MATMUL)
    # Top (the home) and L0 (next to compute) hold everything anyway: no decisions there.
    assert sorted(c.keep) == [("L1", "B", False), ("L2", "A", True), ("L2", "B", True), ("L2", "Z", False)]


def test_tensors_rules_respect_homes():
    p = paths(KEEPS)["mac"]
    # Z homed at L2: L2's bypass of Z contradicts its home.
    with pytest.raises(UnusablePath, match="L2 bypasses Z .* but is its home"):
        path_constraints(p, MATMUL, {"Z": "L2"})
    # A homed at L1: L2 keeping A above its home is impossible.
    with pytest.raises(UnusablePath, match="L2 keeps A .* above A's home L1"):
        path_constraints(p, MATMUL, {"A": "L1"})
    with pytest.raises(UnusablePath, match="home of A, 'GLB', is not on the path"):
        path_constraints(p, MATMUL, {"A": "GLB"})
    # The top's rules do not fight a home below it (DRAM keep: All); the rest still apply.
    assert ("L1", "B", False) in path_constraints(p, MATMUL, {"Z": "L1"}).keep
    # B homed at L1: L1 excluding it from may_keep contradicts the home.
    q = paths(KEEPS.replace("keep: input, bypass: output", "keep: A"))["mac"]
    with pytest.raises(UnusablePath, match="L1 bypasses B .*'~B'.* but is its home"):
        path_constraints(q, MATMUL, {"B": "L1"})


def test_bypass_at_the_memory_next_to_compute_is_unusable():
    p = paths("""\
        arch:
          nodes:
          - !Memory {name: DRAM, size: inf}
          - !Memory {name: L0, size: 64, tensors: {bypass: B}}
          - !Compute {name: mac}
        """)["mac"]
    with pytest.raises(UnusablePath, match="next to 'mac'"):
        path_constraints(p, MATMUL)


def test_keep_and_bypass_of_one_tensor_is_an_error():
    p = paths("""\
        arch:
          nodes:
          - !Memory {name: DRAM, size: inf}
          - !Memory {name: L1, size: 64, tensors: {keep: input, bypass: A}}
          - !Memory {name: L0, size: 64}
          - !Compute {name: mac}
        """)["mac"]
    with pytest.raises(TreeError, match=r"^t\.yaml:4:65: arch\.nodes\[1\]\.tensors\.bypass: A both kept and bypassed"):
        path_constraints(p, MATMUL)


def test_list_form_of_a_set_expression():
    p = paths("""\
        arch:
          nodes:
          - !Memory {name: DRAM, size: inf}
          - !Memory {name: L1, size: 64, tensors: {keep: [A, output]}}
          - !Memory {name: L0, size: 64}
          - !Compute {name: mac}
        """)["mac"]
    assert sorted(path_constraints(p, MATMUL).keep) == [("L1", "A", True), ("L1", "Z", True)]


def test_size_forms():
    got = paths("""\
        arch:
          nodes:
          - !Memory {name: DRAM, size: .inf}
          - !Memory {name: L2, size: "2 * 1024"}
          - !Memory {name: L1, attributes: {size: 16}}
          - !Compute {name: mac}
        """)
    assert [lv.capacity for lv in got["mac"].architecture.levels] == [None, 2048, 16]


def test_anchors_and_double_buffering():
    t = tree("""\
        name: anchors
        double_buffering: true
        arch:
          nodes:
          - !Memory {name: DRAM, size: inf}
          - !Memory &buf {name: L1, size: 64, input_clocks_per_word: 2}
          - !Compute {name: mac}
        """)
    arch = flatten(t)[0].architecture
    assert arch.double_buffering is True
    assert arch.levels[1].link.input_clocks_per_word == 2


def test_top_chain_as_a_tagged_hierarchical():
    t = tree("""\
        arch: !Hierarchical
          nodes:
          - !Memory {name: DRAM, size: inf}
          - !Compute {name: mac}
        """)
    assert flatten(t)[0].architecture.level_names == ("DRAM",)
    assert t.name == "t"  # default: the file's stem
