"""mapsearch vs ZigZag's mapper on the same layer and hierarchy, both replayed in mapsearch's simulator.

    python benchmarks/vs_zigzag.py [--suite SUITE.yaml --layer NAME ...] [--arch ARCH.yaml]
                                   [--time-limit S] [--lpf-limit N] [--mapping-type even|uneven]

Installs nothing. Where ``zigzag`` (PyPI ``zigzag-dse``; 3.9.1 also needs
``six``, which it does not declare) is importable, for each layer it:

1. solves the layer with mapsearch (default objective: time, then words);
2. writes ZigZag inputs for the same layer and hierarchy and runs ZigZag's
   API (LOMA temporal mapper, ``opt="energy"`` by default, with energy set
   to count the words on the links, see below; ``--opt latency`` uses
   ZigZag's own latency model, ties broken by that energy);
3. converts ZigZag's best temporal mapping into a mapsearch Schedule
   (the loops ZigZag assigns to memory level j form our level-j loop nest:
   the level-0 loops make the L0 tile, levels 0..1 the L1 tile, and the order
   of the loops at level j+1 is our order at level j), keeping every tensor
   at every level, as ZigZag's hierarchy does;
4. replays both schedules in mapsearch's count-mode simulator and prints
   words, utilization and time-to-solution for both, and the ratios
   ZigZag / mapsearch.

What is the same: capacities (our words x 8 bits; every operand, partial
sums included, at 8 bits, so one ZigZag word is one of ours), the link
bandwidths (8 bits/cycle = 1 clock/word; our 4 clocks/word DRAM link is a
2 bits/cycle shared read-write port), one scalar MAC per cycle, no spatial
unrolling (a 1x1 operational array), no inter-layer data locality stages,
no mixed spatial mappings (both would let ZigZag drop DRAM for layers that
fit on chip; the API switches them on together), no double buffering.

What differs, said in the output where it matters:

- ZigZag's own cost model (its counting of accesses, or with ``--opt
  latency`` its port/stall latency model, which judges mappings that
  reload L0 every MAC as stall-free on this hierarchy) decides which
  mapping it returns; we then count that mapping with
  OUR model, so "ZigZag" here means "the schedule ZigZag's search picks",
  replayed by the same simulator as ours. Energy costs are set to 1 per
  access of L1 and 0 elsewhere, which is 1 per word crossing either link
  (every such word is read or written in L1 once), so its tie-break is the
  words on the links, as ours.
- ZigZag's tiles are products of prime factors of the extent: a prime
  extent (97, 61, ...) cannot be tiled there; mapsearch splits with
  remainders.
- ZigZag's default "uneven" mappings let each operand cut the loop nest at
  its own level boundaries; mapsearch's schedule has one tile per level for
  all tensors (with keep/bypass), so an uneven mapping is generally not a
  mapsearch schedule. We run ZigZag with ``temporal_mapping_type="even"``
  (one cut for all operands) by default; ``--mapping-type uneven`` runs the
  default and reports the layer as not exactly convertible when the
  operands' cuts differ (the conversion then uses the output's cuts).
- Two loops of one dimension at one level that are not adjacent in
  ZigZag's order (e.g. ``N2 M6 N4``) are not one loop of ours; they are
  merged at the outer one's place and the layer is flagged "inexact".
- ZigZag's stride-2 1x1 projection is given a dummy size-1 filter dim,
  since its ``dimension_relations`` need a two-term sum.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from mapsearch.model.problem import Problem  # noqa: E402
from mapsearch.schedule.figures import Figures, differences  # noqa: E402
from mapsearch.schedule.legality import violations  # noqa: E402
from mapsearch.schedule.schedule import LevelMapping, Schedule  # noqa: E402
from mapsearch.sim.replay import replay  # noqa: E402
from mapsearch.model.options import SolveOptions  # noqa: E402
from mapsearch.solve.run import solve  # noqa: E402
from mapsearch.spec.architecture import SHARED, Architecture  # noqa: E402
from mapsearch.spec.load import load_architecture  # noqa: E402
from mapsearch.spec.workload import Workload  # noqa: E402

BITS = 8  # bits per word for every operand in the ZigZag description
DEFAULT_ARCH = ROOT / "benchmarks" / "suites" / "arch-three-level-l0-128.yaml"
DEFAULT_CASES = [
    ("resnet50_conv.yaml", "conv2_1x1_64to64"),
    ("resnet50_conv.yaml", "conv5_1x1_2048to512"),
    ("resnet50_conv.yaml", "conv5_3x3_512"),
    ("bert_base_gemm.yaml", "s128_attn_qk"),
    ("bert_base_gemm.yaml", "s128_out_proj"),
    ("deepbench_gemm.yaml", "server_35x700x2048"),
]
INSTALL = ("ZigZag is not installed. To run this comparison:\n"
           "    pip install zigzag-dse six\n"
           "(zigzag-dse 3.9.1 imports `six` without declaring it). Nothing was run.")


# --------------------------------------------------------------------------
# mapsearch architecture + workload -> ZigZag inputs
# --------------------------------------------------------------------------


def _bw(clocks_per_word) -> int:
    """Bits per cycle of a link of ``clocks_per_word`` (must come out integral at 8 bits/word)."""
    bw = BITS / clocks_per_word
    if bw != int(bw) or bw < 1:
        raise ValueError(f"a link of {clocks_per_word} clocks/word is not an integer number of bits/cycle at {BITS} bits/word")
    return int(bw)


def zigzag_hardware(arch: Architecture) -> dict:
    """One ZigZag memory per level (all operands), ports sized from our links; a 1x1 MAC array."""
    if arch.compute.block and any(b != 1 for _, b in arch.compute.block) or arch.compute.clocks_per_call != 1:
        raise ValueError("only a scalar MAC at 1 clock per call maps onto ZigZag's 1x1 array here")
    if any(lv.instances != 1 for lv in arch.levels):
        raise ValueError("spatial instances are not compared here")
    if arch.double_buffering:
        raise ValueError("double buffering is not compared here")
    ops = ["I1", "I2", "O"]
    n = len(arch.levels)
    memories = {}
    for i, lv in enumerate(arch.levels):
        ports = []
        below = arch.levels[i + 1].link if i + 1 < n else None  # link to the child
        above = lv.link  # link from the parent
        # towards the child (or the MAC at the innermost level)
        if below is None:
            ports.append(dict(name="r_port_1", type="read", bandwidth_min=BITS * 64, bandwidth_max=BITS * 64,
                              allocation=[f"{o}, tl" for o in ops]))
            ports.append(dict(name="w_port_1", type="write", bandwidth_min=BITS * 64, bandwidth_max=BITS * 64,
                              allocation=["O, fl"]))
        elif below.lines == SHARED:
            bw = _bw(below.input_clocks_per_word)
            ports.append(dict(name="rw_port_1", type="read_write", bandwidth_min=bw, bandwidth_max=bw,
                              allocation=[f"{o}, tl" for o in ops] + ["O, fl"]))
        else:
            ports.append(dict(name="r_port_1", type="read", bandwidth_min=_bw(below.input_clocks_per_word),
                              bandwidth_max=_bw(below.input_clocks_per_word), allocation=[f"{o}, tl" for o in ops]))
            ports.append(dict(name="w_port_1", type="write", bandwidth_min=_bw(below.output_clocks_per_word),
                              bandwidth_max=_bw(below.output_clocks_per_word), allocation=["O, fl"]))
        # towards the parent. The link's real rate sits on the parent's ports (above); the child's ports
        # get at least one word per cycle, since ZigZag caps spatial unrolling by (inner port bits / precision)
        # and a port under one word (our 4 clocks/word = 2 bits) would cap it at 0.
        if above is not None:
            up_bw = lambda cpw: max(_bw(cpw), BITS)  # noqa: E731
            if above.lines == SHARED:
                bw = up_bw(above.input_clocks_per_word)
                ports.append(dict(name="rw_port_2", type="read_write", bandwidth_min=bw, bandwidth_max=bw,
                                  allocation=[f"{o}, fh" for o in ops] + ["O, th"]))
            else:
                ports.append(dict(name="w_port_2", type="write", bandwidth_min=up_bw(above.input_clocks_per_word),
                                  bandwidth_max=up_bw(above.input_clocks_per_word), allocation=[f"{o}, fh" for o in ops]))
                ports.append(dict(name="r_port_2", type="read", bandwidth_min=up_bw(above.output_clocks_per_word),
                                  bandwidth_max=up_bw(above.output_clocks_per_word), allocation=["O, th"]))
        # energy: 1 per access of a level that sits between two links (counts each link word once)
        cost = 1.0 if 0 < i < n - 1 else 0.0
        if n == 2:
            cost = 1.0 if i == 1 else 0.0  # the only link: count L0's fills and drains
        size = 10**13 if lv.capacity is None else lv.capacity * BITS
        memories[lv.name] = dict(size=size, r_cost=cost, w_cost=cost, area=0, latency=1, operands=ops, ports=ports,
                                 served_dimensions=["D1"])
    memories = dict(reversed(list(memories.items())))  # ZigZag lists memories innermost first
    return {"name": f"zz-{arch.name}", "memories": memories,
            "operational_array": {"input_precision": [BITS, BITS], "unit_energy": 0.0, "unit_area": 1,
                                  "dimensions": ["D1"], "sizes": [1]}}


@dataclass
class ZZLayer:
    spec: dict
    dim_name: dict  # our dim -> ZigZag loop dim
    dummy: tuple  # ZigZag-only size-1 dims


def zigzag_workload(w: Workload) -> ZZLayer:
    """The einsum as a ZigZag layer: output O, first input I (I1), second input W (I2)."""
    e = w.einsum
    if len(e.inputs) != 2:
        raise ValueError("ZigZag layers have exactly two inputs")
    dim_name = {d: d.upper() for d in w.dims}
    low = {d: d.lower() for d in w.dims}
    relations, extra_dims, dummy = [], [], []
    def axes(t, is_input_i):
        out = []
        for ax, ix in enumerate(t.indices):
            if ix.is_plain:
                out.append(low[ix.terms[0][0]])
                continue
            if not is_input_i:
                raise ValueError(f"tensor {t.name}: affine index {ix.text()} outside the first input")
            terms = list(ix.terms)
            if len(terms) == 1:  # p*2: give ZigZag a size-1 filter dim to make the two-term relation
                name = f"z{ax}"
                dummy.append(name.upper())
                terms.append((name, 1))
            if len(terms) != 2:
                raise ValueError(f"{ix.text()}: ZigZag relations take two terms")
            (d1, c1), (d2, c2) = terms
            a = f"i{ax}x"
            n1 = low.get(d1, d1)
            n2 = low.get(d2, d2)
            relations.append(f"{a}={c1}*{n1}+{c2}*{n2}")
            extra_dims.append(a)
            out.append(a)
        return out
    o = axes(e.output, False)
    i = axes(e.inputs[0], True)
    wt = axes(e.inputs[1], False)
    eq = f"O{''.join(f'[{x}]' for x in o)}+=I{''.join(f'[{x}]' for x in i)}*W{''.join(f'[{x}]' for x in wt)}"
    loop_dims = [dim_name[d] for d in w.dims] + list(dummy)
    loop_sizes = [w.extent[d] for d in w.dims] + [1] * len(dummy)
    spec = dict(id=0, name=w.name, operator_type="Conv" if relations else "Gemm", equation=eq,
                dimension_relations=relations, loop_dims=loop_dims, loop_sizes=loop_sizes,
                operand_precision=dict(I=BITS, W=BITS, O=BITS, O_final=BITS), operand_source=dict(I=0, W=0))
    return ZZLayer(spec, dim_name, tuple(dummy))


def zigzag_mapping(layer: ZZLayer) -> list:
    first = next(d for d, e in zip(layer.spec["loop_dims"], layer.spec["loop_sizes"]) if e > 1)
    return [{"name": "default", "spatial_mapping": {"D1": [f"{first}, 1"]},
             "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"}}]


# --------------------------------------------------------------------------
# ZigZag temporal mapping -> mapsearch Schedule
# --------------------------------------------------------------------------


def to_schedule(w: Workload, arch: Architecture, mapping_origin: dict, layer: ZZLayer) -> tuple[Schedule, list[str]]:
    """Our schedule for ZigZag's loop allocation, and the reasons it is not exact (empty when exact)."""
    notes = []
    back = {v: k for k, v in layer.dim_name.items()}
    per_op = {str(op): levels for op, levels in mapping_origin.items()}
    cuts = {op: [len(lv) for lv in levels] for op, levels in per_op.items()}
    levels = per_op["O"]
    if len({tuple(c) for c in cuts.values()}) > 1:
        notes.append("uneven: the operands cut the loop nest at different levels "
                     + "; ".join(f"{op} {c}" for op, c in sorted(cuts.items())) + " (converted with O's cuts)")
    n = len(arch.levels)
    if len(levels) != n:
        raise ValueError(f"ZigZag used {len(levels)} memory levels for O, the architecture has {n}")
    dims = w.dims
    tile = {d: 1 for d in dims}
    level_maps = [None] * n  # ours: index 0 = top
    orders = {}
    for j, loops in enumerate(levels):  # ZigZag level j = our level n-1-j
        ours = n - 1 - j
        loops = [(back.get(str(d), str(d)), int(f)) for d, f in loops if str(d) not in layer.dummy]
        # our order at level `ours` is ZigZag's level j+1 loops; record level j's loops for our level ours+1
        seq = []  # (dim, factor) inner -> outer, adjacent same-dim loops merged
        for d, f in loops:
            if seq and seq[-1][0] == d:
                seq[-1] = (d, seq[-1][1] * f)
            else:
                seq.append((d, f))
        seen = [d for d, _ in seq]
        split = sorted({d for d in seen if seen.count(d) > 1})
        if split:
            notes.append(f"inexact: ZigZag level {j} has non-adjacent loops of {', '.join(split)}; merged")
        if j > 0:
            outer_first = []
            for d, _ in reversed(seq):
                if d not in outer_first:
                    outer_first.append(d)
            orders[ours + 1] = tuple([d for d in dims if d not in outer_first] + outer_first)
        for d, f in seq:
            tile[d] *= f
        level_maps[ours] = dict(tile)
    for d in dims:
        if level_maps[0][d] != w.extent[d]:
            raise ValueError(f"ZigZag's loops of {d} multiply to {level_maps[0][d]}, not the extent {w.extent[d]}")
    out = []
    for i, lv in enumerate(arch.levels):
        keep = frozenset(w.tensor_names) if i > 0 else frozenset()
        out.append(LevelMapping(lv.name, tuple((d, level_maps[i][d]) for d in dims), orders.get(i, ()), keep))
    s = Schedule(w, arch, tuple(out), ())
    bad = violations(s)
    if bad:
        raise ValueError("converted schedule is illegal: " + "; ".join(bad))
    return s, notes


# --------------------------------------------------------------------------
# Running both
# --------------------------------------------------------------------------


@dataclass
class Side:
    seconds: float
    figures: Figures | None = None
    note: str = ""


def run_zigzag(w: Workload, arch: Architecture, lpf_limit: int, mapping_type: str, opt: str = "energy"):
    import yaml
    from zigzag.api import get_hardware_performance_zigzag

    layer = zigzag_workload(w)
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, data in (("hw", zigzag_hardware(arch)), ("wl", [layer.spec]), ("map", zigzag_mapping(layer))):
            paths[name] = os.path.join(tmp, f"{name}.yaml")
            with open(paths[name], "w") as f:
                yaml.safe_dump(data, f, sort_keys=False)
        logging.disable(logging.WARNING)
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            _, _, cmes = get_hardware_performance_zigzag(
                paths["wl"], paths["hw"], paths["map"], opt=opt, dump_folder=os.path.join(tmp, "out"),
                lpf_limit=lpf_limit, loma_show_progress_bar=False, temporal_mapping_type=mapping_type,
                exploit_data_locality=False, enable_mix_spatial_mapping=False, in_memory_compute=False)
        seconds = time.perf_counter() - t0
        logging.disable(logging.NOTSET)
    cme = cmes[0][1][0][0]
    return seconds, cme, layer


def compare(w: Workload, arch: Architecture, args) -> dict:
    row = {"layer": w.name}
    t0 = time.perf_counter()
    result = solve(Problem(w, arch), options=SolveOptions(time_limit=args.time_limit, workers=1, seed=0))
    ms = Side(time.perf_counter() - t0)
    ms_fig = replay(result.schedule, "count").figures
    if differences(result.schedule.predicted, ms_fig):
        ms.note = "REPLAY MISMATCH"
    ms.figures = ms_fig
    ms.note = ms.note or result.status
    row["mapsearch"] = ms
    try:
        seconds, cme, layer = run_zigzag(w, arch, args.lpf_limit, args.mapping_type, args.opt)
        zz = Side(seconds)
        schedule, notes = to_schedule(w, arch, cme.temporal_mapping.mapping_dic_origin, layer)
        zz.figures = replay(schedule, "count").figures
        zz.note = "; ".join(notes) or "exact conversion"
        row["zigzag_mapping"] = {str(op): [[(str(d), int(f)) for d, f in lv] for lv in levels]
                                 for op, levels in cme.temporal_mapping.mapping_dic_origin.items()}
    except Exception as exc:  # say so, do not hide it
        zz = Side(float("nan"), None, f"{type(exc).__name__}: {exc}")
    row["zigzag"] = zz
    return row


def _fmt(side: Side) -> str:
    f = side.figures
    if f is None:
        return f"{'-':>12} {'-':>7} {side.seconds:8.2f}"
    return f"{f.words_total:12d} {float(f.utilization):7.3f} {side.seconds:8.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", action="append", help="suite YAML (with --layer); repeatable pairs")
    ap.add_argument("--layer", action="append", help="layer name in the suite")
    ap.add_argument("--arch", default=str(DEFAULT_ARCH))
    ap.add_argument("--time-limit", type=float, default=60.0, help="mapsearch's limit per layer")
    ap.add_argument("--lpf-limit", type=int, default=6, help="ZigZag LOMA's loop-prime-factor limit (its default 6)")
    ap.add_argument("--mapping-type", default="even", choices=("even", "uneven"))
    ap.add_argument("--opt", default="energy", choices=("energy", "latency"),
                    help="ZigZag's criterion: energy (= words on the links here, the default) or latency (its own "
                         "port/stall model; ties by energy)")
    args = ap.parse_args(argv)

    try:
        import zigzag  # noqa: F401
    except ImportError:
        print(INSTALL)
        return 0
    from run_suite import load_suite

    if args.suite or args.layer:
        if not args.suite or not args.layer or len(args.suite) not in (1, len(args.layer)):
            ap.error("give --suite and --layer (one suite for all layers, or one per layer)")
        suites = args.suite * len(args.layer) if len(args.suite) == 1 else args.suite
        cases = list(zip(suites, args.layer))
    else:
        cases = [(str(ROOT / "benchmarks" / "suites" / s), name) for s, name in DEFAULT_CASES]
    arch = load_architecture(args.arch)
    print(f"architecture {arch.name}: " + ", ".join(
        f"{lv.name} {lv.capacity if lv.capacity is not None else 'inf'} words" for lv in arch.levels)
          + f"; ZigZag: {BITS}-bit words for every operand, 1x1 MAC array, LOMA lpf_limit {args.lpf_limit}, "
            f"'{args.mapping_type}' mappings, opt={args.opt} (energy = words on the links), "
            f"no data-locality / mixed spatial stages")
    print("both schedules replayed by mapsearch's count-mode simulator; ratio = ZigZag / mapsearch")
    head = (f"{'layer':28} {'ms words':>12} {'ms util':>7} {'ms s':>8} | {'zz words':>12} {'zz util':>7} {'zz s':>8} | "
            f"{'words x':>7} {'util x':>6} {'time x':>7}  notes")
    print(head)
    print("-" * len(head))
    ratios = []
    for suite, name in cases:
        layers = {l.name: l for l in load_suite(suite)}
        if name not in layers:
            print(f"{name}: not in {suite}")
            continue
        row = compare(layers[name].workload, arch, args)
        ms, zz = row["mapsearch"], row["zigzag"]
        if zz.figures is not None:
            rw = zz.figures.words_total / ms.figures.words_total
            ru = float(zz.figures.utilization / ms.figures.utilization)
            rt = zz.seconds / ms.seconds
            ratios.append((rw, ru, rt))
            rx = f"{rw:7.3f} {ru:6.3f} {rt:7.2f}"
        else:
            rx = f"{'-':>7} {'-':>6} {'-':>7}"
        print(f"{name:28} {_fmt(ms)} | {_fmt(zz)} | {rx}  mapsearch {ms.note}; ZigZag {zz.note}", flush=True)
        if "zigzag_mapping" in row:
            print(f"{'':28}   ZigZag loops per memory level (inner -> outer, L0 first): {row['zigzag_mapping']['O']}")
    if ratios:
        g = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))  # noqa: E731
        print(f"\ngeometric mean over {len(ratios)} layers: ZigZag/mapsearch words x{g([r[0] for r in ratios]):.3f}, "
              f"utilization x{g([r[1] for r in ratios]):.3f}, time-to-solution x{g([r[2] for r in ratios]):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
