"""One process per sweep directory: the lock names its owner, and a dead owner's lock is taken over."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mapsearch.sweep.lock import LOCK_NAME, DirectoryBusy, DirectoryLock


def test_second_holder_is_told_who_holds_it(tmp_path) -> None:
    with DirectoryLock(tmp_path):
        assert (tmp_path / LOCK_NAME).read_text().split()[0] == str(os.getpid())
        with pytest.raises(DirectoryBusy, match=rf"in use by process {os.getpid()} on .*; wait for that sweep"):
            DirectoryLock(tmp_path).acquire()
    with DirectoryLock(tmp_path):  # released: free again
        pass


def test_lock_of_a_dead_process_is_taken_over(tmp_path) -> None:
    # A process that took the lock and died without letting go (as under kill -9).
    code = ("import sys, os; sys.path.insert(0, sys.argv[2]); from mapsearch.sweep.lock import DirectoryLock; "
            "DirectoryLock(sys.argv[1]).acquire(); os._exit(0)")
    dead = subprocess.run([sys.executable, "-c", code, str(tmp_path), os.getcwd()], check=True)
    assert dead.returncode == 0 and (tmp_path / LOCK_NAME).exists()
    stale_pid = int((tmp_path / LOCK_NAME).read_text().split()[0])
    assert stale_pid != os.getpid()
    with DirectoryLock(tmp_path):
        assert (tmp_path / LOCK_NAME).read_text().split()[0] == str(os.getpid())
