"""The AccelForge export: a LoopTree whose storage nodes sit where mapsearch's buffers do.

With ``MAPSEARCH_ACCELFORGE_PYTHON`` set to a Python that has accelforge
1.0.467 (it needs Python >= 3.12), the last test evaluates the exports with
AccelForge and compares its words with the replay
(``benchmarks/peers_accelforge.py``); otherwise it is skipped.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from mapsearch.errors import MapsearchError
from mapsearch.report.export_accelforge import accelforge_files, accelforge_nodes, accelforge_yaml
from mapsearch.schedule.json_io import load_schedule
from mapsearch.spec.architecture import Architecture, Compute, Level, Link
from mapsearch.spec.workload import Workload

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import timeloop_v04  # noqa: E402  (its YAML loader knows the ! tags)
from schedule_builder import build_schedule  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
MATMUL = "Z[m,n] += A[m,k] * B[k,n]"


def tree(s) -> list[str]:
    out = []
    for n in accelforge_nodes(s):
        if n["kind"] == "storage":
            out.append(f"{n['component']}:{','.join(n['tensors'])}")
        elif n["kind"] == "compute":
            out.append("compute")
        else:
            out.append(f"{'S' if n['kind'] == 'spatial' else 'T'}{n['dim']}{n['tile']}")
    return out


def load_all(s) -> dict:
    import jinja2

    docs = {}
    for name, text in accelforge_files(s).items():
        rendered = jinja2.Template(text).render()  # AccelForge renders its YAML with Jinja first
        docs[name] = timeloop_v04.load(rendered)
    return docs


def test_worked_example_output_stationary_tree():
    s = load_schedule(EXAMPLES / "worked-example-mnk.schedule.json")
    # L0 order m, n, k (tiles 2, 2, 2): Z's L0 tile does not depend on k, so its node sits above the k loop.
    assert tree(s) == ["L1:A,B,Z", "Tm2", "Tn2", "L0:Z", "Tk2", "L0:A,B", "Tm1", "Tn1", "Tk1", "compute"]
    docs = load_all(s)
    assert docs["workload.yaml"]["workload"]["iteration_space_shape"] == {"m": "0 <= m < 4", "n": "0 <= n < 4", "k": "0 <= k < 4"}
    assert docs["workload.yaml"]["workload"]["einsums"][0]["tensor_accesses"][2] == {"name": "Z", "projection": ["m", "n"], "output": True}
    arch_nodes = docs["arch.yaml"]["arch"]["nodes"]
    assert [(n["_tag"], n["name"], n.get("size")) for n in arch_nodes] == [("!Memory", "L1", "inf"), ("!Memory", "L0", 12 * 8),
                                                                         ("!Compute", "MAC", None)]
    nodes = docs["mapping.yaml"]["mapping"]["nodes"]
    assert nodes[3] == {"_tag": "!Storage", "tensors": ["Z"], "component": "L0"}
    assert nodes[-1] == {"_tag": "!Compute", "einsum": "matmul_4x4x4", "component": "MAC"}
    assert accelforge_yaml(s).count("!Compute") == 2  # the MAC in the architecture and the mapping's leaf


def test_array_tree_spatial_loops_and_reuse_sets():
    s = load_schedule(EXAMPLES / "array-4x4-matmul.schedule.json")
    # PE: m in parts of 2 on x, k in parts of 2 on y, tile 2x2x2, order m, k, n: only n moves (8 -> 2);
    # A[m,k] does not depend on n, so its PE node sits above the n loop, inside the spatial loops.
    assert tree(s) == ["DRAM:A,B,Z", "GLB:A,B,Z", "Sm2", "Sk2", "PE:A", "Tn2", "PE:B,Z", "Tm1", "Tn1", "Tk1", "compute"]
    docs = load_all(s)
    pe = docs["arch.yaml"]["arch"]["nodes"][2]
    assert pe["spatial"] == [{"name": "x", "fanout": 4, "may_reuse": "Inputs"}, {"name": "y", "fanout": 4, "may_reuse": "Outputs"}]
    spatial = [n for n in docs["mapping.yaml"]["mapping"]["nodes"] if n["_tag"] == "!Spatial"]
    assert spatial == [{"_tag": "!Spatial", "rank_variable": "m", "tile_shape": 2, "name": "x", "component": "PE"},
                       {"_tag": "!Spatial", "rank_variable": "k", "tile_shape": 2, "name": "y", "component": "PE"}]


def test_placed_buffers_are_storage_nodes_at_their_positions():
    w = Workload.from_text("mm", MATMUL, {"m": 8, "n": 8, "k": 8})
    levels = tuple(Level(n, None if i == 0 else 10**6, None if i == 0 else Link()) for i, n in enumerate(("L2", "L1", "L0")))
    a = Architecture("t", levels, Compute((), Fraction(1)))
    s = build_schedule(w, a, [({"m": 4, "n": 8, "k": 8}, "mnk", "ABZ"), ({"m": 2, "n": 2, "k": 2}, "nkm", "ABZ")])
    # L1 loops: only m moves (8 -> 4); B[k,n] does not depend on m, so its L1 node is above it.
    # L0 loops n, k, m (positions 3, 4, 5 of the whole nest): B's L0 node is above the m loop.
    assert tree(s) == ["L2:A,B,Z", "L1:B", "Tm4", "L1:A,Z", "Tn2", "Tk2", "L0:B", "Tm2", "L0:A,Z",
                       "Tm1", "Tn1", "Tk1", "compute"]
    # B's L1 buffer placed at position 4: inside the whole nest's 4th loop (L0's n), so below Tn2.
    placed = dataclasses.replace(s, levels=(s.levels[0], dataclasses.replace(s.levels[1], positions=(("B", 4),)), s.levels[2]))
    assert tree(placed) == ["L2:A,B,Z", "Tm4", "L1:A,Z", "Tn2", "L1:B", "Tk2", "L0:B", "Tm2", "L0:A,Z",
                            "Tm1", "Tn1", "Tk1", "compute"]


def test_solved_placed_schedule_tree():
    # solve's optimum for 8x8x8 with L1 48 and L0 12 words (the contract's placement example, 704 words):
    # Nest: L1 loops n4, m2, k1 (positions 1-3), L0 loops m, k (one trip), n1 (position 6).
    # B's L1 buffer at 1 (inside n), Z's L0 buffer at 2 (inside m), A's L0 buffer at 4, written above
    # L0's one-trip m loop; B's L0 buffer at its default 6.
    s = load_schedule(EXAMPLES / "placed-8x8x8.schedule.json")
    assert [dict(lm.positions) for lm in s.levels] == [{}, {"B": 1}, {"A": 4, "Z": 2}]
    assert tree(s) == ["L2:A,B,Z", "Tn4", "L1:B", "Tm2", "L0:Z", "Tk1", "L0:A", "Tn1", "L0:B", "Tm1", "compute"]


def test_rank0_tensors_are_refused():
    w = Workload.from_text("dot", "Z[] += A[k] * B[k]", {"k": 4})
    a = Architecture("t", (Level("L1", None), Level("L0", 10, Link())), Compute((), Fraction(1)))
    with pytest.raises(MapsearchError, match=r"rank-0 tensors \(Z\) have no projection"):
        accelforge_files(build_schedule(w, a, [({"k": 2}, "k", "ABZ")]))


AGREE = ["worked-example-mnk.schedule.json", "worked-example-mkn.schedule.json", "matmul-97x193x61.schedule.json",
         "placed-8x8x8.schedule.json", "array-4x4-matmul.schedule.json", "array/matmul-128x96x64.schedule.json",
         "array/matmul-100x37x61-glb16.schedule.json"]


@pytest.mark.skipif(not os.environ.get("MAPSEARCH_ACCELFORGE_PYTHON"), reason="set MAPSEARCH_ACCELFORGE_PYTHON to a Python with accelforge")
def test_accelforge_counts_the_replays_words():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "peers_accelforge.py"),
                           *(str(EXAMPLES / f) for f in AGREE),
                           "--accelforge-python", os.environ["MAPSEARCH_ACCELFORGE_PYTHON"]],
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "DIFFERS" not in done.stdout and done.stdout.count(" ok") == 2 * 3 + 5 * 6  # every (link, tensor) of the seven schedules
