"""Layout bases and footprints stay inside the trace's 64-bit addresses: a base past 2^48 is one line naming
``layouts.<T>.base`` and the limit, not an OverflowError deep in numpy."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from mapsearch.cli import main
from mapsearch.dram.geometry import preset
from mapsearch.dram.layout import LayoutError, Layouts, LayoutSpec, layout_specs
from mapsearch.errors import SpecError
from mapsearch.spec.workload import Workload

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCHEDULE = EXAMPLES / "worked-example-mnk.schedule.json"
MATMUL = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})


@pytest.mark.parametrize("base", [2**63 - 1, 2**48 + 1, 2**64, "0x1000000000001"])
def test_a_base_past_2_48_is_refused_naming_the_field(base: object) -> None:
    with pytest.raises(SpecError) as e:
        layout_specs(MATMUL, {"A": {"kind": "row_major", "base": base}}, "l.yaml")
    assert str(e.value).startswith("l.yaml: layouts.A.base: expected a byte address from 0 to 2^48 "
                                   "(281,474,976,710,656), got ")


def test_the_largest_base_is_taken_and_traced() -> None:
    specs = layout_specs(MATMUL, {"A": {"base": 2**48}}, "l.yaml")
    layouts = Layouts(MATMUL, preset("ddr4-3200"), specs)
    assert layouts["A"].base == 2**48
    assert int(layouts["A"].addresses([[3], [3]])[0]) == 2**48 + 15 * layouts["A"].eb


def test_a_footprint_past_2_62_is_refused() -> None:
    big = Workload.from_text("big", "Z[m,n] += A[m,k] * B[k,n]", {"m": 2**22, "n": 4, "k": 2**22})
    with pytest.raises(LayoutError, match=r"^layouts\.A: the tensor's .* bytes from base .* end beyond byte 2\^62"):
        Layouts(big, preset("ddr4-3200"), {"A": LayoutSpec(base=2**62 - 2**40)})


def test_trace_with_a_huge_base_is_one_line_and_exit_2(tmp_path: Path) -> None:
    layouts = tmp_path / "l.yaml"
    layouts.write_text("layouts: {A: {kind: row_major, base: 9223372036854775807}}\n")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["trace", str(SCHEDULE), "--dram", "ddr4-3200", "--layouts", str(layouts)])
    assert code == 2 and out.getvalue() == ""
    assert err.getvalue() == (f"mapsearch: {layouts}: layouts.A.base: expected a byte address from 0 to 2^48 "
                              "(281,474,976,710,656), got 9223372036854775807\n")
