"""``mapsearch plot`` on hostile input: a format matplotlib cannot write, rows that are not objects or whose
figures are not numbers, rows with nothing to draw. Each is one line and exit 2, checked before anything is drawn,
and no file is left behind."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from mapsearch import cli
from mapsearch.errors import MapsearchError, SpecError
from mapsearch.report import plots

LINK = {"name": "L2->L1", "words_down": 32, "words_up": 16, "words": 48, "time": 192}
ROW = {"case_id": "68c6f5231fdb590a", "workload": "mm", "architecture": "a", "params": {}, "status": "OPTIMAL",
       "time": 192, "utilization": 0.5, "words_total": 96, "compute_time": 64, "op_calls": 64, "macs": 64,
       "links": [LINK]}


@pytest.fixture(autouse=True)
def needs_matplotlib():
    pytest.importorskip("matplotlib")


def run_cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, err.getvalue()


def jsonl(path: Path, *rows: object) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_good_row_plots(tmp_path: Path) -> None:
    out = tmp_path / "p.png"
    assert run_cli(["plot", str(jsonl(tmp_path / "r.jsonl", ROW)), "-o", str(out)]) == (0, f"wrote {out}\n")
    assert out.read_bytes().startswith(b"\x89PNG")


def test_a_format_matplotlib_cannot_write_is_one_line_before_drawing(tmp_path: Path) -> None:
    out = tmp_path / "p.txt"
    code, err = run_cli(["plot", str(jsonl(tmp_path / "r.jsonl", ROW)), "-o", str(out)])
    assert (code, err.count("\n")) == (2, 1)
    assert err.startswith(f"mapsearch: {out}: expected a file name ending in a format matplotlib writes (.")
    assert ".pdf" in err and ".png" in err and ".svg" in err and err.endswith("), got '.txt'\n")
    assert list(tmp_path.iterdir()) == [tmp_path / "r.jsonl"]
    for draw in (lambda: plots.plot_rows([ROW], out), lambda: plots.plot_roofline([ROW], out),
                 lambda: plots.plot_vs_parameter([ROW], "p", out), lambda: plots.plot_vs_lower_bound([ROW], out)):
        with pytest.raises(MapsearchError, match="expected a file name ending in a format matplotlib writes"):
            draw()
    assert not out.exists()


def test_another_format_matplotlib_writes_is_fine(tmp_path: Path) -> None:
    out = tmp_path / "p.SVG"
    assert plots.plot_rows([ROW], out, "roofline") == out
    assert b"<svg" in out.read_bytes()[:500]


BAD_ROWS = [
    ([1, 2], "line 2: expected a JSON object (one row of a sweep's results), got [1, 2]"),
    ("row", "line 2: expected a JSON object (one row of a sweep's results), got 'row'"),
    ({**ROW, "time": "abc"}, "line 2: time: expected a number (or exact text 'a/b') or null, got 'abc'"),
    ({**ROW, "utilization": True}, "line 2: utilization: expected a number (or exact text 'a/b') or null, got True"),
    ({**ROW, "links": 5}, "line 2: links: expected a list of links {name, words_down, words_up, words, time} or "
                         "null, got 5"),
    ({**ROW, "links": [{"words": 1}]}, "line 2: links[0]: expected a link {name, words_down, words_up, words, "
                                       "time}, got {'words': 1}"),
    ({**ROW, "links": [{**LINK, "time": [1]}]}, "line 2: links[0].time: expected a number (or exact text 'a/b') or "
                                                "null, got [1]"),
    ({**ROW, "status": 1}, "line 2: status: expected text (OPTIMAL, FEASIBLE, ...), got 1"),
    ({**ROW, "params": "x"}, "line 2: params: expected an object {path: value} or a list of [path, value] pairs, "
                             "got 'x'"),
    ({**ROW, "architecture": 3}, "line 2: architecture: expected a name or an object, got 3"),
    ({"status": "OPTIMAL", "report": [1]}, "line 2: report: expected an object (the solve report) or null, got [1]"),
    ({"status": "OPTIMAL", "report": {"macs": "1/0"}}, "line 2: report.macs: expected a number (or exact text "
                                                       "'a/b') or null, got '1/0'"),
]


@pytest.mark.parametrize("row, message", BAD_ROWS)
def test_a_row_the_plots_cannot_read_is_one_line_naming_the_line_and_the_field(tmp_path, row, message) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(ROW) + "\n" + json.dumps(row) + "\n")
    out = tmp_path / "p.png"
    assert run_cli(["plot", str(tmp_path), "-o", str(out)]) == (2, f"mapsearch: {path}: {message}\n")
    assert not out.exists()
    with pytest.raises(SpecError):
        plots.load_rows(path)


def test_line_numbers_count_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(ROW) + "\n\n" + "[1, 2]\n")
    with pytest.raises(SpecError, match=r"r\.jsonl: line 3: expected a JSON object"):
        plots.load_rows(path)


def test_rows_handed_to_plot_rows_are_checked_too(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"^rows\[1\]: time: expected a number \(or exact text 'a/b'\) or null, "
                                        r"got 'abc'$"):
        plots.plot_rows([ROW, {**ROW, "time": "abc"}], tmp_path / "p.png")
    assert not (tmp_path / "p.png").exists()


def test_exact_text_figures_are_read(tmp_path: Path) -> None:
    row = {**ROW, "time": "192", "macs": "64", "links": [{**LINK, "words_down": "32", "words_up": "16"}]}
    assert plots.plot_rows([row], tmp_path / "p.png", "roofline").read_bytes().startswith(b"\x89PNG")


def test_solved_rows_without_figures_are_one_line_not_an_empty_roofline(tmp_path: Path) -> None:
    out = tmp_path / "p.png"
    code, err = run_cli(["plot", str(jsonl(tmp_path / "r.jsonl", {"status": "OPTIMAL"})), "-o", str(out)])
    assert (code, err) == (2, "mapsearch: no solved row has macs, time and the words on its architecture's slowest "
                              "link to put on a roofline\n")
    assert not out.exists()
