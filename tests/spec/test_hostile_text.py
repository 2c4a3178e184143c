"""Text and numbers a spec must not smuggle in: lone surrogates, YAML 1.1's base-60 and octal ints, JSON's
1.0 for 1, and values too long to echo (each refused in one line naming the file and the field)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from mapsearch.cli import main
from mapsearch.errors import SpecError, UsageError
from mapsearch.schedule.json_io import load_schedule
from mapsearch.spec.load import load_workload, workload_from_dict
from mapsearch.spec.reading import join_path, parse_yaml
from mapsearch.spec.tree import load_tree

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCHEDULE = EXAMPLES / "worked-example-mnk.schedule.json"
MATMUL = 'einsum: "Z[m,n] += A[m,k] * B[k,n]"\n'


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_lone_surrogate_in_a_workload_name_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text('name: "\\ud800"\n' + MATMUL + "extents: {m: 4, n: 4, k: 4}\n", encoding="utf-8")
    with pytest.raises(SpecError) as e:
        load_workload(path)
    assert str(e.value) == (f"{path}: name: expected text without unpaired surrogates (U+D800..U+DFFF), "
                            "got '\\ud800'")
    str(e.value).encode("utf-8")  # printable


def test_lone_surrogate_in_a_key_names_the_key() -> None:
    with pytest.raises(SpecError) as e:
        parse_yaml('name: w\nextents: {"\\udc00": 4}\n', "w.yaml")
    assert str(e.value) == ("w.yaml: extents['\\udc00']: expected a key without unpaired surrogates "
                            "(U+D800..U+DFFF), got '\\udc00'")


def test_a_surrogate_pair_written_as_one_character_is_fine() -> None:
    assert parse_yaml('name: "\\U0001F600"\n', "w.yaml") == {"name": "\U0001F600"}


def test_lone_surrogate_in_a_schedule_file_is_refused_by_replay_and_export(tmp_path: Path) -> None:
    data = json.loads(SCHEDULE.read_text())
    data["architecture"]["levels"][1]["name"] = "\udfff"  # json.dumps writes the escape "\udfff"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SpecError, match=r"architecture\.levels\[1\]\.name: expected text without unpaired"):
        load_schedule(path)
    for argv in (["replay", str(path)], ["export", str(path), "--format", "loopnest"]):
        code, out, err = run_cli(argv)
        assert (code, out) == (2, "")
        assert err.startswith(f"mapsearch: {path}: architecture.levels[1].name: expected text without unpaired")


def test_lone_surrogate_in_a_tree_file_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text('name: t\narch:\n  nodes:\n  - !Memory {name: "\\ud800", size: inf}\n', encoding="utf-8")
    with pytest.raises(SpecError) as e:
        load_tree(path)
    assert str(e.value) == f"{path}:4:20: expected text without unpaired surrogates (U+D800..U+DFFF), got '\\ud800'"


@pytest.mark.parametrize("value, message", [
    ("1:00", "'1:00' reads as the base-60 number 60 in YAML 1.1; write 60, or quote it for text"),
    ("1:30.5", "'1:30.5' reads as the base-60 number 90.5 in YAML 1.1; write the number, or quote it for text"),
    ("010", "'010' reads as the octal number 8 in YAML 1.1; drop the leading zero (or write 8 if octal was meant)"),
])
def test_yaml_11_numbers_nobody_writes_are_refused(value: str, message: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_yaml(f"name: w\nextents: {{m: {value}}}\n", "w.yaml")
    assert str(e.value) == f"w.yaml: line 2: {message}"


def test_plain_hex_and_underscored_ints_and_quoted_times_still_read() -> None:
    assert parse_yaml('a: 0x10\nb: 1_000\nc: "1:00"\nd: 0\ne: 10\n', "w.yaml") == \
        {"a": 16, "b": 1000, "c": "1:00", "d": 0, "e": 10}


def test_schedule_version_1_0_is_refused_like_extent_4_0(tmp_path: Path) -> None:
    text = SCHEDULE.read_text()
    assert '"version": 1,' in text
    path = tmp_path / "s.json"
    path.write_text(text.replace('"version": 1,', '"version": 1.0,'))
    with pytest.raises(SpecError) as e:
        load_schedule(path)
    assert str(e.value) == f"{path}: version: expected 1 (the schedule format this mapsearch reads), got 1.0"
    path.write_text(text)
    assert load_schedule(path).workload.name == "matmul-4x4x4"


def test_long_bad_values_are_cut_in_the_message() -> None:
    with pytest.raises(SpecError) as e:
        workload_from_dict({"name": "w", "einsum": "Z[m] += A[m] * B[m]", "extents": {"m": "x" * 5000}}, "w.yaml")
    message = str(e.value)
    assert message.startswith("w.yaml: extents.m: expected ") and message.endswith("xxx...")
    assert len(message.split(", got ")[1]) <= 80
    with pytest.raises(SpecError) as e:
        workload_from_dict({"name": "w", "einsum": "Z[m] += A[" + "q" * 3000 + "] * B[m]", "extents": {"m": 4}},
                           "w.yaml")
    assert len(str(e.value)) < 200, str(e.value)
    assert len(str(UsageError("--x", "an int", "y" * 5000))) < 350


def test_long_keys_are_cut_in_field_paths() -> None:
    assert join_path(["extents", "m" * 100]) == "extents['" + "m" * 36 + "...]"
    assert join_path(["extents", "m"]) == "extents.m"


def test_einsum_equals_is_the_same_sum_as_plus_equals() -> None:
    from mapsearch.spec.einsum_text import parse_einsum

    assert parse_einsum("Z[m,n] = A[m,k] * B[k,n]") == parse_einsum("Z[m,n] += A[m,k] * B[k,n]")
