"""The tree presets solve on their array paths (issue 15), as a user would run them.

- ``mapsearch solve examples/matmul-97x193x61.yaml tpu-v4i-like``: the path
  with two meshed levels (4 MXUs, 128x128 PEs each) is solved, not skipped;
  the time is the HBM link's compulsory traffic (proven at once by the
  floor), the words are proven in the searched family, the replay agrees,
  and the JSON report names both meshed levels with their splits and array
  utilizations, which multiply to the whole array's.
- the same on ``eyeriss-like`` (one meshed level, 14x12 PEs);
- ``simba-like``: three meshed levels (36 chiplets, 16 PEs, 8x8 lanes).

The figures asserted are the proven optima (time, then words), which do
not depend on which of several equal schedules the search returns.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "examples" / "matmul-97x193x61.yaml"
LIMIT = {"tpu-v4i-like": 60, "eyeriss-like": 60, "simba-like": 300}


def solve_cli(preset: str) -> dict:
    # The proofs end the search, so the limit only has to be out of the way: at the default 60 s, simba-like's
    # proof (about 60-90 s on a 2-core machine, by its load) was a timed test that failed on a slower machine.
    out = subprocess.run([sys.executable, "-m", "mapsearch", "solve", str(MATMUL), preset, "--json",
                          "--time-limit", str(LIMIT[preset])], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("preset, levels, time, words, status", [
    # HBM -> CMEM moves A, B once and Z once up: (5,917 + 11,773 + 18,721) x 21/6140 clocks.
    ("tpu-v4i-like", ["VMEM", "PE"], Fraction(764631, 6140), 121067, "OPTIMAL_IN_FAMILY"),
    # DRAM -> GLB: 17,690 words down, 18,721 up, 5/6 clock per word on a shared line. The GLB holds every
    # tensor whole (buffers placed above the mesh, docs/spatial.md), and GLB -> PE moves each element once too:
    # m (97, prime) in parts of ceil(97/14) = 7 over the 14 PEs of x, k (61, prime) in parts of ceil(61/4) = 16
    # over 4 of y, inputs multicast, partial sums reduced. Every link at its compulsory words is the contract's
    # floor, so the result is OPTIMAL whatever the family left out (model/family.meets_contract_floors). With
    # parts that divide only (before model/part_families.MESH_PARTS), neither prime could be split: 96,368 words.
    ("eyeriss-like", ["PE"], Fraction(60685, 2), 72822, "OPTIMAL"),
    ("simba-like", ["GB", "PE", "Lane"], Fraction(59957, 64), 452926, "OPTIMAL_IN_FAMILY"),
])
def test_preset_solves_on_its_array_path(preset, levels, time, words, status) -> None:
    report = solve_cli(preset)
    assert report["status"] == status and report["gap"] == 0
    assert report["predicted_equals_replayed"] and not report["mismatches"]
    assert Fraction(report["exact"]["time"]) == time and report["words_total"] == words
    spatial = report["spatial"]
    assert [e["level"] for e in spatial] == levels
    assert any(ax["splits"] for e in spatial for ax in e["axes"])
    # Each level's utilization is its share of the calls under the level above; they multiply to the array's.
    whole = math.prod(e["array_utilization"] for e in spatial)
    assert whole == pytest.approx(float(Fraction(report["exact"]["array_utilization"])))
    assert report["compute_instances"] == math.prod(e["instances"] for e in spatial)
    # Every restriction of the searched family is named (OPTIMAL_IN_FAMILY, never a bare OPTIMAL); at the
    # contract's floors none can matter, and none is listed.
    if status == "OPTIMAL":
        assert report["family_restrictions"] == []
    else:
        assert any(r.startswith("buffer placement") for r in report["family_restrictions"])


def test_tpu_v4i_like_compulsory_time() -> None:
    """The asserted time is the HBM link's compulsory words: each tensor crosses it once."""
    assert (97 * 61 + 61 * 193 + 97 * 193) * Fraction(21, 6140) == Fraction(764631, 6140)
