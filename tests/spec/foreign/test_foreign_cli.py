"""`mapsearch solve` on peers' files: detection, --format, --var, one-line errors with exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from foreign_helpers import PEERS

AF = PEERS / "accelforge"


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "mapsearch", "solve", *map(str, args)], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


@pytest.fixture
def matmul(tmp_path):
    path = tmp_path / "mm.yaml"
    path.write_text("name: mm\neinsum: 'Z[m,n] += A[m,k] * B[k,n]'\nextents: {m: 4, n: 4, k: 4}\n")
    return path


def test_a_peer_architecture_with_a_mapsearch_workload(matmul, tmp_path):
    out_file = tmp_path / "s.json"
    out = run(matmul, AF / "arches" / "simple.yaml", "-o", out_file)
    assert out.returncode == 0, out.stderr
    assert "MAC: OPTIMAL, time 64, words" in out.stdout
    assert "mapsearch: note: " in out.stderr and out_file.exists()
    replay = subprocess.run([sys.executable, "-m", "mapsearch", "replay", "--check", str(out_file)],
                            capture_output=True, text=True, timeout=300)
    assert replay.returncode == 0, replay.stderr  # a schedule on free (0-cost) links reads back and replays


def test_template_variables_come_from_var(matmul):
    out = run(AF / "workloads" / "matmuls.yaml", AF / "arches" / "simple.yaml", "--var", "N_EINSUMS=1",
              "--var", "M=4", "--var", "KN=4")
    assert out.returncode == 0, out.stderr
    assert "matmuls (T1[m,n1] += T0[m,n0] * W0[n0,n1]; m=4 n1=4 n0=4" in out.stdout


@pytest.mark.parametrize("args, line", [
    ((AF / "workloads" / "matmuls.yaml", AF / "arches" / "simple.yaml"),
     "'N_EINSUMS' is undefined; give it with --var N_EINSUMS=VALUE"),
    (("{matmul}", AF / "arches" / "eyeriss.yaml"),
     "arch.nodes[0].actions: cannot be translated exactly: MainMemory's throughput comes from the hwcomponents model"),
    (("{matmul}", AF / "arches" / "simple.yaml", "--format", "gem5"),
     "--format: expected a peer's format (accelforge, timeloop, zigzag) or T=FMT for a sparse tensor, got 'gem5'"),
    ((AF / "workloads" / "matmuls.yaml", AF / "arches" / "simple.yaml", "--var", "1X=2"),
     "--var: expected NAME=VALUE with NAME a variable name, got '1X=2'"),
    ((AF / "workloads" / "mobilenet_28.yaml", AF / "arches" / "simple.yaml"),
     "workload.einsums[1].tensor_accesses[0].projection.P0: cannot be translated exactly"),
    (("{matmul}", "edge-3level", "--format", "timeloop"),
     "--format: expected WORKLOAD or ARCH in timeloop's format, got '{matmul} and edge-3level'"),
    ((AF / "workloads" / "matmuls.yaml", AF / "arches" / "simple.yaml", "--var", "N_EINSUMS=1", "--density",
      "T0=uniform:0.5,0.5"), "--density: the sparse solve takes mapsearch's own workload files"),
])
def test_bad_input_is_one_line_and_exit_2(matmul, tmp_path, args, line):
    out_file = tmp_path / "never.json"
    args = [str(a).replace("{matmul}", str(matmul)) for a in args]
    out = run(*args, "-o", out_file)
    assert out.returncode == 2, out.stderr
    errors = [l for l in out.stderr.splitlines() if not l.startswith("mapsearch: note:")]
    line = line.replace("{matmul}", str(matmul))
    assert len(errors) == 1 and line in errors[0] and errors[0].startswith("mapsearch: ")
    assert not out_file.exists() and "Traceback" not in out.stderr


def test_malformed_peer_yaml_names_the_line(matmul, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("arch:\n  nodes:\n  - !Memory {name: M, size: inf\n  - !Compute {name: C}\n")
    out = run(matmul, bad, "--format", "accelforge")
    assert out.returncode == 2
    assert out.stderr.startswith(f"mapsearch: {bad}: line ") and "malformed YAML" in out.stderr


def test_var_on_mapsearch_files_is_a_warning(matmul):
    out = run(matmul, "edge-3level", "--var", "M=4", "-q")
    assert out.returncode == 0, out.stderr
    assert "mapsearch: warning: --var only applies to a peer's Jinja-templated file; ignored" in out.stderr


def test_sparse_format_flags_still_work_beside_peer_formats(matmul):
    out = run(matmul, "edge-3level", "--format", "A=CSR", "--density", "A=uniform:0.5,0.5", "--time-limit", "30")
    assert out.returncode == 0, out.stderr


def test_a_schedule_on_free_links_exports_to_timeloop_without_bandwidths(matmul, tmp_path):
    """A peer's unbounded bandwidth is a free link (0 clocks per word); Timeloop's own default is unbounded."""
    schedule = tmp_path / "s.json"
    out = run(matmul, AF / "arches" / "simple.yaml", "--no-placement", "-q", "-o", schedule)
    assert out.returncode == 0, out.stderr
    export = subprocess.run([sys.executable, "-m", "mapsearch", "export", str(schedule), "--format", "timeloop",
                             "-o", str(tmp_path / "tl")], capture_output=True, text=True, timeout=300)
    assert export.returncode == 0, export.stderr
    arch = (tmp_path / "tl" / "arch.yaml").read_text()
    assert "attributes: {depth: 96, width: 8, datawidth: 8}" in arch  # GlobalBuffer: twice the 48 words
    assert not [line for line in arch.splitlines() if "bandwidth:" in line]
