"""YAML spec loading: good files, and one readable line for each kind of bad input."""

from __future__ import annotations

import textwrap
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mapsearch.errors import SpecError
from mapsearch.spec.architecture import Link
from mapsearch.spec.load import (
    architecture_from_dict,
    architecture_to_dict,
    check_homes,
    load_architecture,
    load_homes,
    load_problem,
    load_workload,
    workload_from_dict,
    workload_to_dict,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

ARCH = """\
name: three
levels:
  - {name: L2, capacity: null}
  - {name: L1, capacity: 4096, link: {input_clocks_per_word: 1, output_clocks_per_word: 1, lines: shared}}
  - {name: L0, capacity: 64, link: {input_clocks_per_word: 1/2}}
compute: {block: {m: 1}, clocks_per_call: 1}
double_buffering: false
"""

WORKLOAD = """\
name: mm
einsum: "Z[m,n] += A[m,k] * B[k,n]"
extents: {m: 97, n: 193, k: 61}
homes: {Z: L1}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def spec_error(loader, path: Path) -> str:
    with pytest.raises(SpecError) as info:
        loader(path)
    message = str(info.value)
    assert "\n" not in message, message
    assert message.startswith(f"{path}: "), message
    return message[len(f"{path}: ") :]


# ---------------------------------------------------------------- good input


def test_the_brief_formats_load(tmp_path):
    arch = load_architecture(write(tmp_path, "arch.yaml", ARCH))
    assert arch.name == "three"
    assert arch.level_names == ("L2", "L1", "L0")
    assert arch.levels[0].capacity is None and arch.levels[0].link is None
    assert arch.levels[1].link == Link(Fraction(1), Fraction(1), "shared")
    # Defaults: output cost = input cost, shared line.
    assert arch.levels[2].link == Link(Fraction(1, 2), Fraction(1, 2), "shared")
    assert arch.compute.block == (("m", 1),) and arch.compute.clocks_per_call == 1
    assert arch.double_buffering is False

    path = write(tmp_path, "w.yaml", WORKLOAD)
    w = load_workload(path)
    assert w.name == "mm" and w.extent == {"m": 97, "n": 193, "k": 61} and w.macs == 97 * 193 * 61
    assert load_homes(path) == {"Z": "L1"}
    w2, arch2, homes = load_problem(path, tmp_path / "arch.yaml")
    assert (w2, arch2, homes) == (w, arch, {"Z": "L1"})


def test_defaults_for_a_minimal_architecture():
    arch = architecture_from_dict({"name": "a", "levels": [{"name": "T", "capacity": None}, {"name": "L0", "capacity": 8}]}, "a")
    assert arch.levels[1].link == Link()
    assert arch.compute.block == () and arch.compute.clocks_per_call == 1
    assert arch.levels[1].instances == 1


@pytest.mark.parametrize("value, exact", [(1, Fraction(1)), (0.25, Fraction(1, 4)), ("1/3", Fraction(1, 3)), (0.1, Fraction(1, 10)), ("2", Fraction(2))])
def test_link_costs_are_exact(value, exact):
    arch = architecture_from_dict(
        {"name": "a", "levels": [{"name": "T", "capacity": None}, {"name": "L0", "capacity": 8, "link": {"input_clocks_per_word": value}}]},
        "a",
    )
    assert arch.levels[1].link.input_clocks_per_word == exact
    assert arch.levels[1].link.output_clocks_per_word == exact


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_bundled_examples_load_and_round_trip(path):
    if path.name.startswith("arch"):
        arch = load_architecture(path)
        assert architecture_from_dict(architecture_to_dict(arch), "x") == arch
    else:
        w = load_workload(path)
        assert workload_from_dict(workload_to_dict(w), "x") == w
        load_homes(path)


def test_worked_example_specs():
    w = load_workload(EXAMPLES / "matmul-4x4x4.yaml")
    arch = load_architecture(EXAMPLES / "arch-worked-example.yaml")
    assert w.extent == {"m": 4, "n": 4, "k": 4}
    assert [lv.capacity for lv in arch.levels] == [None, 12]
    assert arch.levels[1].link == Link(Fraction(1), Fraction(1), "shared")
    assert arch.compute.block_macs == 1 and arch.compute.clocks_per_call == 1


def test_conv_examples():
    conv = load_workload(EXAMPLES / "conv-resnet50-3x3.yaml")
    assert conv.tensor_shape("I") == (1, 64, 58, 58)
    assert conv.macs == 64 * 64 * 56 * 56 * 9
    strided = load_workload(EXAMPLES / "conv1d-stride2.yaml")
    assert strided.tensor_shape("I") == (4, 33)


def test_block_op_example():
    arch = load_architecture(EXAMPLES / "arch-block-op.yaml")
    assert arch.compute.block == (("m", 4), ("n", 4), ("k", 4))
    assert arch.compute.block_macs == 64


# ---------------------------------------------------------------- bad input


def test_malformed_yaml_names_the_line(tmp_path):
    path = write(tmp_path, "w.yaml", "name: mm\neinsum: [unclosed\nextents: {m: 1}\n")
    message = spec_error(load_workload, path)
    assert message.startswith("line ") and "malformed YAML" in message


def test_tab_indentation_is_malformed(tmp_path):
    path = write(tmp_path, "w.yaml", "name: mm\nextents:\n\tm: 4\n")
    assert "line 3: malformed YAML" in spec_error(load_workload, path)


def test_duplicate_key_is_an_error_not_an_overwrite(tmp_path):
    path = write(tmp_path, "w.yaml", "name: mm\neinsum: 'Z[m] += A[m]'\nextents: {m: 4, m: 5}\n")
    message = spec_error(load_workload, path)
    assert message.startswith("line 3: ") and "'m' is given twice" in message


def test_missing_file(tmp_path):
    assert spec_error(load_workload, tmp_path / "nope.yaml") == "no such file"


def test_empty_file(tmp_path):
    assert spec_error(load_workload, write(tmp_path, "w.yaml", "")).startswith("expected a mapping")


def test_unknown_dimension_in_extents(tmp_path):
    path = write(tmp_path, "w.yaml", WORKLOAD.replace("k: 61}", "k: 61, x: 3}"))
    assert spec_error(load_workload, path).startswith("extents.x: unknown dimension")


def test_missing_extent(tmp_path):
    path = write(tmp_path, "w.yaml", WORKLOAD.replace(", k: 61", ""))
    assert spec_error(load_workload, path).startswith("extents.k: missing")


@pytest.mark.parametrize(
    "extent, shown",
    [("0", "0"), ("-2", "-2"), ("4.5", "4.5"), ("4.0", "4.0"), ("true", "True"), ("'4'", "'4'"), ("null", "None")],
)
def test_extent_must_be_a_positive_int(tmp_path, extent, shown):
    path = write(tmp_path, "w.yaml", WORKLOAD.replace("m: 97", f"m: {extent}"))
    assert spec_error(load_workload, path) == f"extents.m: expected int >= 1, got {shown}"


@pytest.mark.parametrize(
    "einsum, needle",
    [
        ("Z[m,n] += A[m,k] * B[k,n", "expected ']'"),
        ("Z[m,n] A[m,k]", "'+='"),
        ("Z[m+k] += A[m,k]", "single dimension"),
        ("Z[m] += Z[m,k]", "appears twice"),
        ("Z[m] += A[m$k]", "unexpected character"),
    ],
)
def test_bad_einsum(tmp_path, einsum, needle):
    path = write(tmp_path, "w.yaml", f'name: mm\neinsum: "{einsum}"\nextents: {{m: 4, k: 4}}\n')
    message = spec_error(load_workload, path)
    assert message.startswith("einsum: ") and needle in message


def test_homes_name_real_tensors(tmp_path):
    path = write(tmp_path, "w.yaml", WORKLOAD.replace("{Z: L1}", "{Q: L1}"))
    assert spec_error(load_workload, path).startswith("homes.Q: unknown tensor")


def test_check_homes_against_the_architecture(tmp_path):
    w = load_workload(write(tmp_path, "w.yaml", WORKLOAD))
    arch = load_architecture(write(tmp_path, "arch.yaml", ARCH))
    check_homes({"Z": "L1", "A": "L2"}, w, arch, "w.yaml")
    with pytest.raises(SpecError, match=r"^w\.yaml: homes\.Z: expected a level of 'three' \(L2, L1, L0\), got 'L9'$"):
        check_homes({"Z": "L9"}, w, arch, "w.yaml")
    with pytest.raises(SpecError, match=r"^w\.yaml: homes\.Q: unknown tensor"):
        check_homes({"Q": "L1"}, w, arch, "w.yaml")
    bad = write(tmp_path, "bad.yaml", WORKLOAD.replace("{Z: L1}", "{Z: DRAM}"))
    with pytest.raises(SpecError, match=r"bad\.yaml: homes\.Z: expected a level"):
        load_problem(bad, tmp_path / "arch.yaml")


def test_negative_capacity_reads_as_in_the_style_guide(tmp_path):
    path = write(tmp_path, "arch.yaml", ARCH.replace("capacity: 64", "capacity: -4"))
    with pytest.raises(SpecError) as info:
        load_architecture(path)
    assert str(info.value) == f"{path}: levels[2].capacity: expected int > 0, got -4"
    assert info.value.source == str(path) and info.value.field == "levels[2].capacity"


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ("capacity: 4096", "capacity: big", "levels[1].capacity: expected int > 0, got 'big'"),
        ("capacity: 4096", "capacity: 0", "levels[1].capacity: expected int > 0, got 0"),
        ("capacity: 4096", "capacity: 40.5", "levels[1].capacity: expected int > 0, got 40.5"),
        ("capacity: 64", "capacity: null", "levels[2].capacity: expected int > 0 (only the top level may be unbounded, null), got None"),
        ("lines: shared", "lines: both", "levels[1].link.lines: expected 'shared' or 'separate', got 'both'"),
        ("input_clocks_per_word: 1/2", "input_clocks_per_word: -1", "levels[2].link.input_clocks_per_word: expected a number >= 0 (int, decimal or 'a/b'), got -1"),
        ("input_clocks_per_word: 1/2", "input_clocks_per_word: 1/0", "levels[2].link.input_clocks_per_word: expected a number >= 0 (int, decimal or 'a/b'), got '1/0'"),
        ("input_clocks_per_word: 1/2", "input_clocks_per_word: fast", "levels[2].link.input_clocks_per_word: expected a number >= 0 (int, decimal or 'a/b'), got 'fast'"),
        ("input_clocks_per_word: 1/2", "input_clocks_per_word: true", "levels[2].link.input_clocks_per_word: expected a number >= 0 (int, decimal or 'a/b'), got True"),
        ("clocks_per_call: 1", "clocks_per_call: 0", "compute.clocks_per_call: expected a number > 0 (int, decimal or 'a/b'), got 0"),
        ("block: {m: 1}", "block: {m: 0}", "compute.block.m: expected int >= 1, got 0"),
        ("double_buffering: false", "double_buffering: maybe", "double_buffering: expected true or false, got 'maybe'"),
        ("{name: L1, capacity", "{name: L2, capacity", "levels[1].name: expected a name not used by another level (levels[0]), got 'L2'"),
        ("{name: L1, capacity", "{capacity", "levels[1].name: missing; expected a level name without spaces"),
        ("{name: L1, capacity", "{name: L1, capacty", "levels[1].capacty: unknown field (did you mean 'capacity'?); expected one of name, capacity, instances, link, mesh"),
        ("name: three", "name: 3", "name: expected a non-empty string, got 3"),
    ],
)
def test_bad_architecture_fields(tmp_path, old, new, expected):
    assert old in ARCH
    path = write(tmp_path, "arch.yaml", ARCH.replace(old, new, 1))
    assert spec_error(load_architecture, path) == expected


def test_the_top_level_has_no_link(tmp_path):
    path = write(tmp_path, "arch.yaml", ARCH.replace("{name: L2, capacity: null}", "{name: L2, capacity: null, link: {}}"))
    assert spec_error(load_architecture, path).startswith("levels[0].link: the top level has no link")


def test_levels_must_be_a_list(tmp_path):
    path = write(tmp_path, "arch.yaml", "name: a\nlevels: {L0: 4}\n")
    assert spec_error(load_architecture, path).startswith("levels: expected a non-empty list of levels")


def test_missing_top_field(tmp_path):
    path = write(tmp_path, "arch.yaml", "name: a\n")
    assert spec_error(load_architecture, path) == "levels: missing; expected a non-empty list of levels, outermost first"


# ---------------------------------------------------------------- properties

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=12,
)


def _mutations():
    good_arch = {"name": "a", "levels": [{"name": "T", "capacity": None}, {"name": "L0", "capacity": 8, "link": {"input_clocks_per_word": "1/2"}}], "compute": {"block": {"m": 2}, "clocks_per_call": 1}}
    paths = [("name",), ("levels",), ("levels", 0), ("levels", 1, "capacity"), ("levels", 1, "link"), ("levels", 1, "link", "input_clocks_per_word"), ("compute",), ("compute", "block"), ("compute", "block", "m"), ("compute", "clocks_per_call"), ("double_buffering",)]
    return good_arch, paths


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10), json_values)
@example(2, {"0\n": None})  # a field named with a final newline: "$" matched before it, so it was printed raw
def test_any_bad_architecture_value_gives_one_spec_error_line(which, value):
    import copy

    good, paths = _mutations()
    data = copy.deepcopy(good)
    *parents, last = paths[which]
    target = data
    for p in parents:
        target = target[p]
    target[last] = value
    try:
        architecture_from_dict(data, "a.yaml")
    except SpecError as e:
        assert str(e).startswith("a.yaml: ") and "\n" not in str(e)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_any_json_value_is_a_workload_or_one_spec_error_line(data):
    try:
        workload_from_dict(data, "w.yaml")
    except SpecError as e:
        assert str(e).startswith("w.yaml") and "\n" not in str(e)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(1, 10_000), min_size=1, max_size=4),
    # Denominators within 2^62: a cost the solver cannot hold is refused (mapsearch/spec/limits.py).
    st.lists(st.fractions(min_value=Fraction(1, 100), max_value=100, max_denominator=2**55), min_size=8, max_size=8),
    st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_architecture_round_trip(capacities, costs, flags):
    levels = [{"name": "TOP", "capacity": None}]
    for i, cap in enumerate(capacities):
        levels.append(
            {
                "name": f"L{i}",
                "capacity": cap,
                "link": {
                    "input_clocks_per_word": f"{costs[2 * i].numerator}/{costs[2 * i].denominator}",
                    "output_clocks_per_word": f"{costs[2 * i + 1].numerator}/{costs[2 * i + 1].denominator}",
                    "lines": "separate" if flags[i] else "shared",
                },
            }
        )
    arch = architecture_from_dict({"name": "a", "levels": levels, "double_buffering": flags[0]}, "a")
    assert architecture_from_dict(architecture_to_dict(arch), "b") == arch
    assert arch.levels[1].link.input_clocks_per_word == costs[0]
