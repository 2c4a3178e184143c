"""DRAM geometry, timing and address mapping (docs/dram.md).

A :class:`DramSpec` says how a byte address becomes (channel, rank, bank
group, bank, row, column) and what a row hit, a miss (bank closed) and a
conflict (another row open) cost in DRAM clocks.

Address bits, most significant first, follow the ``mapping`` string in
Ramulator's notation (``RoBaRaCoCh``: row, bank, rank, column, channel);
tokens are ``Ro``, ``Co``, ``Ch``, ``Ra``, ``Bg``, ``Ba`` (DRAMsim3's
lowercase ``rorabgbachco`` is read the same way). Below every field sit the
offset bits of one burst (``burst_bytes``); the column field has
``log2(row_bytes / burst_bytes)`` bits. A mapping without ``Bg`` puts the bank
group bits directly above the bank bits (``Ba`` then means bank group and
bank). The most significant field takes every bit above the others.

Costs (clocks of the DRAM command clock, ``tck_ns``): a hit ``CL``, a miss
``RCD + CL``, a conflict ``RP + RCD + CL`` unless given explicitly.

Geometry limits (:data:`MAX_GEOMETRY`): every size is a power of two at most
``channels`` 2^10, ``ranks`` 2^6, ``bank_groups`` 2^6, ``banks`` 2^10 (and all
banks together, ``channels * ranks * bank_groups * banks``, at most 2^16: the
row-buffer machine keeps arrays of that length), ``rows`` 2^24, ``row_bytes``
2^20, ``burst_bytes`` 2^20 and ``element_bytes`` 2^30; and the whole memory,
``rows * row_bytes * banks in all``, at most 2^48 bytes (256 TiB), so that
every address field fits a 64-bit address. Real parts are far below these
(DDR5: 8 bank groups x 4 banks, 2^17 rows, 8 KiB rows); a larger value is a typo.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

OPEN = "open"
CLOSED = "closed"
FIELDS = ("Ro", "Co", "Ch", "Ra", "Bg", "Ba")
_COUNT_ATTR = {"Ch": "channels", "Ra": "ranks", "Bg": "bank_groups", "Ba": "banks"}
# Sanity caps on the geometry (module docstring): each size, all banks together, the whole memory in bytes.
MAX_GEOMETRY = {
    "element_bytes": 2**30, "row_bytes": 2**20, "burst_bytes": 2**20, "channels": 2**10, "ranks": 2**6,
    "bank_groups": 2**6, "banks": 2**10, "rows": 2**24,
}
MAX_BANKS_IN_ALL = 2**16
MAX_CAPACITY_BYTES = 2**48


def _pow2_text(n: int) -> str:
    return f"2^{n.bit_length() - 1}"


class DramSpecError(ValueError):
    """A DRAM description that cannot be used; ``field`` names the offending entry."""

    def __init__(self, field_name: str, detail: str):
        super().__init__(f"{field_name}: {detail}")
        self.field = field_name
        self.detail = detail


def _is_pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def parse_mapping(text: str) -> tuple[str, ...]:
    """``'RoBaRaCoCh'`` -> ``('Ro', 'Ba', 'Ra', 'Co', 'Ch')`` (most significant first); case-insensitive."""
    if not isinstance(text, str) or len(text) % 2 or not text:
        raise DramSpecError("mapping", f"expected two-letter fields such as 'RoBaRaCoCh', got {text!r}")
    tokens = []
    for i in range(0, len(text), 2):
        tok = text[i : i + 2].capitalize()
        if tok not in FIELDS:
            raise DramSpecError("mapping", f"unknown field {text[i:i+2]!r} in {text!r}; expected fields of {', '.join(FIELDS)}")
        if tok in tokens:
            raise DramSpecError("mapping", f"field {tok!r} appears twice in {text!r}")
        tokens.append(tok)
    for need in ("Ro", "Co"):
        if need not in tokens:
            raise DramSpecError("mapping", f"{text!r} has no {need} field")
    return tuple(tokens)


@dataclass(frozen=True)
class DramSpec:
    """Geometry, policy and costs of one DRAM (one memory controller's view).

    ``row_bytes``: bytes of one row (page) of one bank across the channel's
    width (the row buffer). ``burst_bytes``: bytes of one column access.
    ``banks`` is per bank group. ``element_bytes``: bytes of one tensor word.
    """

    name: str = "custom"
    element_bytes: int = 2
    row_bytes: int = 8192
    burst_bytes: int = 64
    channels: int = 1
    ranks: int = 1
    bank_groups: int = 4
    banks: int = 4
    rows: int = 1 << 16
    mapping: str = "RoBaRaCoCh"
    policy: str = OPEN
    tck_ns: Fraction = Fraction(5, 8)
    cl: int = 22
    rcd: int = 22
    rp: int = 22
    hit_clocks: int | None = None
    miss_clocks: int | None = None
    conflict_clocks: int | None = None
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("element_bytes", "row_bytes", "burst_bytes", "channels", "ranks", "bank_groups", "banks", "rows"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not _is_pow2(v):
                raise DramSpecError(name, f"expected a power of two >= 1, got {v!r}")
            cap = MAX_GEOMETRY[name]
            if v > cap:
                raise DramSpecError(name, f"expected a power of two from 1 to {_pow2_text(cap)} ({cap:,}), got {v:,}")
        if self.n_banks > MAX_BANKS_IN_ALL:
            raise DramSpecError("banks", f"expected channels * ranks * bank_groups * banks <= {_pow2_text(MAX_BANKS_IN_ALL)} "
                                f"({MAX_BANKS_IN_ALL:,}), got {self.channels} * {self.ranks} * {self.bank_groups} * "
                                f"{self.banks} = {self.n_banks:,}")
        capacity = self.rows * self.row_bytes * self.n_banks
        if capacity > MAX_CAPACITY_BYTES:
            raise DramSpecError("rows", f"expected rows * row_bytes * banks in all <= {_pow2_text(MAX_CAPACITY_BYTES)} bytes "
                                f"(256 TiB), got {self.rows:,} * {self.row_bytes:,} * {self.n_banks:,} = "
                                f"{_pow2_text(capacity)} bytes")
        if self.burst_bytes > self.row_bytes:
            raise DramSpecError("burst_bytes", f"expected <= row_bytes ({self.row_bytes}), got {self.burst_bytes}")
        if self.policy not in (OPEN, CLOSED):
            raise DramSpecError("policy", f"expected 'open' or 'closed', got {self.policy!r}")
        tokens = parse_mapping(self.mapping)
        for tok, attr in _COUNT_ATTR.items():
            if tok not in tokens and getattr(self, attr) > 1 and not (tok == "Bg" and "Ba" in tokens):
                raise DramSpecError("mapping", f"{self.mapping!r} has no {tok} field but {attr} is {getattr(self, attr)}")
        for name in ("cl", "rcd", "rp"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise DramSpecError(name, f"expected an int >= 0, got {v!r}")
        for name in ("hit_clocks", "miss_clocks", "conflict_clocks"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, (int, Fraction)) or isinstance(v, bool) or v < 0):
                raise DramSpecError(name, f"expected a number >= 0, got {v!r}")

    # ---------------------------------------------------------------- costs
    @property
    def hit(self) -> Fraction:
        """Clocks of a row hit (default ``CL``)."""
        return Fraction(self.cl if self.hit_clocks is None else self.hit_clocks)

    @property
    def miss(self) -> Fraction:
        """Clocks of an access to a closed bank (default ``RCD + CL``)."""
        return Fraction(self.rcd + self.cl if self.miss_clocks is None else self.miss_clocks)

    @property
    def conflict(self) -> Fraction:
        """Clocks of an access to a bank with another row open (default ``RP + RCD + CL``)."""
        return Fraction(self.rp + self.rcd + self.cl if self.conflict_clocks is None else self.conflict_clocks)

    @property
    def n_banks(self) -> int:
        """Banks in the whole memory (channels * ranks * bank groups * banks): the row-buffer states."""
        return self.channels * self.ranks * self.bank_groups * self.banks

    # ---------------------------------------------------------------- bits
    @property
    def fields(self) -> tuple[tuple[str, int, int], ...]:
        """``(token, shift, bits)`` for each field, most significant first; the top field's bits are -1 (unbounded)."""
        tokens = list(parse_mapping(self.mapping))
        if "Bg" not in tokens and self.bank_groups > 1:
            tokens.insert(tokens.index("Ba"), "Bg")  # bank group bits right above the bank bits
        width = {
            "Ro": self.rows.bit_length() - 1,
            "Co": (self.row_bytes // self.burst_bytes).bit_length() - 1,
            "Ch": self.channels.bit_length() - 1,
            "Ra": self.ranks.bit_length() - 1,
            "Bg": self.bank_groups.bit_length() - 1,
            "Ba": self.banks.bit_length() - 1,
        }
        shift = self.burst_bytes.bit_length() - 1
        out = []
        for tok in reversed(tokens):
            out.append((tok, shift, width[tok]))
            shift += width[tok]
        out.reverse()
        out[0] = (out[0][0], out[0][1], -1)
        return tuple(out)

    @property
    def row_stride_bytes(self) -> int:
        """The aligned address block in which only the column and the fields below it vary.

        Padding a slice to this boundary starts it in a fresh row (a
        ``row_aligned`` layout); it is ``row_bytes`` when no field sits
        between the column and the burst offset.
        """
        for tok, shift, bits in self.fields:
            if tok == "Co":
                return 1 << (shift + bits)
        raise AssertionError("no column field")  # pragma: no cover

    def decode(self, addresses: np.ndarray) -> dict[str, np.ndarray]:
        """Field values of byte addresses: ``{'Ro': ..., 'Co': ..., 'Ch': ..., ...}`` (int64 arrays)."""
        a = np.asarray(addresses, dtype=np.int64)
        out = {tok: np.zeros(a.shape, np.int64) for tok in FIELDS}
        for tok, shift, bits in self.fields:
            v = a >> shift
            out[tok] = v if bits < 0 else v & ((1 << bits) - 1)
        return out

    def bank_and_row(self, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Flat bank id (channel, rank, bank group, bank; channel outermost) and row of each address."""
        f = self.decode(addresses)
        bank = ((f["Ch"] * self.ranks + f["Ra"]) * self.bank_groups + f["Bg"]) * self.banks + f["Ba"]
        return bank, f["Ro"]

    def bank_name(self, bank: int) -> str:
        """``ch0.ra0.bg1.ba2`` for a flat bank id."""
        ba = bank % self.banks
        rest = bank // self.banks
        bg = rest % self.bank_groups
        rest //= self.bank_groups
        ra = rest % self.ranks
        ch = rest // self.ranks
        return f"ch{ch}.ra{ra}.bg{bg}.ba{ba}"

    def with_(self, **changes) -> "DramSpec":
        return replace(self, **changes)


# ---------------------------------------------------------------- presets
# Every preset cites where its numbers come from. Clocks are of the command
# clock (tCK). row_bytes is the page of one rank (all chips of the channel width).
PRESETS: dict[str, DramSpec] = {
    # Ramulator 2 src/dram/impl/DDR4.cpp: timing preset DDR4_3200AA (rate 3200, nBL 4,
    # nCL 22, nRCD 22, nRP 22, tCK 625 ps) with organisation DDR4_8Gb_x8 (4 bank
    # groups x 4 banks, 65536 rows, 1024 columns of a x8 chip -> 8 chips on a
    # 64-bit channel = 8 KiB rows, BL8 = 64-byte bursts). DRAMsim3
    # configs/DDR4_8Gb_x8_3200.ini agrees (CL 22, tRCD 22, tRP 22, JEDEC JESD79-4 speed bin 3200AA).
    "ddr4-3200": DramSpec(
        name="ddr4-3200", element_bytes=2, row_bytes=8192, burst_bytes=64, channels=1, ranks=1, bank_groups=4,
        banks=4, rows=1 << 16, mapping="RoBaRaCoCh", policy=OPEN, tck_ns=Fraction(5, 8), cl=22, rcd=22, rp=22,
        source="Ramulator2 DDR4.cpp DDR4_3200AA + DDR4_8Gb_x8; DRAMsim3 configs/DDR4_8Gb_x8_3200.ini",
    ),
    # DRAMsim3 configs/HBM2_8Gb_x128.ini (JESD235 HBM2, 2 Gb/s/pin): tCK 1 ns, CL 14,
    # tRCDRD 14, tRP 14, 4 bank groups x 4 banks, 32768 rows, 64 columns of a
    # 128-bit channel (1 KiB rows), BL4 -> 64-byte bursts, 8 channels,
    # address_mapping rorabgbachco.
    "hbm2": DramSpec(
        name="hbm2", element_bytes=2, row_bytes=1024, burst_bytes=64, channels=8, ranks=1, bank_groups=4, banks=4,
        rows=1 << 15, mapping="RoRaBgBaChCo", policy=OPEN, tck_ns=Fraction(1), cl=14, rcd=14, rp=14,
        source="DRAMsim3 configs/HBM2_8Gb_x128.ini (JESD235 HBM2)",
    ),
}
PRESETS["ddr4"] = PRESETS["ddr4-3200"]
PRESETS["hbm2-2000"] = PRESETS["hbm2"]


def preset(name: str) -> DramSpec:
    """A DRAM preset by name (``ddr4-3200``, ``hbm2``); KeyError lists the known names."""
    try:
        return PRESETS[name.lower()]
    except KeyError:
        raise KeyError(f"unknown DRAM preset {name!r}; expected one of {', '.join(sorted(PRESETS))}") from None


def simple_dram(row_bytes: int, element_bytes: int = 1, *, banks: int = 1, policy: str = OPEN, cl: int = 1, rcd: int = 1,
                rp: int = 1, burst_bytes: int | None = None, mapping: str = "RoBaCo") -> DramSpec:
    """A one-channel DRAM with ``banks`` banks (no bank groups): for hand counts and the seed's scenario."""
    return DramSpec(
        name="simple", element_bytes=element_bytes, row_bytes=row_bytes,
        burst_bytes=burst_bytes or min(row_bytes, 64), channels=1, ranks=1, bank_groups=1, banks=banks, rows=1 << 20,
        mapping=mapping, policy=policy, tck_ns=Fraction(1), cl=cl, rcd=rcd, rp=rp,
    )


__all__ = ["DramSpec", "DramSpecError", "PRESETS", "MAX_GEOMETRY", "MAX_BANKS_IN_ALL", "MAX_CAPACITY_BYTES", "preset", "simple_dram", "parse_mapping", "OPEN", "CLOSED"]
