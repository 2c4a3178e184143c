"""Spatial splits in schedule files: round trips, legality errors naming the JSON path, the example."""

from __future__ import annotations

import copy
from dataclasses import replace
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from mapsearch.errors import SpecError
from mapsearch.schedule.figures import differences
from mapsearch.schedule.json_io import dumps_schedule, load_schedule, schedule_from_dict, schedule_to_dict
from mapsearch.sim.replay import replay
from tests.sim.spatial_helpers import spatial_schedules

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "array-4x4-matmul.schedule.json"


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(spatial_schedules())
def test_round_trip_with_spatial_splits_and_predicted_figures(s) -> None:
    s = _own_names(s)
    s = s.with_predicted(replay(s, mode="count").figures)
    again = schedule_from_dict(json.loads(dumps_schedule(s)), "s.json")
    assert again == s
    assert schedule_to_dict(again) == schedule_to_dict(s)


def _own_names(s):
    """``s`` with its mesh axes' reuse rules naming only its own tensors (a schedule file's architecture is
    checked against its workload: the random architectures name the tensors of either workload)."""
    ok = set(s.workload.tensor_names) | {"input", "output", "all", "none"}

    def own(names: tuple[str, ...]) -> tuple[str, ...]:
        kept = tuple(n for n in names if n in ok)
        return kept or ("none",)

    levels = tuple(replace(lv, mesh=tuple(replace(ax, may_reuse=own(ax.may_reuse),
                                                  must_reuse=tuple(n for n in ax.must_reuse if n in ok))
                                          for ax in lv.mesh)) for lv in s.architecture.levels)
    return replace(s, architecture=replace(s.architecture, levels=levels))


def test_the_example_replays_and_checks() -> None:
    s = load_schedule(EXAMPLE)
    assert [sp.axis for sp in s.levels[-1].spatial] == ["x", "y"]
    for mode in ("events", "count", "data"):
        assert differences(s.predicted, replay(s, mode=mode).figures) == []
    f = s.predicted
    assert (f.compute_instances, f.busiest_calls, f.op_calls, f.array_utilization, f.utilization) == (16, 32, 512, 1, 1)
    done = subprocess.run([sys.executable, "-m", "mapsearch", "replay", str(EXAMPLE), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "array utilization" in done.stdout and "compute instances  16" in done.stdout


def base() -> dict:
    return json.loads(EXAMPLE.read_text())


def error_of(data: dict) -> str:
    with pytest.raises(SpecError) as info:
        schedule_from_dict(data, "s.json")
    message = str(info.value)
    assert "\n" not in message and message.startswith("s.json: "), message
    return message[len("s.json: ") :]


def edited(change) -> dict:
    data = copy.deepcopy(base())
    data.pop("predicted")
    change(data)
    return data


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda d: d["levels"][1].update(spatial=[{"dim": "m", "part": 4, "axis": "x"}]), "levels[1].spatial: GLB has no mesh"),
        (lambda d: d["levels"][2]["spatial"][0].update(axis="z"), "levels[2].spatial[0].axis: unknown mesh axis 'z' of PE; expected one of x, y"),
        (lambda d: d["levels"][2]["spatial"][0].update(dim="q"), "levels[2].spatial[0].dim: unknown dimension 'q'"),
        (lambda d: d["levels"][2]["spatial"][0].update(part=9), "levels[2].spatial[0].part: expected 1 <= part <= 8 (the parent tile), got 9"),
        (lambda d: d["levels"][2]["spatial"][0].update(part=0), "levels[2].spatial[0].part: expected int >= 1, got 0"),
        (lambda d: d["levels"][2]["spatial"][0].update(part=1), "levels[2].tile.m: expected tile <= 1 (the part of the spatial split), got 2"),
        (lambda d: d["levels"][2]["spatial"][1].update(dim="m"), "levels[2].spatial[1].dim: m is split twice at PE"),
        (lambda d: d["levels"][2]["spatial"][1].update(axis="x"), "levels[2].spatial: the splits on axis x need 16 instances (product of ceil(parent/part)), the axis has 4"),
        (lambda d: d["levels"][2]["spatial"][0].pop("axis"), "levels[2].spatial[0].axis: missing"),
        (lambda d: [d.update(homes={"A": "PE"}), d["levels"][1]["keep"].remove("A"), d["levels"][2]["keep"].remove("A")],
         "homes.A: a home must be above every meshed level"),
    ],
)
def test_illegal_splits_name_their_field(change, expected) -> None:
    assert error_of(edited(change)).startswith(expected)


def test_a_mesh_at_the_top_is_refused() -> None:
    def change(d):
        d["architecture"]["levels"][0]["mesh"] = [{"name": "x", "size": 2}]

    assert error_of(edited(change)).startswith("architecture.levels[0].mesh: the top level cannot have a mesh")


def test_non_spatial_files_do_not_grow_new_fields() -> None:
    worked = Path(__file__).resolve().parents[2] / "examples" / "worked-example-mnk.schedule.json"
    data = schedule_to_dict(load_schedule(worked))
    assert all("spatial" not in lv for lv in data["levels"])
    assert "compute_instances" not in data["predicted"] and "busiest_calls" not in data["predicted"]
