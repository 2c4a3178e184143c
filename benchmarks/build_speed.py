"""Model build time: seconds of ``mapsearch.model.build.build`` per (layer, preset) case.

    python benchmarks/build_speed.py [--repeat 3] [--presets tpu-v4i-like,...] [--cases 1x1s2,...] [--profile CASE]

Building the CP-SAT model (chain enumeration, dominance pruning, the
per-instance tables of meshed levels, the encoding) counts against every
solve's time limit, and on the array presets it used to be most of it
(issue 16: 9.3 s for the ResNet-50 1x1 stride-2 layer on ``tpu-v4i-like``).
Each case is built ``--repeat`` times from a cold chain cache (the
process-wide memo of :func:`mapsearch.model.build._chains_cached` is cleared
before every build, so every run pays the enumeration); the table shows the
median, every run's seconds, the chain rows that survive per dimension
(a change there means the model changed, not just its speed) and the
model's variable and constraint counts.

Layers: ResNet-50 1x1 stride-2 (``n=1 k=512 c=256 p=q=28``), ResNet-50 3x3
(``n=1 k=c=64 p=q=56 r=s=3``) and the BERT FFN matmul ``512x3072x768``;
presets: ``tpu-v4i-like``, ``eyeriss-like``, ``gpu-sm``, ``cpu-core``,
``simba-like`` (its op in GEMM roles bound by the first binding).
``--profile CASE`` (e.g. ``1x1s2@tpu-v4i-like``) prints a
cProfile of one build instead.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mapsearch.model import build as build_module  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.presets import load_preset  # noqa: E402
from mapsearch.spec.block_roles import bind_architecture, role_bindings  # noqa: E402
from mapsearch.spec.constraints import Constraints  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402

LAYERS = {
    "1x1s2": ("O[n,k,p,q] += I[n,c,p*2,q*2] * W[k,c]", {"n": 1, "k": 512, "c": 256, "p": 28, "q": 28}),
    "3x3": ("O[n,k,p,q] += I[n,c,p+r,q+s] * W[k,c,r,s]", {"n": 1, "k": 64, "c": 64, "p": 56, "q": 56, "r": 3, "s": 3}),
    "bert-ffn": ("Z[m,n] += A[m,k] * B[k,n]", {"m": 512, "n": 3072, "k": 768}),
}
PRESETS = ("tpu-v4i-like", "eyeriss-like", "gpu-sm", "cpu-core", "simba-like")
OPTIONS = SolveOptions(time_limit=600, workers=1)


def problem(layer: str, preset: str) -> Problem:
    """The case's problem; an op given in GEMM roles (``gpu-sm``) is bound by its first binding,
    one of the problems a solve builds (mapsearch/solve/block_roles.py)."""
    text, extents = LAYERS[layer]
    w, arch = Workload.from_text(layer, text, extents), load_preset(preset)
    if arch.compute.block_roles:
        arch = bind_architecture(arch, role_bindings(w.einsum, arch.compute)[0])
    return Problem(w, arch)


def build_once(p: Problem):
    """One build from a cold chain memo; returns (seconds, encoding)."""
    build_module._chains_cached.cache_clear()
    t0 = time.perf_counter()
    enc = build_module.build(p, Constraints(), OPTIONS)
    return time.perf_counter() - t0, enc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--cases", default=",".join(LAYERS))
    ap.add_argument("--profile", metavar="LAYER@PRESET")
    args = ap.parse_args()
    if args.profile:
        layer, preset = args.profile.split("@")
        p = problem(layer, preset)
        prof = cProfile.Profile()
        prof.enable()
        build_once(p)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
        return
    print(f"{'case':<28} {'median s':>9}  {'runs':<22} {'rows per dim':<40} {'vars':>7} {'cons':>7}")
    for preset in args.presets.split(","):
        for layer in args.cases.split(","):
            p = problem(layer, preset)
            runs, enc = [], None
            for _ in range(args.repeat):
                seconds, enc = build_once(p)
                runs.append(seconds)
            rows = " ".join(f"{d}={len(ch)}" for d, ch in enc.chains.items())
            proto = enc.model.proto
            print(f"{layer + '@' + preset:<28} {statistics.median(runs):>9.2f}  "
                  f"{' '.join(f'{r:.2f}' for r in runs):<22} {rows:<40} {len(proto.variables):>7} {len(proto.constraints):>7}",
                  flush=True)


if __name__ == "__main__":
    main()
