"""A layer table is checked when it is read: each problem is one line naming ``nodes[i].<field>`` (exit 2), not
an IndexError, an ERROR row, or a silently different layer."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import yaml

from mapsearch.characterize.graph import lower
from mapsearch.characterize.models import builtin_names, load_model, model_from_dict
from mapsearch.cli import main
from mapsearch.errors import SpecError


def node(**fields: object) -> dict:
    return {"name": "n", "op": "linear", "in": [[4, 8]], "out": [4, 9], "from": [""], **fields}


def conv(**attrs: object) -> dict:
    return node(op="conv", **{"in": [[1, 3, 8, 8]]}, out=[1, 4, 8, 8], attrs={"kernel": [3, 3], **attrs})


@pytest.mark.parametrize("nodes, message", [
    ([node(**{"in": []})], "m.yaml: nodes[0].in: expected a non-empty list of input shapes, e.g. [[1, 64]], got []"),
    ([node(out=[5, 9])], "m.yaml: nodes[0].out: expected [4, N] (a linear keeps the input's leading extents and "
                         "maps its 8 features to N), got [5, 9]"),
    ([node(**{"in": [[4, 8], [4, 8]]}, **{"from": ["", ""]})],
     "m.yaml: nodes[0].in: expected 1 input shape(s) for a linear (weights are implied), got [[4, 8], [4, 8]]"),
    ([node(), node()], "m.yaml: nodes[1].name: expected a name not used by another node (nodes[0]), got 'n'"),
    ([node(name="")], "m.yaml: nodes[0].name: expected a non-empty string, got ''"),
    ([node(**{"from": ["", ""]})],
     "m.yaml: nodes[0].from: expected one producer per input (1; '' for a model input), got ['', '']"),
    ([conv(stride=[0, 0], pad=[1, 1])], "m.yaml: nodes[0].attrs.stride: expected 2 int(s) >= 1, got [0, 0]"),
    ([conv(kernel=[3])], "m.yaml: nodes[0].attrs.kernel: expected 2 int(s) >= 1, got [3]"),
    ([conv(groups=2)], "m.yaml: nodes[0].attrs.groups: expected a divisor of the 3 input and 4 output channels, "
                       "got 2"),
    ([conv(pad=[0, 0])], "m.yaml: nodes[0].out[2]: expected 6 (input 8, kernel 3, stride 1, pad 0, dilation 1), "
                         "got 8"),
    ([node(op="conv", **{"in": [[1, 3, 8, 8]]}, out=[2, 4, 8, 8])],
     "m.yaml: nodes[0].out[0]: expected the input's batch 1, got 2"),
    ([node(op="matmul", **{"in": [[2, 4, 8], [2, 9, 5]]}, out=[2, 4, 5], **{"from": ["", ""]})],
     "m.yaml: nodes[0].in[1]: expected 8 rows (the columns of in[0] [2, 4, 8]), got [2, 9, 5]"),
    ([node(op="matmul", **{"in": [[2, 4, 8], [2, 8, 5]]}, out=[2, 4, 6], **{"from": ["", ""]})],
     "m.yaml: nodes[0].out: expected [..., 4, 5] with the inputs' batch extents (in [2, 4, 8] @ [2, 8, 5]), "
     "got [2, 4, 6]"),
])
def test_bad_nodes_are_one_line(nodes: list, message: str) -> None:
    with pytest.raises(SpecError) as e:
        model_from_dict({"name": "m", "nodes": nodes}, "m.yaml")
    assert str(e.value) == message


def test_good_nodes_lower_to_their_layers() -> None:
    strided = model_from_dict({"nodes": [conv(stride=[2, 2], pad=[1, 1]) | {"out": [1, 4, 4, 4]}]}, "m.yaml")
    assert lower(strided.nodes[0]).extents == {"n": 4, "k": 3, "p": 4, "m": 4, "r": 3, "s": 3}
    fc = model_from_dict({"nodes": [node()]}, "m.yaml")
    assert lower(fc.nodes[0]).extents == {"m": 4, "k": 8, "n": 9}


def test_builtin_tables_pass() -> None:
    # Strided and padded convs, pools, residual adds (resnet18); linear and matmul of attention (bert-base);
    # gpt2-small and resnet50 (0.5 s each) are of the same kinds.
    assert set(builtin_names()) == {"bert-base", "conv-stack", "gpt2-small", "mlp", "resnet18", "resnet50"}
    assert {name: len(load_model(name).nodes) for name in ("bert-base", "conv-stack", "mlp", "resnet18")} == {
        "bert-base": 233, "conv-stack": 14, "mlp": 5, "resnet18": 69}


def test_cli_characterize_a_bad_table_is_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    table = tmp_path / "m.yaml"
    table.write_text(yaml.safe_dump({"name": "m", "nodes": [conv(stride=[0, 0])]}))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["characterize", str(table), "cpu-quick", "--out", str(tmp_path / "ch"), "--workers", "1",
                     "--no-plot", "-q"])
    assert code == 2 and out.getvalue() == ""
    assert err.getvalue() == f"mapsearch: {table}: nodes[0].attrs.stride: expected 2 int(s) >= 1, got [0, 0]\n"
    assert not (tmp_path / "ch").exists()
