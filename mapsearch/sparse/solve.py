r"""Search with the density model: the schedule of fewest expected time and words on sparse data.

``solve_sparse(problem, densities, formats)`` builds the dense CP-SAT model
(tiles, orders, keep/bypass, dense capacity) and replaces its objective by
the **expected** link words and compute time of the tensors' formats under
``Uniform`` densities (the notebook's ``fromRandom``; ``Dense`` is all ones),
or the **exact** ones under fixed structures (``NofM``, ``Banded``: see
:func:`structured_measures`; their counts depend on where a tile lies, which
positional footprints carry).

Why it is linear in quantities the model already counts exactly. For a box
with extents ``x`` (rank order = axis order, ranks ``0..n-1``), ``Uniform``
gives ``E[D_j] = prod_{r<=j} d_r x_r * s_{j+1}(x_{j+1..n-1})`` with ``s_n = 1``
and ``s_k = 1 - (1 - d_k s_{k+1})^{x_k}`` (:mod:`mapsearch.sparse.density`).
Every word count of a format (:mod:`mapsearch.sparse.format`) is a sum of
``D``'s and box products, so a box's expected words are a sum of *terms*

    c * prod_{r in X} x_r * s_m(x_m..x_{n-1})

(:func:`format_terms`). A term whose ``s_m`` depends on at most one extent
that the schedule can change is a product of per-dimension functions, and
the sum of such a product over a link's transfers is
:func:`~mapsearch.model.residency.link_measure` with those functions as
footprints: ``x`` (the axis footprint), ``1`` (one per piece) or a table
``h(x)`` (:func:`~mapsearch.model.footprints.table_footprint`), exactly as the
dense words are. ``s_m`` of two or more changeable extents is not a product
(``UnsupportedProblem``: hold all but one whole with tile limits, or use a
format that does not need it). Expected words are linear in expected counts,
so the link's expected words are ``sum_terms c * measure`` — the same
expectation :func:`mapsearch.sparse.model.expected` computes by walking the
schedule; ``solve_sparse`` checks the two agree.

Tables are integers: ``H(x) = round(S h(x))`` (``S = 2^24``, lower when the
model's bounds would leave 62 bits), so a term with a table is known to
``0.5 / (S min h)`` relative (``SparseSolveResult.tolerance``); terms without
one are exact. Coefficients are rationals (densities through
``limit_denominator(10^6)``) scaled to integers by their common denominator,
or rounded to ``2^-20`` of a word when that denominator is larger. Capacity stays the dense (worst-case) one: a tile must fit
whatever the data. Effectual ops under ``Uniform`` do not depend on the
schedule (``macs * prod d``); they set the compute time.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Mapping

from mapsearch.model.build import build, dimension_chains
from mapsearch.model.decode import decode
from mapsearch.model.encoding import Encoding, Q
from mapsearch.model.problem import Problem, UnsupportedProblem
from mapsearch.model.residency import link_measure
from mapsearch.model.traffic import UNIT
from mapsearch.schedule.schedule import Schedule
from mapsearch.sim.counters import ReplayResult
from mapsearch.spec.constraints import Constraints
from mapsearch.model.options import SolveOptions
from mapsearch.solve.phases import Phase, run_phases
from mapsearch.solve.coarse import coarse_solution
from mapsearch.solve.run import _decision_vars
from mapsearch.sparse.format import Format, dense
from mapsearch.sparse.measures import (TABLE_SCALE, CountTerm, Measure, Term, check_ranks, count_terms, format_terms,
                                       presence, structured_measures, tensor_measures, term_value)
from mapsearch.sparse.model import SparseModel, exact_effectual_ops, expected
from mapsearch.sparse.replay import SPARSE_FIELDS, LinkWords, SparseReplay, TensorWords

__all__ = ["TABLE_SCALE", "TABLE_SCALES", "MAX_DENOMINATOR", "SparseCheckError", "Term", "CountTerm", "count_terms",
           "format_terms", "presence", "term_value", "Measure", "tensor_measures", "structured_measures",
           "SparseSolveResult", "solve_sparse", "sparse_mismatches"]

TABLE_SCALES = (1 << 24, 1 << 18, 1 << 12, 1 << 8)  # tried in turn while the model's bounds overflow
_INT_LIMIT = 1 << 62
MAX_DENOMINATOR = 1 << 20  # common denominator of the objective's weights beyond which they are rounded


class SparseCheckError(AssertionError):
    """The closed form and the walk disagree on a schedule's expected words (a bug)."""


def _held_whole(problem: Problem, constraints: Constraints) -> frozenset[str]:
    """Dimensions whose every chain keeps the whole extent at every level (extent 1, tile limits)."""
    chains, _ = dimension_chains(problem, constraints)
    return frozenset(d for d, ch in chains.items() if int(ch.tiles.min()) == ch.extent)


# ----------------------------------------------------------------------------- the result
@dataclass(frozen=True)
class SparseSolveResult:
    schedule: Schedule
    status: str  # OPTIMAL / OPTIMAL_IN_FAMILY when every phase proved optimality, else FEASIBLE
    objective: str
    phases: tuple[Phase, ...]
    links: tuple[LinkWords, ...]  # the solver's expected words per link and tensor (payload, metadata)
    effectual_ops: float
    compute_time: float
    check: SparseModel  # sparse.model.expected of the schedule (equal to ``links``: checked)
    tolerance: float  # relative tolerance of that check (table rounding; 1e-9 without tables)
    solve_seconds: float
    family_restrictions: tuple[str, ...] = ()  # what the search left out (model/family.py)
    # Filled in by mapsearch.sparse.entry: the dense replay and where it differs from the dense prediction;
    # the replay on sampled inputs (seed, nonzeros per input) and, for exact densities, where it differs.
    replayed: ReplayResult | None = None
    dense_mismatches: tuple[tuple[str, object, object], ...] = ()
    sparse_replay: SparseReplay | None = None
    mismatches: tuple[tuple[str, float, int], ...] = ()
    seed: int | None = None
    nonzeros: Mapping[str, int] = field(default_factory=dict)

    @property
    def words_total(self) -> float:
        return sum(l.words for l in self.links)

    @property
    def time(self) -> float:
        return max([self.compute_time] + [float(l.time) for l in self.links])

    @property
    def dense(self):
        """The model's dense figures of the same schedule (words, calls as if every value were nonzero)."""
        return self.schedule.predicted


# ----------------------------------------------------------------------------- the solve
def solve_sparse(problem: Problem, densities: Mapping[str, object], formats: Mapping[str, Format] | None = None,
                 constraints: Constraints = Constraints(), options: SolveOptions = SolveOptions(),
                 output_density=None) -> SparseSolveResult:
    """Fewest expected time, then expected words (``options.objective="words"``: words only).

    ``densities`` per input (``Uniform``, ``NofM``, ``Banded`` or ``Dense``;
    missing: dense); ``formats`` per tensor (missing: dense). The output is
    priced dense unless ``output_density`` says what pattern to assume for it
    (needed for a compressed output format; the same argument as
    :func:`mapsearch.sparse.model.expected`'s). Raises
    :class:`SparseCheckError` if the closed form disagrees with the walk.
    """
    start = time.perf_counter()
    if options.objective not in ("time", "words"):
        raise ValueError(f"solve_sparse: objective {options.objective!r}; expected 'time' or 'words'")
    if options.models_dram_rows or options.min_utilization:
        raise ValueError("solve_sparse: DRAM rows and minimum utilization are dense-model options")
    if any(lv.mesh for lv in problem.architecture.levels):
        raise UnsupportedProblem("sparse solve: temporal schedules only (the sparse walk refuses spatial splits)")
    w = problem.workload
    out = w.einsum.output.name
    formats = dict(formats or {})
    if formats.get(out) is not None and formats[out].compressed and output_density is None:
        raise UnsupportedProblem(f"sparse solve: the output {out} has a compressed format; say what pattern to assume "
                                 "for it (output_density), or give it an uncompressed format")
    dens = {t: (output_density if t == out else densities.get(t)) for t in w.tensor_names}
    for t in w.tensors:
        check_ranks(t.name, dens[t.name], len(t.indices))
    whole = _held_whole(problem, constraints)
    eff = exact_effectual_ops(w, {t.name: dens[t.name] for t in w.einsum.inputs})
    # Tables are scaled as finely as the model's 62-bit bounds allow at this size.
    for table_scale in TABLE_SCALES:
        try:
            enc, measures, terms, objectives = _model(problem, constraints, options, formats, dens, whole, eff, table_scale)
            break
        except _Overflow:
            continue
    else:
        raise UnsupportedProblem("sparse solve: the expected-words model overflows 62 bits at this size, "
                                 f"even with tables scaled by {TABLE_SCALES[-1]}")
    values: dict = {}

    def read(solver) -> Schedule:
        for key, (down, up) in terms.items():
            values[key] = (_value(solver, down), _value(solver, up))
        return decode(enc, solver)

    phases, schedule = run_phases(enc.model, objectives if options.objective == "time" else objectives[1:], options, start,
                                  decode=read, hint_vars=_decision_vars(enc),
                                  coarse=lambda left, _, __: coarse_solution(enc, options, left))
    links = _links(problem, measures, values)
    compute_time = float(eff * problem.architecture.compute.clocks_per_call)
    check = expected(schedule, {t: v for t, v in densities.items() if t != out}, formats, output_density)
    tol = _check(links, check, measures, values)
    from mapsearch.model.family import family_restrictions, proven_status

    restrictions = family_restrictions(enc)
    status = proven_status(all(p.status == "OPTIMAL" for p in phases), restrictions)
    return SparseSolveResult(schedule, status, options.objective, tuple(phases), links, float(eff), compute_time,
                             check, tol, time.perf_counter() - start, restrictions)


class _Overflow(Exception):
    """A bound of the model left 62 bits (the tables are scaled too finely for this size)."""


def _model(problem: Problem, constraints: Constraints, options: SolveOptions, formats, dens, whole, eff, table_scale: int):
    """(encoding, measures, link measures per (measure, link), objectives), or _Overflow."""
    w = problem.workload
    measures = [m for t in w.tensor_names
                for m in tensor_measures(problem, t, dens[t], formats.get(t) or dense(len(w.tensor(t).indices)),
                                         whole, table_scale)]
    unit_dims = frozenset(d for m in measures for d, f in m.footprints if f == UNIT)
    extra: dict[str, set] = {}
    for m in measures:
        for d, f in m.footprints:
            if len(f) == 3:
                extra.setdefault(d, set()).add(f)
    try:
        enc = build(problem, constraints, replace(options, objective="time"), unit_dims=unit_dims,
                    extra_footprints={d: tuple(sorted(v)) for d, v in extra.items()},
                    default_positions="sparse density model")
        for guard in enc.guards.values():
            enc.model.add(guard == 1)
        terms = {(m, a): link_measure(enc, m.tensor, a, frozenset(), dict(m.footprints)) for m in measures
                 for a in range(1, problem.depth + 1)}
        objectives, _ = _objectives(enc, measures, terms, eff)
    except (TypeError, OverflowError) as e:  # CP-SAT refuses a domain beyond int64
        if "Domain" in str(e) or isinstance(e, OverflowError):
            raise _Overflow() from e
        raise
    return enc, measures, terms, objectives


def _value(solver, q: Q) -> int:
    return int(q.expr) if q.is_const else int(solver.value(q.expr))


def _objectives(enc: Encoding, measures, terms, eff: Fraction):
    """[(expected time, expr, scale), (expected words, expr, scale)] in integers.

    One word is ``K * S`` units (``S`` the table scale, ``K`` the common
    denominator of the coefficients and of the compute time), so a term with
    a table weighs ``coef * K`` per unit of its measure and one without
    ``coef * K * S``. Link times follow ``add_link_times``'s line models.
    """
    p = enc.problem
    arch = p.architecture
    compute = eff * arch.compute.clocks_per_call * enc.scale
    K = math.lcm(*[m.exact_coef.denominator for m in measures], compute.denominator)
    # Many tensors with fine densities make K huge; then weights are rounded to 1 / 2^20 of a word
    # (the optimum is exact in the rounded weights; the reported figures are not rounded).
    K = min(K, MAX_DENOMINATOR)
    table = max(m.scale for m in measures)  # 1 when no term needs a table: smaller numbers search faster
    unit = K * table
    down: dict[int, list] = {a: [] for a in range(1, p.depth + 1)}
    up: dict[int, list] = {a: [] for a in range(1, p.depth + 1)}
    for (m, a), (d, u) in terms.items():
        weight = round(m.exact_coef * K * (table // m.scale))  # exact unless K was capped
        down[a].append(enc.scaled(d, weight))
        up[a].append(enc.scaled(u, weight))
    times = [Q.const(round(compute * unit))]
    words = []
    for a in range(1, p.depth + 1):
        link = arch.levels[a].link
        dn, upq = enc.total(down[a]), enc.total(up[a])
        words += [dn, upq]
        icpw, ocpw = int(link.input_clocks_per_word * enc.scale), int(link.output_clocks_per_word * enc.scale)
        if link.lines == "shared":
            times.append(enc.scaled(enc.total([dn, upq]), icpw))
        else:
            times.append(_max(enc, [enc.scaled(dn, icpw), enc.scaled(upq, ocpw)], f"exp_link_time_L{a}"))
    total_time = _max(enc, times, "expected_time")
    total_words = enc.total(words)
    if max(total_time.hi, total_words.hi) >= _INT_LIMIT:
        raise _Overflow()
    return [("expected time", total_time.expr, unit * enc.scale), ("expected words", total_words.expr, unit)], unit


def _max(enc: Encoding, qs: list[Q], stem: str) -> Q:
    lo, hi = max(q.lo for q in qs), max(q.hi for q in qs)
    if all(q.is_const for q in qs):
        return Q.const(max(int(q.expr) for q in qs))
    v = enc.model.new_int_var(lo, hi, stem)
    enc.model.add_max_equality(v, [q.expr for q in qs])
    return Q(v, lo, hi)


def _links(problem: Problem, measures, values) -> tuple[LinkWords, ...]:
    """Expected (payload, metadata) words per link and tensor: ``coef * M / scale`` summed over terms."""
    arch = problem.architecture
    out = []
    for a in range(1, problem.depth + 1):
        per = {t: [0.0, 0.0, 0.0, 0.0] for t in problem.workload.tensor_names}
        for m in measures:
            d, u = values[(m, a)]
            acc = per[m.tensor]
            acc[0] += m.payload * d / m.scale
            acc[1] += m.meta * d / m.scale
            acc[2] += m.payload * u / m.scale
            acc[3] += m.meta * u / m.scale
        tw = tuple(TensorWords(t, *v) for t, v in per.items())
        dn = sum(x.payload_down + x.meta_down for x in tw)
        upw = sum(x.payload_up + x.meta_up for x in tw)
        out.append(LinkWords(arch.link_name(a), tw, float(arch.levels[a].link.time(dn, upw))))
    return tuple(out)


def _check(links, check: SparseModel, measures, values) -> float:
    """Raise unless every link's and tensor's expected words equal the walk's; returns the tolerance used."""
    tol = 1e-9 + max([m.rel_error for m in measures if m.scale > 1] + [0.0])
    for mine, walk in zip(links, check.links):
        for tm in mine.tensors:
            tw = walk.tensor(tm.tensor)
            for name in ("payload_down", "meta_down", "payload_up", "meta_up"):
                a, b = getattr(tm, name), getattr(tw, name)
                if abs(a - b) > tol * max(abs(a), abs(b), 1.0):
                    raise SparseCheckError(f"{mine.name} {tm.tensor} {name}: closed form {a!r} != walk {b!r}")
    return tol


def sparse_mismatches(result: SparseSolveResult, replayed: SparseReplay) -> list[tuple[str, float, int]]:
    """``(field, expected, replayed)`` per link, tensor and word kind, and effectual ops, that differ.

    For fixed-structured densities the model is exact: equal up to the
    solver's stated tolerance (``result.tolerance``, relative; about 1e-9).
    """
    tol = result.tolerance
    out = []

    def check(field: str, a: float, b: int) -> None:
        if abs(a - b) > tol * max(abs(a), abs(b), 1.0):
            out.append((field, a, b))

    for mine, theirs in zip(result.links, replayed.links):
        for tm in mine.tensors:
            tr = theirs.tensor(tm.tensor)
            for name in SPARSE_FIELDS:
                check(f"{mine.name} {tm.tensor} {name}", getattr(tm, name), getattr(tr, name))
    check("effectual ops", result.effectual_ops, replayed.effectual_ops)
    return out
