"""Plots of sweep rows: each function writes a non-empty PNG from synthetic rows."""

from __future__ import annotations

import json
import math
import sys

import pytest

from mapsearch.errors import MapsearchError
from mapsearch.report import plots

ARCHS = {
    "small": {
        "name": "small",
        "levels": [
            {"name": "L2", "capacity": None},
            {"name": "L1", "capacity": 4096, "link": {"input_clocks_per_word": 4, "lines": "shared"}},
            {"name": "L0", "capacity": 64, "link": {"input_clocks_per_word": 1, "output_clocks_per_word": 1, "lines": "separate"}},
        ],
        "compute": {"block": {}, "clocks_per_call": 1},
    },
    "block": {
        "name": "block",
        "levels": [
            {"name": "L2", "capacity": None},
            {"name": "L1", "capacity": 4096, "link": {"input_clocks_per_word": "1/2"}},
            {"name": "L0", "capacity": 256, "link": {"input_clocks_per_word": "1/16", "lines": "separate"}},
        ],
        "compute": {"block": {"m": 4, "n": 4, "k": 4}, "clocks_per_call": 1},
    },
}


def synthetic_rows() -> list[dict]:
    """Rows as the sweep exports them: two workloads x two architectures x L1 capacities."""
    rows = []
    for workload, macs in (("mm-97", 97 * 193 * 61), ("mm-64", 64**3)):
        for arch, peak in (("small", 1), ("block", 64)):
            for cap in (1024, 4096, 16384, 65536, 262144):
                words = int(2 * macs / math.sqrt(cap)) + 3 * 10**4
                slow = 4 if arch == "small" else 0.5  # clocks per word on L2->L1
                link_time = words * slow
                compute = macs / peak
                time = max(compute, link_time)
                rows.append({
                    "case_id": f"{workload}-{arch}-{cap}",
                    "workload": workload,
                    "architecture": arch,
                    "objective": "time",
                    "params": {"architecture.levels[1].capacity": cap},
                    "status": "FEASIBLE" if cap == 262144 else "OPTIMAL",
                    "time": time,
                    "utilization": compute / time,
                    "words_total": words * 2,
                    "compute_time": compute,
                    "op_calls": macs // peak,
                    "macs": macs,
                    "links": [
                        {"name": "L2->L1", "words_down": words, "words_up": 0, "time": link_time},
                        {"name": "L1->L0", "words_down": words, "words_up": 0, "time": words / 16},
                    ],
                    "lower_bound_words": int(2 * macs / math.sqrt(cap)),
                    "lower_bound_link": "L2->L1",
                })
    rows.append({"case_id": "x", "workload": "mm-64", "architecture": "small", "status": "INFEASIBLE", "params": {}})
    return rows



@pytest.fixture(autouse=True)
def needs_matplotlib():
    pytest.importorskip("matplotlib")


def assert_png(path) -> None:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_vs_parameter(tmp_path):
    out = plots.plot_vs_parameter(synthetic_rows(), "architecture.levels[1].capacity", tmp_path / "vs.png")
    assert_png(out)


def test_roofline_from_passed_architectures(tmp_path):
    assert_png(plots.plot_roofline(synthetic_rows(), tmp_path / "roof.png", architectures=ARCHS))


def test_roofline_from_the_rows_spec_or_inferred(tmp_path):
    rows = synthetic_rows()
    for r in rows:
        r["spec"] = json.dumps({"architecture": ARCHS[r["architecture"]]})
    assert_png(plots.plot_roofline(rows, tmp_path / "roof-spec.png"))
    bare = [{k: v for k, v in r.items() if k != "spec"} for r in rows]
    assert_png(plots.plot_roofline(bare, tmp_path / "roof-inferred.png"))


def test_roofs():
    small = plots.roof_of(ARCHS["small"])
    assert small == {"name": "small", "peak": 1.0, "link": "L2->L1", "bandwidth": 0.25}
    block = plots.roof_of(ARCHS["block"])
    assert block["peak"] == 64 and block["link"] == "L2->L1" and block["bandwidth"] == 2


def test_vs_lower_bound(tmp_path):
    assert_png(plots.plot_vs_lower_bound(synthetic_rows(), tmp_path / "lb.png"))


def test_rows_in_a_report_dict_and_from_a_file(tmp_path):
    nested = [{"case_id": r["case_id"], "workload": r["workload"], "architecture": r["architecture"],
               "params": r.get("params"), "status": r["status"],
               "report": {k: v for k, v in r.items() if k not in ("case_id", "workload", "architecture", "params", "status")}}
              for r in synthetic_rows()]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in nested) + "\n")
    rows = plots.load_rows(path)
    assert_png(plots.plot_vs_parameter(rows, "architecture.levels[1].capacity", tmp_path / "vs.png"))
    assert_png(plots.plot_vs_lower_bound(rows, tmp_path / "lb.png"))


def test_nothing_to_plot_is_one_error(tmp_path):
    with pytest.raises(MapsearchError, match="no solved row has a numeric parameter 'nope'"):
        plots.plot_vs_parameter(synthetic_rows(), "nope", tmp_path / "x.png")
    with pytest.raises(MapsearchError, match="lower_bound_words"):
        plots.plot_vs_lower_bound([{"status": "OPTIMAL", "words_total": 5}], tmp_path / "x.png")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n{oops\n')
    with pytest.raises(MapsearchError, match="line 2: malformed JSON"):
        plots.load_rows(bad)


def test_missing_matplotlib_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ModuleNotFoundError
    with pytest.raises(MapsearchError, match=r"plots need matplotlib, which is not installed: pip install 'mapsearch\[plot\]'"):
        plots.plot_vs_parameter(synthetic_rows(), "p", "x.png")
