"""The architecture presets: names, errors, each loads, and the CLI takes a preset name for ARCH."""

from __future__ import annotations

from pathlib import Path

import pytest

from mapsearch.cli import main
from mapsearch.errors import SpecError
from mapsearch.presets import PRESET_DIR, load_preset, preset_names, resolve_architecture
from mapsearch.spec.load import architecture_from_dict, architecture_to_dict, load_architecture

EXPECTED = ("cpu-core", "edge-3level", "gpu-sm", "server-3level")


def test_names():
    assert set(EXPECTED) <= set(preset_names())
    assert list(preset_names()) == sorted(preset_names())


@pytest.mark.parametrize("name", preset_names())
def test_each_preset_loads_and_cites_its_numbers(name):
    arch = load_preset(name)
    assert arch.name == name
    assert arch.levels[0].capacity is None and all(lv.capacity for lv in arch.levels[1:])
    assert architecture_from_dict(architecture_to_dict(arch)) == arch  # a sweep case carries it as a dict
    text = (PRESET_DIR / f"{name}.yaml").read_text()
    assert text.startswith("#") and ("Source" in text or "source" in text or "Sources" in text or name.endswith("3level"))
    assert architecture_to_dict(resolve_architecture(name)[0]) == architecture_to_dict(arch)


def test_deep_presets():
    cpu, gpu = load_preset("cpu-core"), load_preset("gpu-sm")
    # Blocks by GEMM role, bound to each workload's dimensions by the solver (mapsearch/solve/block_roles.py).
    assert cpu.level_names == ("DRAM", "L3", "L2", "L1", "registers") and dict(cpu.compute.block_roles) == {"n": 8}
    assert gpu.level_names == ("HBM", "L2", "SMEM", "registers")
    assert dict(gpu.compute.block_roles) == {"m": 16, "n": 8, "k": 16} and gpu.compute.block == ()
    assert gpu.compute.block_macs == 2048 and cpu.compute.block_macs == 8


def test_bad_name_is_one_line_listing_the_presets():
    with pytest.raises(SpecError) as e:
        resolve_architecture("edge-3levle")
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("edge-3levle: no such file or preset; presets: ")
    assert all(name in message for name in EXPECTED)
    with pytest.raises(SpecError, match="no such file or preset"):
        load_preset("../examples/arch-three-level")


def test_a_path_wins_over_a_preset(tmp_path, monkeypatch):
    src = Path(__file__).resolve().parents[1] / "examples" / "arch-three-level.yaml"
    (tmp_path / "edge-3level").write_text(src.read_text())
    monkeypatch.chdir(tmp_path)
    arch, source = resolve_architecture("edge-3level")
    assert arch == load_architecture(src) and source == "edge-3level"
    monkeypatch.chdir(src.parent)
    assert resolve_architecture("arch-three-level.yaml")[1] == "arch-three-level.yaml"


def test_solve_accepts_a_preset_name(tmp_path, capsys):
    w = tmp_path / "mm.yaml"
    w.write_text('name: mm\neinsum: "Z[m,n] += A[m,k] * B[k,n]"\nextents: {m: 12, n: 10, k: 7}\n')
    assert main(["solve", str(w), "edge-3level"]) == 0
    assert "on edge-3level" in capsys.readouterr().out
    assert main(["solve", str(w), "no-such-preset"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-preset: no such file or preset; presets: cpu-core" in err
