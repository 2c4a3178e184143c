"""TeAAL partitioning operators (uniform_shape, uniform_occupancy, uniform_slice) from the YAML into the sparse replay."""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from mapsearch.errors import SpecError
from mapsearch.model.problem import Problem
from mapsearch.presets import load_preset
from mapsearch.spec.constraints import TileLimit
from mapsearch.model.options import SolveOptions
from mapsearch.solve.run import solve
from mapsearch.sparse import Dense, SparseTensor, Uniform, ciss, replay_sparse, uniform_occupancy, uniform_shape, uniform_slice
from mapsearch.sparse.density import power_law
from mapsearch.sparse.teaal_partition import TeaalPartitionError, teaal_partition
from mapsearch.spec.reading import read_yaml
from mapsearch.spec.teaal import PartitionOp, teaal_from_dict

YAML = Path(__file__).resolve().parents[2] / "examples/sparse/spmttkrp_slice.yaml"
SKEW_EXT = {"I": 256, "J": 32, "K": 32, "F": 16}


def mttkrp(op_t: str, op_y: str, ext: dict) -> object:
    """The example's SpMTTKRP spec with rank I of T's and Y's einsums partitioned by ``op_t`` / ``op_y``."""
    doc = copy.deepcopy(read_yaml(YAML))
    doc["mapping"]["partitioning"]["T"]["I"] = [op_t]
    doc["mapping"]["partitioning"]["Y"]["I"] = [op_y]
    return teaal_from_dict(doc, "spmttkrp.yaml", ext)


@lru_cache(maxsize=None)
def schedule_of(spec_key: tuple, index: int):
    spec = mttkrp(*spec_key[:2], dict(spec_key[2]))
    arch = load_preset("edge-3level")
    return solve(Problem(spec.graph.stage(index), arch, ()), spec.constraints(arch)[index], SolveOptions(time_limit=20)).schedule


def test_yaml_keeps_the_operators_and_the_dense_side_leaves_their_tile_free():
    spec = teaal_from_dict(read_yaml(YAML), "spmttkrp_slice.yaml", {"I": 64, "J": 32, "K": 32, "F": 32})
    assert spec.partition_ops["T"]["i"] == (PartitionOp("uniform_slice", 8, None),)
    assert spec.partition_ops["T"]["f"] == (PartitionOp("uniform_shape", 32), PartitionOp("uniform_shape", 4))
    assert "i" not in spec.partitions["T"] and spec.partitions["T"]["f"] == (32, 4)
    assert any("uniform_slice(8) depends on the data" in n for n in spec.notes)
    ct, cy = spec.constraints(load_preset("edge-3level"))
    assert not [t for t in ct.tiles if t.dim == "i"] and TileLimit("GLB", "f", 32, 32) in ct.tiles
    assert dict(ct.orders)["GLB"][0] == "i"  # loop I1 (made by uniform_slice) still runs at the level below DRAM
    occ = teaal_from_dict({**read_yaml(YAML), "mapping": {"partitioning": {"T": {"I": ["uniform_occupancy(A.16)"]}}}}, "t.yaml")
    assert occ.partition_ops["T"]["i"] == (PartitionOp("uniform_occupancy", 16, "A"),) and occ.partitions == {}


@pytest.mark.parametrize("op_t, op_y, hand", [
    ("uniform_slice(8)", "uniform_slice(T.8)", lambda t, ax: uniform_slice(t, 8, ax)),
    ("uniform_occupancy(A.4)", "uniform_occupancy(T.4)", lambda t, ax: uniform_occupancy(t, 4, ax)),
    ("uniform_shape(8)", "uniform_shape(8)", lambda t, ax: uniform_shape(t, 8, ax)),
])
def test_partition_from_yaml_equals_the_hand_built_one(op_t, op_y, hand):
    spec = mttkrp(op_t, op_y, {"I": 64, "J": 8, "K": 8, "F": 16})
    A = Uniform((0.6, 0.5, 0.7)).sample((64, 8, 8), seed=3, name="A")
    T = Uniform((0.7, 0.6, 1.0)).sample((64, 8, 16), seed=4, name="T")
    # T's einsum: space [I1, F1, F0]; F is not a rank of A, so the instances are I1's parts of A.
    p = teaal_partition(spec, "T", {"A": A}, {"A": ciss(3)})
    h = hand(A, 0)
    assert p.tensor == "A" and p.parts == h.parts
    assert np.array_equal(p.part_of, h.part_of) and np.array_equal(p.loads, h.loads)
    # Y's einsum: F is a rank of T, so instance = (I1 part, F1 = (f mod 32) // 4, F0 = f mod 4), row-major.
    q = teaal_partition(spec, "Y", {"T": T})
    f = T.coords[2]
    want = (hand(T, 0).part_of * 4 + f // 4) * 4 + f % 4
    assert q.tensor == "T" and q.parts == hand(T, 0).parts * 16 and np.array_equal(q.part_of, want)


# A 7 x 8 matrix whose rows hold 5, 1, 0, 3, 4, 2, 6 nonzeros (row 2 empty): six non-empty slices.
ROWS = [5, 1, 0, 3, 4, 2, 6]


def tiny() -> SparseTensor:
    d = np.zeros((7, 8))
    for i, c in enumerate(ROWS):
        d[i, 8 - c:] = i + 1
    return SparseTensor.from_dense(d, "A")


SPMV = {"einsum": {"declaration": {"A": ["I", "J"], "B": ["J"], "Y": ["I"]}, "expressions": ["Y[i] = A[i, j] * B[j]"]},
        "shape": {"I": 7, "J": 8}}


def spmv(rank: str, op: str, space: str):
    mapping = {"partitioning": {"Y": {rank: [op]}}, "spacetime": {"Y": {"space": [space]}}}
    return teaal_from_dict({**SPMV, "mapping": mapping}, "spmv.yaml")


@pytest.mark.parametrize("rank, op, space, loads", [
    # Greedy least-loaded over the non-empty rows in order (ties to part 0):
    # 5 -> p0 [5,0]; 1 -> p1 [5,1]; 3 -> p1 [5,4]; 4 -> p1 [5,8]; 2 -> p0 [7,8]; 6 -> p0 [13,8].
    ("I", "uniform_slice(2)", "I1", [13, 8]),
    # Two non-empty rows per part: {0,1} 6, {3,4} 7, {5,6} 8 (the empty row 2 is skipped).
    ("I", "uniform_occupancy(A.2)", "I1", [6, 7, 8]),
    # Rows 0-3 and 4-6 by coordinate: 5+1+0+3, 4+2+6.
    ("I", "uniform_shape(4)", "I1", [9, 12]),
    # Each row's nonzeros in chunks of 2 (chunk p of every row to part p): 5 -> 2,2,1; 1 -> 1; 3 -> 2,1; 4 -> 2,2; 2 -> 2; 6 -> 2,2,2.
    ("J", "uniform_occupancy(A.2)", "J1", [11, 7, 3]),
])
def test_hand_counted_tiny_case(rank, op, space, loads):
    spec = spmv(rank, op, space)
    A = tiny()
    p = teaal_partition(spec, "Y", {"A": A})
    assert p.loads.tolist() == loads
    arch = load_preset("edge-3level")
    s = solve(Problem(spec.graph.stage(0), arch, ()), spec.constraints(arch)[0], SolveOptions(time_limit=20)).schedule
    r = replay_sparse(s, {"A": A, "B": Dense().sample((8,), 0, "B")}, {"A": ciss(2)}, partition=p)
    assert r.data_ok and r.part_work.tolist() == loads  # one product per nonzero (B dense)
    assert r.utilization == pytest.approx(21 / len(loads) / max(loads))
    assert r.compute_time == max(loads) * arch.compute.clocks_per_call


def test_skewed_tensor_uniform_slice_beats_uniform_shape():
    """Power-law slices over 16 instances, partitions from the YAML: uniform_slice balances, uniform_shape does not."""
    A = power_law((256, 32, 32), 40000, alpha=1.1, seed=5, name="A")
    C = Dense().sample((32, 16), 1, "C")
    res = {}
    for op in ("uniform_shape(16)", "uniform_occupancy(A.16)", "uniform_slice(16)"):
        key = (op, op.replace("A.", "T."), tuple(SKEW_EXT.items()))
        spec = mttkrp(key[0], key[1], SKEW_EXT)
        p = teaal_partition(spec, "T", {"A": A})
        r = replay_sparse(schedule_of(key, 0), {"A": A, "C": C}, {"A": ciss(3)}, partition=p, data=False)
        assert p.parts == 16 and r.part_work.sum() == r.effectual_ops
        res[op] = round(r.utilization, 3)
    print("utilization over 16 instances (from the YAML):", res)
    assert res == {"uniform_shape(16)": 0.139, "uniform_occupancy(A.16)": 0.139, "uniform_slice(16)": 0.993}
    # Occupancy of rank I counts non-empty slices, not nonzeros: all 256 are non-empty, so 16 per part = uniform_shape(16).


@pytest.mark.parametrize("ops, message", [
    (["uniform_occupancy(16)"], r"M\[0\]: uniform_occupancy\(16\): expected uniform_occupancy\(LEADER\.N\)"),
    (["uniform_slice(0)"], r"M\[0\]: expected uniform_shape\(N\), uniform_occupancy\(LEADER\.N\).* with N >= 1, got 'uniform_slice\(0\)'"),
    (["uniform_slice(A)"], r"M\[0\]: expected .*got 'uniform_slice\(A\)'"),
    (["uniform_occupancy(Q.4)"], r"M\[0\]: uniform_occupancy\(Q\.4\): leader Q is not an input of Z's einsum; expected one of A, B"),
    (["uniform_occupancy(B.4)"], r"M\[0\]: uniform_occupancy\(B\.4\): leader B has no rank M"),
    (["uniform_shape(A.4)"], r"M\[0\]: uniform_shape\(A\.4\): uniform_shape\(N\) takes no leader"),
    (["uniform_shap(4)"], r"M\[0\]: unknown operator uniform_shap"),
    (["uniform_shape(2)", "uniform_slice(2)"], r"M\[1\]: uniform_slice\(2\) must be the first operator of rank M"),
    ([8], r"M\[0\]: expected .*got 8"),
])
def test_bad_operators_give_one_line_errors_naming_the_field(ops, message):
    doc = {"einsum": {"declaration": {"A": ["K", "M"], "B": ["K", "N"], "Z": ["M", "N"]}, "expressions": ["Z[m,n] = A[k,m] * B[k,n]"]},
           "mapping": {"partitioning": {"Z": {"M": ops}}}, "shape": {"K": 2, "M": 3, "N": 4}}
    with pytest.raises(SpecError, match=r"^t\.yaml: mapping\.partitioning\.Z\." + message) as info:
        teaal_from_dict(doc, "t.yaml")
    assert "\n" not in str(info.value)


def test_other_teaal_operators_are_noted_not_errors():
    doc = {"einsum": {"declaration": {"A": ["K", "M"], "B": ["K", "N"], "Z": ["M", "N"]}, "expressions": ["Z[m,n] = A[k,m] * B[k,n]"]},
           "mapping": {"partitioning": {"Z": {"M": ["nway_shape(2)"]}}}, "shape": {"K": 2, "M": 3, "N": 4}}
    spec = teaal_from_dict(doc, "t.yaml")
    assert spec.partition_ops == {} and "nway_shape(2) is not one of" in spec.notes[0]


def test_without_spacetime_the_data_dependent_split_is_spatial():
    bare = teaal_from_dict({**SPMV, "mapping": {"partitioning": {"Y": {"I": ["uniform_slice(2)"]}}}}, "t.yaml")
    assert teaal_partition(bare, "Y", {"A": tiny()}).loads.tolist() == [13, 8]
    shape_only = teaal_from_dict({**SPMV, "mapping": {"partitioning": {"Y": {"I": ["uniform_shape(4)"]}}}}, "t.yaml")
    with pytest.raises(TeaalPartitionError, match=r"nothing spatial: give mapping\.spacetime\.Y\.space"):
        teaal_partition(shape_only, "Y", {"A": tiny()})


def test_unsupported_combinations_say_what_is_supported():
    A = tiny()
    # A loop below a data-dependent split is not an instance the replay can place.
    with pytest.raises(TeaalPartitionError, match=r"only I1 can be spatial; supported: "):
        teaal_partition(spmv("I", "uniform_slice(2)", "I0"), "Y", {"A": A})
    # A space loop over no rank of the driver.
    doc = {"einsum": {"declaration": {"A": ["I", "J"], "B": ["J", "K"], "Y": ["I", "K"]}, "expressions": ["Y[i, k] = A[i, j] * B[j, k]"]},
           "mapping": {"partitioning": {"Y": {"K": ["uniform_shape(2)"]}}, "spacetime": {"Y": {"space": ["K1"]}}},
           "shape": {"I": 7, "J": 8, "K": 4}}
    with pytest.raises(TeaalPartitionError, match=r"no space loop over a rank of A \(I, J\); supported: "):
        teaal_partition(teaal_from_dict(doc, "t.yaml"), "Y", {"A": A})
    # The leader is not the replay's driver.
    with pytest.raises(TeaalPartitionError, match="led by A, not the driver B"):
        teaal_partition(spmv("J", "uniform_occupancy(A.2)", "J1"), "Y", {"A": A}, driver="B")
    # Occupancy counts fiber elements: the fibers must be the replay's (declared axis order).
    swapped = teaal_from_dict({**SPMV, "mapping": {"rank-order": {"A": ["J", "I"]},
                                                   "partitioning": {"Y": {"I": ["uniform_occupancy(A.2)"]}}}}, "t.yaml")
    with pytest.raises(TeaalPartitionError, match=r"rank-order \['J', 'I'\]; the sparse replay keeps tensors in declared"):
        teaal_partition(swapped, "Y", {"A": A})
    with pytest.raises(TeaalPartitionError, match="no einsum writes Q"):
        teaal_partition(spmv("I", "uniform_slice(2)", "I1"), "Q", {"A": A})


def test_replay_refuses_a_partition_of_another_tensor():
    spec = spmv("I", "uniform_slice(2)", "I1")
    arch = load_preset("edge-3level")
    s = solve(Problem(spec.graph.stage(0), arch, ()), spec.constraints(arch)[0], SolveOptions(time_limit=20)).schedule
    A = tiny()
    B = SparseTensor.from_dense(np.arange(1.0, 9.0), "B")
    p = teaal_partition(spec, "Y", {"A": A})
    with pytest.raises(ValueError, match="splits A's nonzeros but the replay's driver is B"):
        replay_sparse(s, {"A": A, "B": B}, {"B": ciss(1)}, partition=p)


def _occupancy_reference(t: SparseTensor, n: int, axis: int) -> list[int]:
    """Per nonzero: (position of c_axis among the non-empty ones of its fiber) // n, in pure Python."""
    seen: dict[tuple, list[int]] = {}
    out = []
    for c in t.coords.T.tolist():
        elems = seen.setdefault(tuple(c[:axis]), [])
        if not elems or elems[-1] != c[axis]:
            elems.append(c[axis])
        out.append((len(elems) - 1) // n)
    return out


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_occupancy_of_one_rank_per_fiber(axis):
    t = Uniform((0.7, 0.5, 0.4)).sample((9, 10, 11), seed=axis)
    assert uniform_occupancy(t, 3, axis).part_of.tolist() == _occupancy_reference(t, 3, axis)
