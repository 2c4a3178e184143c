"""Bad trees: each gets one line that starts with FILE:LINE:COLUMN of the offending YAML."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from mapsearch.errors import MapsearchError, SpecError
from mapsearch.solve.tree import solve_tree
from mapsearch.spec.tree import load_tree
from mapsearch.spec.tree_paths import flatten, path_architecture, path_constraints
from mapsearch.spec.tree_yaml import TreeError
from mapsearch.spec.workload import Workload

MATMUL = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})


def load(tmp_path: Path, text: str):
    path = tmp_path / "bad.yaml"
    path.write_text(textwrap.dedent(text))
    return load_tree(path)


def error_line(tmp_path: Path, text: str) -> str:
    with pytest.raises(TreeError) as info:
        load(tmp_path, text)
    message = str(info.value)
    assert "\n" not in message
    assert isinstance(info.value, SpecError) and isinstance(info.value, MapsearchError)
    return message.replace(str(tmp_path / "bad.yaml"), "bad.yaml")


@pytest.mark.parametrize("text, expected", [
    # An unknown tag: where the tag is, with a suggestion.
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Fanout {name: array}
       - !Compute {name: mac}
     """, "bad.yaml:4:5: unknown tag !Fanout; expected one of !Memory, !ProcessingStage, !Compute, !Parallel, !Hierarchical"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !memory {name: L1, size: 8}
       - !Compute {name: mac}
     """, "bad.yaml:4:5: unknown tag !memory (did you mean !Memory?)"),
    # A !Compute that is not a leaf.
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Compute {name: scalar}
       - !Memory {name: L0, size: 64}
       - !Compute {name: mac}
     """, "bad.yaml:4:5: arch.nodes[1]: !Compute 'scalar' is not a leaf: !Memory 'L0' (at bad.yaml:5:5) follows it"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Parallel
         nodes:
         - !Hierarchical
           nodes:
           - !Compute {name: scalar}
           - !Memory {name: L0, size: 64}
     """, "bad.yaml:8:9: arch.nodes[1].nodes[0].nodes[0]: !Compute 'scalar' is not a leaf"),
    # Malformed YAML: the line and column of the problem.
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf
       - !Compute {name: mac}
     """, "bad.yaml:4:14: malformed YAML: expected ',' or '}', but got '{'"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
      - !Compute {name: mac}
     """, "bad.yaml:4:2: malformed YAML:"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf, size: 4}
       - !Compute {name: mac}
     """, "bad.yaml:3:37: key 'size' is given twice in one mapping"),
    # A set expression that does not parse: the column of the problem inside it.
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Memory {name: L1, size: 8, tensors: {keep: "input | | B"}}
       - !Compute {name: mac}
     """, "bad.yaml:4:58: arch.nodes[1].tensors.keep: expected a tensor name, a role (input, output, All, Nothing), '~' or '(', got '|' (in 'input | | B')"),
    # Fields.
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Memory {name: L1, sise: 8}
       - !Compute {name: mac}
     """, "bad.yaml:4:24: arch.nodes[1].sise: unknown field of !Memory (did you mean 'size'?)"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Memory {name: L1}
       - !Compute {name: mac}
     """, "bad.yaml:4:5: arch.nodes[1].size: !Memory 'L1' needs a size in words"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Memory {name: L1, size: -4}
       - !Compute {name: mac}
     """, "bad.yaml:4:30: arch.nodes[1].size: expected words: int > 0"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Memory {name: L1, size: 8, attributes: {size: 8}}
       - !Compute {name: mac}
     """, "bad.yaml:4:52: arch.nodes[1].attributes.size: size is also given at bad.yaml:4:30; give it once"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Memory {name: L1, size: 8, input_clocks_per_word: 0}
       - !Compute {name: mac}
     """, "bad.yaml:4:56: arch.nodes[1].input_clocks_per_word: expected a number > 0"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Memory {name: DRAM, size: 8}
       - !Compute {name: mac}
     """, "bad.yaml:4:20: arch.nodes[1].name: the name 'DRAM' is already used at bad.yaml:3:20"),
    # Structure.
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Memory {name: L1, size: 8}
     """, "bad.yaml:3:5: arch.nodes[0]: this chain ends without a !Compute"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf, input_clocks_per_word: 2}
       - !Compute {name: mac}
     """, "bad.yaml:3:5: arch.nodes[0]: !Memory 'DRAM' is the top of the path to 'mac': no link above it"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Memory {name: L1, size: inf}
       - !Compute {name: mac}
     """, "bad.yaml:4:5: arch.nodes[1]: !Memory 'L1': only the top memory may be unbounded"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !ProcessingStage {name: quant}
       - !Compute {name: mac}
     """, "bad.yaml:4:5: arch.nodes[1]: !ProcessingStage 'quant' sits between the last memory and !Compute 'mac'"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Compute {name: mac, spatial: [{name: x, fanout: 4}]}
     """, "bad.yaml:4:26: arch.nodes[1].spatial: a !Compute has no spatial fanout"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - !Memory
         name: PE
         size: 4
         spatial: [{name: x, fanout: 2}, {name: y, fanout: 2}, {name: z, fanout: 2}]
       - !Compute {name: mac}
     """, "bad.yaml:7:59: arch.nodes[1].spatial[2]: a component has at most two fanout dimensions"),
    ("""\
     arch:
       nodes:
       - !Memory {name: DRAM, size: inf}
       - {name: L1, size: 8}
       - !Compute {name: mac}
     """, "bad.yaml:4:5: arch.nodes[1]: expected a tagged node (!Memory, !ProcessingStage, !Compute, !Parallel, !Hierarchical)"),
    ("""\
     nodes:
     - !Memory {name: DRAM, size: inf}
     """, "bad.yaml:1:1: nodes: unknown field of a tree file"),
])
def test_bad_tree_is_one_line_with_its_location(tmp_path, text, expected):
    assert error_line(tmp_path, textwrap.dedent(text)).startswith(expected)


UNKNOWN = """\
arch:
  nodes:
  - !Memory {name: DRAM, size: inf}
  - !Memory
    name: PE
    size: 8
    spatial: [{name: x, fanout: 4, may_reuse: input | Q}]
    tensors:
      keep: "A | weights"
  - !Compute {name: mac}
"""


def test_a_set_expression_naming_an_unknown_tensor(tmp_path):
    t = load(tmp_path, UNKNOWN)  # names are only checked against a workload
    (path,) = flatten(t)
    src = str(tmp_path / "bad.yaml")
    with pytest.raises(TreeError) as info:
        path_constraints(path, MATMUL)
    assert str(info.value) == (f"{src}:9:18: arch.nodes[1].tensors.keep: unknown tensor 'weights'; "
                               f"the workload's tensors are A, B, Z (in 'A | weights')")
    with pytest.raises(TreeError) as info:
        path_architecture(path, MATMUL)
    assert str(info.value).startswith(f"{src}:7:55: arch.nodes[1].spatial[0].may_reuse: unknown tensor 'Q'")
    # solve_tree checks every name before it solves anything.
    with pytest.raises(TreeError, match="unknown tensor 'Q'"):
        solve_tree(t, MATMUL)


def test_missing_file_is_one_line(tmp_path):
    with pytest.raises(SpecError, match="no such file"):
        load_tree(tmp_path / "nope.yaml")
