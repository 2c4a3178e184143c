"""The seed's simulator API: Tensor views, Cache residency and capacity, Bandwidth, BinOpx."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mapsearch import sim as simulator
from mapsearch.errors import MapsearchError
from mapsearch.sim import (
    Bandwidth,
    BinOpx,
    Cache,
    CapacityError,
    LevelError,
    NotResidentError,
    ShapeError,
    Tensor,
    reset_counters,
    utilization,
)


def test_seed_example_runs_as_written() -> None:
    # The seed document's program, with only the import adapted.
    op = simulator.BinOpx([], 0, [], 0, [], 0, lambda a, b, c: None, t=1)
    L0 = simulator.Cache(32, op)
    bw = simulator.Bandwidth(L0, input_clocks_per_word=2, output_clocks_per_word=3)
    L1 = simulator.Cache(1000, bw)

    mat = L1.calloc(4, 4)  # resides in L1
    v0 = L1.load(mat[:, 0:2])  # move 8 words to L0
    L1.store(v0)  # move back up

    a = simulator.Tensor([1], 0, [])
    b = simulator.Tensor([2], 0, [])
    c = simulator.Tensor([3], 0, [])
    L0.alloc(a)
    L0.alloc(b)
    L0.alloc(c)
    for _ in range(10):
        op.run(a, b, c)

    u = simulator.utilization(L1)
    # Separate lines: max(8 words * 2, 8 words * 3) = 24 clocks; compute 10 clocks.
    assert u == Fraction(10, 24)
    assert (bw.input, bw.output, bw.time) == (8, 8, 24)
    assert (L0.level, L1.level) == (0, 1)
    # store moved v0 up: L0 keeps a, b, c; L1 the 4x4 matrix and the stored 4x2 copy.
    assert (L0.used, L1.used) == (3, 16 + 8)

    simulator.reset_counters(L1)
    assert (bw.input, bw.output, bw.time, op.time) == (0, 0, 0, 0)
    assert simulator.utilization(L1) == 0


# ---------------------------------------------------------------- Tensor
def test_tensor_views_index_like_the_seed() -> None:
    t = Tensor(list(range(12)), 0, [3, 4])
    assert t.size() == 12 and t.skips == [4, 1]
    assert t[1][2].value == 6 and t[1, 2].value == 6 and t[-1, -1].value == 11
    assert t[:, 0:2].tolist() == [[0, 1], [4, 5], [8, 9]]
    assert t[:, 0:2].sz == [3, 2] and t[:, 0:2].size() == 6
    assert t[1].sum() == 4 + 5 + 6 + 7
    assert t[0:3:2, 1].tolist() == [1, 9]
    assert t.sum() == sum(range(12))
    with pytest.raises(IndexError):
        t[3]


def test_tensor_assignment_writes_through_views() -> None:
    t = Tensor(np.zeros(6), 0, [2, 3])
    t[1][2] = 5
    t[0, 1] = 7
    col = t[:, 0:1]
    col[1, 0] = 3
    t[0][0:2] = -1
    assert t.tolist() == [[-1, -1, 0], [3, 0, 5]]
    s = t[1][2]
    s[()] = 9
    assert t[1, 2].value == 9


def test_views_share_the_allocation_key_and_name() -> None:
    t = Tensor(np.arange(4.0), 1, [2, 2], name="A")
    v = t[1]
    assert v.key == t.key and v.name == "A" and v.level == 1
    assert Tensor([0], 0, []).key != Tensor([0], 0, []).key


# ---------------------------------------------------------------- Cache
def _two_levels(l0: int | None = 32, l1: int | None = 1000, icpw=1, ocpw=None):
    op = BinOpx(None, 0, None, 0, None, 0, lambda a, b, c: None, t=1)
    L0 = Cache(l0, op)
    bw = Bandwidth(L0, icpw, ocpw)
    L1 = Cache(l1, bw)
    return op, L0, bw, L1


def test_capacity_error_names_level_tensor_and_numbers() -> None:
    _, L0, _, L1 = _two_levels(l0=10)
    L0.create([2, 3], name="A", key="A[0:2,0:3]")
    with pytest.raises(CapacityError) as err:
        L0.create([2, 3], name="B", key="B[0:2,0:3]")
    e = err.value
    assert (e.level, e.tensor, e.used, e.needed, e.capacity) == ("L0", "B[0:2,0:3]", 6, 6, 10)
    assert str(e) == "L0: no room for B[0:2,0:3]: 6 words used + 6 needed > capacity 10"
    assert isinstance(e, MapsearchError)
    assert L0.used == 6 and L0.peak == 6


def test_unbounded_cache_and_peak() -> None:
    _, _, _, L1 = _two_levels(l1=None)
    big = L1.create([100, 100])
    L1.free(big)
    assert (L1.used, L1.peak) == (0, 10000)


def test_load_and_store_count_words_and_move_residency() -> None:
    _, L0, bw, L1 = _two_levels()
    m = L1.create([4, 4], name="M")
    m[2, 1] = 5.0
    tile = L1.load(m[2:4, 0:2], key="M[2:4,0:2]")
    assert L0.holds(tile) and L0.holds("M[2:4,0:2]") and tile.level == 0
    assert tile.tolist() == [[0, 5], [0, 0]]
    assert (bw.input, bw.input_by_tensor["M"], L0.used) == (4, 4, 4)
    tile[0, 0] = 1.0
    L1.store_to(tile, m[2:4, 0:2])
    assert m[2, 0].value == 1.0 and m[2, 1].value == 5.0
    assert (bw.output, bw.output_by_tensor["M"], L0.used) == (4, 4, 0)
    assert not L0.holds(tile)


def test_moves_of_what_is_not_there_raise() -> None:
    _, L0, _, L1 = _two_levels()
    m = L1.calloc(2, 2)
    stray = Tensor(np.zeros(4), 1, [2, 2])
    with pytest.raises(NotResidentError):
        L1.load(stray)
    tile = L1.load(m)
    L0.free(tile)
    with pytest.raises(NotResidentError):
        L0.free(tile)
    with pytest.raises(NotResidentError):
        L1.store(tile)
    other = L1.load(m)
    with pytest.raises(NotResidentError):
        L1.store_to(other, stray)
    with pytest.raises(ShapeError):
        L1.store_to(other, m[0])


def test_alloc_is_idempotent_and_checks_the_level() -> None:
    _, L0, _, L1 = _two_levels()
    t = Tensor([1, 2], 0, [2])
    L0.alloc(t)
    L0.alloc(t)
    L0.alloc(t[0])
    assert L0.used == 2
    with pytest.raises(LevelError):
        L1.alloc(Tensor([1], 0, []))
    with pytest.raises(ValueError):
        L0.alloc(Tensor([1, 2], 0, [2], key=t.key))


def test_alloc_diag_and_calloc() -> None:
    _, _, _, L1 = _two_levels()
    eye = L1.alloc_diag(3)
    assert eye.tolist() == np.eye(3).tolist() and L1.used == 9
    assert L1.calloc(2, 5).sum() == 0 and L1.used == 19


def test_bypass_counts_every_link_and_allocates_only_at_the_ends() -> None:
    op = BinOpx(None, 0, None, 0, None, 0, lambda a, b, c: None)
    L0 = Cache(8, op)
    L1 = Cache(0, Bandwidth(L0))  # holds nothing: a tile can only pass through
    L2 = Cache(None, Bandwidth(L1))
    a = L2.create([4, 4], name="A")
    tile = L2.load(a[0:2, 0:2], into=L0)
    assert (L1.parent.input, L2.parent.input, L1.used, L0.used) == (4, 4, 0, 4)
    L2.store(tile)
    assert (L1.parent.output, L2.parent.output, L0.used, L2.used) == (4, 4, 0, 20)


# ---------------------------------------------------------------- Bandwidth
def test_bandwidth_line_models_with_fractions() -> None:
    _, L0, shared, L1 = _two_levels(icpw=Fraction(1, 2))
    m = L1.calloc(4, 4)
    L1.store(L1.load(m[0:2]))  # 8 down, 8 up
    assert shared.time == Fraction(8)  # (8 + 8) / 2

    _, L0, separate, L1 = _two_levels(icpw=Fraction(1, 2), ocpw=Fraction(3))
    m = L1.calloc(4, 4)
    L1.load(m[0:2])
    L1.store(L1.load(m[2:3]))  # 12 down, 4 up
    assert separate.time == 12  # max(12 / 2, 4 * 3)


# ---------------------------------------------------------------- BinOpx
def test_binopx_checks_level_shape_and_residency() -> None:
    seen = []
    op, L0, _, L1 = _two_levels()
    op.f = lambda a, b, c: seen.append((a.value, b.value))
    op.t = Fraction(3, 2)
    a, b, c = (L0.alloc(Tensor([v], 0, [])) for v in (1.0, 2.0, 0.0))
    op.run(a, b, c)
    assert seen == [(1.0, 2.0)] and op.time == Fraction(3, 2) and op.calls == 1
    with pytest.raises(NotResidentError):
        op.run(a, b, Tensor([0], 0, []))
    with pytest.raises(LevelError):
        op.run(a, b, L1.alloc(Tensor([0], 1, [])))
    shaped = BinOpx([2], 0, [], 0, [], 0, lambda a, b, c: None)
    with pytest.raises(ShapeError):
        shaped.run(a, b, c)


def test_cache_run_checks_residency_and_calls_op_with_parent() -> None:
    op, L0, _, _ = _two_levels()
    a, b, c = (L0.alloc(Tensor([v], 0, [])) for v in (2.0, 3.0, 0.0))
    L0.run(lambda node, x, y, z: node.run(x, y, z), a, b, c)
    assert op.time == 1
    with pytest.raises(NotResidentError):
        L0.run(lambda node, x: None, Tensor([0], 0, []))


def test_utilization_and_reset_over_three_levels() -> None:
    op = BinOpx(None, 0, None, 0, None, 0, lambda a, b, c: None, t=1)
    L0 = Cache(19, op)
    L1 = Cache(64, Bandwidth(L0, 1))
    L2 = Cache(None, Bandwidth(L1, 2))
    x = L2.calloc(4, 4)
    L2.load(x, into=L0)  # 16 words on both links: 16 and 32 clocks
    a, b, c = (L0.alloc(Tensor([0], 0, [])) for _ in range(3))
    for _ in range(24):
        op.run(a, b, c)
    assert utilization(L2) == Fraction(24, 32)
    reset_counters(L2)
    assert utilization(L2) == 0 and L0.peak == L0.used == 19
