"""Densities and formats as text: ``T=SPEC`` and ``T=FMT`` (``mapsearch solve --density/--format``), parsed.

Pure functions from text to the objects of :mod:`mapsearch.sparse`; a bad
value raises :class:`~mapsearch.errors.UsageError`, one line that names the
option, the tensor and what was expected (the CLI prints it and exits 2).

Density specs (one value per rank of the tensor, top rank first):

- ``dense``: every coordinate present (:class:`~mapsearch.sparse.density.Dense`);
- ``uniform:D0,D1,...``: the notebook's ``fromRandom``, per rank the probability
  that a coordinate of an existing fiber is present, in ``[0, 1]`` (decimals
  or ``a/b``) (:class:`~mapsearch.sparse.density.Uniform`);
- ``nofm:N/M[@OFFSET],...``: per rank, coordinate ``c`` present iff
  ``(c - OFFSET) mod M < N`` (``0 <= N <= M``, ``0 <= OFFSET < M``, default 0)
  (:class:`~mapsearch.sparse.density.NofM`);
- ``banded:LOWER,UPPER``: a matrix with ``(i, j)`` present iff
  ``-LOWER <= j - i <= UPPER`` (:class:`~mapsearch.sparse.density.Banded`).

Formats: whatever :meth:`~mapsearch.sparse.format.Format.parse` accepts
(``CSR``, ``CSF``, ``COO``, ``CISS``, ``dense`` or one letter ``U``/``C`` per rank).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Mapping, Sequence, Union

from mapsearch.errors import UsageError
from mapsearch.sparse.density import Banded, Dense, NofM, Uniform
from mapsearch.sparse.format import Format
from mapsearch.spec.workload import TensorAccess, Workload

Density = Union[Dense, Uniform, NofM, Banded]

SPECS = "dense, uniform:D,... (one density in [0, 1] per rank), nofm:N/M[@OFFSET],... (one per rank) or banded:LOWER,UPPER"


def split_assignment(option: str, item: str) -> tuple[str, str]:
    """``'A=uniform:0.5,0.2'`` -> ``('A', 'uniform:0.5,0.2')``; the name and the value, stripped.

    >>> split_assignment("--density", " A = dense ")
    ('A', 'dense')
    """
    name, eq, value = str(item).partition("=")
    if not eq or not name.strip() or not value.strip():
        what = "T=SPEC, e.g. A=uniform:0.9,0.04" if option == "--density" else "T=FMT, e.g. A=CSR"
        raise UsageError(option, what, item)
    return name.strip(), value.strip()


def _density_value(option: str, text: str, spec: str) -> float:
    try:
        x = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise UsageError(option, "densities in [0, 1] (decimals or a/b), e.g. uniform:0.9,0.04", spec) from None
    if not 0 <= x <= 1:
        raise UsageError(option, f"densities in [0, 1]; {text.strip()} is outside", spec)
    return float(x)


def _int(option: str, text: str, spec: str, what: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise UsageError(option, what, spec) from None


def _n_of_m(option: str, text: str, spec: str) -> tuple[int, int, int]:
    what = "per rank N/M or N/M@OFFSET with integers 0 <= N <= M, M >= 1, 0 <= OFFSET < M, e.g. nofm:2/4,4/4"
    body, at, off = text.partition("@")
    n, slash, m = body.partition("/")
    if not slash:
        raise UsageError(option, what, spec)
    n_, m_ = _int(option, n, spec, what), _int(option, m, spec, what)
    o_ = _int(option, off, spec, what) if at else 0
    if m_ < 1 or n_ < 0:
        raise UsageError(option, what, spec)
    if n_ > m_:
        raise UsageError(option, f"N <= M in every N/M; {n_}/{m_} has N > M", spec)
    if not 0 <= o_ < m_:
        raise UsageError(option, f"an offset in [0, M) in every N/M@OFFSET; {text.strip()} has {o_}", spec)
    return n_, m_, o_


def parse_density(spec: str, ndim: int, option: str = "--density", tensor: str = "the tensor") -> Density:
    """A density spec for a tensor of ``ndim`` ranks (grammar in the module docstring).

    >>> parse_density("uniform:0.9,0.04", 2)
    Uniform(densities=(0.9, 0.04), interval=10)
    >>> parse_density("nofm:2/4,4/4", 2)
    NofM(n=(2, 4), m=(4, 4), offset=None, interval=10)
    >>> parse_density("nofm:2/4@1,4/4", 2).offset
    (1, 0)
    >>> parse_density("banded:1,2", 2)
    Banded(lower=1, upper=2, interval=10)
    >>> parse_density("dense", 3)
    Dense(interval=10)
    """
    text = spec.strip()
    kind, colon, body = text.partition(":")
    kind = kind.strip().lower()
    if kind == "dense" and not body.strip():
        return Dense()
    if not colon or kind not in ("uniform", "nofm", "banded"):
        raise UsageError(option, SPECS, spec)
    parts = [p for p in body.split(",")]
    if any(not p.strip() for p in parts):
        raise UsageError(option, f"{kind}: comma-separated values, none empty", spec)
    if kind == "banded":
        if ndim != 2:
            raise UsageError(option, f"banded for a matrix; {tensor} has {ndim} rank(s)", spec)
        what = "banded:LOWER,UPPER with integers >= 0, e.g. banded:1,1"
        if len(parts) != 2:
            raise UsageError(option, what, spec)
        lower, upper = (_int(option, p, spec, what) for p in parts)
        if lower < 0 or upper < 0:
            raise UsageError(option, what, spec)
        return Banded(lower, upper)
    if len(parts) != ndim:
        unit = "densities" if kind == "uniform" else "N/M entries"
        raise UsageError(option, f"{ndim} {unit}, one per rank of {tensor}", spec)
    if kind == "uniform":
        return Uniform(tuple(_density_value(option, p, spec) for p in parts))
    nmo = [_n_of_m(option, p, spec) for p in parts]
    offset = tuple(o for _, _, o in nmo) if any("@" in p for p in parts) else None
    return NofM(tuple(n for n, _, _ in nmo), tuple(m for _, m, _ in nmo), offset)


def density_text(density: object) -> str:
    """The spec that :func:`parse_density` reads back (for reports).

    >>> density_text(Uniform((0.9, 0.04)))
    'uniform:0.9,0.04'
    >>> density_text(NofM((2, 4), (4, 4), (1, 0)))
    'nofm:2/4@1,4/4@0'
    """
    if density is None or isinstance(density, Dense):
        return "dense"
    if isinstance(density, Uniform):
        return "uniform:" + ",".join(f"{d:g}" for d in density.densities)
    if isinstance(density, NofM):
        off = density.offset or (0,) * len(density.n)
        return "nofm:" + ",".join(f"{n}/{m}" + (f"@{o}" if density.offset is not None else "")
                                  for n, m, o in zip(density.n, density.m, off))
    if isinstance(density, Banded):
        return f"banded:{density.lower},{density.upper}"
    return repr(density)


def _tensor_access(workload: Workload, option: str, name: str, item: str, inputs_only: bool):
    names = [t.name for t in workload.einsum.inputs] if inputs_only else list(workload.tensor_names)
    out = workload.einsum.output.name
    if inputs_only and name == out:
        raise UsageError(f"{option} {name}", f"an input of {workload.einsum.text()} ({', '.join(names)}); "
                         f"{name} is the output, priced dense", item)
    if name not in names:
        raise UsageError(f"{option} {name}", f"a tensor of {workload.einsum.text()} ({', '.join(names)})", item)
    return workload.tensor(name)


def parse_densities(items: Sequence[str] | None, workload: Workload) -> dict[str, Density]:
    """``--density`` values -> density per tensor (once each). The output's is an assumption about
    its pattern, for pricing a compressed output format (``solve_sparse(output_density=)``).

    >>> w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})
    >>> parse_densities(["A=uniform:0.5,1/4"], w)
    {'A': Uniform(densities=(0.5, 0.25), interval=10)}
    """
    out: dict[str, Density] = {}
    for item in items or ():
        name, spec = split_assignment("--density", item)
        access = _tensor_access(workload, "--density", name, item, inputs_only=False)
        option = f"--density {name}"
        if name in out:
            raise UsageError(option, f"one density per tensor; {name} already has {density_text(out[name])}", item)
        out[name] = parse_density(spec, len(access.indices), option, access.text())
    return out


def parse_formats(items: Sequence[str] | None, workload: Workload) -> dict[str, Format]:
    """``--format`` values -> format per tensor (once each; any tensor, the output included).

    >>> w = Workload.from_text("mm", "Z[m,n] += A[m,k] * B[k,n]", {"m": 4, "n": 4, "k": 4})
    >>> parse_formats(["A=CSR", "B=UC"], w)["B"].rank_kinds()
    ('U', 'C')
    """
    out: dict[str, Format] = {}
    for item in items or ():
        name, text = split_assignment("--format", item)
        access = _tensor_access(workload, "--format", name, item, inputs_only=False)
        option = f"--format {name}"
        if name in out:
            raise UsageError(option, f"one format per tensor; {name} already has {out[name].text()}", item)
        out[name] = parse_format(text, access, option)
    return out


def parse_format(text: str, access: TensorAccess, option: str = "--format") -> Format:
    """A format name for the tensor ``access`` (CSR, CSF, COO, CISS, dense, or one letter U/C per rank)."""
    n = len(access.indices)
    try:
        return Format.parse(text, n)
    except ValueError:
        raise UsageError(option, f"a format of {access.text()}: CSR, CSF, COO, CISS, dense or {n} letter(s) U/C",
                         text) from None


def check_output_density(workload: Workload, densities: Mapping[str, object], formats: Mapping[str, Format],
                         cli: bool = False) -> None:
    """Refuse a density of the output that would change nothing: it only prices a compressed output format (a
    dense output's words do not depend on its pattern), yet it would turn the density model on. ``cli``: name
    the options as flags."""
    out = workload.einsum.output.name
    if out not in densities or (out in formats and formats[out].compressed):
        return
    option, fmt = (f"--density {out}", f"--format {out}=CSR") if cli else (f"densities[{out!r}]", f"formats[{out!r}]")
    raise UsageError(option, f"densities of the inputs; the output's prices a compressed output format only ({fmt}), "
                     f"and {out} is stored dense", density_text(densities[out]))


def is_sparse(densities: Mapping[str, object], formats: Mapping[str, Format]) -> bool:
    """Whether the solve searches with the density model: any density given, or any compressed format."""
    return bool(densities) or any(f.compressed for f in formats.values())


def all_exact(workload: Workload, densities: Mapping[str, object]) -> bool:
    """Every input's density is fixed-structure (``NofM``, ``Banded``, ``Dense``; missing is dense)."""
    return all(getattr(densities.get(t.name, Dense()), "exact", False) for t in workload.einsum.inputs)
