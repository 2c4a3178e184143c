"""The seed's catalogue of optimal algorithms, shipped in ``examples/catalogue/``.

Each item is ``NAME.workload.yaml`` (with homes) + ``NAME.arch.yaml`` + the
solved ``NAME.schedule.json``, and a section of ``docs/catalogue.md``. For
each item:

- re-solving proves OPTIMAL, and the optimum (time, then words) equals the
  shipped schedule's predicted figures;
- the shipped schedule replays to exactly its predicted figures, and it is
  the schedule of the YAML files (same workload, architecture and homes);
- homes are respected: no words of a tensor cross a link above its home, and
  the home counts in that level's occupancy;
- the re-solved optimum has the utilization and the bound (the binding
  link, or the compute) that docs/catalogue.md states;
- the shipped schedule has the words per link, tiles and orders the doc
  shows, and every ``Binding.describe()`` line of it appears in the item's
  section. (Ties: other schedules may share the optimal time and words; the
  doc describes the shipped one.)

Regenerate the schedules with ``python examples/catalogue/regenerate.py``.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest

from mapsearch.model.problem import Problem
from mapsearch.schedule.figures import differences
from mapsearch.schedule.json_io import load_schedule
from mapsearch.sim.replay import replay
from mapsearch.solve.binding import binding_report
from mapsearch.solve.run import solve
from mapsearch.spec.load import load_problem

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "examples" / "catalogue"
DOC = ROOT / "docs" / "catalogue.md"

# What docs/catalogue.md states, per item: utilization, the link that binds
# (None: compute binds, 100%), and words per link (down, up).
EXPECTED = {
    "output-in-l1": {
        "utilization": Fraction(1),
        "bottleneck": None,
        "time": 781153,
        "words": 261914,
        "links": {"L2->L1": (17622, 0), "L1->L0": (226738, 17554)},
        # 100% needs A and B to cross L2->L1 exactly once.
        "minimal": {"L2->L1": 67 * 89 + 89 * 131},
    },
    "l2-to-l2": {
        "utilization": Fraction(319903, 456808),
        "bottleneck": "L2->L1",
        "time": 1370424,
        "words": 460021,
        "links": {"L2->L1": (50660, 6441), "L1->L0": (312746, 90174)},
        "minimal": {},
    },
    "input-in-l1": {
        "utilization": Fraction(1),
        "bottleneck": None,
        "time": 702833,
        "words": 226703,
        "links": {"L2->L1": (7897, 13261), "L1->L0": (192284, 13261)},
        # 100% needs B down once and Z up once on L2->L1.
        "minimal": {"L2->L1": 53 * 149 + 89 * 149},
    },
}
ITEMS = tuple(EXPECTED)

_SOLVED: dict[str, object] = {}


def problem(name: str) -> Problem:
    workload, arch, homes = load_problem(CATALOGUE / f"{name}.workload.yaml", CATALOGUE / f"{name}.arch.yaml")
    return Problem(workload, arch, tuple(sorted(homes.items())))


def solved(name: str):
    if name not in _SOLVED:
        _SOLVED[name] = solve(problem(name))
    return _SOLVED[name]


def shipped(name: str):
    return load_schedule(CATALOGUE / f"{name}.schedule.json")


def doc_section(name: str) -> str:
    text = DOC.read_text()
    sections = re.split(r"^## ", text, flags=re.M)
    hits = [s for s in sections if f"examples/catalogue/{name}." in s.split("\n", 3)[0] + s[:400]]
    assert len(hits) == 1, f"docs/catalogue.md needs one section naming examples/catalogue/{name}.*"
    return hits[0]


# --------------------------------------------------------------------------- tests


def test_every_item_is_shipped_and_documented():
    names = sorted(p.name.removesuffix(".schedule.json") for p in CATALOGUE.glob("*.schedule.json"))
    assert names == sorted(ITEMS)
    for name in ITEMS:
        for suffix in ("workload.yaml", "arch.yaml"):
            assert (CATALOGUE / f"{name}.{suffix}").is_file()
        doc_section(name)


@pytest.mark.parametrize("name", ITEMS)
def test_shipped_schedule_is_of_its_problem(name):
    p, s = problem(name), shipped(name)
    assert s.workload == p.workload
    assert s.architecture == p.architecture
    assert dict(s.homes).items() >= dict(p.homes).items()
    for t in p.workload.tensor_names:
        assert s.home(t) == p.home(t)


@pytest.mark.parametrize("name", ITEMS)
def test_shipped_schedule_replays_to_its_prediction(name):
    s = shipped(name)
    assert differences(s.predicted, replay(s, mode="count").figures) == []


@pytest.mark.parametrize("name", ITEMS)
def test_resolve_is_optimal_and_matches_shipped(name):
    result = solved(name)
    assert result.status == "OPTIMAL"
    assert [p.name for p in result.phases] == ["time", "words"]
    assert all(p.value == p.bound for p in result.phases)
    f, g = result.schedule.predicted, shipped(name).predicted
    assert result.phases[0].value == f.time == g.time
    assert result.phases[1].value == f.words_total == g.words_total
    assert differences(f, replay(result.schedule, mode="count").figures) == []


@pytest.mark.parametrize("name", ITEMS)
def test_homes_respected(name):
    s = shipped(name)
    f = s.predicted
    arch = s.architecture
    for t in s.workload.tensor_names:
        h = s.home(t)
        for i in range(1, h + 1):  # the links into levels 1..home are above the home
            link = f.links[i - 1]
            assert link.name == arch.link_name(i)
            words = {x.tensor: (x.words_down, x.words_up) for x in link.tensors}.get(t, (0, 0))
            assert words == (0, 0), f"{t} (home {arch.levels[h].name}) crossed {link.name}: {words}"
        if h > 0:
            assert dict(f.occupancy)[arch.levels[h].name] >= s.workload.tensor_words(t)
            assert not any(s.keeps(t, i) for i in range(1, h + 1))


def test_output_home_l1_moves_no_output_on_l2_to_l1():
    s = shipped("output-in-l1")
    assert dict(s.homes)["Z"] == "L1"
    link = s.predicted.link("L2->L1")
    assert {x.tensor: (x.words_down, x.words_up) for x in link.tensors}.get("Z", (0, 0)) == (0, 0)
    assert link.words_up == 0


@pytest.mark.parametrize("name", ITEMS)
def test_optimum_and_what_binds_as_documented(name):
    """The re-solved optimum: its utilization and what binds are those the doc states.

    Several schedules may share the optimal time and words (ties); the solver
    may return any of them, so only what every optimum shares is checked
    here: time, words, utilization, the words forced onto a link, and which
    of the links and the compute is the bound.
    """
    want = EXPECTED[name]
    result = solved(name)
    f = result.schedule.predicted
    assert f.utilization == want["utilization"]
    assert f.time == want["time"] and f.words_total == want["words"]
    for link, words in want["minimal"].items():
        assert f.link(link).words == words
    tight_links = [b for b in result.binding if b.kind == "link" and b.tight]
    compute = [b for b in result.binding if b.kind == "compute"]
    assert len(compute) == 1
    if want["bottleneck"] is None:
        assert tight_links == [] and compute[0].tight
    else:
        assert [b.name for b in tight_links] == [want["bottleneck"]] and not compute[0].tight
    section = doc_section(name)
    assert f"utilization {want['utilization']}" in section
    for b in tight_links + compute:
        assert f"`{b.describe()}`" in section, f"docs/catalogue.md ({name}) should state: {b.describe()}"


@pytest.mark.parametrize("name", ITEMS)
def test_shipped_schedule_as_documented(name):
    """The shipped schedule's words per link and every binding line are on its doc section."""
    want = EXPECTED[name]
    s = shipped(name)
    f = s.predicted
    assert {l.name: (l.words_down, l.words_up) for l in f.links} == want["links"]
    for link, words in want["minimal"].items():
        assert f.link(link).words == words
    section = doc_section(name)
    for b in binding_report(s):
        assert f"`{b.describe()}`" in section, f"docs/catalogue.md ({name}) should state: {b.describe()}"
    for lm in s.levels[1:]:
        tile = ", ".join(str(lm.tile_extent(d)) for d in ("m", "n", "k"))
        order = ", ".join(lm.order)
        assert f"| {lm.level} | {tile} | {order} |" in section, f"docs/catalogue.md ({name}): {lm}"


def test_data_mode_on_a_catalogue_item():
    s = shipped("input-in-l1")
    r = replay(s, mode="data")
    assert r.data_ok is True
    assert differences(s.predicted, r.figures) == []


def test_event_replay_on_a_catalogue_item():
    """The explicit-cache simulator (load / store / run, event by event) counts the same."""
    s = shipped("input-in-l1")
    assert differences(s.predicted, replay(s, mode="events").figures) == []
