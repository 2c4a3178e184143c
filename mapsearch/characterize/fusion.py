"""Fused patterns as data (``patterns.yaml``), matched on a lowered model.

:func:`fuse` lowers every node (:func:`mapsearch.characterize.graph.lower`)
and, for each producer, tries the registry's patterns, longest first. A
match is handed to the ``fusion_decider`` (``(producer, epilogue nodes,
pattern name) -> bool``); the default fuses every epilogue, which adds no
traffic: the epilogue layers are kept in the table, marked ``fused_into``
their producer with zero words, and the producer records the pattern.

This is a hook: deciding fusions that change the traffic of the producers
themselves (a chain of einsums kept on chip) is the fusion solver's job
(mapsearch's fusion issue), and a decider may call it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from mapsearch.characterize.graph import Layer, Node, lower
from mapsearch.errors import SpecError

__all__ = ["Pattern", "Registry", "default_registry", "load_registry", "fuse", "fuse_all_epilogues", "lower_all", "PATTERNS_FILE"]

PATTERNS_FILE = Path(__file__).resolve().parent / "patterns.yaml"

FusionDecider = Callable[[Node, Sequence[Node], str], bool]


@dataclass(frozen=True)
class Pattern:
    name: str
    producer: str
    epilogue: tuple[frozenset[str], ...]


@dataclass(frozen=True)
class Registry:
    patterns: tuple[Pattern, ...]

    def for_producer(self, op: str) -> list[Pattern]:
        """The patterns of a producer op, longest first (file order breaks ties)."""
        found = [p for p in self.patterns if p.producer == op]
        return sorted(found, key=lambda p: -len(p.epilogue))


def load_registry(path: str | Path = PATTERNS_FILE) -> Registry:
    from mapsearch.spec.reading import read_yaml

    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("patterns"), list):
        raise SpecError(str(path), "patterns", "a list of {name, producer, epilogue}", data)
    out = []
    for i, p in enumerate(data["patterns"]):
        if not isinstance(p, dict) or not {"name", "producer", "epilogue"} <= set(p):
            raise SpecError(str(path), f"patterns[{i}]", "{name, producer, epilogue: [[op, ...], ...]}", p)
        steps = tuple(frozenset([s] if isinstance(s, str) else s) for s in p["epilogue"])
        out.append(Pattern(str(p["name"]), str(p["producer"]), steps))
    return Registry(tuple(out))


_DEFAULT: Registry | None = None


def default_registry() -> Registry:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = load_registry()
    return _DEFAULT


def fuse_all_epilogues(producer: Node, epilogue: Sequence[Node], pattern: str) -> bool:
    """The default decider: an epilogue adds no traffic when fused, so fuse it."""
    return True


def fuse(nodes: Sequence[Node], registry: Registry, fusion_decider: FusionDecider | None = None) -> list[Layer]:
    """The lowered layers of ``nodes`` (views dropped) with fused epilogues marked."""
    decider = fusion_decider or fuse_all_epilogues
    readers: dict[str, int] = {}
    for n in nodes:
        for s in n.srcs:
            readers[s] = readers.get(s, 0) + 1
    by_name = {n.name: i for i, n in enumerate(nodes)}
    # The next non-view reader of each node, looking through views that only it reads.
    consumers: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        for s in n.srcs:
            consumers.setdefault(s, []).append(i)

    def sole_reader(name: str) -> Node | None:
        while True:
            if readers.get(name, 0) != 1:
                return None
            nxt = nodes[consumers[name][0]]
            if len(nxt.srcs) != 1:  # reads something else too (a residual): not an epilogue
                return None
            if nxt.op != "view":
                return nxt
            name = nxt.name

    fused: dict[str, tuple[str, str]] = {}  # epilogue name -> (producer, pattern)
    producers: dict[str, tuple[str, list[str]]] = {}
    for n in nodes:
        if n.name in fused:
            continue
        for pattern in registry.for_producer(n.op):
            chain, last = [], n
            for step in pattern.epilogue:
                nxt = sole_reader(last.name)
                if nxt is None or nxt.op not in step or nxt.name in fused:
                    break
                chain.append(nxt)
                last = nxt
            if len(chain) == len(pattern.epilogue) and decider(n, chain, pattern.name):
                for e in chain:
                    fused[e.name] = (n.name, pattern.name)
                producers[n.name] = (pattern.name, [e.name for e in chain])
                break
    layers = []
    for n in nodes:
        layer = lower(n)
        if layer is None:
            continue
        if n.name in fused:
            layer.fused_into, layer.pattern = fused[n.name]
            layer.read_words = layer.write_words = 0
        if n.name in producers:
            layer.pattern, layer.epilogues = producers[n.name]
        layers.append(layer)
    del by_name
    return layers


def lower_all(nodes: Sequence[Node], registry: Any = None, fusion_decider: Any = None) -> list[Layer]:
    """Lower every node and apply the fused patterns (see :func:`fuse`)."""
    return fuse(nodes, registry or default_registry(), fusion_decider)
