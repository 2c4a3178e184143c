"""The public Python API (mapsearch.api): loading from any source, solving, replaying, sweeping, characterizing."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

import mapsearch
from mapsearch import api, cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MATMUL = EXAMPLES / "matmul-4x4x4.yaml"
WORKED = EXAMPLES / "arch-worked-example.yaml"


def test_the_worked_example_solves_to_its_proven_optimum():
    """The contract's worked example: 64 clocks and 64 words with buffer placement (B held as a strip outside m
    and k, docs/catalogue.md), replayed to the word; without placement, the contract's 80 and a named restriction."""
    r = api.solve(MATMUL, WORKED)
    assert (r.status, r.time, r.words, r.utilization) == ("OPTIMAL", 64, 64, 1)
    assert (r.objective_bound, r.gap, r.family_restrictions) == (64, 0.0, ())
    assert r.replayed is not None and r.replayed.figures == r.figures and r.mismatches == ()
    assert {b.kind for b in r.binding} >= {"capacity", "link", "compute"}
    fixed = api.solve(MATMUL, WORKED, placement=False)
    assert (fixed.status, fixed.time, fixed.words, fixed.utilization) == ("OPTIMAL_IN_FAMILY", 80, 80, Fraction(4, 5))
    assert fixed.family_restrictions == ("buffer placement: default positions only (turned off)",)


def test_every_source_of_a_spec_gives_the_same_result():
    """A file, a dict in the file format and the object itself are the same workload / architecture."""
    from_files = api.solve(MATMUL, WORKED, replay_mode=None)
    workload = yaml.safe_load(MATMUL.read_text())
    arch = yaml.safe_load(WORKED.read_text())
    from_dicts = api.solve(workload, arch, replay_mode=None)
    from_objects = api.solve(api.load_workload(MATMUL), api.load_architecture(WORKED), replay_mode=None)
    assert from_files.schedule == from_dicts.schedule == from_objects.schedule


def test_the_api_and_the_command_line_agree(capsys):
    """mapsearch solve --json prints what api.solve returns (the CLI goes through the API)."""
    r = api.solve(EXAMPLES / "matmul-97x193x61.yaml", "edge-3level", time_limit=60)
    assert cli.main(["solve", str(EXAMPLES / "matmul-97x193x61.yaml"), "edge-3level", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["status"], report["time"], report["words_total"]) == (r.status, float(r.time), r.words)
    assert report["predicted_equals_replayed"] is True


def test_a_preset_name_is_an_architecture():
    assert "edge-3level" in api.preset_names()
    arch = api.load_architecture("edge-3level")
    assert isinstance(arch, api.Architecture) and arch.name == "edge-3level" and arch.depth == 3


def test_a_tree_with_two_computes_is_solved_on_both_paths():
    tree = api.load_architecture(EXAMPLES / "trees" / "two-paths.yaml")
    assert isinstance(tree, api.Tree)
    r = api.solve(MATMUL, tree)
    names = [o.compute_name for o in r.paths]
    assert names == ["scalar_unit", "mac_array"]
    best = min((o for o in r.paths if o.result is not None), key=lambda o: (o.result.time, o.result.words))
    assert best.result.schedule == r.schedule  # the chosen path is the one with the shortest time


def test_bad_input_is_one_line_naming_the_source_and_field():
    bad = {"name": "x", "einsum": "Z[m,n] += A[m,k] * B[k,n]", "extents": {"m": 4, "n": 4}}
    with pytest.raises(api.SpecError) as e:
        api.load_workload(bad)
    assert str(e.value).startswith("<dict>: ") and "k" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(api.UsageError, match="^time_limit: expected seconds > 0, got -1$"):
        api.solve(MATMUL, WORKED, time_limit=-1)
    with pytest.raises(api.SpecError, match="no such file or preset"):
        api.load_architecture("no-such-architecture")
    # An empty path is refused by name (it used to read the working directory: "is a directory").
    with pytest.raises(api.UsageError, match="^start: expected a Schedule or a schedule file"):
        api.solve(MATMUL, WORKED, start="")
    with pytest.raises(api.UsageError, match="^dram_layouts: expected a trace options file"):
        api.solve(MATMUL, WORKED, dram_layouts=" ")


def test_an_infeasible_problem_names_the_requirements_that_conflict():
    tiles = {"name": "too-big", "tiles": {"innermost": {"m": 4, "n": 4, "k": 4}}}
    with pytest.raises(api.InfeasibleError) as e:
        api.solve(MATMUL, WORKED, tiles)
    assert e.value.core and all(name in str(e.value) for name in e.value.core)


def test_a_replay_that_disagrees_raises_unless_asked_not_to(monkeypatch):
    from mapsearch.solve import entry

    real = entry.replay

    def off_by_one(schedule, mode="count", **options):
        r = real(schedule, mode=mode)
        return api.ReplayResult(type(r.figures)(**{**r.figures.__dict__, "op_calls": r.figures.op_calls + 1}))

    monkeypatch.setattr(entry, "replay", off_by_one)
    with pytest.raises(api.ReplayMismatch) as e:
        api.solve(MATMUL, WORKED)
    assert e.value.field == "op_calls" and (e.value.predicted, e.value.replayed) == (64, 65)
    lenient = api.solve(MATMUL, WORKED, strict=False)
    assert lenient.mismatches == (("op_calls", 64, 65),)  # 64 MACs, one call each


def test_replay_reads_a_schedule_file_and_compare_finds_no_difference():
    r = api.replay(EXAMPLES / "worked-example-mnk.schedule.json")
    assert r.figures.utilization == Fraction(4, 5)
    assert api.compare(api.load_schedule(EXAMPLES / "worked-example-mnk.schedule.json").predicted, r) == []
    data = api.replay(EXAMPLES / "worked-example-mkn.schedule.json", mode="data")
    assert data.data_ok is True and data.figures.utilization == Fraction(2, 3)


def test_a_solved_schedule_round_trips_through_its_file(tmp_path):
    r = api.solve(MATMUL, WORKED)
    api.save_schedule(r, tmp_path / "s.json")
    again = api.load_schedule(tmp_path / "s.json")
    assert again == r.schedule
    assert api.replay(again).figures == r.figures


def test_a_chain_fuses_where_it_wins():
    """examples/chains/fusion-wins.yaml: fused at L1 beats unfused on time; every replay check agrees."""
    r = api.solve_chain(EXAMPLES / "chains" / "fusion-wins.yaml", EXAMPLES / "chains" / "fusion-arch.yaml")
    candidates = {name: (time, words) for name, time, words in r.candidates()}
    assert r.best == "fused at L1"
    assert candidates["fused at L1"][0] < candidates["unfused"][0]
    assert r.replay.ok and r.replay.checks


def test_a_sparse_solve_replays_to_the_model_on_sampled_data():
    r = api.solve_sparse(MATMUL, WORKED, {"A": "nofm:2/4,4/4"}, {"A": "CSR"})
    assert r.status in ("OPTIMAL", "OPTIMAL_IN_FAMILY")
    assert r.mismatches == () and r.dense_mismatches == ()
    assert r.nonzeros == {"A": 8, "B": 16}  # 2 of every 4 of A's 16 values; B dense
    assert r.sparse_replay.effectual_ops == pytest.approx(r.effectual_ops)


def test_a_sweep_gives_rows_and_a_dataframe_that_match_single_solves(tmp_path):
    sweep = {"name": "l0-size", "workloads": [str(MATMUL)], "architectures": [str(WORKED)],
             "params": {"architectures.L0.capacity": [12, 48]}, "time_limit": 30}
    result = api.sweep(sweep, tmp_path / "out", workers=1)
    assert len(result.rows) == 2 and not result.failed and not result.interrupted
    df = result.to_dataframe()
    assert list(df["param:architectures.L0.capacity"]) == [12, 48]
    arch = yaml.safe_load(WORKED.read_text())
    for capacity, time, words in zip(df["param:architectures.L0.capacity"], df["time"], df["words_total"]):
        arch["levels"][1]["capacity"] = int(capacity)
        alone = api.solve(MATMUL, arch, replay_mode=None)
        assert (time, words) == (alone.time, alone.words)
    assert (tmp_path / "out" / "results.csv").exists() and "l0-size" in result.summary()


def test_characterize_a_small_network(tmp_path):
    model = tmp_path / "tiny.yaml"
    model.write_text("name: tiny\nnodes:\n"
                     "  - {name: fc1, op: linear, in: [[8, 64]], out: [8, 32], from: ['']}\n"
                     "  - {name: fc2, op: linear, in: [[8, 32]], out: [8, 16], from: [fc1]}\n")
    seen = []
    result = api.characterize(model, ["kpu"], tmp_path / "out", workers=1, time_limit=20, chain_fusion=False,
                              on_start=seen.append)
    assert seen[0].layers == 2 and seen[0].macs == 8 * 64 * 32 + 8 * 32 * 16
    layers = result.to_dataframe()
    assert list(layers["layer"]) == ["fc1", "fc2"] and set(layers["status"]) <= {"OPTIMAL", "OPTIMAL_IN_FAMILY"}
    totals = result.to_dataframe("totals")
    assert totals["time_clocks"][0] == pytest.approx(layers["time_clocks"].sum())
    assert (tmp_path / "out" / "layers.csv").exists()


def test_the_package_hands_out_the_api_names():
    assert mapsearch.replay is api.replay and mapsearch.SolveResult is api.SolveResult
    assert mapsearch.api.solve is api.solve
    assert type(mapsearch.solve).__name__ == "module"  # the sub-package keeps its name
    with pytest.raises(AttributeError):
        mapsearch.no_such_name  # noqa: B018
