"""``mapsearch plot``: a sweep's results drawn to a PNG; one line when matplotlib is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mapsearch import api, cli

ROOT = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    sweep = {"name": "l0", "workloads": [str(ROOT / "examples" / "matmul-4x4x4.yaml")],
             "architectures": [str(ROOT / "examples" / "arch-worked-example.yaml")],
             "params": {"architectures.L0.capacity": [12, 24, 48]}, "time_limit": 30}
    result = api.sweep(sweep, out, workers=1)
    assert len(result.rows) == 3 and not result.failed
    return out


def test_plot_against_the_swept_parameter(sweep_dir, capsys):
    assert cli.main(["plot", str(sweep_dir)]) == 0
    png = sweep_dir / "plot.png"
    assert png.read_bytes().startswith(PNG)
    assert capsys.readouterr().err.strip() == f"wrote {png}"


def test_plot_kinds_and_output(sweep_dir, tmp_path):
    out = tmp_path / "roof.png"
    assert cli.main(["plot", str(sweep_dir / "results.jsonl"), "--kind", "roofline", "-o", str(out)]) == 0
    assert out.read_bytes().startswith(PNG)


def test_bad_kind_and_missing_matplotlib_are_one_line(sweep_dir, tmp_path, capsys, monkeypatch):
    assert cli.main(["plot", str(sweep_dir), "--kind", "pie"]) == 2
    assert capsys.readouterr().err.strip() == ("mapsearch: plot kind: expected one of parameter, roofline, "
                                               "lower-bound, got 'pie'")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    assert cli.main(["plot", str(sweep_dir), "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["mapsearch: plots need matplotlib, which is not installed: pip install 'mapsearch[plot]'"]
    assert not (tmp_path / "x.png").exists()


def test_sweep_result_plots_itself(sweep_dir, tmp_path):
    stored = api.sweep({"name": "l0", "workloads": [str(ROOT / "examples" / "matmul-4x4x4.yaml")],
                        "architectures": [str(ROOT / "examples" / "arch-worked-example.yaml")],
                        "params": {"architectures.L0.capacity": [12, 24, 48]}, "time_limit": 30},
                       sweep_dir, export_only=True)
    assert len(stored.rows) == 3  # export_only: the stored rows, nothing rerun
    assert stored.plot(tmp_path / "p.png").read_bytes().startswith(PNG)
