"""The tree presets tpu-v4i-like and eyeriss-like: they load, and their numbers are the documented ones."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from mapsearch.spec.architecture import Link, MeshAxis
from mapsearch.spec.load import load_workload
from mapsearch.spec.tree import is_tree_file, load_tree
from mapsearch.spec.tree_paths import flatten, path_architecture, path_constraints, single_architecture

ROOT = Path(__file__).resolve().parents[2]
PRESETS = ROOT / "mapsearch" / "presets"
CONV = load_workload(ROOT / "examples" / "conv-resnet50-3x3.yaml")


@pytest.mark.parametrize("name", ["tpu-v4i-like", "eyeriss-like"])
def test_preset_is_a_one_path_tree(name):
    path = PRESETS / f"{name}.yaml"
    assert is_tree_file(path)
    tree = load_tree(path)
    assert tree.name == name and tree.description
    (p,) = flatten(tree)
    arch = single_architecture(tree)
    assert arch.name == name
    assert arch.levels[0].capacity is None
    assert arch.levels[-1].mesh  # a spatial array at the innermost level
    # Roles only: the preset needs no workload to be an Architecture, and binding changes nothing but names.
    bound = path_architecture(p, CONV)
    assert [lv.capacity for lv in bound.levels] == [lv.capacity for lv in arch.levels]
    assert path_constraints(p, CONV).keep == ()


def test_tpu_v4i_like_numbers():
    arch = single_architecture(load_tree(PRESETS / "tpu-v4i-like.yaml"))
    assert arch.level_names == ("HBM", "CMEM", "VMEM", "PE")
    hbm, cmem, vmem, pe = arch.levels
    # A quarter of 128 MiB CMEM and 16 MiB VMEM, in 2-byte words.
    assert cmem.capacity == 128 * 2**20 // 4 // 2 == 16_777_216
    assert vmem.capacity == 16 * 2**20 // 4 // 2 == 2_097_152
    # 614 GB/s / 4 at 1.05 GHz, 2 bytes a word: 2.1 * 4 / 614 clocks per word.
    assert cmem.link == Link(Fraction(21, 1535), Fraction(21, 1535), "shared")
    assert cmem.link.input_clocks_per_word == Fraction(21, 10) * 4 / 614
    assert vmem.link == Link(Fraction(21, 5120), Fraction(21, 2560), "separate")
    assert pe.mesh == (MeshAxis("x", 128, ("input",)), MeshAxis("y", 128, ("output",)))
    assert pe.instances == 128 * 128 and pe.capacity == 4
    assert pe.link == Link(Fraction(1, 256), Fraction(1, 128), "separate")
    # Peak: 4 MXUs x 128 x 128 MACs x 2 FLOPs x 1.05 GHz = 137.6 TFLOPS, the paper's 138.
    assert 4 * pe.instances * 2 * 1.05e9 / arch.compute.clocks_per_call == pytest.approx(137.6e12, rel=1e-3)


def test_eyeriss_like_numbers():
    arch = single_architecture(load_tree(PRESETS / "eyeriss-like.yaml"))
    assert arch.level_names == ("DRAM", "GLB", "PE")
    dram, glb, pe = arch.levels
    assert glb.capacity == 108 * 1024 // 2 == 55_296
    assert glb.link == Link(Fraction(5, 6), Fraction(5, 6), "shared")  # 4 words per 60 MHz link clock at 200 MHz
    assert pe.capacity == 224 + 12 + 24
    assert pe.mesh == (MeshAxis("x", 14, ("input",)), MeshAxis("y", 12, ("input", "output")))
    assert pe.instances == 168
    assert pe.link == Link(Fraction(1, 12), Fraction(1, 4), "separate")
    assert pe.axis("y").reuses("O", True) and not pe.axis("x").reuses("O", True)
