"""Chain workloads from YAML: ordering, validation errors (one line naming file and field), load_workload_any."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mapsearch.errors import SpecError
from mapsearch.spec.graph_load import graph_and_homes_from_dict, graph_from_dict, graph_to_dict, load_graph
from mapsearch.spec.workload_files import load_workload_any
from mapsearch.spec.workload import Workload, WorkloadGraph

ROOT = Path(__file__).resolve().parents[2]


def doc(einsums, extents=None, **extra):
    d = {"name": "c", "einsums": einsums, "extents": extents or {"m": 4, "n": 2, "k": 3, "p": 2}}
    d.update(extra)
    return d


MM3 = ["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n] * C[n,p]"]


def test_native_chain_and_round_trip():
    g, homes = graph_and_homes_from_dict(doc(MM3, homes={"A": "DRAM"}), "c.yaml")
    assert [e.text() for e in g.einsums] == MM3
    assert g.intermediates == ("T",) and g.shared_dims == ("m", "n")
    assert homes == {"A": "DRAM"}
    assert graph_from_dict(graph_to_dict(g), "again") == g


def test_reordered_topologically():
    g = graph_from_dict(doc(list(reversed(MM3))), "c.yaml")
    assert [e.text() for e in g.einsums] == MM3
    g3 = load_graph(ROOT / "examples/chains/mlp3.yaml")
    assert [e.output.name for e in g3.einsums] == ["H1", "H2", "Y"]


@pytest.mark.parametrize(
    "data, message",
    [
        (doc(["T[m,n] += A[m,k] * Y[k,n]", "Y[m,n] += T[m,k] * C[k,n]"], {"m": 2, "n": 2, "k": 2}),
         r"^c\.yaml: einsums: the einsums form a cycle .* through tensors"),
        (doc(["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n,k] * C[n,p]"]),
         r"^c\.yaml: einsums\[1\]: tensor T has 3 axes here but 2 in einsums\[0\]$"),
        (doc(["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[n,m] * C[n,p]"]),
         r"^c\.yaml: einsums\[1\]: tensor T has shape \[2, 4\] here but \[4, 2\] in einsums\[0\]$"),
        (doc(MM3, {"m": 4, "n": 2, "k": 3}), r"^c\.yaml: extents\.p: missing; einsums\[1\] uses dimension 'p'"),
        (doc(MM3, {"m": 4, "n": 2, "k": 3, "p": 0}), r"^c\.yaml: extents\.p: expected int >= 1, got 0$"),
        (doc(MM3, {"m": 4, "n": 2, "k": 3, "p": 2, "z": 1}), r"^c\.yaml: extents\.z: unknown dimension"),
        (doc(["T[m,n] += A[m,k] * B[k,n]", "T[m,n] += A[m,k] * B[k,n]"], {"m": 1, "n": 1, "k": 1}), r"einsums\[1\]: tensor T is written again"),
        (doc(["T[m,n] += A[m,k] ** B[k,n]"]), r"^c\.yaml: einsums\[0\]: .*\(in 'T\[m,n\] \+= A\[m,k\] \*\* B\[k,n\]'\)$"),
        (doc(MM3, homes={"Q": "DRAM"}), r"^c\.yaml: homes\.Q: unknown tensor"),
        (doc(MM3, bogus=1), r"^c\.yaml: bogus: unknown field"),
        ({"name": "c", "einsums": []}, r"^c\.yaml: extents: missing"),
        (doc([]), r"^c\.yaml: einsums: expected a non-empty list"),
    ],
)
def test_errors_are_one_line(data, message):
    with pytest.raises(SpecError, match=message) as info:
        graph_from_dict(data, "c.yaml")
    assert "\n" not in str(info.value)


def test_load_workload_any(tmp_path):
    single = load_workload_any(ROOT / "examples/matmul-4x4x4.yaml")
    assert isinstance(single, Workload)
    chain = load_workload_any(ROOT / "examples/chains/attention.yaml")
    assert isinstance(chain, WorkloadGraph) and chain.intermediates == ("S",)
    teaal = load_workload_any(ROOT / "examples/chains/teaal/mttkrp.yaml")
    assert isinstance(teaal, WorkloadGraph) and teaal.intermediates == ("T",)
    p = tmp_path / "x.yaml"
    p.write_text(yaml.safe_dump({"name": "x"}))
    with pytest.raises(SpecError, match=r"x\.yaml: expected a workload"):
        load_workload_any(p)
