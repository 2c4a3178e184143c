"""ZigZag 3.9.1's hardware files (tests/data/peers/zigzag): every one reads, solves a small layer or says why not."""

from __future__ import annotations

from fractions import Fraction

import pytest

from mapsearch.schedule.figures import differences
from mapsearch.sim.replay import replay

from mapsearch.spec.foreign import load_foreign_arch, load_foreign_workload
from mapsearch.spec.foreign.common import Untranslatable
from mapsearch.spec.tree_paths import flatten

from foreign_helpers import PEERS, solve_peer, workload_error

Z = PEERS / "zigzag"
GEMM = Z / "layers" / "gemm_8x8x8.yaml"


def test_a_layer_reads_with_its_relations_and_precisions():
    fw = load_foreign_workload(Z / "layers" / "conv_small.yaml")
    assert fw.workload.einsum.text() == "O[b,k,oy,ox] += W[k,c,fy,fx] * I[b,c,oy+fy,ox+fx]"
    assert fw.bits == {"W": 8, "I": 8, "O": 16}


def test_tpu_like_per_operand_hierarchies_become_keep_and_bypass():
    fa = load_foreign_arch(Z / "tpu_like.yaml", load_foreign_workload(GEMM))
    (path,) = flatten(fa.tree)
    levels = {lv.name: lv for lv in path.architecture.levels}
    assert list(levels) == ["dram", "sram_2MB", "rf_2B", "rf_128B", "mac_operands"]
    assert levels["rf_2B"].capacity == 1 and levels["rf_128B"].capacity == 128  # 16 / 16 bits, 1024 / 8 bits
    assert [(a.name, a.size) for a in levels["rf_2B"].mesh] == [("D1", 32), ("D2", 32)]  # served_dimensions: []
    rules = {k.level: (k.keep.text, k.bypass.text if k.bypass else None) for k in path.keep_rules}
    assert rules["sram_2MB"] == ("I | O", "W") and rules["rf_128B"] == ("W", "I | O")
    # dram's read_write port: 64 bits per cycle, 16-bit partial sums the widest word: 1/4 clock per word, shared.
    assert levels["sram_2MB"].link.input_clocks_per_word == Fraction(1, 4) and levels["sram_2MB"].link.lines == "shared"
    e = path.architecture.energy
    assert e.level("dram").read == Fraction(700) * 16 / 64 and e.mac == Fraction("0.04") and e.unit == "pJ"
    assert any("words of [8, 16] bits share its ports" in n for n in fa.notes)


@pytest.mark.parametrize("name, layer, instances, time, top_link", [
    # 8x8x8: I and W in once (128 words), O out once (64), at 1/4 clock per word on dram's 64-bit port: 48.
    ("tpu_like", "gemm_8x8x8", 1024, 128, (128, 64, 48)),
    # 4x4x2 (eight levels make the 8x8x8 slow): 16 words in, 16 out, 1/4 clock each: 8.
    ("eyeriss_like", "gemm_4x4x2", 168, Fraction(64, 3), (16, 16, 8)),
    # dram's 2048-bit port: 1/128 clock per 16-bit word, 192 words: 3/2.
    ("generic_array_cacti", "gemm_8x8x8", 65536, 64, (128, 64, Fraction(3, 2))),
])
def test_hardware_that_solves_a_small_gemm(name, layer, instances, time, top_link):
    best, result, _ = solve_peer(Z / "layers" / f"{layer}.yaml", Z / f"{name}.yaml")
    f = result.schedule.predicted
    assert (f.compute_instances, f.time) == (instances, time)
    assert (f.links[0].words_down, f.links[0].words_up, f.links[0].time) == top_link


@pytest.mark.parametrize("name, message", [
    ("aimc", "operational_array.is_imc: cannot be translated exactly: an in-memory-computing array"),
    ("dimc", "operational_array.is_imc: cannot be translated exactly"),
    ("ascend_like", "memories.sram_1MB_W.served_dimensions: cannot be translated exactly: sram_1MB_W is shared "
                    "along D3, D4, which a memory above it is replicated along"),
    ("edge_tpu_like", "memories.rf_2B.served_dimensions: cannot be translated exactly: rf_2B is shared along D2"),
    ("meta_prototype", "memories.rf_2B.served_dimensions: cannot be translated exactly: rf_2B is shared along D2"),
])
def test_hardware_that_cannot_be_translated_says_why_in_one_line(name, message):
    with pytest.raises(Untranslatable) as e:
        load_foreign_arch(Z / f"{name}.yaml", load_foreign_workload(GEMM))
    assert message in str(e.value) and "\n" not in str(e.value)


# Schedules that split nothing over a mesh are searched at every position beside (mapsearch/solve/unsplit.py).
UNSPLIT = "(in schedules with a spatial split; those without one: every position)"
MESHED_ONLY = f"buffer placement: default positions only at and below the meshed levels {UNSPLIT}"


@pytest.mark.parametrize("name, instances, time, words, restriction", [
    ("gemm_l1", [1, 64, 8], 96, 640, MESHED_ONLY),
    ("gemm_l1_l3", [1, 1, 64, 8], 96, 832, MESHED_ONLY),
    ("tesla_npu_like", [1, 1, 1, 1, 1, 32, 128, 1], 128, 2688, MESHED_ONLY),
])
def test_hardware_with_two_replicated_levels_solves_and_replays(name, instances, time, words, restriction):
    """Two meshed levels in one path (issue 15): solved in the family (buffers at and below the mesh keep their
    default positions: a named restriction) and replayed to the word."""
    # tesla_npu_like has five levels above its meshes, where every buffer's position is searched (the output's
    # lowest too): its words phase took 41.6 s with that buffer at its default position, 66.9 s with it placed.
    best, result, _ = solve_peer(GEMM, Z / f"{name}.yaml", time_limit=150 if name == "tesla_npu_like" else 60)
    f = result.schedule.predicted
    assert result.status == "OPTIMAL_IN_FAMILY"
    assert result.family_restrictions == (restriction,)
    assert [lv.instances for lv in result.schedule.architecture.levels] == instances
    assert (f.time, f.words_total) == (time, words)
    assert differences(f, replay(result.schedule, mode="count").figures) == []


@pytest.mark.parametrize("layer, message", [
    ("[{id: 0, equation: 'O[k]+=W[k][c]*I[c]', loop_dims: [K, C], loop_sizes: [4]}]",
     "[0].loop_sizes: expected one size per loop dimension, got [4]"),
    ("[{id: 0, equation: 'O[k]+=W[k]+I[k]', loop_dims: [K], loop_sizes: [4]}]",
     "[0].equation: cannot be translated exactly: 'O[k]+=W[k]+I[k]' adds tensors"),
    ("[{id: 0, equation: 'O[k]+=W[k][c]*I[c]', loop_dims: [K], loop_sizes: [4]}]",
     "[0].loop_dims: expected a size for C, got ['k']"),
])
def test_bad_layers_are_one_line(tmp_path, layer, message):
    path, error = workload_error(tmp_path, layer, "layer.yaml", format="zigzag")
    assert error.startswith(f"{path}: {message}")


def test_a_pooling_layer_reads_without_its_0_bit_operand():
    """ZigZag's Pooling declares ``W: 0`` (a placeholder): ZigZag stores and moves none of it. It crashed
    (ZeroDivisionError on a memory holding only W); it reads as ``O += I`` over the same 4 x 2 x 2 x 3 x 3 = 144
    ops, and tpu_like's W-only rf_128B is left out."""
    layer = Z / "layers" / "pooling_small.yaml"
    fw = load_foreign_workload(layer)
    assert fw.workload.einsum.text() == "O[b,g,oy,ox] += I[b,g,oy*2+fy,ox*2+fx]"
    assert dict(fw.workload.extents) == {"b": 1, "g": 4, "oy": 2, "ox": 2, "fy": 3, "fx": 3} and fw.bits == {"I": 8, "O": 16}
    assert fw.notes == (f"{layer}: [0].operand_precision.W: W of 0 bits holds no data (ZigZag stores and moves none of "
                        f"it): read as O[b,g,oy,ox] += I[b,g,oy*2+fy,ox*2+fx], the same ops",)
    fa = load_foreign_arch(Z / "tpu_like.yaml", fw)
    (path,) = flatten(fa.tree)
    assert [(lv.name, lv.capacity) for lv in path.architecture.levels] == [
        ("dram", 10 ** 10 // 16), ("sram_2MB", 2 ** 24 // 16), ("rf_2B", 1), ("mac_operands", 2)]  # 16-bit O words
    assert f"{Z / 'tpu_like.yaml'}: memories.rf_128B: serves no operand of this layer; left out" in fa.notes


@pytest.mark.parametrize("precision, message", [
    ("{I: 8, W: 8, O: 0}", "[0].operand_precision.O: cannot be translated exactly: the output O has 0 bits"),
    ("{I: 0, W: 0, O: 16}", "[0].operand_precision.W: cannot be translated exactly: every input has 0 bits"),
    ("{I: 8, W: -1, O: 16}", "[0].operand_precision.W: expected bits: int >= 0, got -1"),
])
def test_bad_precisions_are_one_line(tmp_path, precision, message):
    text = (Z / "layers" / "conv_small.yaml").read_text().replace("{W: 8, I: 8, O: 16, O_final: 8}", precision)
    path, error = workload_error(tmp_path, text, format="zigzag")
    assert error.startswith(f"{path}: {message}")


def test_a_memory_smaller_than_one_word_is_refused(tmp_path):
    hw = tmp_path / "hw.yaml"
    hw.write_text((Z / "tpu_like.yaml").read_text().replace("size: 16\n", "size: 8\n", 1))
    with pytest.raises(Untranslatable) as e:
        load_foreign_arch(hw, load_foreign_workload(GEMM))
    assert str(e.value) == (f"{hw}: memories.rf_2B.size: cannot be translated exactly: rf_2B holds 8 bits, less than "
                            f"one 16-bit word, but must keep O")
