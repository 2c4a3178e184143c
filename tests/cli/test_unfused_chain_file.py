"""A chain solved unfused (or materialized) is written as ``mapsearch-unfused-chain``; replay reads it back.

Before: ``mapsearch replay out.json`` on what ``solve -o`` wrote failed with ``graph: unknown field`` (exit 2).
Now each stage replays alone and ``--check`` compares it with the file's predictions (fields
``stages[e].…``) and the totals ``time`` and ``words``. Also: the AccelForge export's refusals name the
schedule file and the field, as the Timeloop export's do.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from mapsearch import api
from mapsearch.schedule.json_io import dumps_schedule
from mapsearch.schedule.unfused_json import UnfusedChain
from mapsearch.spec.architecture import Architecture, Compute, Level, Link
from mapsearch.spec.workload import Workload
from cli_run import one_line_refusal, run_cli
from schedule_builder import build_schedule

ROOT = Path(__file__).resolve().parents[2]
FUSION_ARCH = ROOT / "examples" / "chains" / "fusion-arch.yaml"
TRANSPOSED = ('name: transposed\n'
              'einsums:\n'
              '  - "T[m,n] += A[m,k] * B[k,n]"\n'
              '  - "Y[m,p] += T[n,m] * C[n,p]"\n'
              'extents: {m: 8, n: 8, k: 8, p: 8}\n')


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``solve -o`` of a chain whose consumer reads its intermediate transposed: no fused option applies."""
    folder = tmp_path_factory.mktemp("unfused")
    chain = folder / "transposed.yaml"
    chain.write_text(TRANSPOSED, encoding="utf-8")
    out = folder / "out.json"
    code, _, err = run_cli(["solve", chain, FUSION_ARCH, "-o", out])
    assert code == 0, err
    assert json.loads(out.read_text(encoding="utf-8"))["format"] == "mapsearch-unfused-chain"
    return out


def test_replay_reads_back_what_solve_wrote(solved: Path) -> None:
    code, stdout, err = run_cli(["replay", solved, "--check"])
    assert (code, err) == (0, "")
    assert "transposed stage 0, T[m,n] += A[m,k] * B[k,n], on fusion-arch" in stdout
    assert "transposed stage 1, Y[m,p] += T[n,m] * C[n,p], on fusion-arch" in stdout
    assert stdout.endswith("check: the replay matches the predicted figures\n")
    assert run_cli(["replay", solved])[0] == 0  # count mode, no comparison asked


def test_each_stage_replays_to_its_predicted_figures(solved: Path) -> None:
    chain = api.load_schedule(solved)
    assert isinstance(chain, UnfusedChain) and chain.source == str(solved)
    assert [st.source for st in chain.stages] == [str(solved)] * 2
    result = api.replay(solved)
    assert [r.figures for r in result.stages] == [st.predicted for st in chain.stages]
    assert (result.time, result.figures.words_total) == (chain.time, chain.words)
    assert chain.time == sum((st.predicted.time for st in chain.stages), Fraction(0))
    code, stdout, _ = run_cli(["replay", solved, "--check", "--json"])
    report = json.loads(stdout)
    assert code == 0 and report["check"] == {"ok": True, "mismatches": []}
    assert [s["words_total"] for s in report["stages"]] == [st.predicted.words_total for st in chain.stages]
    assert (report["time"], report["words"]) == (chain.time, chain.words)


def test_a_tampered_word_count_is_a_mismatch(solved: Path, tmp_path: Path) -> None:
    doc = json.loads(solved.read_text(encoding="utf-8"))
    link = doc["stages"][1]["predicted"]["links"][0]
    link["words_down"] += 1
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(doc), encoding="utf-8")
    code, _, err = run_cli(["replay", tampered, "--check"])
    assert code == 1
    assert err.splitlines() == [f"mapsearch: replay mismatch in stages[1].links[{link['name']}].words_down: "
                                f"predicted {link['words_down']}, replayed {link['words_down'] - 1}"]


def test_a_stage_of_another_einsum_names_the_file_and_the_stage(solved: Path, tmp_path: Path) -> None:
    doc = json.loads(solved.read_text(encoding="utf-8"))
    doc["stages"].reverse()
    swapped = tmp_path / "swapped.json"
    swapped.write_text(json.dumps(doc), encoding="utf-8")
    message = one_line_refusal(["replay", swapped], tmp_path / "none")
    assert message == (f"{swapped}: stages[0].workload.einsum: expected einsum 0 of the graph, "
                       "'T[m,n] += A[m,k] * B[k,n]', got 'Y[m,p] += T[n,m] * C[n,p]'")


def test_export_refuses_an_unfused_chain_in_one_line(solved: Path, tmp_path: Path) -> None:
    out = tmp_path / "af.yaml"
    message = one_line_refusal(["export", solved, "--format", "accelforge", "-o", out], out)
    assert message.startswith(f"{solved}: export takes one einsum's schedule (format mapsearch-schedule); this is "
                              "an unfused chain (mapsearch-unfused-chain)")


def test_accelforge_refusing_rank0_tensors_names_the_schedule_file_and_the_field(tmp_path: Path) -> None:
    w = Workload.from_text("dot", "Z[] += A[k] * B[k]", {"k": 4})
    a = Architecture("t", (Level("L1", None), Level("L0", 10, Link())), Compute((), Fraction(1)))
    schedule = tmp_path / "dot.schedule.json"
    schedule.write_text(dumps_schedule(build_schedule(w, a, [({"k": 2}, "k", "ABZ")])), encoding="utf-8")
    for out in (tmp_path / "af.yaml", tmp_path / "af"):
        message = one_line_refusal(["export", schedule, "--format", "accelforge", "-o", out], out)
        assert message == (f"{schedule}: workload.einsum: AccelForge cannot express this einsum: its rank-0 "
                           "tensors (Z) have no projection")
