"""Evaluate a schedule's AccelForge export with AccelForge and compare its words with mapsearch's replay.

AccelForge 1.0.467 needs Python >= 3.12 (its hwcomponents dependencies), so
it runs in its own virtual environment; this script (any Python that runs
mapsearch) exports, replays, and calls that environment's Python::

    python3.12 -m venv /tmp/afvenv && /tmp/afvenv/bin/pip install accelforge==1.0.467
    python benchmarks/peers_accelforge.py SCHEDULE.json [...] --accelforge-python /tmp/afvenv/bin/python

Per link and tensor it prints mapsearch's words down/up and AccelForge's,
derived from AccelForge's per-(component, tensor, action) energies with
every read and write costing 1 per bit (``READ_ENERGY = WRITE_ENERGY = 1``),
divided by ``bits_per_value``:

- a tensor's buffers form a chain of keepers (its home, then each level
  that keeps it); the words into keeper ``k+1`` are the reads of its keeper
  above ``k`` (inputs; a multicast read counts once), the words up are the
  writes into ``k`` (outputs), the partial sums sent back are ``k``'s reads
  less what ``k`` sends up to its own keeper;
- those words cross every link between ``k`` and ``k+1`` (bypassed levels).

Exit status 1 when a figure differs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

_EVALUATE = r"""
import json, os, sys
from accelforge.frontend.spec import Spec
from accelforge.model.main import evaluate_mapping
from accelforge.util.parallel import set_n_parallel_jobs
set_n_parallel_jobs(1)
d = sys.argv[1]
spec = Spec.from_yaml(*(os.path.join(d, f) for f in ("arch.yaml", "workload.yaml", "mapping.yaml")),
                      jinja_parse_data={"READ_ENERGY": 1, "WRITE_ENERGY": 1, "MAC_ENERGY": 1})
e = evaluate_mapping(spec).energy(per_component=True, per_tensor=True, per_action=True)
print(json.dumps([[k[0], k[1], k[2], float(v[0] if isinstance(v, list) else v)] for k, v in e.items()]))
"""


def accelforge_words(schedule, actions: dict[tuple[str, str, str], float], bits: int) -> dict[str, dict[str, list[int]]]:
    """Per link name and tensor: [down, up] from AccelForge's reads and writes (see the module docstring)."""
    w, arch = schedule.workload, schedule.architecture
    words = {arch.link_name(j): {t: [0, 0] for t in w.tensor_names} for j in range(1, arch.depth)}
    for t in w.tensor_names:
        chain = [schedule.home(t)] + [i for i in range(arch.depth) if schedule.keeps(t, i)]
        name = [arch.levels[i].name for i in chain]

        def act(k: int, what: str) -> float:
            return actions.get((name[k], t, what), 0.0) / bits

        for k in range(len(chain) - 1):
            if w.is_output(t):
                up = act(k, "write")
                sent_up = act(k - 1, "write") if k > 0 else 0.0
                down = act(k, "read") - sent_up
            else:
                down, up = act(k, "read"), 0.0
            for j in range(chain[k] + 1, chain[k + 1] + 1):
                cell = words[arch.link_name(j)][t]
                cell[0] += round(down)
                cell[1] += round(up)
    return words


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("schedules", nargs="+")
    p.add_argument("--accelforge-python", required=True, help="a Python with accelforge installed")
    args = p.parse_args(argv)
    from mapsearch.report.export_accelforge import BITS_PER_VALUE, accelforge_files
    from mapsearch.schedule.json_io import load_schedule
    from mapsearch.sim.replay import replay

    status = 0
    for path in args.schedules:
        s = load_schedule(path)
        figures = replay(s, mode="count").figures
        with tempfile.TemporaryDirectory() as tmp:
            for fname, text in accelforge_files(s).items():
                Path(tmp, fname).write_text(text)
            done = subprocess.run([args.accelforge_python, "-c", _EVALUATE, tmp], capture_output=True, text=True)
        if done.returncode:
            print(f"{path}: AccelForge failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else '?'}")
            status = 1
            continue
        actions = {(c, str(t), a): v for c, t, a, v in json.loads(done.stdout.strip().splitlines()[-1])}
        theirs = accelforge_words(s, actions, BITS_PER_VALUE)
        print(f"{path}: link / tensor: mapsearch down/up vs AccelForge down/up")
        for link in figures.links:
            for tt in link.tensors:
                mine = [tt.words_down, tt.words_up]
                other = theirs[link.name][tt.tensor]
                mark = "ok" if mine == other else "DIFFERS"
                status |= mine != other
                print(f"  {link.name:12} {tt.tensor:4} {mine[0]:>10,} / {mine[1]:<10,} {other[0]:>10,} / {other[1]:<10,} {mark}")
        macs = actions.get(("MAC", "None", "compute"), 0.0)
        print(f"  MACs: mapsearch {figures.macs:,}, AccelForge {macs:,.0f}")
    return status


if __name__ == "__main__":
    sys.exit(main())
