"""Fused chains with convolution stages (docs/fusion.md, docs/solver.md "Split filter windows").

- Pruning a shared dimension's chains keeps every outer tiling (the stages' outer nests are tied).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mapsearch.model.chains as chains_module  # noqa: E402
from mapsearch.model.chains import enumerate_chains  # noqa: E402


# --------------------------------------------------------------------------- tied outer tiles


def _classes(ch, tied: int) -> set:
    """What a pruning compares for equality, with the outer tiles: every class must keep a chain."""
    return {(tuple(ch.tiles[i, :tied]), tuple(ch.counts[i]), tuple(ch.sums[(1, 0)][i]), int(ch.calls[i]))
            for i in range(len(ch))}


@pytest.mark.parametrize("extent, depth", [(5, 2), (7, 2), (9, 3)])
def test_tied_chains_are_pruned_only_among_equal_outer_tiles(monkeypatch, extent: int, depth: int) -> None:
    """Untied, (3, 3) drops (4, 4) on extent 5 (equal counts and sums, smaller tiles); tied at level 1,
    every outer tile keeps each of its classes of counts and sums."""
    with monkeypatch.context() as m:
        m.setattr(chains_module, "_survivors", lambda q: np.arange(q["tiles"].shape[0]))
        raw = enumerate_chains(extent, depth, ((1, 0),))
    untied = enumerate_chains(extent, depth, ((1, 0),))
    assert _classes(untied, 1) < _classes(raw, 1)  # pruning one stage alone loses outer tilings
    for tied in range(1, depth + 1):
        kept = enumerate_chains(extent, depth, ((1, 0),), tied=tied)
        assert kept.tied == tied
        assert _classes(kept, tied) == _classes(raw, tied)
        assert len(untied) < len(kept) <= len(raw)
