"""keep/bypass constraints the solver cannot honour are refused in one line naming ``keep.<level>.<tensor>``
(they used to be dropped silently): a bypass at the innermost level, one tensor both kept and bypassed at a
level (by name and by role), and, given the homes, a bypass at the home or a keep above it."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from mapsearch.cli import main
from mapsearch.errors import SpecError
from mapsearch.spec.constraints import check_constraints, constraints_from_dict
from mapsearch.spec.load import load_architecture
from mapsearch.spec.workload import Workload

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ARCH = load_architecture(EXAMPLES / "arch-three-level.yaml")
W = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})


def check(keep: dict, homes: dict | None = None) -> None:
    check_constraints(constraints_from_dict({"keep": keep}, "c.yaml"), W, ARCH, "c.yaml", homes=homes)


def test_the_levels_of_the_example() -> None:
    assert ARCH.level_names == ("L2", "L1", "L0")


@pytest.mark.parametrize("keep, homes, message", [
    ({"L0": {"A": False}}, None,
     "c.yaml: keep.L0.A: cannot bypass A at L0, the innermost level: every tensor is kept next to compute"),
    ({"innermost": {"weights": False}}, None,
     "c.yaml: keep.innermost.weights: cannot bypass B at L0, the innermost level: every tensor is kept next to "
     "compute"),
    ({"L1": {"A": True, "inputs": False}}, None,
     "c.yaml: keep.L1.inputs: A is both kept and bypassed at L1 (A: true, inputs: false); give one"),
    ({"L1": {"Z": True}, "innermost": {"output": True}, "outermost": {"A": True}, "L0": {"A": True}}, None, None),
    ({"L2": {"A": False}}, {}, "c.yaml: keep.L2.A: cannot bypass A at L2: it is A's home"),
    ({"L2": {"A": False}}, None, None),  # homes unknown: A may live lower, then L2's rule is moot
    ({"L2": {"A": False}}, {"A": "L1"}, None),
    ({"L1": {"A": False}}, {"A": "L1"}, "c.yaml: keep.L1.A: cannot bypass A at L1: it is A's home"),
    ({"L2": {"A": True}}, {"A": "L1"}, "c.yaml: keep.L2.A: cannot keep A at L2: it is above A's home L1"),
    ({"L1": {"A": True}}, {"A": "L1"}, None),
])
def test_keep_rules(keep: dict, homes: dict | None, message: str | None) -> None:
    if message is None:
        check(keep, homes)
        return
    with pytest.raises(SpecError) as e:
        check(keep, homes)
    assert str(e.value) == message


def test_solve_refuses_a_bypass_at_the_innermost_level_before_solving(tmp_path: Path) -> None:
    c = tmp_path / "c.yaml"
    c.write_text("keep: {L0: {A: false}}\n")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["solve", str(EXAMPLES / "matmul-4x4x4.yaml"), str(EXAMPLES / "arch-worked-example.yaml"),
                     "-c", str(c), "-o", str(tmp_path / "s.json"), "-q"])
    assert code == 2 and out.getvalue() == ""
    assert err.getvalue() == (f"mapsearch: {c}: keep.L0.A: cannot bypass A at L0, the innermost level: every tensor "
                              "is kept next to compute\n")
    assert not (tmp_path / "s.json").exists()
