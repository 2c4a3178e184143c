"""Keep or bypass per tensor and level, and the words each link carries.

``kept[X, i]`` is a decision for levels strictly between ``X``'s home and
L0, true at L0 (unless L0 is the home) and false at or above the home.
A load into level ``i`` comes from the nearest holder above, so it crosses
the link into level ``a`` (``home < a <= i``) exactly when no level in
``a..i-1`` keeps ``X``:

    through[X, a, i] = kept[X, i] and not kept[X, j] for all a <= j < i
    down[X, a] = sum_i through[X, a, i] * words(X, i)            (inputs)
    up[X, a]   = sum_i through[X, a, i] * words(X, i)            (output)
    down[X, a] = sum_i through[X, a, i] * (words(X, i) - |X|)    (output)
"""

from __future__ import annotations

from mapsearch.model.encoding import Encoding, Q, negate
from mapsearch.model.traffic import region_words


def add_residency(enc: Encoding, forced: dict[tuple[str, int], bool]) -> None:
    """``kept`` literals; ``forced[(X, i)]`` fixes a keep (True) or bypass (False)."""
    p = enc.problem
    J = p.depth
    for t in p.workload.tensor_names:
        home = p.home(t)
        for i in range(p.architecture.depth):
            if i <= home:
                enc.kept[(t, i)] = False
            elif i == J:
                enc.kept[(t, i)] = True
            elif (t, i) in forced:
                enc.kept[(t, i)] = forced[(t, i)]
            else:
                enc.kept[(t, i)] = enc.model.new_bool_var(f"keep_{t}_L{i}")


def add_link_words(enc: Encoding) -> None:
    """``link_tensor_down/up[(X, a)]`` for every tensor and link into level ``a``."""
    p = enc.problem
    w = p.workload
    J = p.depth
    for t in w.tensor_names:
        home = p.home(t)
        size = w.tensor_words(t)
        is_out = w.is_output(t)
        for a in range(1, J + 1):
            down: list[Q] = []
            up: list[Q] = []
            if a > home:
                for i in range(a, J + 1):
                    through = enc.bool_and([enc.kept[(t, i)]] + [negate(enc.kept[(t, j)]) for j in range(a, i)],
                                           f"through_{t}_{a}_{i}")
                    if through is False:
                        continue
                    words = region_words(enc, t, i)
                    moved = enc.select(through, words, Q.const(0), f"cross_{t}_{a}_{i}")
                    if is_out:
                        up.append(moved)
                        back = Q(words.expr - size, max(0, words.lo - size), words.hi - size) if not words.is_const \
                            else Q.const(int(words.expr) - size)
                        down.append(enc.select(through, back, Q.const(0), f"back_{t}_{a}_{i}"))
                    else:
                        down.append(moved)
            enc.link_tensor_down[(t, a)] = enc.total(down)
            enc.link_tensor_up[(t, a)] = enc.total(up)


def add_link_times(enc: Encoding) -> None:
    """Scaled link time per line model.

    shared:   time = (down + up) * input_clocks_per_word
    separate: time = max(down * input_clocks_per_word, up * output_clocks_per_word)
    """
    p = enc.problem
    for a in range(1, p.depth + 1):
        link = p.architecture.levels[a].link
        down = enc.total([enc.link_tensor_down[(t, a)] for t in p.workload.tensor_names])
        up = enc.total([enc.link_tensor_up[(t, a)] for t in p.workload.tensor_names])
        icpw = int(link.input_clocks_per_word * enc.scale)
        ocpw = int(link.output_clocks_per_word * enc.scale)
        if link.lines == "shared":
            enc.link_time[a] = enc.scaled(enc.total([down, up]), icpw)
        else:
            d, u = enc.scaled(down, icpw), enc.scaled(up, ocpw)
            hi = max(d.hi, u.hi)
            v = enc.model.new_int_var(max(d.lo, u.lo), hi, f"link_time_L{a}")
            enc.model.add_max_equality(v, [d.expr, u.expr])
            enc.link_time[a] = Q(v, max(d.lo, u.lo), hi)
