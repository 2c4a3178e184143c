"""Output files (mapsearch/atomic.py) through symbolic links and onto special files: a link's target is replaced
and the link kept; an existing FIFO (or device, socket) is refused in one line and never replaced. No real
device is touched: a FIFO in a temporary directory stands for them (never opened, so nothing blocks)."""

from __future__ import annotations

import contextlib
import io
import os
import stat
from pathlib import Path

import pytest

from mapsearch.atomic import atomic_open, check_writable, write_text_atomic
from mapsearch.cli import main
from mapsearch.errors import SpecError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCHEDULE = EXAMPLES / "worked-example-mnk.schedule.json"
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@needs_fifo
def test_a_fifo_is_refused_and_stays_a_fifo(tmp_path: Path) -> None:
    path = fifo(tmp_path)
    for attempt in (lambda: write_text_atomic(path, "x"), lambda: check_writable(path)):
        with pytest.raises(SpecError) as e:
            attempt()
        assert str(e.value) == f"{path}: cannot write: not a regular file (a FIFO); expected a file path"
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temporary file left


@needs_fifo
def test_a_link_to_a_fifo_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(fifo(tmp_path))
    with pytest.raises(SpecError, match=r"not a regular file \(a FIFO\)"):
        write_text_atomic(link, "x")
    assert link.is_symlink() and stat.S_ISFIFO(os.stat(link).st_mode)


@needs_fifo
def test_export_onto_a_fifo_is_exit_2(tmp_path: Path) -> None:
    path = fifo(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["export", str(SCHEDULE), "-o", str(path)])
    assert code == 2 and out.getvalue() == ""
    assert err.getvalue() == f"mapsearch: {path}: cannot write: not a regular file (a FIFO); expected a file path\n"
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


def test_writing_through_a_link_replaces_its_target_and_keeps_the_link(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "real.txt"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(Path("data") / "real.txt")  # relative, resolved from the link's directory
    chain = tmp_path / "chain.txt"
    chain.symlink_to(link)
    write_text_atomic(chain, "new")
    assert target.read_text() == "new"
    assert link.is_symlink() and chain.is_symlink() and os.readlink(chain) == str(link)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the replaced file's permissions stay
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["real.txt"]


def test_a_dangling_link_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.txt"
    link.symlink_to("made.txt")
    from mapsearch.atomic import write_bytes_atomic  # the plots' writer

    write_bytes_atomic(link, b"\x89PNG")
    assert link.is_symlink() and (tmp_path / "made.txt").read_bytes() == b"\x89PNG"


def test_a_loop_of_links_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(SpecError, match=r"^.*/a: cannot write: Too many levels of symbolic links$"):
        write_text_atomic(tmp_path / "a", "x")


def test_a_failed_write_through_a_link_leaves_the_target(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("precious")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    with pytest.raises(RuntimeError):
        with atomic_open(link) as f:
            f.write("half")
            raise RuntimeError("bad input found late")
    assert target.read_text() == "precious" and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "real.txt"]


def test_a_directory_is_still_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r": cannot write: is a directory$"):
        check_writable(tmp_path)
