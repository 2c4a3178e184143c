"""The Jinja environment templated YAML is rendered in: sandboxed and bounded, because input files are data.

AccelForge's and timeloopfe's files are Jinja templates (variables, an
``include_text`` global, now and then a loop), so mapsearch renders them
(:func:`mapsearch.spec.foreign.common.render_jinja`). A template is still an
input file, never code to trust:

- :class:`jinja2.sandbox.SandboxedEnvironment` refuses attribute access that
  reaches Python internals (``cycler.__init__.__globals__.os.system(...)``
  ran a shell command under the plain environment);
- every ``range`` of one render draws from one budget of
  :data:`MAX_RANGE_ITEMS` items (the sandbox alone allows 100,000 per call,
  so nested loops could run for hours);
- ``*``, ``**`` and ``+`` refuse results over :data:`MAX_TEXT` characters or
  items, and integer powers over :data:`MAX_POWER_BITS` bits;
- ``lipsum``, which writes text of any size, is not offered.

Each refusal is a :class:`jinja2.exceptions.SecurityError`, which the
renderer turns into one line naming the file.
"""

from __future__ import annotations

from typing import Any

from jinja2 import StrictUndefined
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

MAX_RANGE_ITEMS = 1_000_000  # range() items in one render, all loops together
MAX_TEXT = 1 << 22  # characters (or items) of a string or list built by *, ** or +
MAX_POWER_BITS = 4096  # bits of an integer power


class BoundedEnvironment(SandboxedEnvironment):
    """A sandbox whose ranges share one budget and whose operators refuse huge results (module docstring)."""

    intercepted_binops = frozenset({"*", "**", "+"})

    def __init__(self, **options: Any):
        super().__init__(undefined=StrictUndefined, keep_trailing_newline=True, **options)
        self.globals.pop("lipsum", None)
        self.globals["range"] = self._range
        self._range_left = MAX_RANGE_ITEMS

    def _range(self, *args: int) -> range:
        items = range(*args)
        if len(items) > self._range_left:
            raise SecurityError(f"range{args} would pass the {MAX_RANGE_ITEMS:,} loop items a template may use")
        self._range_left -= len(items)
        return items

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1:
            if right * max(abs(left), 2).bit_length() > MAX_POWER_BITS:
                raise SecurityError(f"{left} ** {right} is larger than {MAX_POWER_BITS} bits")
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > MAX_TEXT:
                    raise SecurityError(f"a sequence of {len(seq):,} repeated {n:,} times is longer than {MAX_TEXT:,}")
        if operator == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
            if len(left) + len(right) > MAX_TEXT:
                raise SecurityError(f"a sequence longer than {MAX_TEXT:,}")
        return super().call_binop(context, operator, left, right)
