"""A valid lower bound on the words that cross the link into a cache of S words.

``io_lower_bound(workload, capacity_words)`` bounds, for ANY schedule of the
einsum (not only the solver's family), the words down plus the words up on
the link into a cache of ``S = capacity_words`` words that every operand must
sit in when its MAC runs (the contract's L0), when every tensor's home is
above that cache (the default: homes at the top). It is the largest of:

1. **Compulsory traffic** (any einsum): every input element that some MAC
   reads must be loaded at least once, and every output element must be
   stored at least once. We count *touched* elements, not the tensor's
   span: a strided input ``I[p*2]`` of a 1x1 convolution has holes that a
   schedule with unit tiles never loads, so counting the span would not be
   a lower bound. (Our cost model loads the holes inside a tile's span, so
   schedules usually move more; the bound stays valid either way.)

2. **The matmul bound** ``2 * MACs / sqrt(S) - 2S`` for *matmul-like*
   einsums: two inputs, every tensor axis indexed by a single dimension
   (any positive coefficient, so the index is injective: stride-2 1x1
   convolutions qualify), and every dimension indexing at least two of the
   three tensors. A dimension in A and Z is an "m", in B and Z an "n", in A
   and B a "k", in all three a batch dimension. Plain matmuls, batched
   matmuls (attention per head) and 1x1 convolutions are matmul-like.

3. **The windowed bound** ``2 * MACs / sqrt(K S) - 2S`` for einsums that
   become matmul-like once a set ``F`` of dimensions is held at one value
   (``segment_reuse``): a convolution ``O[n,k,p,q] += I[n,c,p*u+r*v,q*u+s*v]
   * W[k,c,r,s]`` with ``F = {r, s}`` leaves ``I[n, c, p*u + const, ...]``,
   a matmul over ``n, k, c, p, q``, and ``K = R S`` (below).

Source of (2): T. M. Smith, B. Lowery, J. Langou, R. A. van de Geijn,
"A Tight I/O Lower Bound for Matrix Multiplication", arXiv:1702.02017
(2017/2019), ACM Trans. Math. Softw. (2022). Its leading term for
``C += A B`` (m x k times k x n) on a fast memory of S words is
``2mnk/sqrt(S)``, with a lower-order ``-2S``. We do not quote its theorem
statement verbatim; we use its argument (segments whose I/O count is
decoupled from S, every multiply an FMA) and re-derive the bound for our
cost model, in particular for how outputs are counted here (an output tile
visited for the first time is *created as zeros* with no traffic, and every
output word ends up stored to a level above):

- Let an *arrival* be an event that puts one element into the cache: a
  loaded input word, a loaded partial sum, or an output word created as
  zero. Every created output word is later stored up (when its tile is
  left, or at the end), so ``stores >= creations`` and the link's words
  ``Q = loads + stores >= loads + creations = arrivals``.
- Cut the run into segments of ``R = 2S`` arrivals each (the last one
  shorter). The elements used by the MACs of one segment are resident at
  its start (at most S, the capacity) or arrive during it (at most R), so
  ``|X| + |Y| + |Z| <= S + R = 3S`` for the A, B, Z elements it uses.
- By the Loomis-Whitney inequality the segment runs at most
  ``sqrt(|X| |Y| |Z|) <= ((|X|+|Y|+|Z|)/3)^(3/2) <= S^(3/2)`` MACs. (With
  batch dimensions, apply it per batch index ``b`` and use
  ``sum_b sqrt(x_b y_b z_b) <= sqrt(max_b z_b) * sqrt(sum x_b) * sqrt(sum y_b)``
  by Cauchy-Schwarz, so the same bound holds.) ``R = 2S`` is the segment
  length that maximises the resulting bound ``R / ((S+R)/3)^(3/2)``:
  ``2 / sqrt(S)`` arrivals per MAC.
- With ``h`` segments, ``MACs <= h * S^(3/2)`` and ``arrivals >= (h-1) * 2S``,
  so ``Q >= arrivals >= 2 MACs / sqrt(S) - 2S``.

Proof of (3). Run the argument above unchanged up to the segment: its
MACs use at most ``3S`` distinct elements, ``|X|, |Y|, |Z| <= 3S`` in all.
Split the segment's MACs by their value ``f`` of the dimensions ``F``:
``V_f``. With ``f`` fixed, each tensor's element is an injective function
of the free dimensions it has (each free dimension sits alone, with a
nonzero coefficient, on one axis; the rest of the axis is a constant), and
every free dimension is in at least two tensors, so by Shearer's lemma
(Loomis-Whitney with each coordinate covered at least twice)
``|V_f|^2 <= |X_f| |Y_f| |Z_f|``, where ``X_f`` is the set of X's elements
the MACs of ``V_f`` use. Every ``X_f`` is inside the segment's ``X``. A
tensor that has every dimension of ``F`` alone on an axis (the filter
``W[k,c,r,s]``) has disjoint ``X_f`` over the ``f``: ``sum_f |X_f| <= |X|``.
With one such tensor ``W``, by Cauchy-Schwarz
``MACs = sum_f |V_f| <= sqrt(|O| |I|) sum_f sqrt(|W_f|) <= sqrt(|O| |I|)
sqrt(|F| |W|)``, ``|F| = prod_{d in F} E_d``: the matmul's segment bound
times ``sqrt(K)`` with ``K = |F|``. With two, ``sum_f sqrt(|X_f| |W_f|) <=
sqrt(|X| |W|)`` and ``K = 1``; with none, ``K = |F|^2``. The rest of the
argument is unchanged (the best segment length is still ``2S``). The
filter's window is what weakens it: each output is reused with ``R S``
filter taps, each input with up to ``R S`` outputs.

The argument needs the homes above the cache (a tensor living whole in the
cache never crosses the link) and counts words, so a block op, double
buffering or bypass above the cache can only add words: the bound holds for
all of them. It does NOT use the solver's restrictions (pinned filter dims,
tile chains), so a schedule below it would be a bug in the solver or the
replay, not a gap in the family.

Published convolution bounds (e.g. Demmel & Dinh, "Communication-Optimal
Convolutional Neural Nets", arXiv:1802.06905, 2018; Chen et al.,
"Communication Lower Bound in Convolution Accelerators", HPCA 2020) are
tighter for some shapes but stated in other memory models (asymptotic
constants, or counting that differs from our span-based words); (3) is
re-derived for this cost model from the matmul argument alone.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from mapsearch.spec.workload import AffineIndex, Workload

__all__ = ["IOBound", "io_lower_bound", "io_lower_bound_detail", "is_matmul_like", "segment_floor", "segment_reuse", "touched_elements"]


@dataclass(frozen=True)
class IOBound:
    """The bound and its parts (words on the link into a cache of ``capacity`` words)."""

    capacity: int
    compulsory: int
    matmul: int | None  # None when the einsum is not matmul-like
    value: int

    @property
    def which(self) -> str:
        return "matmul" if self.matmul is not None and self.matmul > self.compulsory else "compulsory"


def _axis_values(ix: AffineIndex, extents: dict[str, int]) -> int:
    """How many distinct values the affine index takes over the dims' full extents."""
    if len(ix.terms) == 1:
        return extents[ix.terms[0][0]]
    values = {0}
    for d, c in ix.terms:
        values = {v + c * x for v in values for x in range(extents[d])}
    return len(values)


def touched_elements(workload: Workload, tensor: str) -> int:
    """Elements of ``tensor`` that at least one MAC reads or writes (strided holes excluded)."""
    ext = workload.extent
    return math.prod(_axis_values(ix, ext) for ix in workload.tensor(tensor).indices)


def is_matmul_like(workload: Workload) -> bool:
    """Two inputs, single-dimension (injective) axes, every dimension in at least two tensors."""
    return _slice_reuse(workload, frozenset()) is not None


def _slice_reuse(workload: Workload, fixed: frozenset[str]) -> int | None:
    """``K`` with ``MACs per segment <= sqrt(K) * S^{3/2}`` when the dims ``fixed`` are held at one value, or None.

    Fixing ``fixed`` must leave a matmul-like einsum: every axis has at most
    one free term (a free dimension with its coefficient, the rest a
    constant), and every free dimension indexes two or more tensors. A
    tensor whose axes include every fixed dimension alone (``W[k, c, r, s]``
    for ``fixed = {r, s}``) has disjoint slices: ``K = prod E_fixed``; two
    such tensors: ``K = 1``; none: ``K = (prod E_fixed)^2``.
    """
    e = workload.einsum
    if len(e.inputs) != 2:
        return None
    for t in e.tensors:
        free_terms = [d for ix in t.indices for d, _ in ix.terms if d not in fixed]
        if any(sum(d not in fixed for d, _ in ix.terms) > 1 for ix in t.indices) or \
                len(free_terms) != len(set(free_terms)):  # two free dims on one axis, or one on two axes
            return None
    for d in workload.dims:
        if d not in fixed and sum(d in t.dims for t in e.tensors) < 2:
            return None
    slices = math.prod(workload.extent[d] for d in fixed)
    partitioned = sum(all(any(ix.terms == ((d, ix.terms[0][1]),) for ix in t.indices) for d in fixed)
                      for t in e.tensors)
    if not fixed or partitioned >= 2:
        return 1
    return slices if partitioned == 1 else slices * slices


def segment_reuse(workload: Workload) -> int | None:
    """The least ``K`` over the sets of window dimensions to fix (``_slice_reuse``), or None if none applies.

    Plain matmul-like einsums: ``K = 1`` (nothing fixed). Convolutions with a
    filter window: fixing the filter dims ``r, s`` leaves a matmul over
    ``n, k, c, p, q`` and the filter's slices are disjoint, so ``K = R S``.
    Only dimensions of multi-term axes are candidates (at most 2^4 sets).
    """
    shared = sorted({d for t in workload.einsum.tensors for ix in t.indices if len(ix.terms) > 1 for d, _ in ix.terms})
    if len(shared) > 8:
        return None
    best = None
    for n in range(len(shared) + 1):
        for fixed in itertools.combinations(shared, n):
            k = _slice_reuse(workload, frozenset(fixed))
            if k is not None and (best is None or k < best):
                best = k
    return best


def segment_floor(macs: int, reuse: int, capacity_words: int, copies: int = 1) -> int:
    """``ceil(2 MACs / sqrt(K S)) - 2 n S``: the segment bound over ``n`` copies of a ``S``-word union.

    Exact integer arithmetic: ``ceil(2 MACs / sqrt(K S)) = ceil(sqrt(4 MACs^2 / (K S)))``; each copy's
    union loses at most ``2 S`` words to the last, short segment (model/bounds.py sums the copies).
    """
    return _ceil_sqrt_fraction(4 * macs * macs, reuse * capacity_words) - 2 * copies * capacity_words


def io_lower_bound_detail(workload: Workload, capacity_words: int) -> IOBound:
    """The bound with its parts; see the module docstring for the derivation."""
    if capacity_words < 1:
        raise ValueError(f"capacity_words must be >= 1, got {capacity_words}")
    compulsory = sum(touched_elements(workload, t) for t in workload.tensor_names)
    reuse = segment_reuse(workload)
    matmul = None if reuse is None else segment_floor(workload.macs, reuse, capacity_words)
    value = max(compulsory, matmul if matmul is not None else 0)
    return IOBound(capacity_words, compulsory, matmul, value)


def io_lower_bound(workload: Workload, capacity_words: int) -> int:
    """A valid lower bound on the words (down + up) crossing the link into a cache of ``capacity_words`` words.

    Assumes every tensor's home is above that cache. Matmul-like einsums:
    ``max(compulsory, ceil(2 MACs / sqrt(S)) - 2S)`` (after Smith, Lowery,
    Langou, van de Geijn, arXiv:1702.02017 / ACM TOMS 2022); others: the
    compulsory traffic (touched input elements once, output elements once).
    """
    return io_lower_bound_detail(workload, capacity_words).value


def _ceil_sqrt_fraction(num: int, den: int) -> int:
    """``ceil(sqrt(num / den))`` exactly, for non-negative integers."""
    # smallest r with r*r*den >= num
    r = math.isqrt(num // den)
    while r * r * den < num:
        r += 1
    while r > 0 and (r - 1) * (r - 1) * den >= num:
        r -= 1
    return r
