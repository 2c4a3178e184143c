"""A checker of Timeloop v0.4 input files, written from the format (not from mapsearch's exporter).

Sources: timeloopfe v0.4 (``pytimeloop/timeloopfe/v4``: problem.py, arch.py,
constraints.py) for keys and types; Timeloop's C++ parser
(``src/mapping/parser.cpp``, ``src/workload/shape-models/problem-shape.cpp``)
for factors (``D=end`` or ``D=end,residual``; ``((r1-1)*e2 + (r2-1))*e3 + ...
+ rn == extent``), one-letter dimensions and projections; nest-analysis's
``IsLastGlobalIteration_`` for what residuals mean (a loop runs ``residual``
times when every outer loop over its dimension is at its last iteration).

:func:`violations` lists what breaks the rules; :func:`tile_sequences`
replays Timeloop's tiling of one dimension (pieces in order at each storage
level) so a test can compare it with mapsearch's split-with-remainder.
"""

from __future__ import annotations

import math
import re

import yaml

COMPUTE_CLASSES = ("mac", "intmac", "fpmac", "compute")
_FACTOR = re.compile(r"^([A-Z])=(\d+)(?:,(\d+))?$")


class _Loader(yaml.SafeLoader):
    pass


def _tagged(loader, suffix, node):
    """Any ``!Tag`` mapping (Timeloop's !Container/!Component, AccelForge's !Memory/!Storage/...) as a dict with ``_tag``."""
    out = loader.construct_mapping(node, deep=True)
    out["_tag"] = "!" + suffix
    return out


_Loader.add_multi_constructor("!", _tagged)


def load(text: str) -> dict:
    return yaml.load(text, Loader=_Loader)


def factors(entry: dict) -> dict[str, tuple[int, int]]:
    out = {}
    for f in entry["factors"]:
        m = _FACTOR.match(str(f))
        assert m, f"factor {f!r} is not D=end or D=end,residual"
        end = int(m.group(2))
        out[m.group(1)] = (end, int(m.group(3)) if m.group(3) else end)
    return out


def storage_levels(arch: dict) -> list[dict]:
    """Storage components outermost first, each with ``instances`` (product of the meshes above and at it)."""
    out, instances = [], 1
    for node in arch["architecture"]["nodes"]:
        sp = node.get("spatial", {})
        instances *= sp.get("meshX", 1) * sp.get("meshY", 1)
        if node["_tag"] == "!Component" and node["class"] not in COMPUTE_CLASSES:
            out.append({**node, "instances": instances})
    return out


def violations(problem: dict, arch: dict, mapping: dict) -> list[str]:
    bad: list[str] = []
    p = problem["problem"]
    if set(p) != {"version", "shape", "instance"} or str(p["version"]) != "0.4":
        bad.append(f"problem keys {sorted(p)}")
    shape = p["shape"]
    dims = shape["dimensions"]
    if any(not (isinstance(d, str) and len(d) == 1 and d.isupper()) for d in dims) or len(set(dims)) != len(dims):
        bad.append(f"dimensions {dims}: one distinct capital letter each")
    coefs = {c["name"] for c in shape.get("coefficients", [])}
    spaces = [ds["name"] for ds in shape["data_spaces"]]
    if sum(bool(ds.get("read_write")) for ds in shape["data_spaces"]) != 1:
        bad.append("exactly one read_write data space (the output)")
    for ds in shape["data_spaces"]:
        if set(ds) - {"name", "projection", "read_write"} or not ds["projection"]:
            bad.append(f"data space {ds}")
        for axis in ds["projection"]:
            for term in axis:
                if not (1 <= len(term) <= 2 and term[0] in dims and (len(term) == 1 or term[1] in coefs)):
                    bad.append(f"{ds['name']}: projection term {term}")
    instance = p["instance"]
    if set(instance) != set(dims) or any(not isinstance(v, int) or v < 1 for v in instance.values()):
        bad.append(f"instance {instance}")
    a = arch["architecture"]
    if str(a["version"]) != "0.4" or a["nodes"][0]["_tag"] != "!Container":
        bad.append("architecture: version 0.4 and a top !Container")
    names = [n["name"] for n in a["nodes"]]
    if len(set(names)) != len(names):
        bad.append(f"node names repeat: {names}")
    if a["nodes"][-1].get("class") not in COMPUTE_CLASSES:
        bad.append("the last node is the compute")
    levels = storage_levels(arch)
    for lv in levels:
        at = lv["attributes"]
        if not all(isinstance(at.get(k), int) and at[k] >= 1 for k in ("depth", "width", "datawidth")):
            bad.append(f"{lv['name']}: depth, width and datawidth are ints >= 1")
    for n in a["nodes"]:
        sp = n.get("spatial")
        if sp is not None and (set(sp) - {"meshX", "meshY"} or any(not isinstance(v, int) or v < 1 for v in sp.values())):
            bad.append(f"{n['name']}: spatial {sp}")
    level_names = [lv["name"] for lv in levels]
    entries = mapping["mapping"]
    seen = set()
    for e in entries:
        key = (e["target"], e["type"])
        if e["type"] not in ("temporal", "spatial", "dataspace") or e["target"] not in level_names or key in seen:
            bad.append(f"mapping entry {key}")
            continue
        seen.add(key)
        if e["type"] == "dataspace":
            keep, bypass = e.get("keep", []), e.get("bypass", [])
            if set(keep) & set(bypass) or set(keep) | set(bypass) != set(spaces):
                bad.append(f"{e['target']}: keep {keep} and bypass {bypass} must split {spaces}")
            continue
        f = factors(e)
        if set(f) != set(dims) or sorted(e["permutation"]) != sorted(dims):
            bad.append(f"{key}: every dimension once in factors and permutation")
        if any(r > end or r < 1 for end, r in f.values()):
            bad.append(f"{key}: residuals between 1 and end")
        if e["type"] == "spatial":
            k = level_names.index(e["target"])
            fanout = levels[k + 1]["instances"] // levels[k]["instances"]
            x = e["permutation"][: e["split"]]
            used = math.prod(f[d][0] for d in x) * math.prod(f[d][0] for d in dims if d not in x)
            if used > fanout:
                bad.append(f"{key}: spatial factors {used} exceed the fanout {fanout}")
    for lv in level_names:
        if (lv, "temporal") not in seen or (lv, "dataspace") not in seen:
            bad.append(f"{lv}: needs a temporal and a dataspace entry")
    top = next((e for e in entries if e["target"] == level_names[0] and e["type"] == "dataspace"), None)
    if top and set(top.get("keep", [])) != set(spaces):
        bad.append("the outermost level keeps every data space")
    for d in dims:
        chain = nest_loops(mapping, arch, d)
        total = 0
        for end, r in chain:
            total = total * end + r - 1
        if total + 1 != instance[d]:
            bad.append(f"{d}: factors multiply to {total + 1}, not {instance[d]}")
    return bad


def nest_loops(mapping: dict, arch: dict, dim: str) -> list[tuple[int, int]]:
    """(end, residual) of ``dim``'s loops in nest order: storage levels outermost first, temporal then spatial."""
    by_key = {(e["target"], e["type"]): e for e in mapping["mapping"]}
    out = []
    for lv in storage_levels(arch):
        for kind in ("temporal", "spatial"):
            e = by_key.get((lv["name"], kind))
            if e is not None:
                out.append(factors(e)[dim])
    return out


def tile_sequences(mapping: dict, arch: dict, dim: str, extent: int) -> dict[str, list[int]]:
    """Per storage level: the sizes, in order, of the pieces of ``dim`` it holds, by Timeloop's residual rule."""
    by_key = {(e["target"], e["type"]): e for e in mapping["mapping"]}
    loops, after = [], []  # after[k]: the storage level whose tiles loop k's pieces are (the next level down)
    levels = [lv["name"] for lv in storage_levels(arch)]
    for k, name in enumerate(levels):
        for kind in ("temporal", "spatial"):
            e = by_key.get((name, kind))
            if e is not None:
                loops.append(factors(e)[dim])
                after.append(levels[k + 1] if k + 1 < len(levels) else "MAC")
    full = [math.prod(end for end, _ in loops[k + 1:]) for k in range(len(loops))]  # a non-last child's size
    pieces = [(extent, True)]
    out: dict[str, list[int]] = {levels[0]: [extent]}
    for k, (end, r) in enumerate(loops):
        nxt = []
        for size, last in pieces:
            n = r if last else end
            for j in range(n):
                child_last = last and j == n - 1
                nxt.append((size - (n - 1) * full[k] if child_last else full[k], child_last))
        pieces = nxt
        out[after[k]] = [size for size, _ in pieces]
    return out
