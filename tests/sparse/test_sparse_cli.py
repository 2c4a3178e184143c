"""``mapsearch solve --density/--format``: the sparse solve from the command line.

- The JSON report's expected words are ``solve_sparse``'s on the same problem,
  and the schedule file is written only after the checks.
- Fixed-structured densities (NofM, Banded with a dimension held whole): the
  replay on sampled data equals the model in every link, tensor and word kind.
- A replay that differs from an exact model, or a failed data check, exits 1
  and writes nothing.
- Every bad input exits 2 with one line naming the option and the tensor, and
  writes nothing.
"""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

from mapsearch import cli
from mapsearch.model.problem import Problem
from mapsearch.schedule.json_io import load_schedule
from mapsearch.sparse import Banded, Dense, NofM, Uniform, csr
from mapsearch.sparse import density_text as density_text_module
from mapsearch.sparse.density_text import density_text, parse_density
from mapsearch.sparse.solve import solve_sparse
from mapsearch.spec.load import load_problem

ROOT = Path(__file__).resolve().parents[2]
ARCH = "edge-3level"
FIELDS = ("payload_down", "meta_down", "payload_up", "meta_up")


@pytest.fixture
def matmul(tmp_path: Path) -> str:
    path = tmp_path / "spmm.yaml"
    path.write_text('name: spmm\neinsum: "Z[m,n] += A[m,k] * B[k,n]"\nextents: {m: 32, n: 16, k: 32}\n')
    return str(path)


def solve_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["solve", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def solve_json(capsys, *argv: str) -> dict:
    code, out, err = solve_cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


# ----------------------------------------------------------------------------- the parser
def test_density_text_doctests():
    assert doctest.testmod(density_text_module).failed == 0


@pytest.mark.parametrize("spec, ndim, want", [
    ("dense", 2, Dense()),
    ("Uniform: 0.9, 0.04", 2, Uniform((0.9, 0.04))),
    ("uniform:1/4", 1, Uniform((0.25,))),
    ("nofm:2/4,4/4", 2, NofM((2, 4), (4, 4))),
    ("nofm:2/4@1,3/3", 2, NofM((2, 3), (4, 3), (1, 0))),
    ("banded:0,3", 2, Banded(0, 3)),
])
def test_density_specs(spec, ndim, want):
    got = parse_density(spec, ndim)
    assert got == want
    assert parse_density(density_text(got), ndim) == got  # the report's text reads back


# ----------------------------------------------------------------------------- Uniform: expectations
def test_uniform_report_equals_solve_sparse(capsys, matmul, tmp_path):
    out = tmp_path / "s.json"
    r = solve_json(capsys, matmul, ARCH, "--density", "A=uniform:0.5,0.2", "--format", "A=CSR", "-o", str(out))
    w, arch, homes = load_problem(matmul, ARCH)
    direct = solve_sparse(Problem(w, arch, tuple(homes.items())), {"A": Uniform((0.5, 0.2))}, {"A": csr(2)})
    assert r["sparse"] is True and r["status"] == direct.status == "OPTIMAL_IN_FAMILY" and r["objective"] == "time"
    assert (r["densities"], r["formats"]) == ({"A": "uniform:0.5,0.2", "B": "dense"},
                                              {"A": "CSR", "B": "dense", "Z": "dense"})
    assert r["exact_densities"] is False
    assert [l["name"] for l in r["links"]] == [l.name for l in direct.links] == ["DRAM->GLB", "GLB->L0"]
    for mine, theirs in zip(r["links"], direct.links):
        for t in theirs.tensors:
            assert [mine["tensors"][t.tensor][f] for f in FIELDS] == pytest.approx([getattr(t, f) for f in FIELDS], rel=1e-12)
        assert mine["words"] == pytest.approx(theirs.words, rel=1e-12)
        assert mine["time"] == pytest.approx(float(theirs.time), rel=1e-12)
    assert r["words_total"] == pytest.approx(direct.words_total, rel=1e-12)
    assert r["effectual_ops"] == pytest.approx(16384 * 0.5 * 0.2) == pytest.approx(direct.effectual_ops)
    assert r["time"] == pytest.approx(direct.time)
    assert r["dense"]["time"] == direct.dense.time and r["dense"]["words_total"] == direct.dense.words_total
    assert r["dense_replay"]["predicted_equals_replayed"] is True
    # the replay on sampled data: A from seed 0, B (dense) from seed 1; relative errors, no failure
    rep = r["replay"]
    assert rep["seed"] == 0 and rep["data_ok"] is True and rep["equals_expected"] is None
    assert rep["nonzeros"] == {"A": Uniform((0.5, 0.2)).sample((32, 32), seed=0).nnz, "B": 512}
    for name, err in rep["relative_error"].items():
        lm = next(l for l in r["links"] if l["name"] == name)
        lr = next(l for l in rep["links"] if l["name"] == name)
        assert err == pytest.approx((lr["words"] - lm["words"]) / lm["words"])
    # written after the checks: the same schedule, its dense figures as predicted
    saved = load_schedule(out)
    assert saved.levels == direct.schedule.levels
    assert saved.predicted == direct.dense


def test_uniform_text_report(capsys, matmul):
    code, out, err = solve_cli(capsys, matmul, ARCH, "--density", "A=uniform:0.5,0.2", "--format", "A=CSR",
                               "--objective", "words", "--sparse-seed", "3")
    assert code == 0, err
    assert "objective: expected words (density model" in out
    assert "status: OPTIMAL_IN_FAMILY: expected words" in out
    assert "family restriction: buffer placement: default positions only (sparse density model)" in out
    assert "schedule (loops outer -> inner):" in out and "op: scalar MAC" in out
    assert "expectations over data drawn from the Uniform densities" in out
    assert f"replayed on sampled data (seed 3; nonzeros A {Uniform((0.5, 0.2)).sample((32, 32), seed=3).nnz}, B 512" in out
    assert "data check: ok" in out and "the replay agrees with the model's dense figures" in out


def test_no_sparse_replay_still_writes(capsys, matmul, tmp_path):
    out = tmp_path / "s.json"
    r = solve_json(capsys, matmul, ARCH, "--density", "A=uniform:0.3,0.3", "--format", "A=COO", "--no-sparse-replay",
                   "-o", str(out))
    assert r["replay"] is None and out.exists()


def test_dense_formats_only_take_the_dense_solve(capsys, matmul):
    r = solve_json(capsys, matmul, ARCH, "--format", "A=dense", "--format", "B=UU")
    assert "sparse" not in r and r["predicted_equals_replayed"] is True


# ----------------------------------------------------------------------------- exact densities
def _assert_replay_equals_model(r: dict) -> None:
    rep = r["replay"]
    assert r["exact_densities"] is True and rep["equals_expected"] is True and rep["mismatches"] == []
    assert rep["data_ok"] is True
    for mine, theirs in zip(r["links"], rep["links"]):
        assert mine["tensors"] == theirs["tensors"]  # every tensor and word kind, exactly
    assert rep["effectual_ops"] == r["effectual_ops"]


def test_nofm_replay_equals_the_model_exactly(capsys, matmul, tmp_path):
    out = tmp_path / "s.json"
    r = solve_json(capsys, matmul, ARCH, "--density", "A=nofm:2/4,4/4", "--format", "A=CSR", "-o", str(out))
    _assert_replay_equals_model(r)
    assert r["effectual_ops"] == 16384 // 2
    a = r["links"][0]["tensors"]["A"]
    assert a["payload_down"] == 512  # A's 512 nonzeros cross DRAM->GLB once (the GLB holds it whole)
    assert out.exists()


def test_compressed_output_with_its_density(capsys, matmul, tmp_path):
    """A's rows 1 of 2 and B's columns 1 of 2 (k dense) make Z exactly nofm:1/2,1/2: its COO words are exact too."""
    r = solve_json(capsys, matmul, ARCH, "--density", "A=nofm:1/2,4/4", "--density", "B=nofm:4/4,1/2",
                   "--density", "Z=nofm:1/2,1/2", "--format", "A=CSR", "--format", "Z=COO")
    _assert_replay_equals_model(r)
    assert r["links"][0]["tensors"]["Z"]["payload_up"] == 16 * 8  # Z's 128 nonzeros stored to DRAM once


def test_banded_with_a_dimension_held_whole_is_exact(capsys, matmul, tmp_path):
    cons = tmp_path / "k-whole.yaml"
    cons.write_text("tiles:\n  innermost: {k: 32}\n  GLB: {k: 32}\n")
    r = solve_json(capsys, matmul, ARCH, "--density", "A=banded:1,2", "--format", "A=CSR", "-c", str(cons),
                   "--sparse-seed", "5")
    _assert_replay_equals_model(r)
    assert r["effectual_ops"] == 16 * (32 * 4 - 1 - 1 - 2)  # 124 band entries (width 4, clipped at both corners) x n


def test_replay_mismatch_on_an_exact_model_exits_1(capsys, matmul, tmp_path, monkeypatch):
    import mapsearch.sparse.entry as sparse_solve_command
    import mapsearch.sparse.replay as sparse_replay

    real = sparse_replay.replay_sparse

    def off_by_one(schedule, tensors, formats=None, **kw):
        r = real(schedule, tensors, formats, **kw)
        link = r.links[0]
        a = link.tensor("A")
        bumped = tuple(sparse_replay.TensorWords(t.tensor, t.payload_down, t.meta_down + 1, t.payload_up, t.meta_up)
                       if t is a else t for t in link.tensors)
        from dataclasses import replace
        return replace(r, links=(replace(link, tensors=bumped),) + r.links[1:])

    monkeypatch.setattr(sparse_solve_command, "replay_sparse", off_by_one)  # where the solve looks it up
    out = tmp_path / "s.json"
    code, text, err = solve_cli(capsys, matmul, ARCH, "--density", "A=nofm:2/4,4/4", "--format", "A=CSR", "-o", str(out))
    assert code == 1 and not out.exists()
    lines = err.strip().splitlines()
    assert lines[0].startswith("mapsearch: REPLAY MISMATCH: the sparse replay on sampled data (seed 0)")
    assert len(lines) == 2 and lines[1].startswith("mapsearch: REPLAY MISMATCH in DRAM->GLB A meta_down: expected ")
    assert "REPLAY MISMATCH in 1 field(s): DRAM->GLB A meta_down" in text


def test_failed_data_check_exits_1(capsys, matmul, tmp_path, monkeypatch):
    import mapsearch.sparse.entry as sparse_solve_command
    import mapsearch.sparse.replay as sparse_replay
    from dataclasses import replace

    real = sparse_replay.replay_sparse
    monkeypatch.setattr(sparse_solve_command, "replay_sparse", lambda *a, **k: replace(real(*a, **k), data_ok=False))
    out = tmp_path / "s.json"
    code, _, err = solve_cli(capsys, matmul, ARCH, "--density", "A=uniform:0.5,0.5", "--format", "A=CSR", "-o", str(out))
    assert code == 1 and not out.exists()
    assert "mapsearch: data check failed: the sparse replay's output differs" in err


# ----------------------------------------------------------------------------- bad input: exit 2, one line, nothing written
@pytest.mark.parametrize("argv, words", [
    (["--density", "Q=dense"], ["--density Q", "a tensor of", "A, B"]),
    (["--density", "Z=uniform:0.5"], ["--density Z", "2 densities", "Z[m,n]"]),  # the output's: an assumption, checked the same
    (["--density", "A=uniform:0.5"], ["--density A", "2 densities", "A[m,k]"]),
    (["--density", "A=uniform:1.5,0.2"], ["--density A", "[0, 1]", "1.5"]),
    (["--density", "A=uniform:-0.1,0.2"], ["--density A", "[0, 1]"]),
    (["--density", "A=nofm:3/2,4/4"], ["--density A", "N <= M", "3/2"]),
    (["--density", "A=nofm:2/4"], ["--density A", "2 N/M entries"]),
    (["--density", "A=nofm:2-4,4/4"], ["--density A", "N/M"]),
    (["--density", "A=banded:1"], ["--density A", "banded:LOWER,UPPER"]),
    (["--density", "A=sparse:0.5"], ["--density A", "uniform:D"]),
    (["--density", "A"], ["--density", "T=SPEC", "'A'"]),
    (["--density", "A=dense", "--density", "A=uniform:1,1"], ["--density A", "one density per tensor"]),
    (["--format", "A=UCC"], ["--format A", "2 letter(s) U/C", "UCC"]),
    (["--format", "W=CSR"], ["--format W", "a tensor of"]),
    (["--format", "Z=CSR"], ["output Z", "compressed", "output_density"]),  # the solver's UnsupportedProblem
    # The output's density with a dense output would change nothing but turn the density model on (it was dropped).
    (["--density", "Z=uniform:0.5,0.5"], ["--density Z", "densities of the inputs", "--format Z=CSR", "Z is stored dense"]),
    (["--density", "A=banded:1,1"], ["Banded", "hold m or k whole"]),  # UnsupportedProblem: nothing held whole
    (["--density", "A=dense", "--objective", "energy"], ["--objective", "time or words"]),
    (["--density", "A=dense", "--min-utilization", "0.5"], ["--min-utilization", "dense-model option"]),
    (["--density", "A=dense", "--dram-rows", "tiebreak"], ["--dram-rows", "dense-model option"]),
    (["--density", "A=dense", "--sparse-seed", "-1"], ["--sparse-seed", "int >= 0"]),
])
def test_bad_input_one_line_exit_2(capsys, matmul, tmp_path, argv, words):
    out = tmp_path / "s.json"
    code, stdout, err = solve_cli(capsys, matmul, ARCH, *argv, "-o", str(out))
    assert code == 2 and stdout == "" and not out.exists()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mapsearch: "), err
    for w in words:
        assert w in lines[0]


def test_chain_and_multi_path_tree_refuse_sparse_flags(capsys, tmp_path):
    out = tmp_path / "s.json"
    code, _, err = solve_cli(capsys, str(ROOT / "examples/chains/fusion-wins.yaml"), ARCH, "--density", "A=dense",
                             "-o", str(out))
    assert code == 2 and not out.exists()
    assert err.strip().splitlines() == [err.strip()] and "--density" in err and "single-einsum" in err
    code, _, err = solve_cli(capsys, str(ROOT / "examples/matmul-4x4x4.yaml"), str(ROOT / "examples/trees/two-paths.yaml"),
                             "--format", "A=CSR", "-o", str(out))
    assert code == 2 and not out.exists()
    assert err.strip().splitlines() == [err.strip()] and "--format" in err and "one compute path" in err
