"""The hostile-input corpus (tests/data/hostile/cases.txt): every bad input fails in one clean line.

Each case runs ``mapsearch.cli.main`` in this process and asserts the exit
code, exactly one line on stderr that starts with ``mapsearch: `` and holds
the expected fragment, no traceback, and that the output file and directory
the case may name are untouched and nothing else was written beside them.
"""

from __future__ import annotations

import contextlib
import io
import shlex
from pathlib import Path

import pytest

from mapsearch.cli import main

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "data" / "hostile"
EXAMPLES = ROOT / "examples"
SENTINEL = "precious: written before the command ran\n"

# Files too big or too deep to keep in git, written by the test into {g}.
GENERATED = {
    "deep-50000.yaml": lambda: "name: " + "[" * 50_000 + "]" * 50_000 + "\n",
    "deep-50000.json": lambda: "[" * 50_000 + "]" * 50_000,
    "deep-200.yaml": lambda: 'name: a\neinsum: "Z[m] += A[m]"\nextents: {m: 4}\nx: ' + "[" * 200 + "]" * 200 + "\n",
    "deep-block-500.yaml": lambda: "name: a\nx:\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(500)) + " " * 501 + "v\n",
    "long-extent.yaml": lambda: 'name: a\neinsum: "Z[m,n] += A[m,k] * B[k,n]"\nextents: {m: ' + str(2**64 + 1) + ", n: 4, k: 4}\n",
}


def load_cases() -> list[tuple[str, int, str, str]]:
    """``(id, exit code, fragment, argument template)`` per line of cases.txt."""
    out = []
    for number, line in enumerate((HOSTILE / "cases.txt").read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        code, fragment, args = (part.strip() for part in line.split(" | ", 2))
        out.append((f"L{number}-{args.split()[0]}", int(code), fragment, args))
    return out


CASES = load_cases()


def test_corpus_is_big_enough() -> None:
    assert len(CASES) >= 150
    commands = {args.split()[0] for _, _, _, args in CASES}
    assert commands >= {"solve", "replay", "export", "trace", "sweep", "characterize"}


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its content (what a failed command must leave as it was)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(root))] = path.read_bytes().decode("utf-8", "replace")
        elif path.is_dir():
            out[str(path.relative_to(root)) + "/"] = ""
    return out


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse
            code = e.code if isinstance(e.code, int) else 2
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("generated")
    for name, make in GENERATED.items():
        (root / name).write_text(make(), encoding="utf-8")
    return root


@pytest.mark.parametrize("case_id, code, fragment, template", CASES, ids=[c[0] for c in CASES])
def test_hostile_case(case_id: str, code: int, fragment: str, template: str, generated: Path, tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "out.txt").write_text(SENTINEL)
    (work / "outdir").mkdir()
    (work / "outdir" / "keep.txt").write_text(SENTINEL)
    monkeypatch.chdir(work)  # a default output (e.g. a sweep's results directory) would land here
    before = _tree(work)
    argv = shlex.split(template.format(h=HOSTILE, g=generated, ex=EXAMPLES, o=work / "out.txt",
                                       d=work / "outdir", tmp=work))
    status, _, err = run_cli(argv)
    lines = err.splitlines()
    assert "Traceback" not in err, err
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{err}"
    assert lines[0].startswith("mapsearch: "), lines[0]
    assert fragment in lines[0], lines[0]
    assert status == code, (status, lines[0])
    assert _tree(work) == before, "the command wrote, changed or left a file"
