"""Fixtures of the sweep tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep_helpers import grid_sweep_file


@pytest.fixture
def grid_sweep(tmp_path: Path) -> Path:
    return grid_sweep_file(tmp_path)
