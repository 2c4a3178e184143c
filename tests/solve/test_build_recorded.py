"""The chain tables the model is built from are exactly those of the code before issue 16's speed-up.

Model building was made several times faster (benchmarks/build_speed.py) by
replacing how the chain tables are pruned and tabled, not what they are.
Every solver result depends on those tables (their rows, values and
order), so this test pins them: a SHA-256 of every table of every
dimension (tiles, counts, sums, still sums with their keys in order,
calls, parts, factors, every view's tables, families), for preset
layers on every kind of path (one to three meshed levels, split windows,
four levels, pinned and bounded dimensions, affine, table and positional
footprints), recorded from the code at commit 5a82dbb (before the
speed-up; ``tpu 3x3`` and ``window, two meshes`` re-recorded when window
dimensions were split over mesh axes, issue 15, and again when their parts
above L0 could be unequal, with a view per class of link copies; ``simba mm`` and ``three meshes`` re-recorded when the part
family of balanced parts over the mesh axes' divisors, model/part_families.py, widened two of its dimensions). The tables of the 15 cases of benchmarks/build_speed.py and
the CP-SAT models built from them were also checked equal when the
speed-up was made.

A change that means to change the chain tables (a new quantity, another
pruning) changes these digests: re-record them then (``python
tests/solve/test_build_recorded.py`` prints the current ones), and say
why in the commit. A change that only means to be faster must not.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mapsearch.model.build import _chains_cached, dimension_chains  # noqa: E402
from mapsearch.model.chains import enumerate_chains  # noqa: E402
from mapsearch.model.footprints import positional_footprint, table_footprint  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.presets import load_preset  # noqa: E402
from mapsearch.spec.block_roles import bind_architecture, role_bindings  # noqa: E402
from mapsearch.spec.constraints import Constraints  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402

CONV = "O[n,k,p,q] += I[n,c,p+r,q+s] * W[k,c,r,s]"
CONV_S2 = "O[n,k,p,q] += I[n,c,p*2,q*2] * W[k,c]"
MATMUL = "Z[m,n] += A[m,k] * B[k,n]"

# (preset, einsum, extents): every dimension's chains as the model gets them (windows pruned).
LAYERS = {
    "tpu 1x1s2": ("tpu-v4i-like", CONV_S2, {"n": 1, "k": 96, "c": 40, "p": 14, "q": 14}),
    "tpu 3x3": ("tpu-v4i-like", CONV, {"n": 1, "k": 24, "c": 16, "p": 14, "q": 14, "r": 3, "s": 3}),
    "simba mm": ("simba-like", MATMUL, {"m": 48, "n": 40, "k": 36}),
    "eyeriss 1x1s2": ("eyeriss-like", CONV_S2, {"n": 1, "k": 64, "c": 32, "p": 14, "q": 14}),
    "gpu-sm 3x3": ("gpu-sm", CONV, {"n": 1, "k": 32, "c": 16, "p": 28, "q": 28, "r": 3, "s": 3}),
    "cpu-core 3x3": ("cpu-core", CONV, {"n": 1, "k": 32, "c": 16, "p": 14, "q": 14, "r": 3, "s": 3}),
}

RECORDED_LAYERS = {
    'tpu 1x1s2': 'c9fdde0e86877524d01e',
    'tpu 3x3': '116402e0cb495a7c17f5',  # window dims split over the mesh, unequal parts above L0 (issue 15)
    'simba mm': '53d97717b8f712bc1704',  # MESH_PARTS: n and k take wider part families within the row limit (issue 15)
    'eyeriss 1x1s2': 'b6edbabc9b7fe9e18d79',
    'gpu-sm 3x3': '9a7947dd53155b418e36',
    'cpu-core 3x3': 'db0940278a9670cfcca5',
}


def _even_positions(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return (hi + 1) // 2 - (lo + 1) // 2


# enumerate_chains arguments off the presets' paths: depth 1 and 2 (the skyline), bounds, pinned,
# table and positional footprints, a block, a window dimension.
CHAINS = {
    "depth 1": (60, 1, ((1, 0),)),
    "depth 2": (97, 2, ((1, 0), (0, 1)), 4),
    "depth 2 bounded": (64, 2, ((1, 0), (2, -1)), 1, [(2, 40), (1, 8)]),
    "depth 3 pinned": (3, 3, ((1, 0),), 1, None, True),
    "table footprint": (30, 2, ((1, 0), table_footprint("fibers", [0] + [x * x % 7 + x for x in range(1, 31)]))),
    "positional": (48, 2, ((1, 0), positional_footprint("even", _even_positions))),
    "window": (20, 3, ((0, 1), (1, 0)), 1, None, False, (), True),
    "one mesh": (36, 2, ((1, 0),), 1, None, False, ((2, 6),)),
    "two meshes": (24, 3, ((1, 0), (2, -1)), 1, None, False, ((1, 3), (3, 4))),
    "three meshes": (30, 3, ((1, 0),), 2, None, False, ((1, 2), (2, 3), (3, 5))),
    "window, two meshes": (12, 3, ((0, 1), (1, 0)), 1, None, False, ((1, 2), (3, 4)), True),
}

RECORDED_CHAINS = {
    'depth 1': '545d2cf824fc78389495',
    'depth 2': 'efeadb820da15210cc71',
    'depth 2 bounded': '026396f195524df31867',
    'depth 3 pinned': '7f5d81d427a8e96a6f2a',
    'table footprint': 'd91c9c477abe7085a6f0',
    'positional': '369541ca6cd16cd6f4f4',
    'window': 'e477053846e884175cce',
    'one mesh': '3325c8e2a5e941ad7eaa',
    'two meshes': '8357fdd7b6d9b9626fea',
    'three meshes': 'fc1ae2271a8df6424448',  # MESH_PARTS at the innermost meshed level within the row limit (issue 15)
    'window, two meshes': 'bc0bf4c94675ab636ac3',  # unequal window parts above L0 (issue 15)
}


def _feed(d, obj) -> None:
    if isinstance(obj, np.ndarray):
        d.update(f"{obj.dtype}{obj.shape}".encode())
        d.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, dict):
        d.update(b"{")
        for key, value in obj.items():  # in order: the order of keys is part of what is pinned
            _feed(d, key)
            _feed(d, value)
        d.update(b"}")
    elif isinstance(obj, (list, tuple)) and len(obj) == 3 and obj and obj[0] in (-1, -2):
        d.update(repr(obj[:2]).encode())  # a table or positional footprint, by name
    elif isinstance(obj, (list, tuple)):
        d.update(b"(")
        for x in obj:
            _feed(d, x)
        d.update(b")")
    else:
        d.update(repr(obj).encode())


def chains_digest(chains: dict) -> str:
    """SHA-256 (first 20 hex digits) of every table of every dimension's chains, in order."""
    d = hashlib.sha256()
    for dim, ch in chains.items():
        _feed(d, dim)
        for field in ("extent", "depth", "tiles", "counts", "sums", "small", "calls", "raw_count", "reduced",
                      "family", "parts", "factors", "flavoured", "parts_family"):
            d.update(field.encode())
            _feed(d, getattr(ch, field))
    return d.hexdigest()[:20]


def layer_chains(name: str) -> dict:
    preset, text, extents = LAYERS[name]
    w, arch = Workload.from_text(name.replace(" ", "_"), text, extents), load_preset(preset)
    if arch.compute.block_roles:
        arch = bind_architecture(arch, role_bindings(w.einsum, arch.compute)[0])
    _chains_cached.cache_clear()
    chains, _ = dimension_chains(Problem(w, arch), Constraints())
    return chains


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_chains_are_as_recorded(name: str) -> None:
    assert chains_digest(layer_chains(name)) == RECORDED_LAYERS[name]


@pytest.mark.parametrize("name", list(CHAINS))
def test_chains_are_as_recorded(name: str) -> None:
    assert chains_digest({"d": enumerate_chains(*CHAINS[name])}) == RECORDED_CHAINS[name]


if __name__ == "__main__":
    print("RECORDED_LAYERS = {")
    for name in LAYERS:
        print(f"    {name!r}: {chains_digest(layer_chains(name))!r},")
    print("}\nRECORDED_CHAINS = {")
    for name in CHAINS:
        print(f"    {name!r}: {chains_digest({'d': enumerate_chains(*CHAINS[name])})!r},")
    print("}")
