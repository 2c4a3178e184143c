"""Hostile peer files: the native caps (mapsearch/spec/limits.py) and strict reading, one line each.

Every bad file is one :class:`SpecError` line naming the file and the field, raised while reading, so the CLI
prints no note before it (notes are printed only once the problem has been read).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from mapsearch.errors import SpecError
from mapsearch.spec.foreign import load_foreign_arch, load_foreign_workload

from foreign_helpers import PEERS

TL_PROBLEM = PEERS / "timeloop" / "cnn_layer_small.prob.yaml"
TL_ARCH = PEERS / "timeloop" / "simple_output_stationary.arch.yaml"
ZZ_LAYER = PEERS / "zigzag" / "layers" / "gemm_4x4x2.yaml"
ZZ_ARCH = PEERS / "zigzag" / "tpu_like.yaml"
AF_WORKLOAD = PEERS / "accelforge" / "workloads" / "matmuls.yaml"
AF_ARCH = PEERS / "accelforge" / "arches" / "simple.yaml"


def mutated(tmp_path, original, old, new, name=None):
    text = original.read_text()
    assert old in text, old
    path = tmp_path / (name or original.name)
    path.write_text(text.replace(old, new, 1))
    return path


def arch_error(tmp_path, original, old, new, workload) -> tuple[str, str]:
    path = mutated(tmp_path, original, old, new)
    with pytest.raises(SpecError) as e:
        load_foreign_arch(path, workload)
    return str(path), str(e.value)


def arch_refused(tmp_path, original, workload_file, old, new, field, expected) -> None:
    """The architecture ``original`` with ``old`` replaced by ``new`` is refused in one line naming ``field``."""
    path, message = arch_error(tmp_path, original, old, new, load_foreign_workload(workload_file))
    one_line(message, path, field)
    assert expected in message


def one_line(message: str, path, field: str) -> None:
    assert "\n" not in message
    assert message.startswith(f"{path}: {field}: "), message


# --- Timeloop problem ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("old, new, field, expected", [
    ("C: 2", "C: 100000000000000000000", "problem.instance.C", "expected an extent <= 16,777,216"),
    ("C: 2", "C: 16777217", "problem.instance.C", "expected an extent <= 16,777,216"),
    ("[ C, M, R,", "[ C, C, M, R,", "problem.shape.dimensions", "expected each dimension named once (C is repeated)"),
    ("version: 0.4", "version: 0.3", "problem.version", "expected 0.4"),
])
def test_timeloop_problem_refusals(tmp_path, old, new, field, expected):
    workload_refused(tmp_path, TL_PROBLEM, old, new, field, expected)


def workload_refused(tmp_path, base, old, new, field, expected):
    """The workload file ``base`` with ``old`` replaced by ``new`` is refused in one line naming ``field``."""
    path = mutated(tmp_path, base, old, new)
    with pytest.raises(SpecError) as e:
        load_foreign_workload(path)
    one_line(str(e.value), path, field)
    assert expected in str(e.value)


def test_timeloop_problem_at_the_extent_cap_and_without_version_is_read(tmp_path):
    path = mutated(tmp_path, TL_PROBLEM, "C: 2", "C: 16777216")
    assert dict(load_foreign_workload(path).workload.extents)["C"] == 2**24
    path = mutated(tmp_path, TL_PROBLEM, "  version: 0.4\n", "", name="noversion.yaml")
    assert load_foreign_workload(path).workload.dims


def test_a_huge_timeloop_coefficient_is_refused(tmp_path):
    text = TL_PROBLEM.read_text()
    m = re.search(r"(name: Wstride\s*\n\s*default: )1", text)
    assert m
    path = tmp_path / "p.yaml"
    path.write_text(text[:m.end(1)] + "100000000000" + text[m.end(1) + 1:])
    with pytest.raises(SpecError) as e:
        load_foreign_workload(path)
    assert "expected a coefficient <= 16,777,216" in str(e.value) and "problem.shape.data_spaces[" in str(e.value)


def test_unknown_instance_keys_stay_a_documented_note(tmp_path):
    path = mutated(tmp_path, TL_PROBLEM, "C: 2", "C: 2\n    Z: 3")
    notes = load_foreign_workload(path).notes
    assert any("problem.instance: Z: neither a dimension nor a coefficient" in n for n in notes)


# --- Timeloop architecture -------------------------------------------------------------------------------------


@pytest.mark.parametrize("old, new, field, expected", [
    ("depth: 192", "depth: 10**100", "architecture.nodes[5].attributes.depth",
     "expected a capacity <= 1,125,899,906,842,624 words (2^50), got an int of 101 digits"),
    ("depth: 192", "depth: 2**50 + 1", "architecture.nodes[5].attributes.depth", "expected a capacity <="),
    ("meshX: 16", "meshX: 100000000", "architecture.nodes[4].spatial.meshX",
     "100,000,000 instances: at most 1,048,576 supported"),
    ("read_bandwidth: 16", "read_bandwidth: 10**30", "architecture.nodes[3].attributes.read_bandwidth",
     "at most 2^62"),
    ("class: smartbuffer_SRAM", "class: quantum_RAM", "architecture.nodes[3].class",
     "expected a Timeloop storage class"),
    ("class: intmac", "class: quantum_ALU", "architecture.nodes[7].class",
     "expected a Timeloop compute class"),
    ("name: shared_glb", "name: DRAM", "architecture.nodes[3].name",
     "expected a name no other node has (architecture.nodes[1] is named 'DRAM' too)"),
    ("permutation: [R, S, P, Q]", "permutation: [R, S, P, Z]", "architecture.nodes[5].constraints.temporal.permutation",
     "expected dimensions of the problem (C, M, N, P, Q, R, S), got 'Z'"),
    ("permutation: [R, S, P, Q]", "permutation: RSPZ", "architecture.nodes[5].constraints.temporal.permutation",
     "got 'Z'"),
])
def test_timeloop_arch_refusals(tmp_path, old, new, field, expected):
    arch_refused(tmp_path, TL_ARCH, TL_PROBLEM, old, new, field, expected)


def test_a_constraint_factor_naming_an_unknown_dimension_is_refused(tmp_path):
    workload = load_foreign_workload(TL_PROBLEM)
    text = TL_ARCH.read_text()
    assert "temporal: {permutation: [R, S, P, Q]}" in text
    path = tmp_path / "a.yaml"
    path.write_text(text.replace("temporal: {permutation: [R, S, P, Q]}",
                                 "temporal: {permutation: [R, S, P, Q], factors: [Z=2]}", 1))
    with pytest.raises(SpecError) as e:
        load_foreign_arch(path, workload)
    assert "constraints.temporal.factors: expected dimensions of the problem" in str(e.value)


def test_the_unmutated_timeloop_design_still_reads():
    fa = load_foreign_arch(TL_ARCH, load_foreign_workload(TL_PROBLEM))
    assert fa.tree.root.nodes


# --- ZigZag ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("old, new, field, expected", [
    ("loop_sizes: [4, 4, 2]", "loop_sizes: [4, 100000000000000000000, 2]", "[0].loop_sizes",
     "K: expected an extent <= 16,777,216"),
    ("operand_source: {I: 0}", "operand_source: {I: 7}", "[0].operand_source.I", "expected a layer id <= 0"),
    ("operand_source: {I: 0}", "operand_source: {X: 0}", "[0].operand_source", "input operands of the equation"),
    ("operator_type: Gemm", "operator_type: 5", "[0].operator_type", "expected a name"),
])
def test_zigzag_workload_refusals(tmp_path, old, new, field, expected):
    workload_refused(tmp_path, ZZ_LAYER, old, new, field, expected)


def test_zigzag_operator_type_is_a_label_and_an_earlier_source_is_a_cut_out_layer(tmp_path):
    path = mutated(tmp_path, ZZ_LAYER, "operator_type: Gemm", "operator_type: Frobnicate")
    assert load_foreign_workload(path).workload.dims
    pooling = load_foreign_workload(PEERS / "zigzag" / "layers" / "pooling_small.yaml")  # id 1, I from layer 0
    assert pooling.workload.dims


@pytest.mark.parametrize("old, new, field, expected", [
    ("size: 1024", "size: 100000000000000000000", "memories.rf_128B.size", "expected a capacity <="),
    ("sizes: [32, 32]", "sizes: [32, 100000000]", "operational_array.sizes", "at most 1,048,576"),
    ("bandwidth_max: 8", "bandwidth_max: 100000000000000000000", "memories.rf_128B.ports[0].bandwidth_max",
     "expected bits per cycle <= 2^62"),
])
def test_zigzag_arch_refusals(tmp_path, old, new, field, expected):
    arch_refused(tmp_path, ZZ_ARCH, ZZ_LAYER, old, new, field, expected)


# --- AccelForge ------------------------------------------------------------------------------------------------


def test_accelforge_extent_is_capped(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(AF_WORKLOAD.read_text().replace("{{M}}", "100000000000000000000", 1))
    with pytest.raises(SpecError) as e:
        load_foreign_workload(path, {"N_EINSUMS": 1})
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: workload.iteration_space_shape.m: expected an extent <= 16,777,216"), message


def test_accelforge_size_and_fanout_are_capped(tmp_path):
    workload = load_foreign_workload(AF_WORKLOAD, {"N_EINSUMS": 1})
    path = tmp_path / "a.yaml"
    path.write_text(AF_ARCH.read_text())
    with pytest.raises(SpecError) as e:
        load_foreign_arch(path, workload, {"GlobalBufferSize": 10**30})
    assert str(e.value).startswith(f"{path}: arch.nodes[1].size: expected a capacity <=")
    nvdla = (PEERS / "accelforge" / "arches" / "nvdla.yaml").read_text()
    assert "fanout: 32," in nvdla
    path.write_text(nvdla.replace("fanout: 32,", "fanout: 100000000,", 1))
    with pytest.raises(SpecError) as e:
        load_foreign_arch(path, workload)
    assert "spatial[0].fanout: 100,000,000 instances: at most 1,048,576 supported" in str(e.value)


# --- the CLI: one line, exit 2, no notes before it, no output file ---------------------------------------------


def test_cli_prints_the_one_error_line_and_no_notes(tmp_path):
    arch = mutated(tmp_path, TL_ARCH, "permutation: [R, S, P, Q]", "permutation: [R, S, P, Z]")
    out = tmp_path / "out.json"
    p = subprocess.run([sys.executable, "-m", "mapsearch", "solve", str(TL_PROBLEM), str(arch), "-q", "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [p.stderr.strip()], p.stderr
    assert "permutation: expected dimensions of the problem" in p.stderr
    assert not out.exists()
