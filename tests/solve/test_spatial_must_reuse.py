"""``must_reuse`` in the solver: a split on an axis never indexes a tensor its instances must share.

A 4x4x4 matmul on 4 instances, compute bound (4 clocks per MAC, links of
1/16 clock per word): split 4 ways, the busiest instance does 16 calls, 64
clocks; unsplit, 64 calls, 256 clocks. With ``must_reuse: output`` the
instances must share Z, so only k (which does not index Z) may be split;
with ``must_reuse: A, B`` (every input) no dimension may be split (each
indexes A or B). The brute
force (``tests/brute_force_spatial.py``) applies the same rule to its
enumeration and agrees on every optimum; predicted == replayed.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import brute_force as bf  # noqa: E402
import brute_force_spatial as bfs  # noqa: E402

from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import Link, MeshAxis  # noqa: E402
from mapsearch.spec.tree import tree_from_text  # noqa: E402
from mapsearch.spec.tree_paths import flatten, path_architecture  # noqa: E402
from tests.solve.test_spatial_vs_brute_force import arch, matmul  # noqa: E402

FAST = Link(Fraction(1, 16), Fraction(1, 16))


def case(must: tuple[str, ...], sizes=(4,)):
    mesh = tuple(MeshAxis(name, size, ("all",), must) for name, size in zip(("x", "y"), sizes))
    return matmul(4, 4, 4), arch([None, 3], 1, mesh, [None, FAST], clocks=Fraction(4))


def solved(w, a):
    result = solve(Problem(w, a), options=SolveOptions(time_limit=60, workers=1, seed=0))
    assert differences(result.schedule.predicted, bf.replay_figures(result.schedule)) == []
    return result


@pytest.mark.parametrize("must, split_dims, clocks", [
    ((), None, 64),             # 64 MACs over 4 instances, 16 calls each, 4 clocks per call
    (("output",), {"k"}, 64),   # only k may be split: Z is shared (reduced) along the axis
    (("A", "B"), set(), 256),   # every dimension indexes A or B: nothing may be split
])
def test_must_reuse_limits_the_splits(must, split_dims, clocks) -> None:
    w, a = case(must)
    result = solved(w, a)
    splits = {sp.dim for sp in result.schedule.levels[1].spatial}
    if split_dims is not None:
        assert splits <= split_dims
        assert all(not any(sp.dim in w.tensor(t).dims for t in must if t in w.tensor_names)
                   for sp in result.schedule.levels[1].spatial)
    assert result.phases[0].value == clocks
    assert tuple(p.value for p in result.phases) == bfs.brute_force_spatial(w, a).value


def test_must_reuse_on_one_axis_of_two() -> None:
    # 2x2 mesh; x must share the output: m and n (which index Z) go on y only, k may go on either.
    w = matmul(4, 4, 4)
    a = arch([None, 3], 1, (MeshAxis("x", 2, ("all",), ("output",)), MeshAxis("y", 2, ("all",))), [None, FAST],
             clocks=Fraction(4))
    result = solved(w, a)
    for sp in result.schedule.levels[1].spatial:
        assert sp.axis == "y" or sp.dim == "k"
    assert tuple(p.value for p in result.phases) == bfs.brute_force_spatial(w, a).value
    assert result.phases[0].value == 64


# A tree of the case above; ``fanout``: the fields of its one fanout dimension.
TREE = """\
arch:
  nodes:
  - !Memory {{name: L1, size: inf}}
  - !Memory
    name: L0
    size: 3
    input_clocks_per_word: 1/16
    output_clocks_per_word: 1/16
    spatial:
    - {{{fanout}}}
  - !Compute {{name: mac, clocks_per_call: 4}}
"""


def test_tree_must_reuse_reaches_the_solver() -> None:
    tree = tree_from_text(TREE.format(fanout="name: x, fanout: 4, may_reuse: All, must_reuse: input"), "t.yaml")
    (path,) = flatten(tree)
    w = matmul(4, 4, 4)
    a = path_architecture(path, w)
    assert a.levels[1].mesh[0].must_reuse == ("A", "B")
    result = solved(w, a)
    assert result.schedule.levels[1].spatial == () and result.phases[0].value == 256
