"""The check replay after a chain solve is bounded as one einsum's is: a fused walk too long to run is not run.

The fused count walk visits every tile of every level it counts at in the
stages it does not fold (sim/fused_count.py: stages of more than
``EXPLICIT_TILES`` innermost tiles are folded, so AlexNet's 8 einsums fused
on AccelForge's ``simple``, 604 M tiles, take milliseconds where they took
105 s). The tiles it walks are known before it starts
(``fused_count_tiles``); past the bound
(``entry.check_fused_tiles``) the check says it was not run, and the CLI
writes nothing, as for one einsum's ``WalkTooLong``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import mapsearch.sim.buffers as buffers
from mapsearch.sim.fused_count import fused_count_tiles
from mapsearch import cli
from mapsearch.model.options import SolveOptions
from mapsearch.sim.errors import WalkTooLong
from mapsearch.sim.replay import replay
from mapsearch.solve import chain_replay, entry
from mapsearch.solve.chain import solve_chain, solve_fused
from mapsearch.spec.load import load_architecture
from mapsearch.spec.workload import WorkloadGraph

ROOT = Path(__file__).resolve().parents[2]
ARCH = ROOT / "examples" / "chains" / "fusion-arch.yaml"
TEXTS = ["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n] * C[n,p]"]
OPTIONS = SolveOptions(time_limit=60, workers=1, seed=0)


def tiny() -> WorkloadGraph:
    return WorkloadGraph.from_texts("tiny", TEXTS, {"m": 12, "n": 8, "k": 3, "p": 2})


@pytest.mark.parametrize("level", [1, 2])
def test_the_fused_walks_size_is_the_tiles_it_walks(monkeypatch, level: int) -> None:
    fs = solve_fused(tiny(), load_architecture(ARCH), {}, level, OPTIONS).schedule
    walked: dict[int, object] = {}  # the chunks of tiles the walk counts at, each fed to every counter of its level

    def fed(counter, pid, start=None):
        walked[id(pid)] = pid
        return feed(counter, pid, start)

    def calls(pid, per_piece):
        walked[id(pid)] = pid
        return chunk_calls(pid, per_piece)

    feed, chunk_calls = buffers.BufferCounter.feed, buffers.chunk_calls
    monkeypatch.setattr(buffers.BufferCounter, "feed", fed)
    monkeypatch.setattr(buffers, "chunk_calls", calls)  # sim/fused_count.py reads it from its module at each walk
    replay(fs, mode="count")
    assert fused_count_tiles(fs) == sum(pid.shape[1] for pid in walked.values()) > 0


def test_a_fused_walk_past_its_bound_is_not_run(monkeypatch) -> None:
    result = solve_chain(tiny(), load_architecture(ARCH), {}, OPTIONS)
    fs = result.best_fused().schedule
    tiles = fused_count_tiles(fs)
    walks = []
    monkeypatch.setattr(chain_replay, "replay", lambda s, **kw: walks.append(s) or replay(s, **kw))
    at = chain_replay.replay_checks(result, "count", max_fused_tiles=tiles)
    assert at.ok and walks[0] is fs  # at the bound: walked
    walks.clear()
    past = chain_replay.replay_checks(result, "count", max_fused_tiles=tiles - 1)
    fused = past.checks[0]
    assert fused.not_run and not past.ok and fs not in walks
    assert fused.error.startswith(f"the count replay would walk {tiles:,} tiles (under a second at the 5,000,000 "
                                  f"a second of a 2-core machine), more than its limit of {tiles - 1:,}")
    assert all(c.ok for c in past.checks[1:])  # the unfused stages are walked as before
    # Other modes walk step by step with no such bound.
    assert chain_replay.replay_checks(result, "events", max_fused_tiles=1).ok


def test_a_strict_chain_solve_raises_walk_too_long(monkeypatch) -> None:
    monkeypatch.setattr(entry, "check_fused_tiles", lambda limit: 1)
    with pytest.raises(WalkTooLong, match=r"^fused at L0: the count replay would walk \d+ tiles"):
        entry.solve_chain(tiny(), load_architecture(ARCH), options=OPTIONS)


def test_the_bound_is_about_the_solves_limit_and_22_minutes_at_least() -> None:
    rate = chain_replay.FUSED_TILES_PER_SECOND
    at_least = entry.check_fused_tiles(5)
    assert at_least == entry.CHECK_WALK_MIN_CELLS * rate // entry.WALK_CELLS_PER_SECOND == 6_710_886_400
    assert entry.check_fused_tiles(3600) == 3600 * rate
    assert at_least > 604_384_456  # AlexNet on simple, fused at its GlobalBuffer: still checked, about 2 minutes


def write_chain(tmp_path: Path, extents: str) -> Path:
    path = tmp_path / "chain.yaml"
    path.write_text("name: tiny\neinsums:\n" + "".join(f'  - "{t}"\n' for t in TEXTS) + f"extents: {extents}\n")
    return path


def test_the_cli_says_not_run_and_writes_nothing_when_the_best_is_unchecked(monkeypatch, tmp_path, capsys) -> None:
    chain = write_chain(tmp_path, "{m: 12, n: 8, k: 3, p: 2}")  # fused at L0 is best: 100 clocks, unfused 292
    out = tmp_path / "best.json"
    monkeypatch.setattr(entry, "check_fused_tiles", lambda limit: 1)
    code = cli.main(["solve", str(chain), str(ARCH), "--time-limit", "60", "--workers", "1", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and not out.exists()
    assert "mapsearch: REPLAY NOT RUN: fused at L0: the count replay would walk " in err
    assert "REPLAY MISMATCH" not in err
    assert err.rstrip().endswith("REPLAY NOT RUN: the best schedule is neither checked nor refuted; nothing is "
                                 "written (replay it with mapsearch replay once the walk can take it)")


def test_another_options_fused_walk_is_bounded_by_the_limit_alone(monkeypatch, tmp_path, capsys) -> None:
    """Materialized at L0 is best (320 clocks, 640 words; fused at L1 ties the time with 672 words): the fused
    schedule's check decides nothing written, so its walk gets about the solve's limit, no 22 minutes; not run,
    it is a warning, and the best schedule, checked, is written."""
    graph = WorkloadGraph.from_texts("tiny", TEXTS, {"m": 8, "n": 2, "k": 16, "p": 16})
    result = solve_chain(graph, load_architecture(ARCH), {}, OPTIONS)
    assert result.best == "materialized at L0" and result.best_fused().level == "L1"
    tiles = fused_count_tiles(result.best_fused().schedule)
    assert tiles == 34
    past = chain_replay.replay_checks(result, "count", max_fused_tiles=10**9, max_other_fused_tiles=33)
    assert past.checks[0].not_run and past.checks[0].option == "fused at L1" and past.failures(result.best) == ()
    assert chain_replay.replay_checks(result, "count", max_fused_tiles=0, max_other_fused_tiles=34).ok

    chain = write_chain(tmp_path, "{m: 8, n: 2, k: 16, p: 16}")
    out = tmp_path / "best.json"
    monkeypatch.setattr(entry, "FUSED_TILES_PER_SECOND", 1)  # 10 s: 10 tiles for another option's fused walk
    code = cli.main(["solve", str(chain), str(ARCH), "--time-limit", "10", "--workers", "1", "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0 and out.exists() and "best: materialized at L0" in captured.out
    assert ("mapsearch: warning: REPLAY NOT RUN: fused at L1: the count replay would walk 34 tiles (under a second "
            "at the 5,000,000 a second of a 2-core machine), more than its limit of 10:") in captured.err


def test_each_distinct_schedule_is_walked_once(monkeypatch) -> None:
    """Without intermediates (AccelForge's CIM networks), materialized at a level is the unfused chain again:
    MobileNet-V3's 65 einsums were walked three times each, 27 s of checks for 65 schedules."""
    graph = WorkloadGraph.from_texts("apart", ["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += C[m,n] * D[n,p]"],
                                     {"m": 12, "n": 8, "k": 3, "p": 2})
    result = solve_chain(graph, load_architecture(ARCH), {}, OPTIONS)
    stages = [r.schedule for r in result.unfused.stages]
    stages += [r.schedule for _, o, _ in result.materialized if o is not None for r in o.stages]
    assert len(stages) == 6 and len(result.materialized) == 2
    walked = []
    monkeypatch.setattr(chain_replay, "replay", lambda s, **kw: walked.append(s) or replay(s, **kw))
    checks = chain_replay.replay_checks(result, "count")
    assert checks.ok and len(checks.checks) == 1 + 6  # the best fused schedule, then every stage of the 3 options
    # Each distinct schedule walks once: the fused one, then the two unfused stages; materialized at L1 and at L0
    # are the same two schedules here.
    assert len(set(stages)) == 2 and walked == [result.best_fused().schedule] + stages[:2]
