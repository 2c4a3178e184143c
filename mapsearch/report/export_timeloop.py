"""A schedule as Timeloop v0.4 input files: problem, architecture and mapping.

:func:`timeloop_files` gives the three YAML texts (``problem.yaml``,
``arch.yaml``, ``mapping.yaml``); :func:`timeloop_yaml` one text holding all
three sections (timeloopfe reads both ways). The nest they state is
:func:`mapsearch.report.timeloop_nest.timeloop_nest`'s: exact, or refused
with one line.

- ``problem``: ``shape`` with one-letter dimensions (renames listed in the
  header), a data space per tensor (``projection`` per axis; an affine axis
  ``p*2 + r`` is ``[[P, Coef2], [R]]`` with ``coefficients``), the output
  ``read_write: true``; ``instance`` the true extents.
- ``architecture``: ``!Container`` ``system`` with one ``!Component`` per
  level, outermost first (the top ``class: DRAM``, the others ``SRAM``, the
  innermost ``regfile``), ``depth`` = capacity in words, ``width`` =
  ``datawidth`` = one word (mapsearch counts words; the 8 bits are a
  placeholder), link costs as ``write_bandwidth`` (words down per clock)
  and ``read_bandwidth`` (up) of the level they fill, or
  ``shared_bandwidth`` for a shared line; a meshed level sits in a
  ``!Container`` with ``spatial: {meshX, meshY}``; then ``!Component MAC``
  (``class: intmac``). Pass-through levels are ``regfile`` of depth 1 that
  keep nothing.
- ``mapping``: per storage level, outermost first, a ``temporal`` entry
  (``factors`` as a list, ``D=end`` or ``D=end,residual``; ``permutation``
  innermost first), a ``spatial`` entry above a fanout (``split`` = loops on
  meshX; ``no_reuse`` where the schedule forbids sharing), and a
  ``dataspace`` entry (``keep``/``bypass``; timeloopfe v0.4 has no
  ``bypass`` type).

Residual factors are Timeloop's own syntax (``src/mapping/parser.cpp``
reads ``M=7,6`` as 7 iterations, 6 on the last); timeloopfe's Python front
end checks each factor as ``NAME=INT``, so a mapping with residuals needs a
front end that passes them through. The header says so where it applies.
"""

from __future__ import annotations

import json
from fractions import Fraction

from mapsearch.report.timeloop_nest import TimeloopNest, timeloop_nest
from mapsearch.schedule.schedule import Schedule

__all__ = ["timeloop_files", "timeloop_yaml", "TIMELOOP_FILES"]

TIMELOOP_FILES = ("problem.yaml", "arch.yaml", "mapping.yaml")
WORD_BITS = 8  # a placeholder: mapsearch counts words, Timeloop needs a width in bits


def _flow(items) -> str:
    return "[" + ", ".join(items) + "]"


def _scalar(text: str) -> str:
    """A YAML scalar: plain where safe, else JSON-quoted (``M=7,6`` holds a comma)."""
    return text if text.replace("=", "").replace("_", "").isalnum() else json.dumps(text)


def _number(x: Fraction) -> str:
    """Words per clock: an int, or an exact expression timeloopfe evaluates (``1/3``)."""
    x = Fraction(x)
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def _problem_lines(s: Schedule, nest: TimeloopNest) -> list[str]:
    w = s.workload
    up = nest.letters
    coefficients = sorted({c for t in w.tensors for ix in t.indices for _, c in ix.terms if c != 1})
    lines = ["problem:", "  version: 0.4", "  shape:", f"    name: {json.dumps(w.name)}",
             f"    dimensions: {_flow(up[d] for d in w.dims)}"]
    if coefficients:
        lines.append("    coefficients:")
        lines += [f"    - {{name: Coef{c}, default: {c}}}" for c in coefficients]
    lines.append("    data_spaces:")
    for t in w.tensors:
        axes = []
        for ix in t.indices:
            terms = [f"[{up[d]}]" if c == 1 else f"[{up[d]}, Coef{c}]" for d, c in ix.terms]
            axes.append(_flow(terms))
        lines += [f"    - name: {t.name}", f"      projection: {_flow(axes)}"]
        if w.is_output(t.name):
            lines.append("      read_write: true")
    lines.append(f"  instance: {{{', '.join(f'{up[d]}: {w.extent[d]}' for d in w.dims)}}}")
    return lines


def _bandwidth(level) -> list[str]:
    """The link into ``level`` as the bandwidths of the level it fills (words per clock).

    A free link (0 clocks per word) has no bandwidth attribute: Timeloop's default is unbounded.
    """
    link = level.link
    if link is None:
        return []
    down, up = (None if c == 0 else Fraction(1) / c for c in (link.input_clocks_per_word, link.output_clocks_per_word))
    if link.lines == "shared":
        # One shared line with two costs: no Timeloop attribute says that (the header notes it).
        return [f"shared_bandwidth: {_number(down)}"] if down == up and down is not None else []
    return ([f"write_bandwidth: {_number(down)}"] if down is not None else []) + (
        [f"read_bandwidth: {_number(up)}"] if up is not None else [])


def _arch_lines(s: Schedule, nest: TimeloopNest) -> list[str]:
    arch = s.architecture
    lines = ["architecture:", "  version: 0.4", "  nodes:", "  - !Container", "    name: system"]
    taken = {st.name for st in nest.storage}
    inner = len(nest.storage) - 1
    word = [f"width: {WORD_BITS}", f"datawidth: {WORD_BITS}"]
    for k, st in enumerate(nest.storage):
        if st.mesh != (1, 1):
            container = f"{st.name}_array"
            while container in taken:
                container += "_"
            taken.add(container)
            lines += ["  - !Container", f"    name: {container}",
                      f"    spatial: {{meshX: {st.mesh[0]}, meshY: {st.mesh[1]}}}"]
        if st.level is None:
            cls, attrs = "regfile", ["depth: 1"] + word
            lines.append("  - !Component  # pass-through: keeps no tensor, carries the loops inside each part")
        else:
            cls = "DRAM" if k == 0 else "regfile" if k == inner else "SRAM"
            # An unbounded level gets the words it holds (timeloopfe requires a depth; here it always suffices).
            depth = st.capacity if st.capacity is not None else sum(s.workload.tensor_words(t) for t in st.keep)
            attrs = [f"depth: {depth}"] + word
            if k > 0 and arch.double_buffering:
                attrs.append("multiple_buffering: 2")
            attrs += _bandwidth(arch.levels[st.level])
            lines.append("  - !Component")
        lines += [f"    name: {st.name}", f"    class: {cls}", f"    attributes: {{{', '.join(attrs)}}}"]
    mac = "MAC"
    while mac in taken:
        mac += "_"
    lines += ["  - !Component", f"    name: {mac}", "    class: intmac", f"    attributes: {{width: {WORD_BITS}, datawidth: {WORD_BITS}}}"]
    return lines


def _mapping_lines(s: Schedule, nest: TimeloopNest) -> list[str]:
    w = s.workload
    up = nest.letters
    lines = ["mapping:"]
    for st in nest.storage:
        for kind in ("temporal", "spatial"):
            key = (st.name, kind)
            if key not in nest.permutations:
                continue
            perm = nest.permutations[key]
            loops = nest.loops[key]
            factors = _flow(_scalar(loops[d].text(up[d])) for d in w.dims)
            lines += [f"- target: {st.name}", f"  type: {kind}", f"  factors: {factors}",
                      f"  permutation: {_flow(up[d] for d in perm)}"]
            if kind == "spatial":
                lines.append(f"  split: {nest.split[st.name]}")
                if st.name in nest.no_reuse:
                    lines.append(f"  no_reuse: {_flow(nest.no_reuse[st.name])}")
        keep = list(st.keep)
        lines += [f"- target: {st.name}", "  type: dataspace", f"  keep: {_flow(keep)}",
                  f"  bypass: {_flow(t for t in w.tensor_names if t not in keep)}"]
    return lines


def _header(s: Schedule, nest: TimeloopNest, what: str) -> list[str]:
    w, arch = s.workload, s.architecture
    lines = [f"# Timeloop v0.4 {what} of a mapsearch schedule: {w.name} ({w.einsum.text()}) on {arch.name}"]
    renamed = [f"{d} -> {nest.letters[d]}" for d in w.dims if d != nest.letters[d]]
    if renamed:
        lines.append("# dimensions renamed (Timeloop uses one capital letter): " + ", ".join(renamed))
    residual = any(lp.residual != lp.end for per in nest.loops.values() for lp in per.values())
    if what not in ("problem", "architecture") and residual:
        lines.append("# residual factors (D=end,residual: the last iteration of a loop runs residual times) are Timeloop's "
                     "syntax; timeloopfe 0.4 checks factors as NAME=INT and rejects them")
    if what != "problem":
        lines += [f"# note: {n}" for n in nest.notes]
    if what == "architecture":
        lines.append("# sizes in words (width = datawidth = one 8-bit placeholder word; an unbounded level's depth is the "
                     "words it holds); bandwidths in words per clock")
        shared = [lv.name for lv in arch.levels if lv.link is not None and lv.link.lines == "shared"
                  and lv.link.input_clocks_per_word != lv.link.output_clocks_per_word]
        if shared:
            lines.append(f"# no bandwidth at {', '.join(shared)}: one shared line with different costs down and up")
    return lines


def timeloop_files(schedule: Schedule) -> dict[str, str]:
    """``{"problem.yaml": ..., "arch.yaml": ..., "mapping.yaml": ...}``; raises MapsearchError if inexact."""
    nest = timeloop_nest(schedule)
    parts = {
        "problem.yaml": _header(schedule, nest, "problem") + _problem_lines(schedule, nest),
        "arch.yaml": _header(schedule, nest, "architecture") + _arch_lines(schedule, nest),
        "mapping.yaml": _header(schedule, nest, "mapping") + _mapping_lines(schedule, nest),
    }
    return {name: "\n".join(lines) + "\n" for name, lines in parts.items()}


def timeloop_yaml(schedule: Schedule) -> str:
    """The three sections in one YAML file (problem, architecture, mapping)."""
    nest = timeloop_nest(schedule)
    lines = _header(schedule, nest, "problem, architecture and mapping")
    lines += _problem_lines(schedule, nest) + _arch_lines(schedule, nest) + _mapping_lines(schedule, nest)
    return "\n".join(lines) + "\n"
