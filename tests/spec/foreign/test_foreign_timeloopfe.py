"""timeloopfe (Timeloop v4's front end) inputs: expressions and ``variables:``, ``include_text`` and ``<<<``.

The files are the timeloop-accelergy-exercises' own (tests/data/peers/timeloop/): the 2024 interface tutorial's
``inputs/`` (``datawidth: DATAWIDTH`` from ``variables.yaml``, ``width: datawidth * 3``, ``split:
len(spec.problem.instance)``), the 2020 tutorial's ``timeloop+accelergy/arch/arch.yaml`` (a ``variables:`` block
and ``max(...)``), and two of the 1,334 ``layer_shapes`` files (``{{include_text('../problem_base.yaml')}}`` and
``<<<: *problem_base``).
"""

from __future__ import annotations

import pytest

from mapsearch import api
from mapsearch.errors import SpecError
from mapsearch.spec.foreign import detect_format, load_foreign_arch, load_foreign_workload
from mapsearch.spec.foreign.common import parse_tagged_yaml, render_jinja
from mapsearch.spec.tree_paths import flatten

from foreign_helpers import PEERS

T = PEERS / "timeloop"
TUTORIAL = T / "tutorial_2024"
SMALL = T / "cnn_layer_small.prob.yaml"


def _levels(fa):
    (path,) = flatten(fa.tree)
    return {lv.name: lv for lv in path.architecture.levels}


def test_the_2024_tutorial_reads_with_its_variables_file():
    """``-c variables.yaml`` gives DATAWIDTH (8: the file's Jinja default); buffer: 512 rows of 128 / 8 words; reg:
    ``width: datawidth * 3`` = 24 bits of 8: 3 words; PE's ``split: len(spec.problem.instance)`` is 17 (the 16
    instance keys and the ``densities`` entry timeloopfe adds), so every dimension goes on X: only M and C split."""
    problem = api.load_problem(TUTORIAL / "problem.yaml", TUTORIAL / "arch.yaml", TUTORIAL / "variables.yaml")
    assert detect_format(parse_tagged_yaml(render_jinja((TUTORIAL / "variables.yaml").read_text(), "v", {}), "v")) \
        == "timeloop"
    levels = _levels(type("FA", (), {"tree": problem.architecture})())
    assert (levels["buffer"].capacity, levels["reg"].capacity) == (512 * 128 // 8, 3)
    (axis,) = levels["reg"].mesh
    assert (axis.name, axis.size) == ("PE_X", 8)
    assert [(b.dims, b.operator, b.value) for b in axis.split_bounds] == [((d,), "==", 1) for d in "NPQR"]
    assert any("problem.instance: H, Hpad, W, Wpad: neither a dimension nor a coefficient" in n for n in problem.notes)


def test_var_sets_a_variable_and_jinja_variables_still_render():
    w = load_foreign_workload(TUTORIAL / "problem.yaml")
    assert _levels(load_foreign_arch(TUTORIAL / "arch.yaml", w, {"DATAWIDTH": 16}))["buffer"].capacity == 4096
    wide = load_foreign_arch(TUTORIAL / "arch.yaml", w, {"datawidth_jinja": 32}, constraints=TUTORIAL / "variables.yaml")
    assert (_levels(wide)["buffer"].capacity, _levels(wide)["reg"].capacity) == (512 * 128 // 32, 3)
    no_reg = load_foreign_arch(TUTORIAL / "arch.yaml", w, {"reg_enabled": False, "DATAWIDTH": 8})
    assert "reg" not in _levels(no_reg)


def test_a_name_nobody_defines_is_one_line():
    with pytest.raises(SpecError) as e:
        load_foreign_arch(TUTORIAL / "arch.yaml", load_foreign_workload(TUTORIAL / "problem.yaml"))
    assert str(e.value) == (
        f"{TUTORIAL / 'arch.yaml'}: architecture.nodes[1].attributes.datawidth: expected an expression timeloopfe "
        "evaluates (variables, attributes, arithmetic, len/min/max/int/ceil/floor/log2, spec.problem.instance), got "
        "'DATAWIDTH': unknown name 'DATAWIDTH' (define it in the file's variables:, in a variables file given with -c, "
        "or with --var DATAWIDTH=VALUE)")


def test_the_2020_arch_with_a_variables_block_and_max():
    """``width: max(INPUT_WEIGHT_DATAWIDTH, 16)``, ``datawidth: INPUT_WEIGHT_DATAWIDTH`` with the Jinja variables
    that fill the ``variables:`` block: ifmap_spad is 12 rows of 16 / 8 words, psum_spad 16 rows of 16 / 16."""
    fa = load_foreign_arch(T / "eyeriss_like_2020_variables.arch.yaml", load_foreign_workload(SMALL),
                           {"psum_datawidth": 16, "input_weight_datawidth": 8, "mac_class": "intmac"})
    levels = _levels(fa)
    assert [levels[n].capacity for n in ("shared_glb", "ifmap_spad", "weights_spad", "psum_spad")] == \
        [16384 * 64 // 8, 12 * 2, 192 * 2, 16 * 1]


@pytest.mark.parametrize("attributes, message", [
    ("{depth: 512, width: 128, datawidth: 0}", "architecture.nodes[1].attributes.datawidth: expected bits: int > 0, got 0"),
    ("{depth: 512.5, width: 128, datawidth: 8}",
     "architecture.nodes[1].attributes.depth: expected int > 0 (depth), got 512.5"),
    ("{depth: 4, width: 'datawidth * 3 + 1', datawidth: 8}",
     "architecture.nodes[1].attributes.width: cannot be translated exactly: a width of 25 bits is not a whole number "
     "of 8-bit words; Timeloop refuses it"),
    ("{depth: width, width: depth, datawidth: 8}",
     "architecture.nodes[1].attributes.width: expected an expression timeloopfe evaluates (variables, attributes, "
     "arithmetic, len/min/max/int/ceil/floor/log2, spec.problem.instance), got 'depth': it refers to itself "
     "(architecture.nodes[1].attributes.width -> architecture.nodes[1].attributes.depth -> "
     "architecture.nodes[1].attributes.width)"),
    ("{depth: 4, width: \"__import__('os')\", datawidth: 8}",
     "got \"__import__('os')\": unknown name '__import__'"),
    ("{depth: 4, width: 'open(\"x\")', datawidth: 8}", "got 'open(\"x\")': unknown name 'open'"),
])
def test_bad_attributes_name_the_key(tmp_path, attributes, message):
    path = tmp_path / "a.yaml"
    path.write_text("architecture:\n  version: 0.4\n  nodes:\n  - !Component {name: DRAM, class: DRAM}\n"
                    f"  - !Component {{name: buf, class: SRAM, attributes: {attributes}}}\n"
                    "  - !Component {name: mac, class: intmac}\n")
    with pytest.raises(SpecError) as e:
        load_foreign_arch(path, load_foreign_workload(SMALL))
    assert str(e.value).startswith(f"{path}: ") and message in str(e.value) and "\n" not in str(e.value)


def test_timeloop_counts_words_in_rows_of_width_over_datawidth(tmp_path):
    """As Timeloop's buffer model: no datawidth is 16 bits (noted); block_size words a row; entries; sizeKB."""
    path = tmp_path / "a.yaml"
    path.write_text("architecture:\n  version: 0.4\n  nodes:\n  - !Component {name: DRAM, class: DRAM}\n"
                    "  - !Component {name: A, attributes: {depth: 32, width: 64}}\n"
                    "  - !Component {name: B, attributes: {depth: 32, width: 64, datawidth: 8, cluster_size: 2}}\n"
                    "  - !Component {name: C, attributes: {entries: 100, datawidth: 8}}\n"
                    "  - !Component {name: D, attributes: {sizeKB: 1, datawidth: 8}}\n"
                    "  - !Component {name: E, attributes: {depth: 8, block_size: 4, datawidth: 8}}\n"
                    "  - !Component {name: mac, class: intmac}\n")
    fa = load_foreign_arch(path, load_foreign_workload(SMALL))
    assert [lv.capacity for lv in _levels(fa).values()][1:6] == [32 * 4, 32 * 4, 100, 1024, 32]
    assert any("architecture.nodes[1].attributes: no datawidth: Timeloop's default of 16 bits" in n for n in fa.notes)


def test_layer_shapes_read_through_include_text_and_the_deep_merge():
    """resnet18/02: instance {C: 64, M: 64, P: 56, Q: 56, R: 3, S: 3} over problem_base's (N=1, G=1, strides and
    dilations 1); the shape comes from problem_base."""
    w = load_foreign_workload(T / "layer_shapes" / "resnet18" / "02.yaml")
    assert w.workload.einsum.text() == "Outputs[N,M,Q,P,G] += Weights[C,M,R,S,G] * Inputs[N,C,R+P,S+Q,G]"
    assert dict(w.workload.extents) == {"N": 1, "M": 64, "Q": 56, "P": 56, "G": 1, "C": 64, "R": 3, "S": 3}
    assert w.notes == (f"{T / 'layer_shapes' / 'resnet18' / '02.yaml'}: problem.instance: H, W: neither a dimension "
                       "nor a coefficient of the shape; Timeloop ignores such keys: ignored",)


def test_a_misspelt_stride_is_ignored_as_timeloop_does_and_noted():
    """alexnet/0 sets ``HStride: 4``; the coefficient is ``Hstride`` and Timeloop looks up exact names only, so the
    stride stays 1: the input is 55 + 11 - 1 = 65 wide (not 4 * 54 + 11 = 227)."""
    w = load_foreign_workload(T / "layer_shapes" / "alexnet" / "0.yaml")
    assert w.workload.tensor_shape("Inputs") == (1, 3, 65, 65, 1)
    (note,) = w.notes
    assert "problem.instance: HStride (not Hstride, which stays 1), WStride (not Wstride, which stays 1), H, W: " \
           "neither a dimension nor a coefficient of the shape; Timeloop ignores such keys: ignored" in note


def test_the_deep_merge_key():
    doc = parse_tagged_yaml("base: &b {x: {p: 1, q: 2}, l: [1], s: 0}\n"
                            "one: {<<<: *b, x: {q: 3}, l: [2], t: 1}\n"
                            "shallow: {<<: *b, x: {q: 3}}\n"
                            "two: {<<<: [{a: 1}, {a: 2, b: 2}], c: 3}\n", "m.yaml")
    assert doc["one"] == {"x": {"q": 3, "p": 1}, "l": [2, 1], "t": 1, "s": 0}  # own keys win, lists join, deep
    assert doc["shallow"] == {"x": {"q": 3}, "l": [1], "s": 0}  # YAML's own <<: nothing below merged
    assert doc["two"] == {"c": 3, "a": 1, "b": 2}
    assert doc["base"] == {"x": {"p": 1, "q": 2}, "l": [1], "s": 0}  # the anchor is not changed
    with pytest.raises(SpecError, match=r"m.yaml: one.<<<: expected a mapping \(or a list of mappings\) to merge, got 3"):
        parse_tagged_yaml("one: {<<<: 3}", "m.yaml")


def test_include_text_stays_under_the_file_and_its_folder(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    top = tmp_path / "a" / "b" / "top.yaml"
    (tmp_path / "a" / "base.yaml").write_text("x: &x {v: {{ v | default(1) }}}\n")
    top.write_text("{{include_text('../base.yaml')}}\ny: {<<<: *x}\n")
    assert parse_tagged_yaml(render_jinja(top.read_text(), str(top), {"v": 7}), str(top))["y"] == {"v": 7}
    for text, message in [
        ("{{include_text('../../secret.yaml')}}", f"include_text('../../secret.yaml'): expected a file under "
                                                 f"{tmp_path / 'a' / 'b'} or {tmp_path / 'a'}, got {tmp_path / 'secret.yaml'}"),
        ("{{include_text('top.yaml')}}", "include_text('top.yaml'): expected a file that does not include itself"),
        ("{{include_text('*.yaml')}}", "include_text('*.yaml'): expected the path of one file (no glob pattern)"),
        ("{{include_text('none.yaml')}}", "include_text('none.yaml'): expected an existing file"),
    ]:
        top.write_text(text)
        with pytest.raises(SpecError) as e:
            render_jinja(text, str(top), {})
        assert str(e.value).startswith(f"{top}: {message}"), str(e.value)
