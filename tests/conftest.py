"""Shared test setup: the tests folder is importable, so helpers (brute forces, builders) live in one place."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
