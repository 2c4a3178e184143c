"""AccelForge 1.0.467's own example files (tests/data/peers/accelforge): read unchanged, solved or refused in one line."""

from __future__ import annotations

from fractions import Fraction

import pytest

from mapsearch.errors import SpecError
from mapsearch.spec.foreign import load_foreign, load_foreign_arch, load_foreign_workload
from mapsearch.spec.foreign.common import ForeignSpecError, Untranslatable
from mapsearch.spec.tree_paths import flatten
from mapsearch.spec.workload import Workload, WorkloadGraph

from foreign_helpers import MATMUL, PEERS, solve_peer

ARCHES = PEERS / "accelforge" / "arches"
WORKLOADS = PEERS / "accelforge" / "workloads"


def test_simple_with_a_matmul_is_compute_bound_and_moves_each_word_once_on_the_top_link():
    best, result, notes = solve_peer(MATMUL, ARCHES / "simple.yaml")
    f = result.schedule.predicted
    assert (best, result.status) == ("MAC", "OPTIMAL")
    assert f.time == 512  # 8*8*8 MACs, one per clock; every throughput is inf, so the links are free
    top = f.links[0]
    assert (top.name, top.words_down, top.words_up) == ("MainMemory->GlobalBuffer", 128, 64)  # A, B in; Z out
    assert any("GlobalBuffer is unbounded" in n for n in notes)


def test_tpu_v4i_sizes_are_bits_and_throughputs_are_clocks_per_word():
    fa = load_foreign_arch(ARCHES / "tpu_v4i.yaml", MATMUL)
    (path,) = flatten(fa.tree)  # ScalarUnit is enabled only for 2-tensor einsums (len(All) == 2)
    levels = {lv.name: lv for lv in path.architecture.levels}
    assert levels["GlobalBuffer"].capacity == 128 * 1024 * 1024  # 1024*1024*128*8 bits of 8-bit words
    assert levels["Register"].capacity == 1  # weight.bits_per_value bits
    # MainMemory: 8 * 614e9 bits/s, words of 8 bits, one clock is a MAC at 1.05e9/s.
    assert levels["GlobalBuffer"].link.input_clocks_per_word == Fraction(105, 61400) * 1
    assert [a.size for a in levels["Register"].mesh] == [128, 128]
    assert [a.size for a in levels["LocalBuffer"].mesh] == [4]
    e = path.architecture.energy
    # An action moves one bit (bits_per_action's default): a word of 8 bits is 8 actions.
    assert e.level("MainMemory").read == 8 * Fraction("7.03e-12") and e.mac == Fraction("0.084e-12")
    assert e.unit == "J"


def test_tpu_v4i_solves_on_its_two_meshed_levels_and_replays():
    """4 LocalBuffers over 128x128 Registers: two meshed levels in one path (issue 15), replayed to the word."""
    from mapsearch.schedule.figures import differences
    from mapsearch.sim.replay import replay

    best, result, _ = solve_peer(MATMUL, ARCHES / "tpu_v4i.yaml")
    f = result.schedule.predicted
    assert best == "MAC" and result.status == "OPTIMAL_IN_FAMILY"
    assert result.family_restrictions == ("buffer placement: default positions only at and below the meshed levels "
                                          "(in schedules with a spatial split; those without one: every position)",)
    assert [lv.instances for lv in result.schedule.architecture.levels] == [1, 1, 4, 16384, 1]
    assert (f.time, f.words_total) == (2, 2240)
    assert differences(f, replay(result.schedule, mode="count").figures) == []


def test_nvdla_registers_keep_only_weights_and_the_array_splits_n_and_k():
    best, result, notes = solve_peer(MATMUL, ARCHES / "nvdla.yaml")
    keep = {lv.level: lv.keep for lv in result.schedule.levels}
    assert keep["Register"] == {"B"}  # tensors: {keep: weight}; nothing else may be kept there
    f = result.schedule.predicted
    # 8 x 8 instances split n (reuse_input axis) and k (reuse_output axis): 8 calls each, and the top link
    # moves 192 words at 5/192 clock per word (8 * 38.4e9 bits/s, shared by reads and writes).
    assert f.time == 8 and f.links[0].time == 5
    assert any("min_usage" in n for n in notes)


@pytest.mark.parametrize("name, instances, time", [
    ("fanout_variations/at_glb", 4, 128),
    ("fanout_variations/at_glb_with_fanout_node", 4, 128),
    ("fanout_variations/at_mac", 4, 128),
    ("fanout_variations/at_mac_with_fanout_node", 4, 128),
    ("snowcat", 1, 512),
])
def test_the_fanout_variations_solve(name, instances, time):
    best, result, _ = solve_peer(MATMUL, ARCHES / f"{name}.yaml")
    assert result.schedule.predicted.time == time
    assert result.schedule.predicted.compute_instances == instances


def test_loop_bounds_on_a_fanout_limit_its_splits():
    """at_mac_with_constraints: ``loop_bounds: [{expression: ~m, operator: ==, value: 1}]`` on the MACArray's X:
    only m may be split over the 4 MACs. Compute bound either way (512 MACs / 4), but A and B now cross into
    the MACs once per instance along m's parts: 896 words instead of at_mac's 768."""
    fa = load_foreign_arch(ARCHES / "fanout_variations" / "at_mac_with_constraints.yaml", MATMUL)
    (path,) = flatten(fa.tree)
    (axis,) = [a for lv in path.architecture.levels for a in lv.mesh]
    assert [(r.dims, r.operator, r.value) for r in axis.split_bounds] == [(("n", "k"), "==", 1)]
    _, result, _ = solve_peer(MATMUL, ARCHES / "fanout_variations" / "at_mac_with_constraints.yaml")
    f = result.schedule.predicted
    assert {sp.dim for lv in result.schedule.levels for sp in lv.spatial} == {"m"}
    assert (f.time, f.words_total, f.compute_instances) == (128, 896, 4)
    from mapsearch.report.spatial import spatial_lines

    assert any("loop bounds: each of (n, k) == 1" in line for line in spatial_lines(result.schedule))
    _, free, _ = solve_peer(MATMUL, ARCHES / "fanout_variations" / "at_mac.yaml")
    assert (free.schedule.predicted.time, free.schedule.predicted.words_total) == (128, 768)


@pytest.mark.parametrize("bound, field, expected", [
    ("{expression: ~x, operator: ==, value: 1}", "loop_bounds[0].expression",
     "a set expression over the einsum's rank variables (m, n, k)"),
    ("{expression: ~m, operator: '=<', value: 1}", "loop_bounds[0].operator", "one of ==, <=, >=, <, >, product=="),
    ("{expression: ~m, operator: ==, value: 1.5}", "loop_bounds[0].value", "an integer >= 0"),
    ("{expression: ~m, operator: ==, value: inf}", "loop_bounds[0].value", "an integer >= 0"),
    ("{expression: ~m, operator: ==}", "loop_bounds[0].value", "a number >= 0"),
    ("{expr: ~m, operator: ==, value: 1}", "loop_bounds[0]", "a mapping with expression, operator and value"),
])
def test_a_bad_loop_bound_is_one_line_naming_its_field(tmp_path, bound, field, expected):
    text = (ARCHES / "fanout_variations" / "at_mac_with_constraints.yaml").read_text()
    start = text.index("      loop_bounds:")
    end = text.index("  - !Compute")
    path = tmp_path / "arch.yaml"
    path.write_text(text[:start] + f"      loop_bounds: [{bound}]\n\n" + text[end:])
    with pytest.raises(SpecError) as e:
        load_foreign_arch(path, MATMUL)
    message = str(e.value)
    assert f"arch.nodes[2].spatial[0].{field}" in message and expected in message and "\n" not in message


@pytest.mark.parametrize("name, message", [
    ("eyeriss", "arch.nodes[0].actions: cannot be translated exactly: MainMemory's throughput comes from the "
                "hwcomponents model 'LPDDR4'"),
    ("simba", "arch.nodes[0].actions: cannot be translated exactly: MainMemory's throughput comes from the "
              "hwcomponents model 'LPDDR4'"),
])
def test_what_cannot_be_translated_is_one_line(name, message):
    with pytest.raises(Untranslatable) as e:
        load_foreign_arch(ARCHES / f"{name}.yaml", MATMUL)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_matmuls_chain_with_variables():
    fw = load_foreign_workload(WORKLOADS / "matmuls.yaml", {"N_EINSUMS": 3, "M": 4, "KN": 2})
    assert isinstance(fw.workload, WorkloadGraph)
    assert [e.text() for e in fw.workload.einsums] == [
        "T1[m,n1] += T0[m,n0] * W0[n0,n1]", "T2[m,n2] += T1[m,n1] * W1[n1,n2]", "T3[m,n3] += T2[m,n2] * W2[n2,n3]"]
    assert fw.workload.extent == {"m": 4, "n1": 2, "n0": 2, "n2": 2, "n3": 2}
    assert fw.renames["Matmul1"]["weight"] == {"W1"} and fw.bits["T0"] == 8


def test_a_template_variable_that_is_missing_says_how_to_give_it():
    with pytest.raises(ForeignSpecError, match=r"'N_EINSUMS' is undefined; give it with --var N_EINSUMS=VALUE"):
        load_foreign_workload(WORKLOADS / "matmuls.yaml")


@pytest.mark.parametrize("name, einsums, macs", [
    ("three_matmuls_annotated", 3, 3 * 128**3),
    ("matvecs", 2, 4 * 3 + 3 * 4),
    ("mobilenet_various_separate", 6, 21056128),
])
def test_workloads_that_translate(name, einsums, macs):
    fw = load_foreign(WORKLOADS / f"{name}.yaml")
    assert len(fw.workload.einsums) == einsums and fw.workload.macs == macs


@pytest.mark.parametrize("name, message", [
    ("gpt3_6.7B", "workload.einsums[0].is_copy_operation: cannot be translated exactly"),
    ("gpt3_6.7B_kv_cache", "workload.einsums[0].is_copy_operation"),
    ("gpt3_175B", "workload.einsums[0].is_copy_operation"),
    ("gpt3_175B_kv_cache", "workload.einsums[0].is_copy_operation"),
    ("attention_decode/multi_head_attention", "workload.einsums[0].is_copy_operation"),
    ("attention_decode/multi_head_latent_attention", "workload.einsums[0].is_copy_operation"),
    ("mamba", "workload.einsums[8].einsum: cannot be translated exactly: 'H[b, d, n] = HX[b, d, n] + HH[b, d, n]' "
              "is not a product of tensors"),
    ("mobilenet_28", "workload.einsums[1].tensor_accesses[0].projection.P0: cannot be translated exactly: p1 + r0 "
                     "reaches 30 values of rank P0 of TA0, which has 28"),
])
def test_workloads_that_say_in_one_line_what_is_not_supported(name, message):
    with pytest.raises(Untranslatable) as e:
        load_foreign_workload(WORKLOADS / f"{name}.yaml")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_matvecs_chain_solves_fused_on_simple(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "mapsearch", "solve", str(WORKLOADS / "matvecs.yaml"),
                          str(ARCHES / "simple.yaml"), "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    import json

    report = json.loads(out.stdout)
    assert report["best"].startswith("fused at GlobalBuffer")
    assert "GlobalBuffer is unbounded" in out.stderr


def test_a_workload_yields_the_same_schedule_as_its_native_twin():
    """matmuls.yaml with one einsum is T1[m,n1] += T0[m,n0] * W0[n0,n1]: the native spelling solves the same."""
    fw = load_foreign_workload(WORKLOADS / "matmuls.yaml", {"N_EINSUMS": 1, "M": 8, "KN": 8})
    assert isinstance(fw.workload, Workload)
    native = Workload.from_text("mm", "T1[m,n1] += T0[m,n0] * W0[n0,n1]", {"m": 8, "n0": 8, "n1": 8})
    a = solve_peer(fw, ARCHES / "nvdla.yaml")[1].schedule.predicted
    b = solve_peer(native, ARCHES / "nvdla.yaml")[1].schedule.predicted
    assert (a.time, a.words_total) == (b.time, b.words_total)


@pytest.mark.parametrize("text, message", [
    ("arch:\n  nodes:\n  - !Memory {name: M, size: inf, component_class: Dummy}\n  - !Compute {name: C, actions: [{name: compute, throughput: fast}]}\n",
     "arch.nodes[1].actions[0].throughput: expected an expression AccelForge can evaluate, got \"fast (unknown name 'fast')\""),
    ("arch:\n  nodes:\n  - !Memory {name: M, size: inf, component_class: Dummy, colour: red}\n  - !Compute {name: C}\n",
     "arch.nodes[0].colour: expected a field of an AccelForge !Memory, got 'colour'"),
    ("arch:\n  nodes:\n  - !Memory {name: M, size: inf, component_class: Dummy}\n  - !Network {name: N}\n  - !Compute {name: C}\n",
     "arch.nodes[1] (!Network N): cannot be translated exactly: !Network components have no counterpart in "
     "mapsearch's model"),
    ("arch:\n  nodes:\n  - !Memory {name: M, size: inf, component_class: Dummy, tensors: {keep: Q}}\n  - !Compute {name: C, enabled: True}\n",
     "arch.nodes[0].tensors.keep: expected an expression AccelForge can evaluate, got \"Q (unknown name 'Q')\""),
    ("arch:\n  nodes:\n  - !Memory {name: M, size: inf, component_class: Dummy}\n  - !Memory {name: L, size: 4, component_class: Dummy, bits_per_value: {A: 16}}\n  - !Compute {name: C}\n",
     "arch.nodes[1].size: cannot be translated exactly: it may hold tensors of [8, 16] bits; mapsearch counts a "
     "capacity in words of one width"),
])
def test_bad_input_is_one_line_naming_file_and_field(tmp_path, text, message):
    path = tmp_path / "arch.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as e:
        load_foreign_arch(path, MATMUL, format="accelforge")  # so plain a file could be a mapsearch tree
    assert str(e.value) == f"{path}: {message}"
    assert str(e.value).startswith(str(path)) and "\n" not in str(e.value)


def test_an_accelforge_architecture_is_a_characterize_profile():
    from mapsearch.characterize.profiles import load_profile

    p = load_profile(str(ARCHES / "simple.yaml"))
    assert p.clock_hz == 1.0  # the MAC's throughput: 1 op per second
    assert [lv["name"] for lv in p.architecture["levels"]] == ["MainMemory", "GlobalBuffer"]
    # 1 J per read and per write of a bit, 8-bit words: 16 J (16e12 pJ) per word crossing MainMemory->GlobalBuffer.
    assert p.link_energy_pj == {"MainMemory->GlobalBuffer": 16e12} and p.mac_energy_pj == 1e12
    with pytest.raises(Untranslatable, match="keep or bypass tensors by role"):
        load_profile(str(ARCHES / "nvdla.yaml"))


def test_loop_bounds_survive_the_export_to_accelforge(tmp_path):
    """The exported arch.yaml carries the split bounds as loop_bounds; read back, they are the same."""
    from mapsearch.report.export_accelforge import accelforge_files

    _, result, _ = solve_peer(MATMUL, ARCHES / "fanout_variations" / "at_mac_with_constraints.yaml")
    arch = tmp_path / "arch.yaml"
    arch.write_text(accelforge_files(result.schedule)["arch.yaml"])
    assert "loop_bounds: [{expression: \"n | k\", operator: \"==\", value: 1}]" in arch.read_text()
    (path,) = flatten(load_foreign_arch(arch, MATMUL).tree)
    bounds = [r for lv in path.architecture.levels for a in lv.mesh for r in a.split_bounds]
    assert [(r.dims, r.operator, r.value) for r in bounds] == [(("n", "k"), "==", 1)]


@pytest.mark.parametrize("old, new, field", [
    # A word of 0 bits: ``size // 0`` and ``bits / bits_per_action`` crashed with ZeroDivisionError.
    ("    size: 1024*64*8 # 64 kB\n", "    size: 1024*64*8\n    bits_per_value: {All: 0}\n",
     "arch.nodes[1].bits_per_value: expected bits per value >= 1 for A, B, Z (a word of 0 bits holds nothing), got 0"),
    ("    - {name: read, energy: 0.249e-12, throughput: 512e9 * 8}\n",
     "    - {name: read, energy: 0.249e-12, throughput: 512e9 * 8, bits_per_action: 0}\n",
     "arch.nodes[1].actions[0].bits_per_action: expected bits per action > 0 (an action moves bits), got 0"),
])
def test_zero_bits_are_one_line(tmp_path, old, new, field):
    text = (ARCHES / "nvdla.yaml").read_text()
    assert old in text
    path = tmp_path / "a.yaml"
    path.write_text(text.replace(old, new))
    with pytest.raises(SpecError) as e:
        load_foreign_arch(path, MATMUL)
    assert str(e.value) == f"{path}: {field}"


def test_a_workload_of_0_bit_values_is_one_line(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text((WORKLOADS / "matmuls.yaml").read_text().replace("bits_per_value: {All: 8}", "bits_per_value: {All: 0}"))
    with pytest.raises(SpecError) as e:
        load_foreign_workload(path, {"N_EINSUMS": 1})
    assert str(e.value) == f"{path}: workload.bits_per_value['All']: expected bits: int >= 1, got 0"
