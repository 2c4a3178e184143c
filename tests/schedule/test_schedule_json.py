"""Schedule files: round trips, the bundled worked example, and one line per bad schedule."""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mapsearch.errors import SpecError
from mapsearch.schedule import json_io
from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic
from mapsearch.schedule.json_io import load_schedule, save_schedule, schedule_from_dict, schedule_to_dict
from mapsearch.schedule.legality import violations
from mapsearch.schedule.schedule import LevelMapping, Schedule
from mapsearch.spec.architecture import Architecture, Compute, Level, Link
from mapsearch.spec.load import load_architecture, load_workload
from mapsearch.spec.workload import Workload

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def worked_example(order: tuple[str, ...]) -> Schedule:
    w = load_workload(EXAMPLES / "matmul-4x4x4.yaml")
    a = load_architecture(EXAMPLES / "arch-worked-example.yaml")
    levels = (
        LevelMapping("L1", (("m", 4), ("n", 4), ("k", 4))),
        LevelMapping("L0", (("m", 2), ("n", 2), ("k", 2)), order, frozenset("ABZ")),
    )
    return Schedule(w, a, levels, (("A", "L1"), ("B", "L1"), ("Z", "L1")))


def figures(link: LinkFigures) -> Figures:
    return Figures((link,), op_calls=64, compute_time=Fraction(64), macs=64, block_macs=1, occupancy=(("L1", 48), ("L0", 12)))


# ------------------------------------------------------------- the examples


def test_worked_example_mnk_file():
    s = load_schedule(EXAMPLES / "worked-example-mnk.schedule.json")
    link = LinkFigures("L1->L0", 64, 16, Fraction(80), (TensorTraffic("A", 32, 0), TensorTraffic("B", 32, 0), TensorTraffic("Z", 0, 16)))
    assert s == worked_example(("m", "n", "k")).with_predicted(figures(link))
    assert s.predicted.time == 80 and s.predicted.utilization == Fraction(4, 5)
    assert dict(s.predicted.occupancy)["L0"] == 12 == s.architecture.levels[1].capacity


def test_worked_example_mkn_file():
    s = load_schedule(EXAMPLES / "worked-example-mkn.schedule.json")
    link = LinkFigures("L1->L0", 64, 32, Fraction(96), (TensorTraffic("A", 16, 0), TensorTraffic("B", 32, 0), TensorTraffic("Z", 16, 32)))
    assert s == worked_example(("m", "k", "n")).with_predicted(figures(link))
    assert s.predicted.utilization == Fraction(2, 3)


def test_example_files_are_what_save_writes(tmp_path):
    for name in ("worked-example-mnk.schedule.json", "worked-example-mkn.schedule.json"):
        s = load_schedule(EXAMPLES / name)
        save_schedule(s, tmp_path / name)
        assert (tmp_path / name).read_text() == (EXAMPLES / name).read_text()


# ------------------------------------------------------------- round trips


def test_round_trip_with_fraction_costs(tmp_path):
    w = Workload.from_text("conv", "O[k,p] += I[c,p*2+r] * W[k,c,r]", {"k": 8, "c": 4, "p": 16, "r": 3})
    a = Architecture(
        "frac",
        (
            Level("DRAM", None),
            Level("L1", 1000, Link(Fraction(1, 3), Fraction(5, 2), "separate")),
            Level("L0", 50, Link(Fraction(1, 2), Fraction(1, 2), "shared"), instances=4),
        ),
        Compute((("k", 2),), Fraction(3, 2)),
        double_buffering=True,
    )
    levels = (
        LevelMapping("DRAM", (("k", 8), ("p", 16), ("c", 4), ("r", 3))),
        LevelMapping("L1", (("k", 8), ("p", 5), ("c", 4), ("r", 3)), ("p", "k", "c", "r"), frozenset({"I", "W"})),
        LevelMapping("L0", (("k", 3), ("p", 2), ("c", 1), ("r", 3)), ("c", "k", "p", "r"), frozenset({"I", "W", "O"})),
    )
    pred = Figures(
        (
            LinkFigures("DRAM->L1", 10, 20, Fraction(50, 1), (TensorTraffic("I", 10, 0), TensorTraffic("O", 0, 20))),
            LinkFigures("L1->L0", 7, 3, Fraction(5, 1), ()),
        ),
        op_calls=99,
        compute_time=Fraction(297, 2),
        macs=1536,
        block_macs=2,
        occupancy=(("DRAM", 128), ("L1", 300), ("L0", 40)),
    )
    s = Schedule(w, a, levels, (("O", "DRAM"),), pred)
    assert violations(s) == []
    data = schedule_to_dict(s)
    assert data["architecture"]["levels"][1]["link"]["input_clocks_per_word"] == "1/3"
    assert data["predicted"]["compute_time"] == "297/2"
    assert schedule_from_dict(data, "s.json") == s
    # Through real JSON text and a file, too.
    assert schedule_from_dict(json.loads(json.dumps(data)), "s.json") == s
    save_schedule(s, tmp_path / "s.json")
    assert load_schedule(tmp_path / "s.json") == s
    assert load_schedule(tmp_path / "s.json").with_predicted(None) == s.with_predicted(None)


@st.composite
def schedules(draw) -> Schedule:
    dims = ("m", "n", "k")
    extents = {d: draw(st.integers(1, 40)) for d in dims}
    w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", extents)
    depth = draw(st.integers(2, 4))
    cost = st.fractions(min_value=Fraction(1, 64), max_value=64, max_denominator=64)
    levels = [Level("T", draw(st.none() | st.integers(1, 10**6)))]
    for i in range(1, depth):
        link = Link(draw(cost), draw(cost), draw(st.sampled_from(["shared", "separate"])))
        levels.append(Level(f"L{depth - 1 - i}", draw(st.integers(1, 10**6)), link, draw(st.integers(1, 8))))
    block = tuple((d, draw(st.integers(1, 4))) for d in draw(st.lists(st.sampled_from(dims), unique=True)))
    arch = Architecture("a", tuple(levels), Compute(block, draw(cost)), draw(st.booleans()))
    tiles = [dict(extents)]
    for _ in range(1, depth):
        tiles.append({d: draw(st.integers(1, tiles[-1][d])) for d in draw(st.permutations(dims))})
    mappings = [LevelMapping("T", tuple(tiles[0].items()))]
    for i in range(1, depth):
        keep = frozenset(draw(st.sets(st.sampled_from("ABZ")))) if i < depth - 1 else frozenset("ABZ")
        mappings.append(LevelMapping(levels[i].name, tuple(tiles[i].items()), tuple(draw(st.permutations(dims))), keep))
    homes = tuple(draw(st.dictionaries(st.sampled_from("ABZ"), st.just("T"))).items())
    predicted = None
    if draw(st.booleans()):
        count = st.integers(0, 10**9)
        links = tuple(
            LinkFigures(
                arch.link_name(i),
                draw(count),
                draw(count),
                draw(st.fractions(min_value=0, max_value=10**6)),
                tuple(TensorTraffic(t, draw(count), draw(count)) for t in draw(st.permutations("ABZ"))),
            )
            for i in range(1, depth)
        )
        predicted = Figures(
            links,
            draw(count),
            draw(st.fractions(min_value=0, max_value=10**6)),
            w.macs,
            arch.compute.block_macs,
            tuple((lv.name, draw(count)) for lv in levels),
        )
    return Schedule(w, arch, tuple(mappings), homes, predicted)


@settings(max_examples=150, deadline=None)
@given(schedules())
def test_hypothesis_round_trip(s):
    assert violations(s) == []
    data = json.loads(json_io.dumps_schedule(s))
    assert schedule_from_dict(data, "s.json") == s


# ------------------------------------------------------------- saving


def test_save_leaves_no_partial_file_on_error(tmp_path, monkeypatch):
    s = worked_example(("m", "n", "k"))
    target = tmp_path / "s.json"
    target.write_text("old content")

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    import mapsearch.atomic

    monkeypatch.setattr(mapsearch.atomic.os, "fsync", broken_fsync)
    with pytest.raises(SpecError, match=r"s\.json: cannot write: No space left on device$"):
        save_schedule(s, target)
    assert target.read_text() == "old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def test_save_into_a_missing_folder_is_one_line(tmp_path):
    with pytest.raises(SpecError, match=r"cannot write"):
        save_schedule(worked_example(("m", "n", "k")), tmp_path / "no" / "s.json")


# ------------------------------------------------------------- bad schedules


def good() -> dict:
    return json.loads((EXAMPLES / "worked-example-mnk.schedule.json").read_text())


def error_of(data: object) -> str:
    with pytest.raises(SpecError) as info:
        schedule_from_dict(data, "s.json")
    message = str(info.value)
    assert "\n" not in message and message.startswith("s.json: "), message
    return message[len("s.json: ") :]


def edit(change) -> dict:
    data = good()
    change(data)
    return data


def test_tile_larger_than_parent():
    def change(d):
        d["levels"][1]["tile"]["m"] = 9

    assert error_of(edit(change)) == "levels[1].tile.m: expected 1 <= tile <= 4 (the parent tile), got 9"


def test_tile_zero():
    def change(d):
        d["levels"][1]["tile"]["n"] = 0

    assert error_of(edit(change)) == "levels[1].tile.n: expected int >= 1, got 0"


def test_top_tile_must_be_the_extent():
    def change(d):
        d["levels"][0]["tile"]["k"] = 3

    assert error_of(edit(change)).startswith("levels[0].tile.k: the top tile must be the whole extent 4")


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda d: d["levels"][1]["tile"].update(x=1), "levels[1].tile.x: unknown dimension; expected one of m, n, k"),
        (lambda d: d["levels"][1]["tile"].pop("k"), "levels[1].tile: expected the dims ['m', 'n', 'k'], got ['m', 'n']"),
        (lambda d: d["levels"][1]["tile"].update(m="2"), "levels[1].tile.m: expected int >= 1, got '2'"),
        (lambda d: d["levels"][1]["tile"].update(m=2.0), "levels[1].tile.m: expected int >= 1, got 2.0"),
        (lambda d: d["levels"][1].update(order=["m", "q", "k"]), "levels[1].order[1]: unknown dimension 'q'; expected one of m, n, k"),
        (lambda d: d["levels"][1].update(order=["m", "n"]), "levels[1].order: expected a permutation of ['k', 'm', 'n'], got ['m', 'n']"),
        (lambda d: d["levels"][1].update(order="mnk"), "levels[1].order: expected a list of dimension names, got 'mnk'"),
        (lambda d: d["levels"][0].update(order=["m", "n", "k"]), "levels[0].order: the top level has no loops; expected []"),
        (lambda d: d["levels"][1].update(keep=["A", "B"]), "levels[1].keep: every tensor must be kept at the innermost level; Z is not"),
        (lambda d: d["levels"][1].update(keep=["A", "B", "Z", "Q"]), "levels[1].keep[3]: unknown tensor 'Q'; expected one of A, B, Z"),
        (lambda d: d["levels"][0].update(keep=["A"]), "levels[0].keep: A is kept at or above its home L1"),
        (lambda d: d["levels"][1].update(name="L9"), "levels: expected one mapping per level ['L1', 'L0'], got ['L1', 'L9']"),
        (lambda d: d["levels"].pop(), "levels: expected one mapping per level ['L1', 'L0'], got ['L1']"),
        (lambda d: d["homes"].update(A="L7"), "homes.A: unknown level 'L7'; expected one of ['L0', 'L1']"),
        (lambda d: d["homes"].update(Q="L1"), "homes.Q: unknown tensor; expected one of ['A', 'B', 'Z']"),
        (lambda d: d.update(version=2), "version: expected 1 (the schedule format this mapsearch reads), got 2"),
        (lambda d: d.update(version="1"), "version: expected 1 (the schedule format this mapsearch reads), got '1'"),
        (lambda d: d.update(format="other"), "format: expected 'mapsearch-schedule', got 'other'"),
        (lambda d: d.pop("levels"), "levels: missing; expected a list with one mapping per level"),
        (lambda d: d.update(extra=1), "extra: unknown field; expected one of format, version, workload, architecture, levels, homes, predicted, dram"),
        (lambda d: d["workload"]["extents"].pop("k"), "workload.extents.k: missing; the einsum uses dimension 'k' (expected int >= 1)"),
        (lambda d: d["workload"].update(einsum="Z[m,n] += "), "workload.einsum: expected 'name', got end of text (in 'Z[m,n] += ')"),
        (lambda d: d["workload"].update(homes={"A": "L1"}), "workload.homes: not allowed here; a schedule's homes are its top-level 'homes'"),
        (lambda d: d["architecture"]["levels"][1].update(capacity=-4), "architecture.levels[1].capacity: expected int > 0, got -4"),
        (lambda d: d["architecture"]["levels"][1]["link"].update(input_clocks_per_word="1/0"), "architecture.levels[1].link.input_clocks_per_word: expected a number >= 0 (int, decimal or 'a/b'), got '1/0'"),
        (lambda d: d["predicted"]["links"][0].update(time="x"), "predicted.links[0].time: expected an int >= 0 or a fraction string 'a/b', got 'x'"),
        (lambda d: d["predicted"]["links"][0].update(time=-1), "predicted.links[0].time: expected an int >= 0 or a fraction string 'a/b', got -1"),
        (lambda d: d["predicted"]["links"][0].update(name="L2->L0"), "predicted.links[0].name: unknown link 'L2->L0'; expected one of L1->L0"),
        (lambda d: d["predicted"].pop("op_calls"), "predicted.op_calls: missing; expected int >= 0"),
        (lambda d: d["predicted"]["occupancy"].update(L5=3), "predicted.occupancy.L5: unknown level; expected one of L1, L0"),
    ],
)
def test_bad_schedules(change, expected):
    data = good()
    change(data)
    assert error_of(data) == expected


def test_not_an_object():
    assert error_of([1, 2]).startswith("expected a mapping with format, version")


def test_malformed_json_file(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{"format": "mapsearch-schedule",\n  "version": 1,,\n}')
    with pytest.raises(SpecError) as info:
        load_schedule(path)
    assert str(info.value) == f"{path}: line 2 column 16: malformed JSON: Expecting property name enclosed in double quotes"


def test_missing_schedule_file(tmp_path):
    with pytest.raises(SpecError, match=r"nope\.json: no such file$"):
        load_schedule(tmp_path / "nope.json")


def test_good_data_is_not_modified():
    data = good()
    before = copy.deepcopy(data)
    schedule_from_dict(data, "s.json")
    assert data == before


@pytest.mark.parametrize("capacity", [None, 0])
def test_a_level_files_cannot_hold_is_refused_before_any_file_is_written(tmp_path, capacity):
    """The Python API may build an unbounded (or 0-word) middle level; a schedule file of it would not load back."""
    from mapsearch.errors import UsageError

    s = worked_example(("m", "n", "k"))
    top, l0 = s.architecture.levels
    middle = Level("LM", capacity, Link(Fraction(1), Fraction(1), "shared"))
    arch = Architecture("three", (top, middle, l0), s.architecture.compute, False)
    levels = (s.levels[0], LevelMapping("LM", s.levels[0].tile, ("m", "n", "k"), frozenset()), s.levels[1])
    three = Schedule(s.workload, arch, levels, s.homes)
    path = tmp_path / "s.json"
    with pytest.raises(UsageError, match=r"architecture\.levels\[1\]\.capacity \(LM\): expected int > 0 in a schedule file"):
        save_schedule(three, path)
    assert not path.exists()
    assert schedule_to_dict(three)["architecture"]["levels"][1]["capacity"] == capacity  # reports still carry it
