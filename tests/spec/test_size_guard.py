"""The size guard's estimate (spec/limits.einsum_figures) bounds every number the model of one einsum holds.

The guard refuses a problem whose model could hold a number past 2^62
(OR-Tools' integers) before anything is built. Its estimate of the
largest number is checked here against the models themselves: every
variable's domain of models built for random small problems (windows with
strides and dilations, a repeated dimension, blocks, 2-5 levels, meshes
with uneven parts, homes below the top) and for the presets. And the
estimate is not so loose that it refuses what the solver holds: a 256^3
matmul and the ResNet-50 layers on ``tpu-v4i-like`` pass (the guard of
every word crossing every link of every instance once per MAC refused
them all, about 2^65-2^69).
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from mapsearch.errors import InfeasibleError, SpecError
from mapsearch.model.build import build
from mapsearch.model.fusion import build_fused
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem, UnsupportedProblem

from mapsearch.spec import limits
from mapsearch.spec.architecture import SEPARATE, SHARED, Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.load import check_problem, resolve_architecture, span_factor
from mapsearch.spec.workload import Workload, WorkloadGraph

EINSUMS = [
    ("Z[m,n] += A[m,k] * B[k,n]", "mnk"),
    ("O[p] += I[p*2+r*2] * W[r]", "pr"),
    ("O[k,p] += I[c,p+r] * W[k,c,r]", "kcpr"),
    ("Y[m] += A[m,m] * X[m]", "m"),
    ("O[p,q] += I[p*2+r,q+s*2] * W[r,s]", "pqrs"),
]
COSTS = [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(2), Fraction(5, 2)]


def estimate(w: Workload, arch: Architecture) -> int:
    """The guard's estimate of the largest number in the model of ``w`` on ``arch``."""
    links = [lv.link for lv in arch.levels[1:]]
    spans = [span_factor(t, w.extent) for t in w.einsum.tensors]
    return limits.einsum_figures(w.extents, dict(arch.compute.block), spans, len(links), arch.compute.clocks_per_call,
                                 [x for ln in links for x in (ln.input_clocks_per_word, ln.output_clocks_per_word)])[0]


def largest_in_model(p: Problem, coarse_only: bool = False) -> int:
    enc = build(p, options=SolveOptions(), coarse_only=coarse_only)
    return max(abs(bound) for v in enc.model.proto.variables for bound in v.domain)


def random_problem(rng: random.Random) -> Problem:
    text, dims = rng.choice(EINSUMS)
    w = Workload.from_text("w", text, {d: rng.randint(1, 5) for d in dims})
    depth = rng.randint(2, 5)
    words = sum(w.tensor_words(t) for t in w.tensor_names)
    levels = [Level("L0", None)]
    for i in range(1, depth):
        link = Link(rng.choice(COSTS), rng.choice(COSTS), rng.choice([SHARED, SEPARATE]))
        capacity = words + rng.randint(0, 8) if i < depth - 1 else max(3, words // 2 + rng.randint(-2, 6))
        mesh = ()
        if rng.random() < 0.3:
            mesh = (MeshAxis("x", rng.randint(2, 4), (rng.choice(["all", "none", "input"]),)),)
        levels.append(Level(f"L{i}", capacity, link, mesh=mesh))
    free = [d for d, e in w.extents if e > 1]
    block = ((free[0], rng.choice([2, 3])),) if free and rng.random() < 0.3 else ()
    arch = Architecture("a", tuple(levels), Compute(block, rng.choice([Fraction(1), Fraction(1, 2), Fraction(3)])))
    return Problem(w, arch)


def test_every_number_of_a_random_model_is_within_the_estimate() -> None:
    rng = random.Random(16)
    built = 0
    for _ in range(80):
        p = random_problem(rng)
        try:
            held = largest_in_model(p)
        except (InfeasibleError, UnsupportedProblem):  # no model to check (a home overflows, a spec it does not take)
            continue
        built += 1
        assert held <= estimate(p.workload, p.architecture), p
    assert built >= 60


@pytest.mark.parametrize("preset", ["eyeriss-like", "simba-like", "edge-3level", "server-3level"])
@pytest.mark.parametrize("text,extents", [
    ("O[k,p,q] += I[c,p*2+r,q*2+s] * W[k,c,r,s]", {"k": 16, "c": 8, "p": 7, "q": 7, "r": 3, "s": 3}),
    ("Z[m,n] += A[m,k] * B[k,n]", {"m": 97, "n": 61, "k": 37}),
])
def test_every_number_of_a_preset_model_is_within_the_estimate(preset: str, text: str, extents: dict) -> None:
    p = Problem(Workload.from_text("w", text, extents), resolve_architecture(preset)[0])
    assert largest_in_model(p) <= estimate(p.workload, p.architecture)


def test_the_tpu_preset_model_is_within_the_estimate_and_far_below_the_limit() -> None:
    """The compute time of one instance making every call binds: calls x the clock unit (1/6,287,360)."""
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 256, "n": 256, "k": 256})
    arch = resolve_architecture("tpu-v4i-like")[0]
    held = largest_in_model(Problem(w, arch), coarse_only=True)
    assert held == 256 ** 3 * 6_287_360 == estimate(w, arch)
    assert held * limits.FIGURES_MARGIN < limits.MODEL_LIMIT


@pytest.mark.parametrize("extents", [
    {"k": 256, "c": 64, "p": 56, "q": 56, "r": 1, "s": 1},  # ResNet-50's conv2 1x1
    {"k": 64, "c": 64, "p": 56, "q": 56, "r": 3, "s": 3},  # its 3x3
    {"k": 64, "c": 3, "p": 112, "q": 112, "r": 7, "s": 7},  # conv1, stride 2
])
def test_the_resnet_layers_pass_the_guard_on_the_tpu_preset(extents: dict) -> None:
    w = Workload.from_text("conv", "O[k,p,q] += I[c,p*2+r,q*2+s] * W[k,c,r,s]", extents)
    arch = resolve_architecture("tpu-v4i-like")[0]
    check_problem(w.extents, w.tensor_names, arch, "conv.yaml", "tpu-v4i-like", (w.einsum,))


def test_a_problem_past_the_limit_is_refused_naming_the_architecture() -> None:
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 2 ** 20, "n": 2 ** 20, "k": 2 ** 12})
    arch = resolve_architecture("tpu-v4i-like")[0]
    with pytest.raises(SpecError, match=r"tpu-v4i-like.*its figures could reach about 2\^74 .*more than the solver "
                                        r"holds exactly"):
        check_problem(w.extents, w.tensor_names, arch, "mm.yaml", "tpu-v4i-like", (w.einsum,))


CHAINS = [
    ["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n] * C[n,p]"],
    ["T[p] += I[p+r] * W[r]", "Y[p] += T[p+s] * V[s]"],
]


def chain_estimate(graph: WorkloadGraph, arch: Architecture) -> int:
    """The guard's estimate for a chain: its einsums' estimates added up."""
    return sum(estimate(graph.stage(i), arch) for i in range(len(graph.einsums)))


def test_every_number_of_a_random_fused_model_is_within_the_chain_estimate() -> None:
    """A fused group adds its stages' compute times and link words (model/fusion.py): at most the sum."""
    rng = random.Random(7)
    built = 0
    for _ in range(40):
        texts = rng.choice(CHAINS)
        dims = sorted({d for t in texts for d in t if d.islower()})
        graph = WorkloadGraph.from_texts("chain", texts, {d: rng.randint(1, 4) for d in dims})
        p = random_problem(rng)
        arch = Architecture("a", tuple(Level(lv.name, lv.capacity, lv.link) for lv in p.architecture.levels),
                            Compute((), p.architecture.compute.clocks_per_call))
        for f in range(1, arch.depth):
            try:
                fused = build_fused(graph, arch, {}, f)
            except (InfeasibleError, UnsupportedProblem):
                continue
            built += 1
            held = max(abs(bound) for v in fused.model.proto.variables for bound in v.domain)
            assert held <= chain_estimate(graph, arch), (texts, graph.extents, arch, f)
    assert built >= 30


def test_a_chain_on_the_tpu_preset_passes_the_guard() -> None:
    """BERT's FFN pair (512 tokens, 768 -> 3072 -> 768): about 2^54, where the former guard said 2^70."""
    graph = WorkloadGraph.from_texts("ffn", ["H[m,f] += X[m,d] * W1[d,f]", "Y[m,e] += H[m,f] * W2[f,e]"],
                                     {"m": 512, "d": 768, "f": 3072, "e": 768})
    arch = resolve_architecture("tpu-v4i-like")[0]
    tensors = dict.fromkeys(t.name for e in graph.einsums for t in e.tensors)
    check_problem(graph.extents, tensors, arch, "ffn.yaml", "tpu-v4i-like", graph.einsums)
    assert chain_estimate(graph, arch).bit_length() - 1 == 53
