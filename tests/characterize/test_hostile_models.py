"""Hostile layer tables and profiles: each is refused with one line naming the file and the field (exit 2, no
output directory), never a TypeError, a silently ignored key or a figure for another layer than the one written."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import yaml

from mapsearch.characterize.graph import lower
from mapsearch.characterize.models import builtin_names, load_model, model_from_dict
from mapsearch.characterize.profiles import load_profile, profile_names
from mapsearch.cli import main
from mapsearch.errors import SpecError

PROFILE = """\
name: P
clock_hz: 1.0e9
word_bytes: 4
architecture:
  name: p
  levels:
    - {name: DRAM, capacity: null}
    - {name: L1, capacity: 4096, link: {input_clocks_per_word: 1, lines: shared}}
  compute: {block: {}, clocks_per_call: 1/16}
energy_pj:
  links: {DRAM->L1: 100}
  mac: 1
"""


def conv(**attrs: object) -> dict:
    return {"name": "c1", "op": "conv", "in": [[1, 4, 8, 8]], "out": [1, 4, 8, 8], "from": [""],
            "attrs": {"kernel": [3, 3], "stride": [1, 1], "pad": [1, 1], **attrs}}


def linear(name: str = "a", shape_in: list | None = None, out: list | None = None, src: str = "",
           **more: object) -> dict:
    return {"name": name, "op": "linear", "in": [shape_in or [4, 16]], "out": out or [4, 8], "from": [src], **more}


def refused(data: dict) -> str:
    with pytest.raises(SpecError) as e:
        model_from_dict(data, "m.yaml")
    return str(e.value)


# 1. attrs of the wrong type --------------------------------------------------------------------------------------

@pytest.mark.parametrize("key, value, message", [
    ("kernel", 3, "m.yaml: nodes[0].attrs.kernel: expected 2 int(s) >= 1, got 3"),
    ("stride", 1, "m.yaml: nodes[0].attrs.stride: expected 2 int(s) >= 1, got 1"),
    ("pad", "1", "m.yaml: nodes[0].attrs.pad: expected 2 int(s) >= 0, got '1'"),
    ("dilation", True, "m.yaml: nodes[0].attrs.dilation: expected 2 int(s) >= 1, got True"),
    ("kernel", [3.0, 3], "m.yaml: nodes[0].attrs.kernel: expected 2 int(s) >= 1, got [3.0, 3]"),
])
def test_conv_attrs_of_the_wrong_type_are_one_line(key: str, value: object, message: str) -> None:
    assert refused({"nodes": [conv(**{key: value})]}) == message


def test_cli_conv_kernel_int_is_exit_2_without_output(tmp_path: Path) -> None:
    table, profile, out_dir = tmp_path / "m.yaml", tmp_path / "p.yaml", tmp_path / "ch"
    table.write_text(yaml.safe_dump({"name": "t", "nodes": [conv(kernel=3)]}))
    profile.write_text(PROFILE)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["characterize", str(table), str(profile), "--out", str(out_dir), "--workers", "1", "--no-plot",
                     "-q"])
    assert (code, out.getvalue()) == (2, "")
    assert err.getvalue() == f"mapsearch: {table}: nodes[0].attrs.kernel: expected 2 int(s) >= 1, got 3\n"
    assert not out_dir.exists()


# 2. unknown keys --------------------------------------------------------------------------------------------------

def test_group_typo_is_refused_not_a_dense_conv() -> None:
    # 'group' for 'groups': was silently a dense conv of 4*4*8*8*3*3 = 9216 MACs instead of 2304.
    assert refused({"nodes": [conv(group=4)]}) == (
        "m.yaml: nodes[0].attrs.group: unknown attribute of a conv (did you mean 'groups'?); "
        "expected one of kernel, stride, pad, dilation, groups")
    grouped = model_from_dict({"nodes": [conv(groups=4)]}, "m.yaml")
    assert lower(grouped.nodes[0]).macs == 2304


@pytest.mark.parametrize("data, message", [
    ({"nodes": [conv(strides=[2, 2])]},
     "m.yaml: nodes[0].attrs.strides: unknown attribute of a conv (did you mean 'stride'?); "
     "expected one of kernel, stride, pad, dilation, groups"),
    ({"nodes": [linear(attrs={"groups": 2})]},
     "m.yaml: nodes[0].attrs.groups: unknown attribute of a linear; expected none"),
    ({"nodes": [linear(bogus=1)]},
     "m.yaml: nodes[0].bogus: unknown field; expected one of name, op, in, out, attrs, from"),
    ({"nodes": [linear(attr={"kernel": [3, 3]})]},
     "m.yaml: nodes[0].attr: unknown field (did you mean 'attrs'?); expected one of name, op, in, out, attrs, from"),
    ({"name": "t", "bogus": 1, "nodes": [linear()]},
     "m.yaml: bogus: unknown field; expected one of name, description, nodes"),
    ({"name": "t", "node": [linear()]},
     "m.yaml: node: unknown field (did you mean 'nodes'?); expected one of name, description, nodes"),
])
def test_unknown_model_keys_are_refused(data: dict, message: str) -> None:
    assert refused(data) == message


def test_model_schema_types_are_checked() -> None:
    assert refused({"name": 5, "nodes": [linear()]}) == "m.yaml: name: expected a string, got 5"


def test_bundled_tables_and_their_pools_still_load() -> None:
    # resnet's maxpool {kernel, stride, pad} and avgpool {kernel: global}; bert's attention matmuls
    assert {name: len(load_model(name).nodes) for name in builtin_names()} == {
        "bert-base": 233, "conv-stack": 14, "gpt2-small": 219, "mlp": 5, "resnet18": 69, "resnet50": 175}


def test_bundled_profiles_still_load() -> None:
    assert all(load_profile(name).clock_hz > 0 for name in profile_names())


# 3. shapes that do not connect -------------------------------------------------------------------------------------

def test_producer_consumer_shape_mismatch_is_refused() -> None:
    data = {"nodes": [linear("a", [4, 16], [4, 16]), linear("b", [4, 99], [4, 16], src="a")]}
    assert refused(data) == ("m.yaml: nodes[1].in[0]: expected [4, 16], the output of its producer 'a' (from[0]), "
                             "got [4, 99]")


def test_default_producer_is_checked_too() -> None:
    first, second = linear("a", [4, 16], [4, 16]), linear("b", [4, 8], [4, 16])
    del second["from"]  # the node before
    assert refused({"nodes": [first, second]}) == (
        "m.yaml: nodes[1].in[0]: expected [4, 16], the output of its producer 'a' (from[0]), got [4, 8]")


@pytest.mark.parametrize("op", ["relu", "gelu", "batchnorm", "layernorm", "softmax"])
def test_shape_keeping_op_with_another_output_shape_is_refused(op: str) -> None:
    node = {"name": "r", "op": op, "in": [[4, 16]], "out": [4, 32], "from": [""]}
    assert refused({"nodes": [node]}) == (
        f"m.yaml: nodes[0].out: expected [4, 16], the shape of in[0] (a {op} keeps its input's shape), got [4, 32]")


def test_connected_shapes_pass() -> None:
    relu = {"name": "r", "op": "relu", "in": [[4, 16]], "out": [4, 16], "from": ["a"]}
    model = model_from_dict({"nodes": [linear("a", [4, 8], [4, 16]), relu, linear("b", [4, 16], [4, 2], src="r")]},
                            "m.yaml")
    assert [n.name for n in model.nodes] == ["a", "r", "b"]


# 4. and 2. profiles against their schema ----------------------------------------------------------------------------

def profile_refused(tmp_path: Path, text: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as e:
        load_profile(str(path))
    return str(e.value).removeprefix(f"{path}: ")


@pytest.mark.parametrize("extra, message", [
    ("preset: 5\n", "preset: expected a preset name (a string) or null, got 5"),
    ("stand_in_for: 5\n", "stand_in_for: expected a profile name (a string) or null, got 5"),
    ("citations: foo\n", "citations: expected a list of citations (strings), got 'foo'"),
    ("citations: [1]\n", "citations[0]: expected a citation (a string), got 1"),
    ("bogus: 1\n", "bogus: unknown field; expected one of name, clock_hz, word_bytes, preset, stand_in_for, "
                   "architecture, energy_pj, citations"),
    ("stand_in: cpu\n", "stand_in: unknown field (did you mean 'stand_in_for'?); expected one of name, clock_hz, "
                        "word_bytes, preset, stand_in_for, architecture, energy_pj, citations"),
    ("  leak: 3\n", "energy_pj.leak: unknown field; expected one of links, mac"),
])
def test_profile_fields_are_checked_by_the_schema(tmp_path: Path, extra: str, message: str) -> None:
    assert profile_refused(tmp_path, PROFILE + extra) == message


@pytest.mark.parametrize("old, new, message", [
    ("clock_hz: 1.0e9", "clock_hz: 0", "clock_hz: expected a number: Hz > 0, got 0"),
    ("clock_hz: 1.0e9", "clock_hz: '...'", "clock_hz: expected a number: Hz > 0, got '...'"),
    ("word_bytes: 4", "word_bytes: 2.5", "word_bytes: expected an int from 1 to 64, got 2.5"),
    ("mac: 1", "mac: -1", "energy_pj.mac: expected a number: pJ >= 0, got -1"),
    ("energy_pj:", "energy_pJ:", "energy_pJ: unknown field (did you mean 'energy_pj'?); expected one of name, "
                                 "clock_hz, word_bytes, preset, stand_in_for, architecture, energy_pj, citations"),
])
def test_profile_values_keep_their_messages(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert profile_refused(tmp_path, PROFILE.replace(old, new)) == message


def test_good_profile_loads(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(PROFILE + "preset: null\nstand_in_for: null\ncitations: [a paper]\n")
    p = load_profile(str(path))
    assert (p.clock_hz, p.word_bytes, p.link_energy_pj, p.mac_energy_pj, p.citations) == (
        1e9, 4, {"DRAM->L1": 100.0}, 1.0, ["a paper"])


# 5. values as written --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, shown", [(0, "0"), (True, "True"), (16.0, "16.0"), ("16", "'16'")])
def test_bad_extents_show_the_value_as_written(value: object, shown: str) -> None:
    assert refused({"nodes": [linear(shape_in=[4, value])]}) == (
        f"m.yaml: nodes[0].in[0][1]: expected an int >= 1, got {shown}")
