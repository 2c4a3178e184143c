"""docs/tutorial.md runs: its Python blocks, in order, in one namespace, in an empty directory."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

TUTORIAL = Path(__file__).resolve().parents[1] / "docs" / "tutorial.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_the_tutorial_runs_top_to_bottom(tmp_path, monkeypatch):
    blocks = python_blocks(TUTORIAL.read_text(encoding="utf-8"))
    assert len(blocks) == 6  # solve, read, replay, sweep and plot, characterize, a peer's architecture
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "tutorial"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{TUTORIAL.name} block {i + 1}", "exec"), namespace)  # noqa: S102 - our own docs
    assert (tmp_path / "matmul.schedule.json").exists() and (tmp_path / "glb-size.png").exists()
    assert namespace["result"].status == "OPTIMAL" and namespace["net"].totals
    # The AccelForge file's energies (J per action) on the 16 KiB buffer: the energy optimum and its figures.
    assert namespace["problem"].formats == (None, "accelforge") and namespace["problem"].clock_hz == 10**9
    assert (namespace["peer"].words, namespace["peer"].objective_value) == (1611776, Fraction(4233216, 10**12))
