"""Architecture profiles: CPU, GPU, TPU and KPU, each an architecture plus clock, word size and energies.

``cpu``, ``gpu`` and ``tpu`` are the presets ``cpu-core``, ``gpu-sm`` and
``tpu-v4i-like`` as they are (register files, block ops, PE meshes); ``kpu``
is a 32x32 PE mesh under a 64 MB tile memory. ``cpu-quick``, ``gpu-quick``,
``tpu-quick`` and ``kpu-quick`` are quick stand-ins (a scalar MAC at the same
peak, the levels that feed the array or block dropped): they solve faster
and their figures leave that traffic and padding out; they say so
(``stand_in_for``), and so does every report (:attr:`Profile.hardware`).

A profile file (``profiles/<name>.yaml``, or any YAML file of this shape)::

    name: GPU
    clock_hz: 1.41e9            # to turn clocks into seconds
    word_bytes: 2
    preset: gpu-sm              # the preset it is built on (documentation)
    architecture: gpu-sm        # a preset name, or a flat architecture as in an architecture file
    energy_pj:
      links: {HBM->L2: 62, L2->SMEM: 25, SMEM->registers: 5}   # per word crossing the link, either direction
      mac: 1.5                  # per MAC the op executes (block MACs x op calls, padding included)
    stand_in_for: null          # a quick stand-in names the profile it stands in for
    citations: [...]

Energy of a solved layer: ``sum(words on a link x links[link]) + MACs
executed x mac``, computed from the solved figures (the solve itself
minimises time, then words). A bandwidth-only step pays the top link's
energy per word. Every file's header cites its numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from mapsearch.characterize.models import check_name
from mapsearch.errors import MapsearchError, SpecError

__all__ = ["Profile", "PROFILE_DIR", "profile_names", "load_profile", "profile_from_peer"]

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
PROFILE_SCHEMA = Path(__file__).resolve().parent / "profile.schema.json"


@dataclass
class Profile:
    name: str
    architecture: dict[str, Any]  # the architecture file's dict (architecture_to_dict form)
    clock_hz: float
    word_bytes: int
    link_energy_pj: dict[str, float]
    mac_energy_pj: float
    preset: str | None = None
    citations: list[str] = field(default_factory=list)
    source: str = ""
    stand_in_for: str | None = None  # a quick stand-in (scalar MAC, fewer levels) names the profile it stands for

    @property
    def links(self) -> list[str]:
        levels = self.architecture["levels"]
        return [f"{a['name']}->{b['name']}" for a, b in zip(levels, levels[1:])]

    @property
    def top_link(self) -> str:
        return self.links[0]

    def top_link_clocks(self, read_words: int, write_words: int) -> Fraction:
        """Clocks to read and write these words over the top link (shared line: the sum; separate: the max)."""
        link = self.architecture["levels"][1].get("link") or {}
        cin = Fraction(str(link.get("input_clocks_per_word", 1)))
        cout = Fraction(str(link.get("output_clocks_per_word", link.get("input_clocks_per_word", 1))))
        down, up = read_words * cin, write_words * cout
        return down + up if link.get("lines", "shared") == "shared" else max(down, up)

    @property
    def block_macs(self) -> int:
        """MACs of one op call: the block's, given by dimension or by GEMM role (1 for a scalar MAC)."""
        compute = self.architecture.get("compute") or {}
        block = compute.get("block") or compute.get("block_roles") or {}
        return math.prod(int(v) for v in block.values())

    @property
    def compute_instances(self) -> int:
        """The computes working in parallel: the product of every level's instances (mesh sizes)."""
        return math.prod(_instances(level) for level in self.architecture["levels"])

    @property
    def peak_macs_per_clock(self) -> float:
        compute = self.architecture.get("compute") or {}
        per_call = float(Fraction(str(compute.get("clocks_per_call", 1))))
        return self.compute_instances * self.block_macs / per_call

    @property
    def hardware(self) -> str:
        """What the profile models, in one line: its levels (meshes as ``[x128 y128]``), then its op."""
        levels = []
        for level in self.architecture["levels"]:
            mesh = level.get("mesh") or ([{"name": "x", "size": level["instances"]}] if level.get("instances", 1) > 1
                                         else [])
            cap = level.get("capacity")
            size = "" if cap is None else f" {cap:,}"
            axes = " [" + " ".join(f"{a['name']}{a['size']}" for a in mesh) + "]" if mesh else ""
            levels.append(f"{level['name']}{size}{axes}")
        compute = self.architecture.get("compute") or {}
        roles = compute.get("block_roles")
        block = roles or compute.get("block") or {}
        shape = "x".join(f"{d}{v}" for d, v in block.items())
        op = (f"block op {shape} by GEMM role" if roles else f"block op {shape}") if block else "scalar MAC"
        per = compute.get("clocks_per_call", 1)
        kind = f"quick stand-in for {self.stand_in_for}: " if self.stand_in_for else ""
        return f"{kind}{' > '.join(levels)}; {op}, {per} clock/call; peak {self.peak_macs_per_clock:g} MACs/clock"


def _instances(level: dict[str, Any]) -> int:
    mesh = level.get("mesh")
    return math.prod(int(a["size"]) for a in mesh) if mesh else int(level.get("instances", 1))


def _number(value: object, source: str, field: str, expected: str, least: float | None) -> float:
    """A finite number above 0 (``least`` None) or at least ``least``; SpecError naming ``field`` otherwise."""
    try:  # YAML reads 5.0e9 (no sign in the exponent) as text: text that is a number is taken too
        x = float(value) if isinstance(value, (int, float, str)) and not isinstance(value, bool) else math.nan
    except OverflowError:  # an int beyond any float
        x = math.inf
    except ValueError:
        x = math.nan
    if not math.isfinite(x) or (x <= 0 if least is None else x < least):
        raise SpecError(source, field, f"a number: {expected}", value)
    return x


def profile_names() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in PROFILE_DIR.glob("*.yaml")))


def load_profile(name_or_path: str) -> Profile:
    """A profile by name (``cpu``, ``gpu``, ``tpu``, ``kpu``; case-insensitive) or file."""
    from mapsearch.spec.load import architecture_from_dict, architecture_to_dict
    from mapsearch.spec.reading import read_yaml

    path = Path(name_or_path)
    from mapsearch.spec.foreign import is_foreign_file

    if path.is_file() and is_foreign_file(path):
        return profile_from_peer(path)
    if not path.exists():
        path = PROFILE_DIR / f"{name_or_path.lower()}.yaml"
        if not path.exists():
            raise MapsearchError(f"{name_or_path}: no such profile file or profile; profiles: {', '.join(profile_names())}")
    source = str(path)
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise SpecError(source, "", "a profile {name, clock_hz, word_bytes, architecture, energy_pj}", data)
    from mapsearch.spec.schema import validate_against

    # The profile's own fields by its schema (unknown keys, types); the architecture is checked below, by the
    # architecture's schema, so that its errors read as in an architecture file (a preset name stands in).
    checked = {**data, "architecture": ""} if "architecture" in data else data
    validate_against(checked, PROFILE_SCHEMA, source)
    arch = data["architecture"]
    if isinstance(arch, str):
        from mapsearch.presets import resolve_architecture

        arch_obj, _ = resolve_architecture(arch)
    else:
        arch_obj = architecture_from_dict(arch, f"{source}: architecture")
    arch_dict = architecture_to_dict(arch_obj)
    energy = data["energy_pj"] or {}
    if not isinstance(energy, dict) or not isinstance(energy.get("links") or {}, dict):
        raise SpecError(source, "energy_pj", "{links: {LINK: pJ per word}, mac: pJ}", energy)
    links = {str(k): _number(v, source, f"energy_pj.links.{k}", "pJ per word >= 0", 0)
             for k, v in (energy.get("links") or {}).items()}
    word_bytes = data.get("word_bytes", 2)
    if isinstance(word_bytes, bool) or not isinstance(word_bytes, int) or not 1 <= word_bytes <= 64:
        raise SpecError(source, "word_bytes", "an int from 1 to 64", word_bytes)
    profile = Profile(check_name(str(data["name"]), source), arch_dict, _number(data["clock_hz"], source, "clock_hz", "Hz > 0", None),
                      word_bytes, links, _number(energy.get("mac", 0.0), source, "energy_pj.mac", "pJ >= 0", 0),
                      data.get("preset"), list(data.get("citations") or []), source,
                      None if data.get("stand_in_for") is None else str(data["stand_in_for"]))
    missing = [l for l in profile.links if l not in links]
    if missing:
        raise SpecError(source, "energy_pj.links", f"an energy for every link ({', '.join(profile.links)})",
                        sorted(links), detail=f"no energy for {', '.join(missing)}")
    return profile


def profile_from_peer(path: str | Path) -> Profile:
    """A profile from a peer's architecture file (docs/peer-formats.md).

    Characterize maps many layers on one flat architecture, so the file must
    translate to one compute path whose keep/bypass rules leave every choice
    to the solver, and say its clock (AccelForge: the compute's op rate).
    Link energies come from the energy model (a word's read above plus write
    below; the same both ways), in pJ.
    """
    from mapsearch.spec.foreign import load_foreign_arch
    from mapsearch.spec.foreign.common import untranslatable
    from mapsearch.spec.load import architecture_to_dict
    from mapsearch.spec.tree_paths import flatten, path_constraints
    from mapsearch.spec.workload import Workload

    source = str(path)
    # A large stand-in einsum: an unbounded memory below the top becomes twice its tensors' words, more than any
    # layer characterize maps (2.6e10 words).
    stand_in = Workload.from_text("probe", "Z[m,n] += A[m,k] * B[k,n]", {"m": 65536, "n": 65536, "k": 65536})
    fa = load_foreign_arch(path, stand_in)
    paths = flatten(fa.tree)
    if len(paths) != 1:
        raise untranslatable(source, "", f"{len(paths)} compute paths; a characterize profile has one")
    if path_constraints(paths[0], stand_in).keep:
        raise untranslatable(source, "", "its memories keep or bypass tensors by role; characterize maps every "
                             "layer on one architecture without such rules")
    if fa.clock_hz is None:
        raise untranslatable(source, "", "the file gives no clock frequency (a profile needs one to report seconds)")
    arch = paths[0].architecture
    if arch.depth > 2 and arch.levels[-1].name.endswith("_operands") and not arch.levels[-1].mesh:
        # The operand level fits one layer's op; layers differ, so the innermost memory holds the operands
        # (its rules leave every tensor free to be kept there: checked above).
        from dataclasses import replace

        energy = arch.energy and replace(arch.energy, levels=arch.energy.levels[:-1])
        arch = replace(arch, levels=arch.levels[:-1], energy=energy)
    scale = Fraction(10**12) if (arch.energy and arch.energy.unit == "J") else Fraction(1)
    links: dict[str, float] = {}
    for j in range(1, arch.depth):
        name = arch.link_name(j)
        if arch.energy is None:
            links[name] = 0.0
            continue
        above, below = arch.energy.level(arch.levels[j - 1].name), arch.energy.level(arch.levels[j].name)
        down, up = above.read + below.write, above.write + below.read
        if down != up:
            raise untranslatable(source, name, f"a word costs {down} down and {up} up; a profile has one energy per "
                                 f"link")
        links[name] = float(down * scale)
    mac = float(arch.energy.mac * scale) if arch.energy else 0.0
    bits = 8
    return Profile(check_name(fa.tree.name, source), architecture_to_dict(arch), float(fa.clock_hz), max(1, bits // 8), links, mac,
                   None, [f"translated from {source} ({fa.format})"], source)
