"""Meshes in architecture YAML (docs/spatial.md): parsing, defaults, one-line errors naming file and field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from mapsearch.errors import SpecError
from mapsearch.spec.architecture import Level, MeshAxis
from mapsearch.spec.load import architecture_from_dict, architecture_to_dict, load_architecture

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

BASE = """\
name: a
levels:
  - {name: DRAM, capacity: null}
  - name: PE
    capacity: 16
    MESH
"""


def write(tmp_path: Path, mesh: str) -> Path:
    p = tmp_path / "arch.yaml"
    p.write_text(BASE.replace("MESH", textwrap.indent(mesh, "    ").lstrip()))
    return p


def error(path: Path) -> str:
    with pytest.raises(SpecError) as info:
        load_architecture(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}: "), message
    return message[len(f"{path}: ") :]


def test_two_axes_with_may_reuse(tmp_path: Path) -> None:
    p = write(tmp_path, "mesh: [{name: x, size: 4, may_reuse: [input]}, {name: y, size: 2, may_reuse: [Z, B]}]")
    pe = load_architecture(p).levels[1]
    assert pe.instances == 8
    assert pe.mesh == (MeshAxis("x", 4, ("input",)), MeshAxis("y", 2, ("Z", "B")))
    assert pe.axis("y").reuses("Z", True) and pe.axis("y").reuses("B", False) and not pe.axis("y").reuses("A", False)
    assert pe.axis("x").reuses("A", False) and not pe.axis("x").reuses("Z", True)


def test_may_reuse_defaults_to_all_and_instances_alone_is_one_axis_x(tmp_path: Path) -> None:
    pe = load_architecture(write(tmp_path, "mesh: [{name: row, size: 3}]")).levels[1]
    assert (pe.instances, pe.mesh) == (3, (MeshAxis("row", 3, ("all",)),))
    pe = load_architecture(write(tmp_path, "instances: 5")).levels[1]
    assert (pe.instances, pe.mesh) == (5, (MeshAxis("x", 5, ("all",)),))
    assert Level("PE", 16, pe.link, 5) == pe
    assert not MeshAxis("x", 2, ("none", "all")).reuses("A", False)


@pytest.mark.parametrize(
    "mesh, expected",
    [
        ("mesh: [{name: x, size: 0}]", "levels[1].mesh[0].size: expected int >= 1, got 0"),
        ("mesh: [{name: x, size: 2.5}]", "levels[1].mesh[0].size: expected int >= 1, got 2.5"),
        ("mesh: [{name: x, size: 2}, {name: x, size: 3}]", "levels[1].mesh[1].name: expected an axis name not used by another axis (mesh[0]), got 'x'"),
        ("mesh: [{name: x, size: 2}, {name: y, size: 2}, {name: z, size: 2}]", "levels[1].mesh: expected a list of one or two mesh axes, got [{"),
        ("mesh: []", "levels[1].mesh: expected a list of one or two mesh axes, got []"),
        ("mesh: [{name: x, size: 2, may_reuse: [1]}]", "levels[1].mesh[0].may_reuse[0]: expected a tensor name or a role (input, output, all, none), got 1"),
        ("mesh: [{name: x, size: 2, may_reuse: input}]", "levels[1].mesh[0].may_reuse: expected a list of tensor names or roles (input, output, all, none), got 'input'"),
        ("mesh: [{name: x, size: 2, reuse: [all]}]", "levels[1].mesh[0].reuse: unknown field"),
        ("mesh: [{size: 2}]", "levels[1].mesh[0].name: missing"),
        ("instances: 6\nmesh: [{name: x, size: 2}]", "levels[1].instances: expected 2 (the product of the mesh sizes) or no instances field, got 6"),
    ],
)
def test_bad_meshes(tmp_path: Path, mesh: str, expected: str) -> None:
    assert error(write(tmp_path, mesh)).startswith(expected)


def test_the_top_level_cannot_have_a_mesh(tmp_path: Path) -> None:
    p = tmp_path / "top.yaml"
    p.write_text("name: a\nlevels:\n  - {name: DRAM, capacity: null, mesh: [{name: x, size: 2}]}\n  - {name: L0, capacity: 4}\n")
    assert error(p).startswith("levels[0].mesh: the top level cannot have a mesh")
    p.write_text("name: a\nlevels:\n  - {name: DRAM, capacity: null, instances: 2}\n  - {name: L0, capacity: 4}\n")
    assert error(p).startswith("levels[0].instances: the top level cannot have a mesh")


def test_round_trip_and_the_example() -> None:
    a = load_architecture(EXAMPLES / "arch-array-4x4.yaml")
    pe = a.levels[-1]
    assert (pe.instances, [ax.name for ax in pe.mesh]) == (16, ["x", "y"])
    assert pe.axis("x").may_reuse == ("input",) and pe.axis("y").may_reuse == ("output",)
    assert architecture_from_dict(architecture_to_dict(a)) == a
