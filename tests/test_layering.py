"""Imports point one way along the data path, and no module imports itself round a circle.

The layers (docs/modules.md), lowest first; a module may import its own
package and any lower layer, never a higher one, and never the other package
of its own layer (``model`` and ``sim`` stand side by side)::

    errors, version -> budget -> atomic -> spec -> presets -> schedule -> model | sim
        -> solve -> report -> sweep -> characterize -> api -> cli -> mapsearch (the package root)

``dram`` and ``sparse`` are feature packages whose modules sit in different
layers (:data:`FEATURE_MODULES`). Every import counts, at module level or
inside a function (a function-level import is still a dependency; using one
to get round a circle hides the circle, it does not remove it). Importing
``a.b.c`` also runs the package ``a.b``'s ``__init__``, so it counts as an
import of that package too. Only imports under ``if TYPE_CHECKING:`` (never
executed) are left out of the circle check; they still obey the layers.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mapsearch"

# Lowest first. Packages in one tuple share a layer and may not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "version"),
    ("budget",),  # the time limit and Ctrl-C, checked in every phase (atomic_open refuses to write once aborted)
    ("atomic",),
    ("spec",),
    ("presets",),
    ("schedule",),
    ("model", "sim"),
    ("solve",),
    ("report",),
    ("sweep",),
    ("characterize",),
    ("api",),
    ("cli",),
    ("mapsearch",),  # the package root: the public names, over everything
)

# Modules of the feature packages, by the package whose layer they sit in.
FEATURE_MODULES: dict[str, str] = {
    "mapsearch.dram": "spec",  # DramSpec and its presets (the architecture's dram: entry)
    "mapsearch.dram.geometry": "spec",
    "mapsearch.dram.layout": "spec",
    "mapsearch.dram.spec": "spec",
    "mapsearch.dram.rowbuffer": "sim",  # the row-buffer state machine the replay drives
    "mapsearch.dram.options": "sim",  # trace options, checked against a replayed address stream
    "mapsearch.dram.trace": "sim",  # the replayed address stream in Ramulator / DRAMsim3 formats
    "mapsearch.dram.tracing": "sim",  # a schedule's trace in one call: stream, count, write
    "mapsearch.sparse": "sim",  # its __init__ re-exports the sparse replay
    "mapsearch.sparse.tensor": "spec",  # COO tensors and their files
    "mapsearch.sparse.format": "spec",
    "mapsearch.sparse.partition": "spec",
    "mapsearch.sparse.density": "spec",
    "mapsearch.sparse.density_text": "spec",
    "mapsearch.sparse.replay": "sim",
    "mapsearch.sparse.effectual": "sim",  # the effectual products from the data: join, result, intersections
    "mapsearch.sparse.model": "sim",  # expected words under a density, counted on the replay's walk
    "mapsearch.sparse.teaal_partition": "sim",
    "mapsearch.sparse.solve": "solve",
    "mapsearch.sparse.measures": "solve",  # a format's expected words as per-dimension footprints
    "mapsearch.sparse.entry": "solve",  # the sparse solve in one call, replays checked
}

RANK = {package: rank for rank, group in enumerate(LAYERS) for package in group}


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    target: str  # dotted module name (a module or package that exists)
    line: int
    type_checking: bool

    def where(self) -> str:
        return f"{MODULES[self.importer].relative_to(ROOT)}:{self.line}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _absolute(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name: str, path: Path) -> list[Import]:
    """Every import of a mapsearch module in ``path``, wherever it is in the file."""
    out: list[Import] = []

    def add(target: str, line: int, type_checking: bool) -> None:
        if target == "mapsearch" or target.startswith("mapsearch."):
            out.append(Import(name, target, line, type_checking))

    def visit(node: ast.AST, type_checking: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, type_checking)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno, type_checking)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(name, path.name == "__init__.py", node)
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                add(sub if sub in MODULES else module, node.lineno, type_checking)
        for child in ast.iter_child_nodes(node):
            visit(child, type_checking)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return out


IMPORTS = [imp for name, path in MODULES.items() for imp in _imports(name, path)]


def layer_of(module: str) -> str:
    """The package whose layer ``module`` sits in."""
    if module in FEATURE_MODULES:
        return FEATURE_MODULES[module]
    if module == "mapsearch" or module == "mapsearch.__main__":
        return "mapsearch" if module == "mapsearch" else "cli"
    package = module.split(".")[1]
    if package in ("dram", "sparse"):
        raise AssertionError(f"{module}: a feature-package module with no layer; add it to FEATURE_MODULES "
                             f"in tests/test_layering.py (and to docs/modules.md)")
    if package not in RANK:
        raise AssertionError(f"{module}: package {package!r} is in no layer; add it to LAYERS in "
                             f"tests/test_layering.py (and to docs/modules.md)")
    return package


def _ancestors(module: str) -> list[str]:
    """The packages whose ``__init__`` importing ``module`` runs, below the root."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts))]


def layering_violations() -> list[str]:
    out = []
    for imp in IMPORTS:
        mine = layer_of(imp.importer)
        own_package = imp.importer if imp.importer in MODULES and MODULES[imp.importer].name == "__init__.py" \
            else imp.importer.rpartition(".")[0]
        targets = [imp.target] + [a for a in _ancestors(imp.target) if not own_package.startswith(a)]
        for target in targets:
            theirs = layer_of(target)
            if theirs == mine:
                continue
            if RANK[theirs] > RANK[mine]:
                why = f"{theirs} is above {mine}"
            elif RANK[theirs] == RANK[mine]:
                why = f"{theirs} and {mine} stand side by side and may not import each other"
            else:
                continue
            via = "" if target == imp.target else f" (the package {target} of {imp.target})"
            out.append(f"{imp.where()}: {imp.importer} imports {imp.target}{via}: {why}")
    return sorted(set(out))


def import_cycles() -> list[str]:
    graph = nx.DiGraph()
    lines: dict[tuple[str, str], int] = {}
    for imp in IMPORTS:
        if imp.type_checking or imp.target == imp.importer:
            continue
        if MODULES.get(imp.target, Path()).name == "__init__.py" and imp.importer.startswith(imp.target + "."):
            continue  # a module naming its own package's names: the package is already being imported
        graph.add_edge(imp.importer, imp.target)
        lines.setdefault((imp.importer, imp.target), imp.line)
    out = []
    for component in nx.strongly_connected_components(graph):
        if len(component) < 2:
            continue
        cycle = nx.find_cycle(graph.subgraph(component))
        out.append(" -> ".join(f"{a} (line {lines[(a, b)]})" for a, b in cycle) + f" -> {cycle[0][0]}")
    return sorted(out)


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)  # raises naming the module


def test_imports_point_down_the_layers():
    violations = layering_violations()
    assert not violations, "imports against the layering (docs/modules.md):\n" + "\n".join(violations)


def test_no_import_cycles():
    cycles = import_cycles()
    assert not cycles, "import cycles (a function-level import is still one):\n" + "\n".join(cycles)


def test_sim_imports_neither_model_nor_solve():
    bad = [f"{i.where()}: {i.importer} imports {i.target}" for i in IMPORTS
           if layer_of(i.importer) == "sim" and layer_of(i.target) in ("model", "solve")]
    assert not bad, "\n".join(bad)


# What the command line may import: the API, and for rendering the report modules (and the characterization's
# tables); besides those only the error classes, the version and atomic file writing.
CLI_MAY_IMPORT = ("mapsearch.api", "mapsearch.cli", "mapsearch.report", "mapsearch.characterize.report",
                  "mapsearch.errors", "mapsearch.version", "mapsearch.atomic")


def test_the_cli_calls_the_api_and_renders():
    bad = [f"{i.where()}: {i.importer} imports {i.target}" for i in IMPORTS if i.importer.startswith("mapsearch.cli")
           and not any(i.target == m or i.target.startswith(m + ".") for m in CLI_MAY_IMPORT)]
    assert not bad, "the CLI goes through mapsearch.api (and renders with mapsearch.report):\n" + "\n".join(bad)


@pytest.mark.parametrize("source, expected", [
    ("from mapsearch.solve.run import solve\n", "solve"),
    ("def f():\n    from mapsearch.cli.main import main\n", "cli"),
])
def test_the_check_sees_module_and_function_level_imports(tmp_path, source, expected):
    """The check reads function-level imports too (a lazy import is still an import)."""
    path = tmp_path / "probe.py"
    path.write_text(source)
    found = _imports("mapsearch.model.probe", path)
    assert [layer_of(i.target) for i in found] == [expected]
