"""mode="data": the output computed from the walk's tiles equals numpy's; the figures are the count's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from test_walk import SETTINGS, architecture, conv1d, conv2d, matmul, schedule, schedules

import mapsearch.sim.data as data
from mapsearch.schedule.figures import differences
from mapsearch.sim.data import (
    compute_output,
    random_inputs,
    reference_output,
    replay_data,
    visited_exactly_once,
)
from mapsearch.sim.errors import CapacityError
from mapsearch.sim.pieces import piece_tables
from mapsearch.sim.walk import count_figures
from mapsearch.spec.workload import Workload


def conv1d_by_loops(wl: Workload, inputs) -> np.ndarray:
    """O[k,p] = sum_{c,r} I[c, p*s + r*d] * W[k,c,r] with Python loops (s, d read from the index)."""
    (_, s), (_, d) = wl.tensor("I").indices[1].terms
    e = wl.extent
    out = np.zeros((e["k"], e["p"]))
    for k in range(e["k"]):
        for p in range(e["p"]):
            for c in range(e["c"]):
                for r in range(e["r"]):
                    out[k, p] += inputs["I"][c, p * s + r * d] * inputs["W"][k, c, r]
    return out


@pytest.mark.parametrize("stride,dil", [(1, 1), (2, 1), (1, 2), (3, 2)])
def test_reference_conv_matches_loops(stride, dil):
    wl = conv1d(2, 3, 5, 3, stride, dil)
    inputs = random_inputs(wl, seed=3)
    np.testing.assert_allclose(reference_output(wl, inputs), conv1d_by_loops(wl, inputs), rtol=1e-12)


def test_reference_conv2d_matches_sliding_window_view():
    wl = conv2d(4, 3, 2, 3, 1, 1)
    inputs = random_inputs(wl, seed=1)
    windows = np.lib.stride_tricks.sliding_window_view(inputs["I"], (2, 3))  # [p, q, r, s]
    np.testing.assert_allclose(reference_output(wl, inputs), np.einsum("pqrs,rs->pq", windows, inputs["W"]), rtol=1e-12)


@pytest.mark.parametrize("method", ["auto", "grid", "tiles"])
def test_matmul_with_remainders_three_levels(method):
    wl = matmul(7, 5, 6)
    s = schedule(wl, architecture(3), [{"m": 5, "n": 4, "k": 6}, {"m": 2, "n": 3, "k": 4}], [("k", "m", "n"), ("n", "k", "m")], [{"A"}, {"A", "B", "Z"}])
    r = replay_data(s, seed=7, method=method)
    assert r.data_ok and r.max_abs_error < 1e-12
    assert differences(count_figures(s), r.figures) == []


@SETTINGS
@given(schedules())
def test_data_mode_equals_numpy(s):
    try:
        want = count_figures(s)
    except CapacityError:
        return
    for method in ("auto", "tiles"):
        r = replay_data(s, seed=11, method=method)
        assert r.data_ok, (method, r.max_abs_error)
        assert differences(want, r.figures) == []


def test_a_missing_tile_is_caught():
    """The grid check refuses a walk that skips a tile; the tile path then gets a wrong output."""
    wl = matmul(4, 4, 4)
    s = schedule(wl, architecture(2), [{"m": 2, "n": 2, "k": 2}], [("m", "n", "k")], [{"A", "B", "Z"}])
    tables = piece_tables(s)
    assert visited_exactly_once(s, tables)
    real = data.tile_chunks

    def skip_last(*args, **kwargs):
        for pid in real(*args, **kwargs):
            yield pid[:, :-1] if pid.shape[1] > 1 else pid

    data.tile_chunks = skip_last
    try:
        assert not visited_exactly_once(s, tables)
        inputs = random_inputs(wl, 0)
        got = compute_output(s, inputs, "auto", tables)
        assert np.max(np.abs(got - reference_output(wl, inputs))) > 1e-6
    finally:
        data.tile_chunks = real


def test_data_mode_through_replay():
    replay = pytest.importorskip("mapsearch.sim.replay").replay
    wl = conv1d(2, 2, 4, 3, 2, 1)
    s = schedule(wl, architecture(2), [{"k": 1, "c": 2, "p": 3, "r": 2}], [("p", "k", "r", "c")], [{"I", "W", "O"}])
    r = replay(s, mode="data", seed=5)
    assert r.data_ok and differences(replay(s, mode="count").figures, r.figures) == []
