"""The JSON Schemas shipped with mapsearch: ids that resolve, refs that resolve, and every bundled file valid.

Every file format mapsearch reads has a schema (docs/modules.md lists them);
each ``$id`` is the schema's URL in the repository, each ``$ref`` resolves in
:func:`mapsearch.spec.schema.registry` (built from the bundled files, so no
network is needed), and every example, preset and bundled table validates
against the schema of its format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import pytest
import yaml

from mapsearch.spec.schema import SCHEMA_ID_BASE, registry, schema_files, schema_id

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "mapsearch"
EX = ROOT / "examples"

SCHEMAS = {p.name.removesuffix(".schema.json"): p for p in schema_files()}


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


class _TagsAsMappings(yaml.SafeLoader):
    """A tree file as a validator without mapsearch's loader sees it: tagged nodes are plain mappings."""


_TagsAsMappings.add_multi_constructor("!", lambda loader, suffix, node: loader.construct_mapping(node, deep=True))


def _load(path: Path) -> Any:
    if path.suffix == ".json":
        return json.loads(path.read_text())
    return yaml.load(path.read_text(), Loader=_TagsAsMappings)  # noqa: S506 - a SafeLoader subclass


def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(SCHEMAS[name].read_text()), registry=registry())


def _has(path: Path, key: str) -> bool:
    data = _load(path)
    return isinstance(data, dict) and key in data


# Every bundled file a reader of mapsearch takes, by the schema of its format.
FILES: list[tuple[str, Path]] = []
FILES += [("workload", p) for p in EX.rglob("*.yaml") if _has(p, "einsum") and isinstance(_load(p)["einsum"], str)]
FILES += [("chain", p) for p in EX.rglob("*.yaml") if _has(p, "einsums")]
FILES += [("teaal", p) for p in EX.rglob("*.yaml") if _has(p, "einsum") and isinstance(_load(p)["einsum"], dict)]
FILES += [("architecture", p) for p in [*EX.rglob("*.yaml"), *(PKG / "presets").glob("*.yaml")] if _has(p, "levels")]
FILES += [("tree", p) for p in [*EX.rglob("*.yaml"), *(PKG / "presets").glob("*.yaml")] if _has(p, "arch")]
FILES += [("constraints", p) for p in (ROOT / "constraints").glob("*.yaml")]
FILES += [("sweep", p) for p in (EX / "sweeps").glob("*.yaml")]
FILES += [("trace-options", p) for p in EX.rglob("*.yaml") if _has(p, "layouts")]
FILES += [("schedule", p) for p in EX.rglob("*.json") if _load(p).get("format") == "mapsearch-schedule"]
FILES += [("model", p) for p in (PKG / "characterize" / "models").glob("*.yaml")]
FILES += [("profile", p) for p in (PKG / "characterize" / "profiles").glob("*.yaml")]
FILES += [("patterns", PKG / "characterize" / "patterns.yaml")]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_schema_is_valid_and_carries_its_url_as_id(name):
    path = SCHEMAS[name]
    data = json.loads(path.read_text())
    jsonschema.Draft202012Validator.check_schema(data)
    assert data["$id"] == schema_id(path) == SCHEMA_ID_BASE + path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_ref_resolves_in_the_bundled_registry(name):
    data = json.loads(SCHEMAS[name].read_text())
    resolver = registry().resolver(base_uri=data["$id"])
    refs = list(_refs(data))
    for ref in refs:
        resolved = resolver.lookup(ref)  # raises if it does not resolve
        assert isinstance(resolved.contents, (dict, bool)), ref


def test_schemas_refer_to_each_other_across_packages():
    """The schedule embeds the workload and architecture schemas; the fused schedule the chain and schedule ones."""
    refs = {name: set(_refs(json.loads(p.read_text()))) for name, p in SCHEMAS.items()}
    assert "../spec/schemas/architecture.schema.json" in refs["schedule"]
    assert {"../spec/schemas/chain.schema.json", "schedule.schema.json#/$defs/figures"} <= refs["fused-schedule"]


def test_every_format_has_bundled_files_to_check():
    formats = {name for name, _ in FILES}
    assert formats == set(SCHEMAS) - {"fused-schedule"}, set(SCHEMAS) - formats  # no fused example is bundled


@pytest.mark.parametrize("name, path", FILES, ids=[f"{n}:{p.relative_to(ROOT)}" for n, p in FILES])
def test_every_bundled_file_validates_against_its_schema(name, path):
    errors = sorted(_validator(name).iter_errors(_load(path)), key=lambda e: list(e.absolute_path))
    assert not errors, f"{path}: {errors[0].json_path}: {errors[0].message}"


def test_a_fused_schedule_written_by_the_solver_validates(tmp_path):
    from mapsearch import api

    result = api.solve_chain(EX / "chains" / "fusion-wins.yaml", EX / "chains" / "fusion-arch.yaml")
    api.save_schedule(next(o.schedule for o in result.fused if o.schedule is not None), tmp_path / "f.json")
    data = json.loads((tmp_path / "f.json").read_text())
    assert data["format"] == "mapsearch-fused-schedule"
    assert not list(_validator("fused-schedule").iter_errors(data))


@pytest.mark.parametrize("name, bad", [
    ("constraints", {"tiles": {"innermost": {"m": 0}}}),
    ("constraints", {"orderz": {}}),
    ("chain", {"name": "c", "einsums": [], "extents": {"m": 1}}),
    ("tree", {"arch": {"nodes": [{"name": "L0", "size": 4, "fanout": 2}]}}),
    ("trace-options", {"layouts": {"A": {"kind": "diagonal"}}}),
])
def test_the_schemas_reject_what_the_readers_reject(name, bad):
    assert list(_validator(name).iter_errors(bad))
