"""Shared test setup: the tests folder is importable, so helpers (brute forces, builders) live in one place."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


import pytest  # noqa: E402


@pytest.fixture
def meshed_family_only(monkeypatch):
    """Solve meshed paths over the spatial family alone: the schedules that split nothing over a mesh, which
    ``solve`` searches beside it at every buffer position (mapsearch/solve/unsplit.py), left out. For tests
    that check that family against its own brute force; the union is checked in tests/solve/test_unsplit.py
    and test_spatial_placement.py."""
    from mapsearch.solve import unsplit

    monkeypatch.setattr(unsplit, "applies", lambda *_: False)
