"""Templated YAML is rendered in a sandbox with bounds (mapsearch/spec/foreign/jinja_env.py): input, never code.

Found by a hostile-input run: a workload file with ``{{ cycler.__init__.__globals__.os.system(...) }}`` in a
comment ran a shell command under the plain Jinja environment; ``range(100000000)`` and ``'x' * 10**9`` hung the
reader whatever ``--time-limit`` said.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mapsearch.errors import SpecError
from mapsearch.spec.foreign.common import render_jinja
from mapsearch.spec.foreign.jinja_env import MAX_RANGE_ITEMS

ROOT = Path(__file__).resolve().parents[3]
MATMUL = 'name: w\neinsum: "Z[m,n] += A[m,k] * B[k,n]"\nextents: {m: 4, n: 4, k: 4}\n'


@pytest.mark.parametrize("template, words", [
    ('{{ cycler.__init__.__globals__.os.system("true") }}', "unsafe"),
    ("{% for i in range(100000000) %}x{% endfor %}", f"{MAX_RANGE_ITEMS:,} loop items"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "loop items"),
    ("{{ 'x' * 1000000000 }}", "longer than"),
    ("{{ 2 ** 100000000 }}", "bits"),
    ("{{ lipsum(100000) }}", "lipsum"),
])
def test_hostile_templates_are_refused_in_one_line(template: str, words: str) -> None:
    with pytest.raises(SpecError, match=words) as e:
        render_jinja(MATMUL + "# " + template + "\n", "w.yaml", {})
    assert "\n" not in str(e.value) and "w.yaml" in str(e.value)


def test_ordinary_templates_still_render() -> None:
    text = "extents: {m: {{ M }}, n: {{ M * 2 }}}\n{% for i in range(3) %}# {{ i }}\n{% endfor %}"
    assert render_jinja(text, "w.yaml", {"M": 4}) == "extents: {m: 4, n: 8}\n# 0\n# 1\n# 2\n"


def test_the_cli_runs_no_shell_command_from_a_workload(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    w = tmp_path / "w.yaml"
    w.write_text(MATMUL + f'# {{{{ cycler.__init__.__globals__.os.system("touch {marker}") }}}}\n')
    out = subprocess.run([sys.executable, "-m", "mapsearch", "solve", str(w),
                          str(ROOT / "examples" / "arch-worked-example.yaml"), "--time-limit", "5"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and not marker.exists()
    assert len(out.stderr.strip().splitlines()) == 1 and "w.yaml" in out.stderr and "unsafe" in out.stderr
