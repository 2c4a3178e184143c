"""The chain check walks each schedule up to renaming once (issue #16): renamed copies get the walk's figures named
back, equal field for field to walking them, and a chain of identical einsums walks one stage, not all.

A chain of einsums that are renamed copies of each other (AccelForge's
``matmuls.yaml``: ``T_i[m,n_i] += T_(i-1)[m,n_(i-1)] * W_i[n_(i-1),n_i]``)
spent 0.3 s a stage on walks of the same work under other names.
``schedule.canonical.canonical_form`` names a schedule's dimensions and
tensors by first appearance; ``chain_replay._Walks`` walks one schedule per
canonical form in count mode and renames its figures for the others.
"""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from mapsearch import api
from mapsearch.dram.layout import row_major
from mapsearch.schedule.canonical import canonical_form, rename_figures
from mapsearch.schedule.figures import Figures
from mapsearch.schedule.json_io import load_schedule
from mapsearch.schedule.schedule import DramPlan, Schedule, SpatialSplit
from mapsearch.sim.errors import CapacityError
from mapsearch.sim.replay import replay, replay_unfused
from mapsearch.solve import chain_replay
from mapsearch.spec.architecture import MeshAxis, SplitBound
from mapsearch.spec.einsum import AffineIndex, Einsum, TensorAccess
from mapsearch.spec.workload import Workload

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
AF = ROOT / "tests" / "data" / "peers" / "accelforge"
ROLES = ("all", "none", "input", "output")


# ---------------------------------------------------------------- a renamer, written apart from the one under test
def rename(s: Schedule, dims: dict[str, str], tensors: dict[str, str]) -> Schedule:
    """``s`` with every dimension ``d`` named ``dims[d]`` and every tensor ``t`` named ``tensors[t]`` (names not
    in them kept), wherever the schedule, its workload, its prediction or its architecture names them."""
    d = lambda n: dims.get(n, n)  # noqa: E731
    t = lambda n: n if n in ROLES else tensors.get(n, n)  # noqa: E731

    def access(a: TensorAccess) -> TensorAccess:
        return TensorAccess(t(a.name), tuple(AffineIndex(tuple((d(x), c) for x, c in ix.terms)) for ix in a.indices))

    wl = s.workload
    workload = Workload(wl.name, Einsum(access(wl.einsum.output), tuple(access(a) for a in wl.einsum.inputs)),
                        tuple((d(x), e) for x, e in wl.extents))
    levels = tuple(replace(lm, tile=tuple((d(x), e) for x, e in lm.tile), order=tuple(d(x) for x in lm.order),
                           keep=frozenset(t(x) for x in lm.keep),
                           spatial=tuple(replace(sp, dim=d(sp.dim)) for sp in lm.spatial),
                           positions=tuple((t(x), p) for x, p in lm.positions)) for lm in s.levels)
    arch = s.architecture
    arch = replace(arch, compute=replace(arch.compute, block=tuple((d(x), b) for x, b in arch.compute.block)),
                   levels=tuple(replace(lv, mesh=tuple(
                       replace(a, may_reuse=tuple(t(x) for x in a.may_reuse),
                               must_reuse=tuple(t(x) for x in a.must_reuse),
                               split_bounds=tuple(replace(b, dims=tuple(d(x) for x in b.dims)) for b in a.split_bounds))
                       for a in lv.mesh)) if lv.mesh else lv for lv in arch.levels))
    dram = s.dram and replace(s.dram, layouts=tuple((t(x), v) for x, v in s.dram.layouts),
                              row_openings=s.dram.row_openings and tuple((t(x), n) for x, n in s.dram.row_openings))
    predicted = s.predicted and rename_figures(s.predicted, {x: t(x) for x in wl.tensor_names})
    return Schedule(workload, arch, levels, tuple((t(x), h) for x, h in s.homes), predicted, dram)


DIM_NAMES = ["m", "n", "k", "p", "q", "r", "s", "c", "x", "n9", "n10", "a0", "zz"]
TENSOR_NAMES = ["A", "B", "Z", "I", "W", "O", "T0", "T9", "T10", "Q", "y"]


def random_renaming(s: Schedule, rng: random.Random) -> tuple[dict[str, str], dict[str, str]]:
    """An injective renaming of ``s``'s dimensions and tensors, often a permutation of its own names (swaps change
    every order by name)."""
    dims, tensors = s.workload.dims, tuple(dict.fromkeys(s.workload.tensor_names))
    dim_pool = list(dims) + rng.sample([n for n in DIM_NAMES if n not in dims], 3)
    tensor_pool = list(tensors) + rng.sample([n for n in TENSOR_NAMES if n not in tensors], 3)
    return dict(zip(dims, rng.sample(dim_pool, len(dims)))), dict(zip(tensors, rng.sample(tensor_pool, len(tensors))))


# ---------------------------------------------------------------- schedules of several kinds
def _array_with_named_reuse() -> Schedule:
    """The 4x8x8 array's schedule on an architecture whose meshes name tensors and bound splits by dimension."""
    s = load_schedule(EXAMPLES / "array" / "matmul-100x37x61-4x8x8.schedule.json")
    named = {"c": ("A",), "x": ("A", "output"), "y": ("Z",)}
    levels = tuple(replace(lv, mesh=tuple(replace(a, may_reuse=named[a.name],
                                                  split_bounds=(SplitBound(("m", "k"), "product<=", 64),))
                                          for a in lv.mesh)) if lv.mesh else lv for lv in s.architecture.levels)
    return replace(s, architecture=replace(s.architecture, levels=levels))


def _with_dram_plan() -> Schedule:
    s = load_schedule(EXAMPLES / "worked-example-mkn.schedule.json")
    return replace(s, dram=DramPlan((("A", row_major(1, 0)), ("Z", row_major())), "layout", (("A", 3), ("B", 5))))


def _solved(text: str, extents: dict[str, int], arch: str) -> Schedule:
    return api.solve(Workload.from_text("w", text, extents), EXAMPLES / arch, work_limit=1).schedule


CASES = {
    "matmul": lambda: load_schedule(EXAMPLES / "worked-example-mnk.schedule.json"),
    "matmul, block op": lambda: _solved("Z[m,n] += A[m,k] * B[k,n]", {"m": 12, "n": 8, "k": 8}, "arch-block-op.yaml"),
    "conv1d stride 2, positions": lambda: _solved("O[k,p] += I[c,p*2+r] * W[k,c,r]", {"k": 2, "c": 2, "p": 6, "r": 3},
                                                  "arch-three-level.yaml"),
    "conv2d windows, mesh": lambda: load_schedule(EXAMPLES / "dram" / "row-thrashing" / "schedule.json"),
    "placed": lambda: load_schedule(EXAMPLES / "placed-8x8x8.schedule.json"),
    "homes in L1": lambda: load_schedule(EXAMPLES / "catalogue" / "input-in-l1.schedule.json"),
    "output home in L1": lambda: load_schedule(EXAMPLES / "catalogue" / "output-in-l1.schedule.json"),
    "array, named reuse": _array_with_named_reuse,
    "dram plan": _with_dram_plan,
}


class Counted:
    """``chain_replay.replay``, counting its walks."""

    def __init__(self):
        self.walked: list = []

    def __call__(self, schedule, **kw):
        self.walked.append(schedule)
        return replay(schedule, **kw)


@pytest.mark.parametrize("case", CASES)
def test_a_renamed_schedule_gets_the_figures_its_own_walk_counts(monkeypatch, case: str) -> None:
    s = CASES[case]()
    rng = random.Random(case)
    counted = Counted()
    monkeypatch.setattr(chain_replay, "replay", counted)
    walks = chain_replay._Walks("count", {})
    first = walks(s)
    assert first == replay(s, mode="count")
    for n in range(6):
        other = rename(s, *random_renaming(s, rng))
        assert canonical_form(other).key == canonical_form(s).key
        direct = replay(other, mode="count")
        assert walks(other) == direct  # every field, every tuple in its order, the tensors' own names
        assert [tt.tensor for tt in direct.figures.links[0].tensors] == list(other.workload.tensor_names)
    assert counted.walked == [s]
    # A renamed copy seen first is the one walked; the original's figures are named back from it.
    other = rename(s, *random_renaming(s, rng))
    walks, counted.walked = chain_replay._Walks("count", {}), []
    assert walks(other) == replay(other, mode="count") and walks(s) == first and counted.walked == [other]


def test_a_walk_that_refuses_is_not_shared_each_copy_names_its_own_tensor(monkeypatch) -> None:
    s = load_schedule(ROOT / "tests" / "data" / "hostile" / "s-capacity-overflow.json")
    other = rename(s, {"m": "x"}, {"A": "P", "B": "Q", "Z": "R"})
    counted = Counted()
    monkeypatch.setattr(chain_replay, "replay", counted)
    walks = chain_replay._Walks("count", {})
    with pytest.raises(CapacityError, match="no room for B"):
        walks(s)
    with pytest.raises(CapacityError, match="no room for Q"):
        walks(other)
    assert counted.walked == [s, other]


def test_data_mode_walks_every_schedule(monkeypatch) -> None:
    s = CASES["matmul"]()
    counted = Counted()
    monkeypatch.setattr(chain_replay, "replay", counted)
    walks = chain_replay._Walks("data", {})
    walks(s), walks(rename(s, {}, {"A": "B", "B": "A"}))
    assert len(counted.walked) == 2


# ---------------------------------------------------------------- what is not a renaming gets another key
def _not_renamings(s: Schedule) -> dict[str, Schedule]:
    lm = s.levels[1]
    (d0, e0), (d1, e1) = lm.tile[:2]
    wl = s.workload
    out = {
        "a tile": replace(s, levels=(s.levels[0], replace(lm, tile=((d0, e0 + 1),) + lm.tile[1:])) + s.levels[2:]),
        "another tile": replace(s, levels=(s.levels[0], replace(lm, tile=((d0, e0), (d1, e1 - 1)) + lm.tile[2:]))
                                + s.levels[2:]),
        "an order": replace(s, levels=(s.levels[0], replace(lm, order=lm.order[::-1])) + s.levels[2:]),
        "a keep": replace(s, levels=(s.levels[0], replace(lm, keep=lm.keep - {wl.einsum.inputs[0].name}))
                          + s.levels[2:]),
        "a position": replace(s, levels=(s.levels[0], replace(lm, positions=((wl.einsum.inputs[0].name, 1),)))
                              + s.levels[2:]),
        "a home": replace(s, homes=tuple((t, s.levels[1].level if t == wl.einsum.output.name else h)
                                         for t, h in s.homes)),
        "an extent": replace(s, workload=replace(wl, extents=((wl.extents[0][0], wl.extents[0][1] + 1),)
                                                 + wl.extents[1:])),
        "a stride": replace(s, workload=replace(wl, einsum=replace(wl.einsum, inputs=(
            replace(wl.einsum.inputs[0], indices=(AffineIndex(((wl.einsum.inputs[0].indices[0].terms[0][0], 2),)),)
                    + wl.einsum.inputs[0].indices[1:]),) + wl.einsum.inputs[1:]))),
        "a transposed input": replace(s, workload=replace(wl, einsum=replace(wl.einsum, inputs=(
            replace(wl.einsum.inputs[0], indices=wl.einsum.inputs[0].indices[::-1]),) + wl.einsum.inputs[1:]))),
        "a DRAM layout": replace(s, dram=DramPlan(((wl.einsum.inputs[0].name, row_major(1, 0)),))),
        "a block": replace(s, architecture=replace(s.architecture, compute=replace(s.architecture.compute,
                                                                                   block=((d0, 2),)))),
        "a clock": replace(s, architecture=replace(s.architecture, compute=replace(s.architecture.compute,
                                                                                   clocks_per_call=Fraction(2)))),
        "a split": replace(s, levels=(s.levels[0], replace(lm, spatial=(SpatialSplit(d0, 1, "x"),))) + s.levels[2:]),
    }
    return out


def test_a_schedule_that_differs_in_more_than_names_gets_another_key() -> None:
    s = CASES["matmul"]()
    key = canonical_form(s).key
    variants = _not_renamings(s)
    keys = {name: canonical_form(v).key for name, v in variants.items()}
    assert all(k != key for k in keys.values()), [n for n, k in keys.items() if k == key]
    assert len(set(keys.values())) == len(keys)
    # Consistent renamings of each are still one key apiece.
    for name, v in variants.items():
        assert canonical_form(rename(v, {"m": "n", "n": "m"}, {"A": "B", "B": "A"})).key == keys[name], name
    # The prediction and the workload's name are not read by a walk: they are no part of the key.
    assert canonical_form(replace(s, predicted=None, workload=replace(s.workload, name="other"))).key == key
    # A reuse list naming a tensor differs from one naming a role.
    a = _array_with_named_reuse()
    lv = a.architecture.levels[2]
    roles = replace(a, architecture=replace(a.architecture, levels=a.architecture.levels[:2] + (
        replace(lv, mesh=(MeshAxis("c", 4, ("input",)),)),) + a.architecture.levels[3:]))
    assert canonical_form(roles).key != canonical_form(a).key


@pytest.mark.parametrize("tensors, dims", [
    ({"A": "input"}, {}),  # a tensor named like a reuse role
    ({"A": "k"}, {}),  # a tensor named like a dimension
    ({}, {"m": "L1"}),  # a dimension named like a level
])
def test_names_that_read_two_ways_have_no_form_and_are_walked_on_their_own(tensors, dims) -> None:
    s = rename(CASES["matmul"](), dims, tensors)
    assert canonical_form(s) is None


def test_figures_with_a_tensor_the_renaming_lacks_are_not_renamed() -> None:
    f = replay(CASES["matmul"](), mode="count").figures
    assert rename_figures(f, {"A": "P", "B": "Q"}) is None
    assert isinstance(rename_figures(f, {"A": "P", "B": "Q", "Z": "R"}), Figures)


# ---------------------------------------------------------------- a chain of renamed copies
@pytest.fixture(scope="module")
def matmuls():
    """AccelForge's matmuls.yaml, 4 einsums, each a renamed copy of the first, on its simple architecture."""
    p = api.load_problem(AF / "workloads" / "matmuls.yaml", AF / "arches" / "simple.yaml",
                         variables={"N_EINSUMS": 4, "M": 4, "KN": 2})
    return api.solve_chain(p.workload, p.architecture, work_limit=0.5, workers=1, seed=0, replay_mode=None)


def test_a_chain_of_renamed_copies_walks_fewer_schedules_with_every_check_the_same(monkeypatch, matmuls) -> None:
    counted = Counted()
    monkeypatch.setattr(chain_replay, "replay", counted)
    shared = chain_replay.replay_checks(matmuls, "count")
    walked, counted.walked = counted.walked, []
    monkeypatch.setattr(chain_replay, "canonical_form", lambda s: None)  # each schedule walked on its own
    alone = chain_replay.replay_checks(matmuls, "count")
    assert shared == alone and shared.ok
    stages = [s.schedule for s in matmuls.unfused.stages]
    assert len(walked) < len(counted.walked)
    assert sum(s in counted.walked for s in stages) == 4 and sum(s in walked for s in stages) == 1


def test_the_unfused_sum_is_replay_unfused_s(matmuls) -> None:
    stages = [s.schedule for s in matmuls.unfused.stages]
    assert chain_replay._Walks("count", {}).unfused(matmuls.graph, stages) == replay_unfused(matmuls.graph, stages,
                                                                                                "count")
