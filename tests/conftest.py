"""Shared test setup: the tests folder is importable, so helpers (brute forces, builders) live in one place."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


import pytest  # noqa: E402


@pytest.fixture
def meshed_family_only(monkeypatch):
    """Solve meshed paths over the spatial family alone: the schedules that split nothing over a mesh, which
    ``solve`` searches beside it at every buffer position (mapsearch/solve/unsplit.py), left out. For tests
    that check that family against its own brute force; the union is checked in tests/solve/test_unsplit.py
    and test_spatial_placement.py."""
    from mapsearch.solve import unsplit

    monkeypatch.setattr(unsplit, "applies", lambda *_: False)


# The long cases the default run leaves out (pyproject's addopts; `.ci/nightly` runs them), by node id
# prefix. Each is one more instance of a check the default run makes on smaller cases, so CI keeps every
# kind of check while staying well inside its 90 minutes on 2 cores. Each took 50-220 s on a 2-core machine.
SLOW = (
    # two meshed levels on 100x37x61: tests/solve/test_spatial_levels.py checks such paths against brute force
    "solve/test_spatial_cases.py::test_two_meshed_levels_split_parts_of_parts",
    # block roles on a preset: gpu-sm's case stays
    "solve/test_block_roles.py::test_presets_solve_a_convolution_and_the_schedule_replays_from_its_file[cpu-core",
    # three meshed levels on a preset: tpu-v4i-like and eyeriss-like stay
    "solve/test_array_presets.py::test_preset_solves_on_its_array_path[simba-like",
    # the largest unequal-parts case under the words objective: the same case under time, and the others, stay
    "solve/test_spatial_uneven.py::test_unequal_parts_match_brute_force[objective1-4]",
    # every catalogue schedule in loop-nest form: the worked examples and the random schedules stay
    "report/test_loopnest.py::test_catalogue_schedules_match_the_replay",
    # the largest ZigZag file with two replicated levels: the other files stay
    "spec/foreign/test_foreign_zigzag.py::test_hardware_with_two_replicated_levels_solves_and_replays[tesla_npu_like",
    # brute-force cross-checks of meshed paths: the other named and random cases stay
    "solve/test_spatial_vs_brute_force.py::test_named_spatial_case_matches_brute_force[remainder_parent_pieces]",
    "solve/test_spatial_vs_brute_force.py::test_shortcuts_change_nothing[l0_mesh_3levels]",
    "solve/test_spatial_placement.py::test_the_solver_matches_the_better_of_split_and_unsplit[matmul, 3 instances, the output placed]",
    # three-level placement against brute force: seeds 0, 1, 2 and 4 stay
    "solve/test_placement_solver.py::test_three_levels_equal_brute_force[3]",
    "solve/test_placement_solver.py::test_three_levels_equal_brute_force[5]",
)


def pytest_collection_modifyitems(config, items):
    """Mark the cases named in SLOW (a prefix of the node id below tests/) slow; a name that matches nothing
    is an error, so a renamed test cannot silently leave the nightly run."""
    unmatched = set(SLOW)
    for item in items:
        nodeid = item.nodeid.removeprefix("tests/")
        for prefix in SLOW:
            if nodeid.startswith(prefix):
                item.add_marker(pytest.mark.slow)
                unmatched.discard(prefix)
    # Only a whole-suite collection can check that every name matches: a run of one file sees only its own.
    whole = {"tests", str(config.rootpath / "tests")}
    if unmatched and set(config.args) <= whole:
        raise pytest.UsageError(f"tests/conftest.py SLOW names no collected test: {sorted(unmatched)}")
