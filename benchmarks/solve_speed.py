"""Solver speed: time to a proven optimum, status, gap and the size of the mapping space.

    python benchmarks/solve_speed.py [--repeat 3] [--quick] [--replay]

Each case is solved ``--repeat`` times (one worker, seed 0: deterministic);
the table shows the median wall time of ``solve`` (each run's time and
the last run's per-phase times follow the objective) (model build included),
the status (OPTIMAL = every phase proved), the largest phase gap,
``SolveResult.space.size`` (tile chains x orders x keep choices the model
covers) and the objective (time, then words). PASS/MISS per target:

- 2-level matmuls up to 4096^3:                  <= 0.1 s, proven optimal
- 3-level matmul 97x193x61 and 1024^3:           <= 0.5 s, proven optimal
- ResNet-50 3x3 conv (N=1 K=C=64 P=Q=56 R=S=3), 3 levels:
                                                 <= 10 s, proven optimal or gap <= 1 %
- small cases: the speedup over the brute force of ``tests/brute_force.py``
  (which replays every (tiles, orders) pair of the same family), printed.

The architectures (why these numbers):

- 2 levels, ``DRAM (unbounded) -> L0 (512 words)``, 1 clock/word: 512
  words hold about three 13x13 tiles, so the traffic is about
  ``MNK * (1/T_m + 1/T_n)`` ~ ``MNK / 8`` words: compute-bound, the time is
  the compute time and the words phase decides the schedule (tile shapes,
  order, remainders). The ``bw16`` variants take 16 clocks/word: now the
  link is the bottleneck and the time phase itself is the hard one.
- 3 levels, ``L2 (unbounded) -> L1 (64 Ki words) -> L0 (512 words)``: a
  DRAM / shared buffer / register file shape; L2->L1 at 4 clocks/word
  (DRAM is slower), L1->L0 at 1 clock/word. With 64 Ki words, L1 holds
  about three 147x147 tiles, so the 97x193x61 case nearly fits in L1 and
  keep/bypass at L1 matters; 1024^3 does not, so both levels' tiles do.
- The conv: 3x3 filters are pinned whole (the solver's family), so the
  chains are over n, k, c, p, q; capacities as the 3-level matmul.

``--targets`` prints only issue 16's target table, one worker, each
CP-SAT call bounded by ``--work-limit`` deterministic seconds (so statuses
and gaps do not depend on the machine's load; ``--time-limit`` is the wall
limit per solve, model building included): 3-level 1024^3,
1000x999x1001, 97x193x61; 4-level (``DRAM -> 16 Ki -> 1 Ki -> 64`` words,
4/2/1 clocks per word) and 5-level (``DRAM -> 256 Ki -> 16 Ki -> 1 Ki ->
64``, 8/4/2/1) matmuls 64^3 .. 4096^3 and 1000x999x1001; every preset x
{ResNet-50 3x3 conv, 1x1 conv (K=256, C=64, 56x56), BERT FFN 512x3072x768,
97x193x61}. Per case: status, wall time, and the words phase's bound and
gap when its full search starts and when it ends. ``--quick`` takes a
subset; ``--no-bounds`` leaves out model/bounds.py's floors (the column
before them); ``--no-placement`` searches default buffer positions only
(the family before issue 14), to measure what the wider family costs.

``--replay`` also replays the small cases' schedules and checks
predicted == replayed (large ones would take the replay minutes).

Array cases (spatial fanouts, docs/arrays.md; ``--skip-arrays`` leaves them
out), one run each, with utilization and array utilization
(``op_calls / (instances x busiest calls)``):

- the 16x16 array of ``examples/array/arch-16x16.yaml``: matmul 128x96x64
  (fills it) and 100x37x61 (cannot): <= 30 s, proven optimal; 100x37x61
  on the four clusters of 8x8 PEs of ``examples/array/arch-4x8x8.yaml``
  (two meshed levels);
- 97x193x61 and the ResNet-50 1x1 and 3x3 layers on the ``tpu-v4i-like``
  (4 MXUs x 128x128 PEs: two meshed levels) and ``eyeriss-like`` (14x12
  PEs) presets, ``--time-limit 60``: <= 60 s, proven optimal or a reported
  gap. A schedule whose predicted occupancy exceeds a level's capacity is
  flagged ILLEGAL. Every schedule is replayed (count mode, instances that
  do the same work walked once) and the replay's seconds are printed next
  to the solve's: the check must take at most the solve's time.
- small array cases against the spatial brute force
  (``tests/brute_force_spatial.py``), speedup and optimum printed; one is
  a filter window split 2 + 1 over two instances of a middle level (24
  clocks; 36 when window parts above L0 were equal only).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.schedule.figures import differences  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import Architecture, Compute, Level, Link  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402

MATMUL = "Z[m,n] += A[m,k] * B[k,n]"
CONV = "O[n,k,p,q] += I[n,c,p+r,q+s] * W[k,c,r,s]"


def matmul(m: int, n: int, k: int) -> Workload:
    return Workload.from_text(f"mm{m}x{n}x{k}", MATMUL, {"m": m, "n": n, "k": k})


def two_levels(clocks_per_word=Fraction(1), l0: int = 512) -> Architecture:
    return Architecture("2L", (Level("DRAM", None), Level("L0", l0, Link(Fraction(clocks_per_word), Fraction(clocks_per_word)))))


def three_levels(l1: int = 64 * 1024, l0: int = 512) -> Architecture:
    return Architecture("3L", (Level("L2", None), Level("L1", l1, Link(Fraction(4), Fraction(4))),
                               Level("L0", l0, Link())), Compute())


@dataclass
class Case:
    name: str
    workload: Workload
    architecture: Architecture
    target_s: float
    gap_ok: float = 0.0  # a FEASIBLE result within this gap also passes (big cases)
    time_limit: float = 60.0


CASES = [
    Case("mm 64^3, 2L", matmul(64, 64, 64), two_levels(), 0.1),
    Case("mm 256^3, 2L", matmul(256, 256, 256), two_levels(), 0.1),
    Case("mm 1024^3, 2L", matmul(1024, 1024, 1024), two_levels(), 0.1),
    Case("mm 4096^3, 2L", matmul(4096, 4096, 4096), two_levels(), 0.1),
    Case("mm 97x193x61, 2L", matmul(97, 193, 61), two_levels(), 0.1),
    Case("mm 1000x999x1001, 2L", matmul(1000, 999, 1001), two_levels(), 0.1),
    Case("mm 1024^3, 2L bw16", matmul(1024, 1024, 1024), two_levels(16), 0.1),
    Case("mm 4096^3, 2L bw16", matmul(4096, 4096, 4096), two_levels(16), 0.1),
    Case("mm 97x193x61, 3L", matmul(97, 193, 61), three_levels(), 0.5),
    Case("mm 1024^3, 3L", matmul(1024, 1024, 1024), three_levels(), 0.5),
    Case("resnet50 3x3 conv, 3L", Workload.from_text("resnet3x3", CONV,
                                                     {"n": 1, "k": 64, "c": 64, "p": 56, "q": 56, "r": 3, "s": 3}),
         three_levels(), 10.0, gap_ok=0.01, time_limit=10.0),
]


PLACEMENT = True  # --no-placement: every buffer at its default position (the family before issue 14)


def run_case(case: Case, repeat: int):
    times, result, error = [], None, None
    options = SolveOptions(time_limit=case.time_limit, workers=1, seed=0, placement=PLACEMENT)
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            result = solve(Problem(case.workload, case.architecture), options=options)
        except Exception as exc:  # report it in the table
            error = f"{type(exc).__name__}: {exc}"
            break
        times.append(time.perf_counter() - t0)
    return (statistics.median(times) if times else float("nan")), result, error, times


def brute_cases():
    import brute_force as bf

    # Tiny on purpose: the brute force replays every (tiles, orders) pair (thousands here).
    two = Architecture("2L", (Level("L1", None), Level("L0", 12, Link())))
    three = Architecture("3L", (Level("L2", None), Level("L1", 30, Link(Fraction(2), Fraction(2))), Level("L0", 8, Link())))
    conv = Workload.from_text("conv", "O[k,p] += I[c,p+r] * W[k,c,r]", {"k": 3, "c": 2, "p": 6, "r": 3})
    return bf, [
        ("mm 12x10x9, 2L (L0 12)", matmul(12, 10, 9), two),
        ("mm 5x4x4, 3L (L1 30, L0 8)", matmul(5, 4, 4), three),
        ("conv k3 c2 p6 r3, 3L", conv, Architecture("3L", (Level("L2", None), Level("L1", 40, Link()), Level("L0", 14, Link())))),
    ]


ARRAY_DIR = ROOT / "examples" / "array"


def array_cases() -> list[Case]:
    from mapsearch.presets import load_preset
    from mapsearch.spec.load import load_architecture, load_workload

    arr = load_architecture(ARRAY_DIR / "arch-16x16.yaml")
    clusters = load_architecture(ARRAY_DIR / "arch-4x8x8.yaml")
    conv = Workload.from_text("resnet3x3", CONV, RESNET_3X3)
    conv1 = Workload.from_text("resnet1x1", CONV1X1, RESNET_1X1)
    awkward = load_workload(ARRAY_DIR / "matmul-100x37x61.yaml")
    out = [
        Case("mm 128x96x64, 16x16 array", load_workload(ARRAY_DIR / "matmul-128x96x64.yaml"), arr, 30.0, time_limit=120.0),
        Case("mm 100x37x61, 16x16 array", awkward, arr, 30.0, time_limit=120.0),
        Case("mm 100x37x61, 4x8x8 clusters", awkward, clusters, 30.0, time_limit=120.0),
    ]
    for preset in ("tpu-v4i-like", "eyeriss-like"):
        for name, w in (("mm 97x193x61", matmul(97, 193, 61)), ("resnet50 1x1", conv1), ("resnet50 3x3", conv)):
            out.append(Case(f"{name}, {preset}", w, load_preset(preset), 60.0, gap_ok=1.0, time_limit=60.0))
    return out


def small_array_cases():
    import brute_force_spatial as bfs
    from mapsearch.spec.architecture import MeshAxis

    def mesh_arch(caps, mesh):
        names = ("L2", "L1", "L0")[-len(caps):]
        return Architecture("mesh", tuple(Level(names[i], c, None if i == 0 else Link(), mesh=mesh if i == len(caps) - 1 else ())
                                          for i, c in enumerate(caps)))

    two_by_two = (MeshAxis("x", 2, ("input",)), MeshAxis("y", 2, ("output",)))
    fast = Link(Fraction(1, 16), Fraction(1, 16))
    # A filter window split 2 + 1 over two instances of a middle level (issue 15): 24 clocks, 36 in equal parts.
    middle = Architecture("mesh", (Level("L2", None), Level("L1", 12, fast, mesh=(MeshAxis("x", 2, ("all",)),)),
                                   Level("L0", 6, fast)), Compute((), Fraction(4)))
    return bfs, [
        ("mm 4x3x4, 2L, 2x2 PEs", matmul(4, 3, 4), mesh_arch([None, 6], two_by_two)),
        ("mm 3x2x3, 3L, 2 PEs", matmul(3, 2, 3), mesh_arch([None, 20, 4], (MeshAxis("x", 2, ("all",)),))),
        ("conv p3 r3, 2 L1 instances", Workload.from_text("conv1d", "O[p] += I[p+r] * W[r]", {"p": 3, "r": 3}), middle),
    ]


# --------------------------------------------------------------------------- issue 16's target table

CONV1X1 = "O[n,k,p,q] += I[n,c,p,q] * W[k,c]"
RESNET_3X3 = {"n": 1, "k": 64, "c": 64, "p": 56, "q": 56, "r": 3, "s": 3}
RESNET_1X1 = {"n": 1, "k": 256, "c": 64, "p": 56, "q": 56}


def deep_levels(caps: tuple[int, ...], clocks: tuple[int, ...]) -> Architecture:
    """``DRAM (unbounded) -> caps...``, outermost first; ``clocks[a]`` per word on the link into level a+1."""
    names = [f"L{len(caps) - 1 - i}" for i in range(len(caps))]
    return Architecture(f"{len(caps) + 1}L", (Level("DRAM", None),) + tuple(
        Level(n, c, Link(Fraction(k), Fraction(k))) for n, c, k in zip(names, caps, clocks)), Compute())


FOUR = deep_levels((16 * 1024, 1024, 64), (4, 2, 1))
FIVE = deep_levels((256 * 1024, 16 * 1024, 1024, 64), (8, 4, 2, 1))
SHAPES = [(64, 64, 64), (256, 256, 256), (1024, 1024, 1024), (4096, 4096, 4096), (1000, 999, 1001)]
PRESETS = ("cpu-core", "gpu-sm", "tpu-v4i-like", "eyeriss-like", "edge-3level", "server-3level")


def target_cases(quick: bool) -> list[Case]:
    """3-level <= 0.5 s (97x193x61: 0.2 s), 4-/5-level <= 5 s, presets <= 10 s: proven OPTIMAL."""
    from mapsearch.presets import load_preset

    named = lambda m, n, k: f"mm {m}^3" if m == n == k else f"mm {m}x{n}x{k}"  # noqa: E731
    cases = [Case("mm 1024^3, 3L", matmul(1024, 1024, 1024), three_levels(), 0.5),
             Case("mm 1000x999x1001, 3L", matmul(1000, 999, 1001), three_levels(), 0.5),
             Case("mm 97x193x61, 3L", matmul(97, 193, 61), three_levels(), 0.2)]
    for arch, label in ((FOUR, "4L"), (FIVE, "5L")):
        for m, n, k in SHAPES:
            if not quick or (m, n, k) in ((1024, 1024, 1024), (1000, 999, 1001)):
                cases.append(Case(f"{named(m, n, k)}, {label}", matmul(m, n, k), arch, 5.0))
    loads = [("resnet 3x3", Workload.from_text("resnet3x3", CONV, RESNET_3X3)),
             ("resnet 1x1", Workload.from_text("resnet1x1", CONV1X1, RESNET_1X1)),
             ("bert ffn", matmul(512, 3072, 768)), ("mm 97x193x61", matmul(97, 193, 61))]
    for preset in PRESETS[:2] if quick else PRESETS:
        for name, w in loads[:3:2] if quick else loads:
            cases.append(Case(f"{name}, {preset}", w, load_preset(preset), 10.0))
    return cases


def _fmt_gap(value, bound) -> str:
    if value is None or bound is None:
        return "-"
    return f"{bound}/{float(abs(value - bound) / value) if value else 0.0:.1%}"


def run_targets(args) -> None:
    """Print status, time and the words phase's bound/gap at its start and end (one worker, deterministic work limit)."""
    print()
    header = (f"{'target case':30} {'status':10} {'solve s':>8} {'target':>7}  {'words: start bound/gap':>26}  "
              f"{'end bound/gap':>26}  time phase")
    print(header)
    print("-" * len(header))
    for case in target_cases(args.quick):
        options = SolveOptions(time_limit=args.time_limit, work_limit=args.work_limit, workers=1, seed=0,
                               placement=PLACEMENT)
        t0 = time.perf_counter()
        try:
            result = solve(Problem(case.workload, case.architecture), options=options)
        except Exception as exc:  # report it in the table
            print(f"{case.name:30} {'ERROR':10} {time.perf_counter() - t0:8.2f} {case.target_s:7.2f}  {type(exc).__name__}: "
                  f"{' '.join(str(exc).split())[:120]}", flush=True)
            continue
        seconds = time.perf_counter() - t0
        phases = {p.name: p for p in result.phases}
        words, tphase = phases.get("words"), phases.get("time")
        start = _fmt_gap(words.start_value, words.start_bound) if words else "-"
        end = _fmt_gap(words.value, words.bound) if words else "-"
        tinfo = f"{tphase.status} {tphase.seconds:.2f}s gap {tphase.gap:.1%}" if tphase else "-"
        print(f"{case.name:30} {result.status:10} {seconds:8.2f} {case.target_s:7.2f}  {start:>26}  {end:>26}  {tinfo}; "
              f"words {words.status if words else '-'} {words.seconds if words else 0:.2f}s value {words.value if words else '-'}",
              flush=True)


def over_capacity(result) -> list[str]:
    caps = {lv.name: lv.capacity for lv in result.schedule.architecture.levels}
    return [f"{lv} {w} > {caps[lv]}" for lv, w in result.schedule.predicted.occupancy if caps[lv] is not None and w > caps[lv]]


def run_arrays(args) -> list[bool]:
    rows = []
    print()
    from mapsearch.sim.replay import replay

    header = (f"{'array case':30} {'status':17} {'solve s':>8} {'replay s':>8} {'target':>7} {'gap':>7} {'util':>7} "
              f"{'array':>7}  {'verdict':7} objective")
    print(header)
    print("-" * len(header))
    for case in array_cases():
        seconds, result, error, _ = run_case(case, 1)
        if error:
            print(f"{case.name:30} {'ERROR':17} {'':>8} {'':>8} {case.target_s:7.2f} {'':>7} {'':>7} {'':>7}  {'MISS':7} "
                  f"{error}")
            rows.append(False)
            continue
        f = result.schedule.predicted
        illegal = over_capacity(result)
        t0 = time.perf_counter()
        same = not illegal and differences(f, replay(result.schedule, mode="count").figures) == []
        replay_s = time.perf_counter() - t0
        ok_status = result.status == "OPTIMAL" or result.gap <= case.gap_ok
        verdict = ("ILLEGAL" if illegal else "MISMATCH" if not same
                   else "PASS" if seconds <= case.target_s and ok_status and replay_s <= seconds else "MISS")
        rows.append(verdict == "PASS")
        print(f"{case.name:30} {result.status:17} {seconds:8.3f} {replay_s:8.3f} {case.target_s:7.2f} {result.gap:7.2%} "
              f"{float(f.utilization):7.2%} {float(f.array_utilization):7.2%}  {verdict:7} {fmt_objective(result)}  "
              f"[time {f.time}, array utilization {f.array_utilization}, words {f.words_total}; "
              f"phases {', '.join(f'{p.name} {p.status} {p.seconds:.2f}s' for p in result.phases)}"
              f"{'; over capacity: ' + ', '.join(illegal) if illegal else ''}]", flush=True)
    if not args.quick:
        bfs, small = small_array_cases()
        print()
        h2 = f"{'small array case (vs brute)':28} {'solve s':>8} {'brute s':>8} {'speedup':>8} {'schedules':>10}  same optimum  replay"
        print(h2)
        print("-" * len(h2))
        for name, w, a in small:
            seconds, result, error, _ = run_case(Case(name, w, a, 1.0), args.repeat)
            t0 = time.perf_counter()
            brute = bfs.brute_force_spatial(w, a)
            brute_s = time.perf_counter() - t0
            same = tuple(p.value for p in result.phases) == brute.value
            replay = "-"
            if args.replay:
                replay = "ok" if differences(result.schedule.predicted, bfs.replay_figures(result.schedule)) == [] else "MISMATCH"
            print(f"{name:28} {seconds:8.3f} {brute_s:8.2f} {brute_s / seconds:7.0f}x {brute.schedules:10d}  "
                  f"{'yes' if same else 'NO':12}  {replay}  {result.status}: {fmt_objective(result)}", flush=True)
    return rows


def fmt_objective(result) -> str:
    return ", ".join(f"{p.name} {p.value}" for p in result.phases)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="skip the brute-force comparison")
    ap.add_argument("--replay", action="store_true", help="replay the small cases' schedules")
    ap.add_argument("--skip-arrays", action="store_true", help="leave out the array cases (spatial fanouts)")
    ap.add_argument("--targets", action="store_true", help="only issue 16's target table (3-5 levels, presets)")
    ap.add_argument("--time-limit", type=float, default=120.0, help="--targets: wall limit per solve (build included)")
    ap.add_argument("--work-limit", type=float, default=10.0,
                    help="--targets: CP-SAT deterministic time per search call (load-independent statuses)")
    ap.add_argument("--no-bounds", action="store_true", help="leave out model/bounds.py's floors (the before column)")
    ap.add_argument("--no-placement", action="store_true",
                    help="buffers at their default positions only (the cost of issue 14's wider family: run both)")
    args = ap.parse_args()
    global PLACEMENT
    PLACEMENT = not args.no_placement
    if args.no_bounds:
        import mapsearch.model.build as build_module

        build_module.add_bounds = lambda enc: None
    if args.targets:
        run_targets(args)
        return

    rows = []
    header = f"{'case':28} {'status':9} {'solve s':>8} {'target':>7} {'gap':>7} {'space size':>12}  {'verdict':7} objective"
    print(header)
    print("-" * len(header))
    for case in CASES:
        seconds, result, error, times = run_case(case, args.repeat if case.target_s < 5 else 1)
        if error:
            print(f"{case.name:28} {'ERROR':9} {'':>8} {case.target_s:7.2f} {'':>7} {'':>12}  {'MISS':7} {error}")
            rows.append(False)
            continue
        ok_status = result.status == "OPTIMAL" or result.gap <= case.gap_ok
        verdict = "PASS" if seconds <= case.target_s and ok_status else "MISS"
        rows.append(verdict == "PASS")
        print(f"{case.name:28} {result.status:9} {seconds:8.3f} {case.target_s:7.2f} {result.gap:7.2%} "
              f"{result.space.size:12.3g}  {verdict:7} {fmt_objective(result)}  "
              f"[runs {', '.join(f'{t:.2f}' for t in times)}; phases {', '.join(f'{p.name} {p.seconds:.2f}s' for p in result.phases)}]",
              flush=True)

    if not args.quick:
        bf, small = brute_cases()
        print()
        h2 = f"{'small case (vs brute force)':28} {'solve s':>8} {'brute s':>8} {'speedup':>8} {'schedules':>10}  same optimum  replay"
        print(h2)
        print("-" * len(h2))
        for name, w, a in small:
            seconds, result, error, _ = run_case(__import__("types").SimpleNamespace(
                name=name, workload=w, architecture=a, time_limit=60.0, target_s=1.0), args.repeat)
            t0 = time.perf_counter()
            brute = bf.brute_force(w, a)
            brute_s = time.perf_counter() - t0
            same = tuple(p.value for p in result.phases) == brute.value
            replay = "-"
            if args.replay:
                replay = "ok" if differences(result.schedule.predicted, bf.replay_figures(result.schedule)) == [] else "MISMATCH"
            print(f"{name:28} {seconds:8.3f} {brute_s:8.2f} {brute_s / seconds:7.0f}x {brute.schedules:10d}  "
                  f"{'yes' if same else 'NO':12}  {replay}  {result.status}: {fmt_objective(result)}", flush=True)
    if not args.skip_arrays:
        rows += run_arrays(args)
    print()
    print(f"{sum(rows)}/{len(rows)} targets met")


if __name__ == "__main__":
    main()
