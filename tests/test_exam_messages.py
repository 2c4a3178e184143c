"""Four messages a hostile-input exam found naming no file: each now names the file, the field and what was expected.

Each case is exit 2, one line on stderr that names the file to fix, and no output file:

1. a tree architecture with ``spatial:`` on its top memory (was "the top level DRAM cannot have spatial
   instances", from the solver);
2. a chain whose consumer reads an intermediate transposed (``T[m,n]`` written, ``T[n,m]`` read): the solver
   offered a fused schedule the replay then refused ("stages[1].workload: ..." naming no file). The solver now
   offers no fused schedule for such a chain (it runs unfused, or materialized); a fused schedule file that
   reads an intermediate so is refused naming the file and ``graph.einsums[1]``;
3. ``export --format timeloop`` of a schedule Timeloop cannot state (was "the Timeloop export: ...");
4. tile limits in a constraints file that conflict with each other or with a level's capacity (was
   "infeasible: capacity of L0 and user tile limits conflict: ..." naming neither file).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from cli_run import one_line_refusal as fails, run_cli
from mapsearch.schedule.json_io import dumps_schedule, load_schedule

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MATMUL = EXAMPLES / "matmul-4x4x4.yaml"
THREE = EXAMPLES / "arch-three-level.yaml"  # L2 unbounded, L1 4096 words, L0 64 words
WORKED = EXAMPLES / "arch-worked-example.yaml"  # L1 unbounded, L0 12 words
FUSION_ARCH = EXAMPLES / "chains" / "fusion-arch.yaml"
FUSED = ROOT / "tests" / "data" / "hostile" / "fused-chain.schedule.json"
PLACED = EXAMPLES / "placed-8x8x8.schedule.json"
PLACED_100x37x61 = ROOT / "tests" / "data" / "export" / "array-100x37x61-placed.schedule.json"


# ---- 1. a tree's top memory with spatial instances: refused where the tree is read, at the field

def test_spatial_on_a_trees_top_memory_names_the_file_and_the_field(tmp_path: Path) -> None:
    tree = tmp_path / "top-fanout.yaml"
    tree.write_text("name: top-fanout\n"
                    "arch:\n"
                    "  nodes:\n"
                    "  - !Memory\n"
                    "    name: DRAM\n"
                    "    size: inf\n"
                    "    spatial:\n"
                    "    - {name: x, fanout: 4}\n"
                    "  - !Memory {name: L0, size: 256}\n"
                    "  - !Compute {name: mac}\n", encoding="utf-8")
    out = tmp_path / "out.json"
    message = fails(["solve", MATMUL, tree, "-o", out], out)
    assert message == (f"{tree}:8:7: arch.nodes[0].spatial: !Memory 'DRAM' is the top of the path to 'mac': "
                       "expected no spatial fanout (the top memory is one instance); remove this field or put the "
                       "fanout on a memory below it")


# ---- 2. a chain reading its intermediate transposed

def test_a_fused_schedule_reading_an_intermediate_transposed_names_the_file_and_the_einsum(tmp_path: Path) -> None:
    doc = json.loads(FUSED.read_text(encoding="utf-8"))
    assert doc["graph"]["einsums"][1] == "Y[m,p] += T[m,n] * C[n,p]"
    doc["graph"]["einsums"][1] = "Y[m,p] += T[n,m] * C[n,p]"
    doc["graph"]["extents"]["n"] = doc["graph"]["extents"]["m"]  # T stays square: the shapes agree
    schedule = tmp_path / "transposed.schedule.json"
    schedule.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "nest.py"
    message = fails(["export", schedule, "--format", "loopnest", "-o", out], out)
    assert message == (f"{schedule}: graph.einsums[1]: einsum 1 reads the intermediate T[n,m]; a fused consumer "
                       "must index it as its producer writes it, T[m,n]")


def test_a_chain_reading_an_intermediate_transposed_is_solved_without_fusing_it(tmp_path: Path) -> None:
    # Before: exit 2, "stages[1].workload: einsum 1 reads the intermediate T[n,m]; ..." (no file), after the
    # solver had picked a fused schedule the replay refuses. The fused options now say why they do not apply.
    chain = tmp_path / "transposed.yaml"
    chain.write_text('name: transposed\n'
                     'einsums:\n'
                     '  - "T[m,n] += A[m,k] * B[k,n]"\n'
                     '  - "Y[m,p] += T[n,m] * C[n,p]"\n'
                     'extents: {m: 8, n: 8, k: 8, p: 8}\n', encoding="utf-8")
    out = tmp_path / "out.json"
    code, stdout, err = run_cli(["solve", chain, FUSION_ARCH, "-o", out])
    assert code == 0, err
    assert "fused at L1: einsum 1 reads the intermediate T[n,m]; a fused consumer must index it as its producer " \
           "writes it, T[m,n]" in stdout
    assert json.loads(out.read_text(encoding="utf-8"))["format"] == "mapsearch-unfused-chain"  # replayed by solve


def test_a_chain_sharing_an_input_between_einsums_is_solved_without_fusing_it(tmp_path: Path) -> None:
    # The same kind of refusal after the solve: B read by both einsums, a fused schedule the replay refuses.
    chain = tmp_path / "shared.yaml"
    chain.write_text('name: shared\n'
                     'einsums:\n'
                     '  - "T[m,n] += A[m,k] * B[k,n]"\n'
                     '  - "Y[m,p] += T[m,n] * B[n,p]"\n'
                     'extents: {m: 8, n: 8, k: 8, p: 8}\n', encoding="utf-8")
    out = tmp_path / "out.json"
    code, stdout, err = run_cli(["solve", chain, FUSION_ARCH, "-o", out])
    assert code == 0, err
    assert "fused at L1: tensor B is used by einsums 0, 1; a fused group needs each tensor other than its " \
           "intermediates in one einsum" in stdout
    assert out.exists()


# ---- 3. the Timeloop export's refusals

def test_timeloop_refusing_placed_buffers_names_the_schedule_file_and_the_field(tmp_path: Path) -> None:
    schedule = tmp_path / "placed.schedule.json"
    schedule.write_text(PLACED.read_text(encoding="utf-8"), encoding="utf-8")
    for out in (tmp_path / "tl.yaml", tmp_path / "tl"):
        message = fails(["export", schedule, "--format", "timeloop", "-o", out], out)
        assert message == (f"{schedule}: levels[1].positions.B: Timeloop cannot express buffers placed away from "
                           "their level's tile (B at L1, A at L0, Z at L0): it keeps a tensor's tile at its level's "
                           "boundary; solve with --no-placement for a schedule it can state, or export this one as "
                           "accelforge")


def test_timeloop_refusing_a_remainder_names_the_schedule_file_and_the_tile(tmp_path: Path) -> None:
    shipped = load_schedule(PLACED_100x37x61)
    schedule = tmp_path / "default-positions.schedule.json"
    schedule.write_text(dumps_schedule(dataclasses.replace(
        shipped, levels=tuple(dataclasses.replace(lm, positions=()) for lm in shipped.levels), predicted=None)))
    out = tmp_path / "tl"
    message = fails(["export", schedule, "--format", "timeloop", "-o", out], out)
    assert message.startswith(f"{schedule}: levels[2].tile.m: Timeloop cannot express the temporal cut of m into 2 ")
    assert message.endswith("so this tiling cannot be stated exactly")


# ---- 4. tile limits that cannot hold: the constraints file and the limits taking part

def test_tile_limits_beyond_a_levels_capacity_name_both_files_and_the_limits(tmp_path: Path) -> None:
    # m = n = 4 at L0: Z's tile alone is 16 words, L0 holds 12. The limit on k at the top takes no part.
    limits = tmp_path / "too-big.yaml"
    limits.write_text("tiles:\n  innermost: {m: 4, n: 4}\n  outermost: {k: {max: 4}}\n", encoding="utf-8")
    out = tmp_path / "out.json"
    message = fails(["solve", MATMUL, WORKED, "-c", limits, "-o", out], out)
    assert message == ("infeasible: capacity of L0 and user tile limits conflict: L0 holds 12 words: not enough for "
                       "tiles that meet the other requirements; the user's tile limits exclude the tiles that would "
                       f"fit (conflicting requirements: capacity of L0 from {WORKED}: levels[1].capacity = 12; user "
                       f"tile limits from {limits}: tiles.innermost.m = 4, tiles.innermost.n = 4)")


def test_contradictory_tile_limits_across_levels_name_the_file_and_the_limits(tmp_path: Path) -> None:
    limits = tmp_path / "cross.yaml"
    limits.write_text("tiles:\n  L1: {m: {max: 2}}\n  innermost: {m: {min: 3}, k: 1}\n", encoding="utf-8")
    out = tmp_path / "out.json"
    message = fails(["solve", MATMUL, THREE, "-c", limits, "-o", out], out)
    assert message == ("the tile limits on m leave no legal tile extent (need 1 <= T <= parent <= 4) (conflicting "
                       f"requirements: user tile limits from {limits}: tiles.L1.m <= 2, tiles.innermost.m >= 3)")


def test_a_tile_limit_larger_than_l0_holds_names_the_limit(tmp_path: Path) -> None:
    # m >= 8 at L0: A 8 + B 1 + Z 8 words with the others at 1 already overflow 12 (found before any search).
    limits = tmp_path / "wide.yaml"
    limits.write_text("tiles:\n  innermost: {m: {min: 8}}\n", encoding="utf-8")
    out = tmp_path / "out.json"
    message = fails(["solve", EXAMPLES / "matmul-97x193x61.yaml", WORKED, "-c", limits, "-o", out], out)
    assert message == ("capacity of L0 conflict: the tile limits on m at L0 need at least 8, but at most 5 fits its 12 "
                       "words with every other tile at its smallest (conflicting requirements: capacity of L0 from "
                       f"{WORKED}: levels[1].capacity = 12; user tile limits from {limits}: tiles.innermost.m >= 8)")


def test_min_above_max_in_one_limit_was_already_named(tmp_path: Path) -> None:
    limits = tmp_path / "backwards.yaml"
    limits.write_text("tiles:\n  innermost: {m: {min: 3, max: 2}}\n", encoding="utf-8")
    out = tmp_path / "out.json"
    message = fails(["solve", MATMUL, THREE, "-c", limits, "-o", out], out)
    assert message == f"{limits}: tiles.innermost.m: expected min <= max, got {{'min': 3, 'max': 2}}"
