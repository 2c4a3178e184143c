"""Generated hostile input: random documents into every reader raise nothing but one-line MapsearchErrors.

The documents mix the readers' own field names with random ones, and values
of every kind the parsers produce: huge and negative ints, floats (inf,
nan), text that looks like numbers and fractions, nested lists and
mappings. Each reader must accept the document or refuse it with a
:class:`~mapsearch.errors.MapsearchError` whose message is one line; any
other exception is a bug.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mapsearch.errors import MapsearchError

FIELDS = ["name", "einsum", "extents", "homes", "levels", "capacity", "link", "input_clocks_per_word",
          "output_clocks_per_word", "lines", "mesh", "size", "may_reuse", "instances", "compute", "block",
          "clocks_per_call", "double_buffering", "tiles", "orders", "keep", "stationary", "tensor", "level",
          "innermost", "min", "max", "m", "n", "k", "A", "B", "Z", "L0", "L1", "L2", "workloads", "architectures",
          "params", "range", "step", "scale", "values", "mode", "objectives", "constraints", "time_limit",
          "format", "version", "tile", "order", "predicted", "einsums", "declaration", "expressions", "shape"]

scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from([0, 1, -1, 2**24 + 1, 2**62, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from(["1/3", "1/0", "0.25", "-2", "1e400", "x", "L1->L0", "Z[m,n] += A[m,k] * B[k,n]",
                                           "innermost", "shared", "separate", "All", "input", "log2"]),
)
keys = st.one_of(st.sampled_from(FIELDS), st.text(min_size=1, max_size=8))
documents = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)), max_leaves=25)
# Mostly mappings with the readers' fields at the top, as real files have.
top = st.dictionaries(st.sampled_from(FIELDS), documents, min_size=1, max_size=6) | documents


def _readers():
    from mapsearch.characterize.models import load_model
    from mapsearch.characterize.profiles import load_profile
    from mapsearch.schedule.json_io import load_schedule
    from mapsearch.spec.constraints import load_constraints
    from mapsearch.spec.graph_load import load_graph
    from mapsearch.spec.load import load_architecture, load_problem, load_workload
    from mapsearch.spec.teaal import load_teaal
    from mapsearch.spec.tree import load_tree
    from mapsearch.sweep.spec import load_sweep

    examples = Path(__file__).resolve().parents[1] / "examples"
    return {
        "workload": load_workload,
        "architecture": load_architecture,
        "problem": lambda p: load_problem(p, examples / "arch-three-level.yaml"),
        "problem-arch": lambda p: load_problem(examples / "matmul-4x4x4.yaml", p),
        "constraints": load_constraints,
        "tree": load_tree,
        "chain": load_graph,
        "teaal": load_teaal,
        "sweep": load_sweep,
        "model": lambda p: load_model(str(p)),
        "profile": lambda p: load_profile(str(p)),
        "schedule": load_schedule,
    }


READERS = _readers()


def _check(reader: str, path: Path) -> None:
    try:
        READERS[reader](path)
    except MapsearchError as e:
        text = str(e)
        assert text and "\n" not in " ".join(text.split()) and len(text) < 2000, text


@pytest.mark.parametrize("reader", sorted(READERS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=top)
def test_random_documents_are_read_or_refused_in_one_line(reader: str, data: object, tmp_path: Path) -> None:
    path = tmp_path / ("doc.json" if reader == "schedule" else "doc.yaml")
    if reader == "schedule":
        text = json.dumps(data, allow_nan=True)
    else:
        text = yaml.safe_dump(data, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
    _check(reader, path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blob=st.binary(max_size=200))
def test_random_bytes_are_refused_in_one_line(blob: bytes, tmp_path: Path) -> None:
    path = tmp_path / "doc.yaml"
    path.write_bytes(blob)
    for reader in ("workload", "architecture", "constraints", "tree", "sweep", "schedule"):
        _check(reader, path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extents=st.dictionaries(st.sampled_from(["m", "n", "k"]), st.integers(min_value=-5, max_value=2**80),
                               min_size=3, max_size=3),
       costs=st.lists(st.fractions(min_value=0, max_value=10**6), min_size=2, max_size=2),
       instances=st.integers(min_value=0, max_value=2**40))
def test_random_numbers_in_real_files(extents: dict, costs: list, instances: int, tmp_path: Path) -> None:
    """Plausible files with numbers from tiny to far too big: loaded, or refused by a size guard in one line."""
    from mapsearch.spec.load import load_problem

    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump({"name": "w", "einsum": "Z[m,n] += A[m,k] * B[k,n]", "extents": extents}))
    a = tmp_path / "a.yaml"
    a.write_text(yaml.safe_dump({"name": "a", "levels": [
        {"name": "L1", "capacity": None},
        {"name": "L0", "capacity": 64, "instances": instances,
         "link": {"input_clocks_per_word": f"{costs[0].numerator}/{costs[0].denominator}",
                  "output_clocks_per_word": f"{costs[1].numerator}/{costs[1].denominator}"}}]}))
    try:
        workload, arch, _ = load_problem(w, a)
    except MapsearchError as e:
        assert "\n" not in str(e)
        return
    # What loads fits the guards: every extent and the figures' bound.
    assert all(1 <= e <= 2**24 for _, e in workload.extents)
    assert 1 <= arch.levels[1].instances <= 2**20
    # The words of a link summed over its copies are at most 2 x (spans 1 + 1 + 1) x MACs whatever the instances
    # (spec/limits.einsum_figures; every word over every instance was the guard before 2a42e8f).
    assert math.prod(e for _, e in workload.extents) * 6 < 2**62
