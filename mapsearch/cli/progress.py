"""The progress line of long commands (sweep, characterize): a tqdm bar when installed, else a line every few seconds."""

from __future__ import annotations

import sys
import time
from typing import Any, Callable

__all__ = ["progress_printer"]


def progress_printer(total: int, quiet: bool) -> tuple[Callable[[Any], None] | None, Callable[[], None]]:
    if quiet or total == 0:
        return None, lambda: None
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        bar = tqdm(total=total, unit="case", file=sys.stderr, dynamic_ncols=True, smoothing=0.1)

        def update(p: Any) -> None:
            bar.update(1)
            bar.set_postfix_str(f"failed {p.failed}" if p.failed else "", refresh=False)

        return update, bar.close
    last = [0.0]

    def plain(p: Any) -> None:
        now = time.monotonic()
        if now - last[0] < 3 and p.done < p.todo:
            return
        last[0] = now
        eta = "" if p.eta is None else f", ETA {p.eta:.0f} s"
        print(f"mapsearch: sweep: {p.done}/{p.todo} cases ({p.failed} failed), {p.elapsed:.0f} s{eta}", file=sys.stderr)

    return plain, lambda: None
