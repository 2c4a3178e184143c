"""The constraint presets of ``constraints/``: they load, solve, and the schedule obeys them.

For every preset and every small workload it applies to (a 12x10x7 matmul,
a 1-D convolution, the same convolution written in implicit-GEMM form with
dimensions m, n, k) on a three-level hierarchy:

- the preset loads and its names resolve (roles for tensors, innermost for
  levels); a preset that names dimensions the workload lacks is rejected,
  naming the field;
- ``solve`` proves an optimum, and the schedule replays to exactly its
  predicted figures;
- the constrained optimum is no better than the unconstrained one
  (lexicographically: time, then words);
- the returned schedule itself obeys the preset, checked from its tiles and
  orders, not from the solver's literals.

"Advancing" loop: a loop at level j over d advances when the parent tile's
extent is split into more than one piece, ``ceil(T[j-1][d] / T[j][d]) > 1``.
A loop with a single trip never moves a tile, so its place in the order
changes nothing and the checks skip it.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pytest

from mapsearch.errors import SpecError
from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import differences
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.replay import replay
from mapsearch.spec.constraints import Constraints, check_constraints, load_constraints, resolve_tensor
from mapsearch.solve.run import solve
from mapsearch.spec.load import architecture_from_dict
from mapsearch.spec.workload import Workload

ROOT = Path(__file__).resolve().parents[2]
PRESETS = ROOT / "constraints"
PRESET_NAMES = ("weight-stationary", "output-stationary", "input-stationary", "fixed-order-example", "tile-limits-example")

# L1 too small for the 12x10x7 matmul's 274 words, L0 for more than a few
# small tiles; links slow enough that orders and tiles matter.
ARCH = architecture_from_dict({
    "name": "three-level-small",
    "levels": [
        {"name": "L2", "capacity": None},
        {"name": "L1", "capacity": 160, "link": {"input_clocks_per_word": 2, "lines": "shared"}},
        {"name": "L0", "capacity": 24, "link": {"input_clocks_per_word": 1, "output_clocks_per_word": 1, "lines": "separate"}},
    ],
    "compute": {"block": {}, "clocks_per_call": 1},
    "double_buffering": False,
})

WORKLOADS = {
    "matmul": Workload.from_text("matmul-12x10x7", "Z[m,n] += A[m,k] * B[k,n]", {"m": 12, "n": 10, "k": 7}),
    "conv": Workload.from_text("conv1d", "O[k,p] += I[c,p+r] * W[k,c,r]", {"k": 6, "c": 5, "p": 10, "r": 3}),
    "conv-gemm": Workload.from_text("conv1d-gemm", "O[m,n] += I[k,n+r] * W[m,k,r]", {"m": 6, "n": 10, "k": 5, "r": 3}),
}

# Presets that name dimensions (not roles) and so do not apply to the conv
# written with dimensions k, c, p, r: (preset, the field the error names).
REJECTED = {
    ("fixed-order-example", "conv"): "orders.innermost",
    ("tile-limits-example", "conv"): "tiles.innermost.m",
}

def _cases():
    out = []
    for preset in PRESET_NAMES:
        for wname in WORKLOADS:
            if (preset, wname) in REJECTED:
                continue
            out.append(pytest.param(preset, wname, id=f"{preset}-{wname}"))
    return out


# --------------------------------------------------------------------------- helpers


def trips(s: Schedule, level: int, dim: str) -> int:
    """Trips of the level's loop over ``dim`` inside one full parent tile."""
    return math.ceil(s.tile_extents(level - 1)[dim] / s.tile_extents(level)[dim])


def advancing_order(s: Schedule, level: int) -> list[str]:
    """The level's loop order (outer -> inner) without the loops that have a single trip."""
    return [d for d in s.levels[level].order if trips(s, level, d) > 1]


def innermost_level(s: Schedule) -> int:
    return len(s.levels) - 1


def obeys_stationary(s: Schedule, tensor: str) -> tuple[bool, str]:
    j = innermost_level(s)
    order = advancing_order(s, j)
    if not order:
        return True, "no loop advances"
    inner = order[-1]
    return inner not in s.workload.tensor(tensor).dims, f"innermost advancing loop {inner!r} of {order} at {s.levels[j].level}"


def lex(result) -> tuple[Fraction, ...]:
    return tuple(p.value for p in result.phases)


_FREE: dict[str, object] = {}


def unconstrained(wname: str):
    if wname not in _FREE:
        _FREE[wname] = solve(Problem(WORKLOADS[wname], ARCH))
    return _FREE[wname]


def preset(name: str) -> Constraints:
    return load_constraints(PRESETS / f"{name}.yaml")


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_preset_loads_and_documents_itself(name):
    path = PRESETS / f"{name}.yaml"
    text = path.read_text()
    assert text.startswith("#"), f"{path.name} needs a header comment"
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert len(header) >= 5 and any("comes from" in line for line in header), f"{path.name}: say what it does and where it comes from"
    c = load_constraints(path)
    assert c.name == name
    assert c.tiles or c.orders or c.keep or c.stationary


@pytest.mark.parametrize("name", ("weight-stationary", "output-stationary", "input-stationary"))
def test_stationary_presets_use_roles_only(name):
    c = preset(name)
    assert c.stationary and not c.tiles and not c.orders
    for tensor, level in c.stationary:
        assert tensor in ("output", "weights", "inputs") and level in ("innermost", "outermost")
    for w in WORKLOADS.values():
        check_constraints(c, w, ARCH, name)


@pytest.mark.parametrize(("name", "wname"), list(REJECTED))
def test_dimension_named_presets_reject_other_dimension_names(name, wname):
    with pytest.raises(SpecError) as err:
        check_constraints(preset(name), WORKLOADS[wname], ARCH, f"{name}.yaml")
    assert err.value.field == REJECTED[(name, wname)]


@pytest.mark.parametrize(("name", "wname"), _cases())
def test_preset_solves_replays_and_costs_no_less(name, wname):
    c = preset(name)
    w = WORKLOADS[wname]
    check_constraints(c, w, ARCH, name)
    result = solve(Problem(w, ARCH), c)
    assert result.proven
    s = result.schedule
    assert differences(s.predicted, replay(s, mode="count").figures) == []
    assert result.objective_value == s.predicted.words_total
    assert result.phases[0].value == s.predicted.time
    assert lex(result) >= lex(unconstrained(wname))


@pytest.mark.parametrize(("name", "wname"), _cases())
def test_schedule_obeys_preset(name, wname):
    c = preset(name)
    w = WORKLOADS[wname]
    s = solve(Problem(w, ARCH), c).schedule
    j = innermost_level(s)
    for role, level in c.stationary:
        assert level == "innermost"
        ok, why = obeys_stationary(s, resolve_tensor(role, w, name, "stationary"))
        assert ok, f"{name}: {why} indexes the {role}"
    for level, dims in c.orders:
        assert level == "innermost"
        order = advancing_order(s, j)
        listed = [d for d in dims if d in order]
        assert [d for d in order if d in listed] == listed, f"{name}: advancing order {order} breaks {list(dims)}"
    for lim in c.tiles:
        assert lim.level == "innermost"
        t = s.tile_extents(j)[lim.dim]
        assert lim.lo <= t <= lim.hi, f"{name}: innermost {lim.dim} = {t}, limits {lim.lo}..{lim.hi}"


def test_fixed_order_binds_on_the_matmul():
    """Where the unconstrained innermost order differs, the preset changes it (and the cost may rise)."""
    s = solve(Problem(WORKLOADS["matmul"], ARCH), preset("fixed-order-example")).schedule
    order = advancing_order(s, innermost_level(s))
    assert order == [d for d in ("m", "n", "k") if d in order]


def test_stationary_minimal_reproducer():
    """Regression (stationarity once counted a single-trip loop as inner). Smallest case found: Z[m,n] += A[m,k]*B[k,n], M=1, N=2, K=2, two levels (L0 holds 6 words).

    With ``stationary: [{tensor: output, level: innermost}]`` the solver returns
    L0 tiles m=1, n=1, k=2 with order (n, k, m): k has one trip (2 of 2) and m
    has extent 1, so n is the innermost loop that advances, and n indexes Z:
    Z's tile changes on every step. A truly output-stationary schedule exists
    (tiles 1x1x1, order n, k), so the solver is not forced into this.
    """
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 1, "n": 2, "k": 2})
    arch = architecture_from_dict({
        "name": "two-level",
        "levels": [{"name": "L1", "capacity": None},
                   {"name": "L0", "capacity": 6, "link": {"input_clocks_per_word": 1, "lines": "shared"}}],
        "compute": {"block": {}, "clocks_per_call": 1}, "double_buffering": False,
    })
    s = solve(Problem(w, arch), Constraints(stationary=(("output", "innermost"),))).schedule
    ok, why = obeys_stationary(s, "Z")
    assert ok, why
