"""TeAAL specifications (the Tensaurus notebook's kernels) parsed into chains, constraints and hints."""

from __future__ import annotations

from pathlib import Path

import pytest

from mapsearch.errors import SpecError
from mapsearch.spec.constraints import TileLimit, check_constraints
from mapsearch.spec.architecture import Architecture, Level, Link
from mapsearch.spec.teaal import TeaalSyntaxError, load_teaal, parse_expression, teaal_from_dict

DIR = Path(__file__).resolve().parents[2] / "examples/chains/teaal"


@pytest.mark.parametrize(
    "name, einsums, extents",
    [
        ("mttkrp", ["T[i,j,f] += A[i,j,k] * C[k,f]", "Y[i,f] += T[i,j,f] * B[j,f]"], {"i": 4, "j": 2, "k": 2, "f": 2}),
        ("ttmc", ["T[i,j,u] += A[i,j,k] * C[k,u]", "Y[i,v,u] += T[i,j,u] * B[j,v]"], {"i": 4, "j": 2, "k": 2, "u": 2, "v": 2}),
        ("gemm", ["Y[i,k] += A[i,j] * B[j,k]"], {"i": 4, "j": 4, "k": 4}),
        ("gemv", ["Y[i] += A[i,j] * B[j]"], {"i": 4, "j": 4}),
    ],
)
def test_notebook_kernels(name, einsums, extents):
    spec = load_teaal(DIR / f"{name}.yaml")
    assert [e.text() for e in spec.graph.einsums] == einsums
    assert spec.graph.extent == extents
    assert spec.graph.intermediates == (("T",) if len(einsums) == 2 else ())


def test_mttkrp_mapping():
    spec = load_teaal(DIR / "mttkrp.yaml", extents={"I": 64, "J": 64, "K": 64, "F": 64})
    assert spec.graph.extent == {"i": 64, "j": 64, "f": 64, "k": 64}
    assert spec.partitions["T"] == {"i": (8,), "j": (8,), "k": (8,), "f": (32, 4)}
    assert spec.loop_order["Y"] == (("i", 1), ("i", 0), ("f", 2), ("j", 1), ("j", 0), ("f", 1), ("f", 0))
    assert spec.spatial_hints("T") == ("i", "f")
    assert spec.space["Y"] == ("I1", "F1", "F0")
    assert any("interleaves levels" in n for n in spec.notes)
    arch = Architecture("a", (Level("DRAM", None), Level("L2", 10**6, Link()), Level("L1", 10**5, Link()), Level("L0", 10**4, Link())))
    ct, cy = spec.constraints(arch)
    assert TileLimit("L2", "f", 32, 32) in ct.tiles and TileLimit("L1", "f", 4, 4) in ct.tiles
    assert TileLimit("L2", "i", 8, 8) in ct.tiles
    # Level of loop R_k (rank split n times): n - k + 1; R_0 and unsplit ranks: the innermost level.
    assert dict(ct.orders) == {"L2": ("i", "f", "j", "k"), "L1": ("f",), "L0": ("i", "j", "k", "f")}
    check_constraints(ct, spec.graph.stage(0), arch)
    check_constraints(cy, spec.graph.stage(1), arch)
    small = Architecture("s", (Level("DRAM", None), Level("L0", 10, Link())))
    with pytest.raises(SpecError, match="2 partitions need 3 levels"):
        spec.constraints(small)


def test_small_extent_clips_the_tile():
    spec = load_teaal(DIR / "gemv.yaml")  # I = 4 < uniform_shape(8)
    arch = Architecture("a", (Level("DRAM", None), Level("L0", 10, Link())))
    (c,) = spec.constraints(arch)
    assert c.tiles == (TileLimit("L0", "i", 4, 4),)


def test_expression_grammar():
    assert parse_expression("Z[m,n] = A[k,m] * B[k,n]") == (("Z", ("m", "n")), (("A", ("k", "m")), ("B", ("k", "n"))))
    assert parse_expression("Y[] = A[i]") == (("Y", ()), (("A", ("i",)),))
    for bad, msg in [
        ("Z[m] = A[m] + B[m]", "only products"),
        ("Z[M] = A[M]", "must be lowercase"),
        ("Z[m] = A[m+1]", "index expressions are not supported"),
        ("Z[m] A[m]", "expected '='"),
        ("Z[m] = __import__('os')", "unexpected character"),
        ("Z[m] = f(A[m])", r"expected '\['"),
    ]:
        with pytest.raises(TeaalSyntaxError, match=msg):
            parse_expression(bad)


def base(**mapping):
    return {
        "einsum": {"declaration": {"A": ["K", "M"], "B": ["K", "N"], "Z": ["M", "N"]}, "expressions": ["Z[m,n] = A[k,m] * B[k,n]"]},
        "mapping": mapping,
        "shape": {"K": 2, "M": 3, "N": 4},
    }


@pytest.mark.parametrize(
    "data, extents, message",
    [
        (base(), None, None),
        ({**base(), "shape": {"K": 2, "M": 3}}, None,
         r"^t\.yaml: shape: expected an extent for every rank .*'shape: \{N: N\}' or pass --extent N=N\), got none for N$"),
        ({k: v for k, v in base().items() if k != "shape"}, None,
         r"^t\.yaml: shape: expected an extent for every rank \(TeAAL takes them from the data; add 'shape: \{K: N, M: N, N: N\}'"
         r" or pass --extent K=N --extent M=N --extent N=N\), got none for K, M, N$"),
        ({k: v for k, v in base().items() if k != "shape"}, {"K": 2, "M": 3, "N": 4}, None),
        ({k: v for k, v in base().items() if k != "shape"}, {"k": 2, "m": 3, "n": 4}, None),  # lower case too
        ({**base(), "shape": {"K": 2, "M": 3}}, {"N": 4}, None),  # the argument fills what shape lacks
        ({**base(), "einsum": {"declaration": {"A": ["K", "M"], "Z": ["M", "N"]}, "expressions": ["Z[m,n] = A[k,m] * B[k,n]"]}},
         None, r"einsum\.expressions\[0\]: tensor B is not declared"),
        ({**base(), "einsum": {"declaration": {"A": ["K", "M"], "B": ["K", "N"], "Z": ["M", "N"]}, "expressions": ["Z[m,n] = A[m,k] * B[k,n]"]}},
         None, r"A\[m, k\] must index the declared ranks \['K', 'M'\] as \[k, m\]"),
        (base(partitioning={"Z": {"M": ["uniform_shape(2)", "uniform_shape(4)"]}}), None, r"uniform_shape\(4\) must not exceed"),
        (base(partitioning={"Q": {"M": ["uniform_shape(2)"]}}), None, r"mapping\.partitioning\.Q: unknown einsum"),
        (base(**{"loop-order": {"Z": ["M1", "K", "N"]}}), None, r"rank M is partitioned 0 times"),
        # Every loop once: a repeated or missing loop silently dropped its dimension from the level's order.
        (base(**{"loop-order": {"Z": ["K", "M", "N"]}}), None, None),
        (base(**{"loop-order": {"Z": ["M", "M", "N"]}}), None,
         r"^t\.yaml: mapping\.loop-order\.Z: expected every loop of the einsum once \(M, N, K\), got \['M', 'M', 'N'\]: "
         r"M repeated; K missing$"),
        (base(**{"loop-order": {"Z": ["M", "N"]}}), None, r"mapping\.loop-order\.Z: .*got \['M', 'N'\]: K missing$"),
        (base(partitioning={"Z": {"M": ["uniform_shape(2)"]}}, **{"loop-order": {"Z": ["M1", "K", "N", "M1"]}}), None,
         r"loop-order\.Z: expected every loop of the einsum once \(M1, M0, N, K\), .*: M1 repeated; M0 missing$"),
        (base(spacetime={"Z": {"space": ["M"], "time": ["M", "N", "K"]}}), None,
         r"mapping\.spacetime\.Z \(space and time\): .*: M repeated$"),
        (base(spacetime={"Z": {"space": ["M"], "time": ["N", "K"]}}), None, None),
        (base(spacetime={"Z": {"space": ["M"], "time": ["N"]}}), None, r"spacetime\.Z \(space and time\): .*: K missing$"),
        (base(spacetime={"Z": {"space": ["M"]}}), None, None),  # space alone: the time loops are the solver's
        (base(**{"rank-order": {"A": ["M", "N"]}}), None, r"mapping\.rank-order\.A: expected a permutation"),
        (base(other=1), None, r"mapping\.other: unknown field"),
    ],
)
def test_teaal_errors(data, extents, message):
    if message is None:
        spec = teaal_from_dict(data, "t.yaml", extents)
        assert spec.graph.einsums[0].text() == "Z[m,n] += A[k,m] * B[k,n]"
        return
    with pytest.raises(SpecError, match=message) as info:
        teaal_from_dict(data, "t.yaml", extents)
    assert "\n" not in str(info.value)


def test_other_partitioning_operators_are_noted():
    spec = teaal_from_dict(base(partitioning={"Z": {"M": ["uniform_occupancy(A.4)"]}}), "t.yaml")
    assert spec.partitions == {} and "uniform_occupancy" in spec.notes[0]
