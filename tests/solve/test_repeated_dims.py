"""A dimension that alone indexes several axes of an input (``A[m,m]``, ``A[2m,m]``): solved, and exactly.

The contract's region of such a tensor is the box the piece spans along each
axis (holes included), ``x^2`` words for ``A[m,m]`` and a piece of extent
``x``, and the pieces' boxes cover only the diagonal: the solver's optimum
must equal the wide brute force's (tests/brute_force_wide.py, which scores
every schedule, buffer positions included, by the replay), and every
returned schedule must replay to its prediction.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

import brute_force_fused as bff
import brute_force_spatial as bfs
import brute_force_wide as bw
from brute_force import Objective
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem, UnsupportedProblem
from mapsearch.schedule.figures import differences
from mapsearch.sim.replay import replay
from mapsearch.solve.chain import solve_fused
from mapsearch.solve.run import solve
from mapsearch.spec.architecture import SEPARATE, Architecture, Compute, Level, Link, MeshAxis
from mapsearch.spec.workload import Workload, WorkloadGraph

DIAG = "Z[m] += A[m,m] * B[m,k]"


def _arch(caps, link=Link(), compute=Compute()) -> Architecture:
    names = [f"L{len(caps) - 1 - i}" for i in range(len(caps))]
    return Architecture("diag", tuple(Level(n, c, None if i == 0 else link) for i, (n, c) in enumerate(zip(names, caps))),
                        compute)


CASES = [
    # L0 holds A's box of a 2-piece (4 words) only beside one word each of B and Z: m's L0 tile is 1 or 2.
    ("diag, 2 levels", DIAG, {"m": 4, "k": 3}, _arch([None, 7]), Objective()),
    # a middle level too small for anything: every word comes from the top; B kept at L0 across m's L1 loop
    ("diag, 3 levels, words", DIAG, {"m": 4, "k": 4}, _arch([None, 1, 7], Link(Fraction(2), Fraction(3), SEPARATE)),
     Objective("words")),
    ("diag, 3 levels, block op", DIAG, {"m": 5, "k": 4}, _arch([None, 20, 6], compute=Compute((("m", 2),), Fraction(2))),
     Objective()),
    # a stride along one of the axes: a piece of extent x spans 2(x - 1) + 1 rows and x columns
    ("strided diagonal", "Z[m,n] += A[2*m,m] * B[m,n]", {"m": 3, "n": 3}, _arch([None, 16, 8]), Objective()),
]


@pytest.mark.parametrize("name, einsum, extents, arch, objective", CASES, ids=[c[0] for c in CASES])
def test_the_optimum_equals_the_brute_force(name, einsum, extents, arch, objective):
    w = Workload.from_text("diag", einsum, extents)
    best = bw.brute_force(w, arch, {}, objective)
    assert best is not None
    options = SolveOptions(objective=objective.kind) if objective.kind != "time" else SolveOptions()
    result = solve(Problem(w, arch), options=options)
    assert result.status == "OPTIMAL"
    got = tuple(p.value for p in result.phases)
    assert got == best.value
    assert differences(result.schedule.predicted, replay(result.schedule, mode="count").figures) == []


def test_a_diagonal_moves_its_boxes_not_the_whole_tensor():
    """With every tile 1, A[m,m] moves its 4 diagonal words, not its 16 (the words floor of a tensor with plain
    axes, its own size, does not hold for it)."""
    w = Workload.from_text("diag", DIAG, {"m": 4, "k": 4})
    result = solve(Problem(w, _arch([None, 3])), options=SolveOptions(objective="words"))
    a_words = sum(t.words_down for link in result.schedule.predicted.links for t in link.tensors if t.tensor == "A")
    assert a_words == 4


SKEW = "O[p] += I[p+r,p] * W[r]"


def _assert_the_whole_familys_optimum(einsum: str, extents: dict, caps: list, objective: Objective) -> None:
    """OPTIMAL with no restriction, at the wide brute force's optimum (positions included), replayed exactly."""
    w = Workload.from_text("skew", einsum, extents)
    arch = _arch(caps)
    options = SolveOptions(objective=objective.kind) if objective.kind != "time" else SolveOptions()
    result = solve(Problem(w, arch), options=options)
    assert result.status == "OPTIMAL" and result.family_restrictions == ()
    assert tuple(p.value for p in result.phases) == bw.brute_force(w, arch, {}, objective).value
    assert differences(result.schedule.predicted, replay(result.schedule, mode="count").figures) == []


@pytest.mark.parametrize("einsum, extents, caps, objective", [
    (SKEW, {"p": 4, "r": 3}, [None, 30, 12], Objective()),
    (SKEW, {"p": 5, "r": 2}, [None, 9], Objective()),
    # was 17 clocks with k's window held whole (m pinned by it), against the whole family's 11
    ("Z[m] += A[m,m+k] * B[k]", {"m": 2, "k": 3}, [None, 8], Objective()),
    ("O[p] += I[2*p+r,p] * W[r]", {"p": 4, "r": 2}, [None, 3], Objective()),
    ("O[p] += I[p+2*r,p] * W[r]", {"p": 4, "r": 3}, [None, 43, 6], Objective()),
    # a skewed axis beside a filter window of its own (q+s: coincidences) and a 3-level words objective
    ("O[p,q] += I[p+r,p,q+s] * W[r,s]", {"p": 2, "q": 2, "r": 2, "s": 2}, [None, 6], Objective("words")),
    ("O[p] += I[p+r,p,r] * W[r]", {"p": 2, "r": 3}, [None, 12, 4], Objective("words")),
    # no dimension alone on an axis, but independent coefficients: the box still gives both pieces
    ("O[p] += I[2*p+r,p+r] * W[r]", {"p": 3, "r": 3}, [None, 45, 4], Objective("words")),
])
def test_a_skewed_axis_is_split_and_its_optimum_is_the_whole_familys(einsum, extents, caps, objective):
    """A dimension on a plain axis and on a window: the window is split like any other, the region
    ``prod_a span_a`` summed as a polynomial of one footprint per dimension (model/skew.py). The optimum is
    the whole family's (the wide brute force, positions included), with no restriction."""
    _assert_the_whole_familys_optimum(einsum, extents, caps, objective)


def test_a_skewed_window_that_does_not_fit_whole_is_split():
    """Held whole, r's window of 5 left L0 (5 words) no schedule ("no schedule in the searched family"); split,
    the solver finds the brute force's optimum."""
    w = Workload.from_text("skew", SKEW, {"p": 7, "r": 5})
    arch = _arch([None, 5], Link(Fraction(0), Fraction(3), SEPARATE))
    result = solve(Problem(w, arch))
    assert result.status == "OPTIMAL"
    assert tuple(p.value for p in result.phases) == bw.brute_force(w, arch, {}, Objective()).value


@pytest.mark.parametrize("einsum, extents, caps, objective", [
    ("O[p] += I[p+r+u,p] * W[r,u]", {"p": 3, "r": 2, "u": 2}, [None, 3], Objective()),
    ("O[p] += I[p+r+u,p] * W[r,u]", {"p": 3, "r": 2, "u": 2}, [None, 11, 5], Objective()),
    ("O[p] += I[p+r+u,p] * W[r,u]", {"p": 3, "r": 3, "u": 2}, [None, 20, 7], Objective("words")),
    # strides in the hidden window, and a second plain axis
    ("O[p,k] += I[p+2*r+u,p] * W[r,u,k]", {"p": 3, "r": 2, "u": 3, "k": 2}, [None, 9], Objective()),
    # p of extent 1: no skew, a plain filter window r+u (it was split twice, and the model failed to build)
    ("O[p] += I[p+r+u,p] * W[r,u]", {"p": 1, "r": 3, "u": 2}, [None, 6, 3], Objective()),
])
def test_a_skewed_axis_over_two_window_dimensions_splits_both(einsum, extents, caps, objective):
    """``I[p+r+u,p]``: r and u index the first axis alone (dependent columns: r advancing while u goes back can
    give the same box), p is read off the second. The box changes exactly when p's piece or the window
    ``r+u``'s interval changes (model/skew.box_windows), so both are split, the window's coincidences counted as
    a filter window's, weighed by its span or one per interval in each monomial. The optimum is the whole
    family's. Before, u was held whole: the first case had no schedule in that family, the second was
    OPTIMAL_IN_FAMILY at (25, 44) against the whole family's (19, 38)."""
    _assert_the_whole_familys_optimum(einsum, extents, caps, objective)


MESH_CASES = [
    # L0 meshed, 2 instances that multicast inputs: A's diagonal blocks go one per instance when m is split
    ("diag on a 2-instance L0", DIAG, {"m": 4, "k": 3},
     Architecture("m", (Level("L1", None), Level("L0", 8, Link(Fraction(1, 4)), mesh=(MeshAxis("x", 2, ("input",)),)))),
     Objective()),
    # no reuse over the axis: a split of k sends A's blocks to both instances
    ("diag, no multicast", DIAG, {"m": 3, "k": 4},
     Architecture("m", (Level("L1", None), Level("L0", 9, Link(Fraction(1, 3)), mesh=(MeshAxis("x", 3, ("none",)),)))),
     Objective()),
    # a strided diagonal under a meshed middle level, separate lines
    ("strided diagonal, meshed middle", "Z[m,n] += A[2*m,m] * B[m,n]", {"m": 3, "n": 2},
     Architecture("m", (Level("L2", None), Level("L1", 12, Link(Fraction(1, 4), Fraction(1, 2), SEPARATE),
                                                  mesh=(MeshAxis("x", 2, ("all",)),)),
                        Level("L0", 6, Link(Fraction(1, 4))))), Objective()),
]


@pytest.mark.parametrize("name, einsum, extents, arch, objective", MESH_CASES, ids=[c[0] for c in MESH_CASES])
def test_a_diagonal_on_a_mesh_equals_the_spatial_brute_force(name, einsum, extents, arch, objective):
    """On a meshed path the solver's optimum over its family equals tests/brute_force_spatial.py's (which scores by
    the replay, positions above the mesh included), and its schedule replays to its prediction."""
    w = Workload.from_text("diag", einsum, extents)
    best = bfs.brute_force_spatial(w, arch, {}, objective)
    assert best is not None
    options = SolveOptions(objective=objective.kind) if objective.kind != "time" else SolveOptions()
    result = solve(Problem(w, arch), options=options)
    assert result.proven
    assert tuple(p.value for p in result.phases) == best.value
    assert differences(result.schedule.predicted, replay(result.schedule, mode="count").figures) == []


def test_a_mesh_case_splits_the_diagonal():
    """The first mesh case is only worth its brute force if the optimum uses the mesh: m split over both
    instances, each computing its own diagonal block (12 clocks of compute unsplit on one instance)."""
    name, einsum, extents, arch, objective = MESH_CASES[0]
    result = solve(Problem(Workload.from_text("diag", einsum, extents), arch))
    assert any(sp.dim == "m" for lv in result.schedule.levels for sp in lv.spatial)
    assert result.phases[0].value < 4 * 3


SKEW_ON_MESH = [
    # p split over the instances: each its own rows of I and its outputs
    ("skew on a 2-instance L0", SKEW, {"p": 4, "r": 3},
     Architecture("m", (Level("L1", None), Level("L0", 9, Link(Fraction(1, 4)), mesh=(MeshAxis("x", 2, ("input",)),))))),
    # k, the skewed axis's window dimension, split over the meshed level's instances
    ("A[m,m+k] under a meshed middle level", "Z[m] += A[m,m+k] * B[k]", {"m": 3, "k": 3},
     Architecture("m", (Level("L2", None), Level("L1", 12, Link(Fraction(1, 2)), mesh=(MeshAxis("x", 3, ("all",)),)),
                        Level("L0", 5, Link(Fraction(1, 2)))))),
    # the window r+u hidden in a skewed axis (model/skew.box_windows), its r split over the instances, outputs reduced
    ("I[p+r+u,p] on a 3-instance L0", "O[p] += I[p+r+u,p] * W[r,u]", {"p": 2, "r": 3, "u": 2},
     Architecture("m", (Level("L1", None), Level("L0", 6, Link(Fraction(1, 4)), mesh=(MeshAxis("x", 3, ("output",)),))))),
]


@pytest.mark.parametrize("name, einsum, extents, arch", SKEW_ON_MESH, ids=[c[0] for c in SKEW_ON_MESH])
def test_a_skewed_axis_on_a_mesh_equals_the_spatial_brute_force(name, einsum, extents, arch):
    w = Workload.from_text("skew", einsum, extents)
    best = bfs.brute_force_spatial(w, arch, {}, Objective())
    result = solve(Problem(w, arch))
    assert result.proven
    assert tuple(p.value for p in result.phases) == best.value
    assert differences(result.schedule.predicted, replay(result.schedule, mode="count").figures) == []
    assert any(lv.spatial for lv in result.schedule.levels)  # the mesh is used, not a one-instance schedule


@pytest.mark.parametrize("case, dim", [(1, "k"), (2, "r")])
def test_the_skewed_window_is_split_over_the_mesh(case, dim):
    """The last two mesh cases are there for a window dimension split over the instances: k of A[m,m+k], and r
    of the window r+u hidden in I[p+r+u,p] (5 clocks; 6 with p split instead)."""
    name, einsum, extents, arch = SKEW_ON_MESH[case]
    result = solve(Problem(Workload.from_text("skew", einsum, extents), arch))
    assert any(sp.dim == dim for lv in result.schedule.levels for sp in lv.spatial)


def test_a_skewed_axis_without_a_hidden_window_is_refused_on_a_mesh():
    """``I[p+r+u,p+r]``: p and r always together (equal columns), u alone on its axis: no two-dimension window
    hides in it, so off a mesh a dimension is held whole (named), and on a mesh, which no brute force checks in
    that held family, the solver refuses it."""
    w = Workload.from_text("skew", "O[p] += I[p+r+u,p+r] * W[u]", {"p": 3, "r": 2, "u": 2})
    mesh = Architecture("m", (Level("L1", None), Level("L0", 8, Link(), mesh=(MeshAxis("x", 2, ("all",)),))))
    with pytest.raises(UnsupportedProblem, match="a skewed axis whose box does not determine its pieces"):
        solve(Problem(w, mesh))


FUSED_CASES = [
    # the diagonal's m is the chain's shared (tileable) dimension
    (["T[m,n] += A[m,m] * B[m,n]", "Y[m,p] += T[m,n] * C[n,p]"], {"m": 2, "n": 4, "p": 3},
     Architecture("f", (Level("DRAM", None), Level("L1", 16, Link(Fraction(1, 2), Fraction(1, 2), SEPARATE)),
                        Level("L0", 20, Link())))),
    # a diagonal of the intermediate's dimension n in the second stage
    (["T[m,n] += A[m,k] * B[k,n]", "Y[m,p] += T[m,n] * C[n,n,p]"], {"m": 2, "n": 3, "k": 3, "p": 4},
     Architecture("f", (Level("DRAM", None), Level("L1", 10, Link(Fraction(2), Fraction(1), SEPARATE)),
                        Level("L0", 3, Link(Fraction(2), Fraction(2), SEPARATE))), Compute((), Fraction(1, 2)))),
    # a skewed axis over the shared dimension m, k split below the fusion level
    (["T[m,n] += A[m+k,m] * B[k,n]", "Y[m,p] += T[m,n] * C[n,p]"], {"m": 3, "n": 2, "k": 3, "p": 2},
     Architecture("f", (Level("DRAM", None), Level("L1", 30, Link()), Level("L0", 6, Link())))),
    # the window r+u hidden in I[p+r+u,p], below the fusion level (u was held whole and the chain refused)
    (["O[p] += I[p+r+u,p] * W[r,u]", "Y[p,q] += O[p] * V[q]"], {"p": 3, "r": 2, "u": 2, "q": 2},
     Architecture("f", (Level("DRAM", None), Level("L1", 30, Link()), Level("L0", 6, Link())))),
]


@pytest.mark.parametrize("texts, extents, arch, split", [c + (d,) for c, d in zip(FUSED_CASES, "mnku")],
                         ids=["diagonal input", "diagonal in stage 2", "skewed input", "hidden window"])
def test_a_diagonal_in_a_fused_chain_equals_the_fused_brute_force(texts, extents, arch, split):
    """Fused at every level, the solver's optimum equals tests/brute_force_fused.py's (scored by the fused replay),
    infeasible exactly where the brute force finds nothing, and the schedule replays to its prediction."""
    g = WorkloadGraph.from_texts("diag", texts, extents)
    feasible, tiled = 0, set()
    for f in range(1, arch.depth):
        brute = bff.brute_force_fused(g, arch, f)
        o = solve_fused(g, arch, {}, f, SolveOptions(time_limit=60.0, workers=1, seed=0))
        if brute is None:
            assert o.status == "INFEASIBLE"
            continue
        feasible += 1
        assert o.status in ("OPTIMAL", "OPTIMAL_IN_FAMILY")  # fused stages: default positions (docs/fusion.md)
        assert bff.key_of(o.schedule.predicted) == brute.value
        assert differences(o.schedule.predicted, replay(o.schedule, mode="count").figures) == []
        tiled |= {d for st in o.schedule.stages for lv in st.levels for d, e in lv.tile if e < extents[d]}
    assert feasible
    assert split in tiled  # the repeated or skewed dimension is tiled at some fusion level, not held whole


def test_a_skewed_axis_without_a_hidden_window_is_refused_in_a_fused_chain():
    g = WorkloadGraph.from_texts("skew", ["O[p] += I[p+r+u,p+r] * W[u]", "Y[p,q] += O[p] * V[q]"],
                                 {"p": 3, "r": 2, "u": 2, "q": 2})
    arch = Architecture("f", (Level("DRAM", None), Level("L0", 60, Link())))
    o = solve_fused(g, arch, {}, 1, SolveOptions(time_limit=10.0, workers=1, seed=0))
    assert o.status != "OPTIMAL" and "a skewed axis whose box does not determine its pieces" in (o.reason or "")
