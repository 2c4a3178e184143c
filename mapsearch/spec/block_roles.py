"""A compute block given by GEMM role, and its bindings to an einsum's dimensions.

A hardware op such as a tensor core's ``mma.sync m16n8k16`` or an 8-lane
vector FMA is a small matrix product ``D[m,n] += A[m,k] * B[k,n]``: its
block is naturally given in the roles of that product, not in the names a
workload happens to use. An architecture says so with
``compute: {block_roles: {m: 16, n: 8, k: 16}}`` (docs/architecture.md).

The roles of a dimension of an einsum ``O += X * Y``, for one assignment of
the einsum's inputs to the op's operands (first operand ``A``, second ``B``):

- ``m``: in the output and in ``A`` only;
- ``n``: in the output and in ``B`` only;
- ``k``: in both operands, not in the output (a reduction).

Other dimensions (a batch in all three tensors, a dimension of one tensor
only) have no role. A dimension "is in" a tensor when any of its index
expressions uses it, so in ``O[k,p] += I[c,p+r] * W[k,c,r]`` the output row
``p`` is an ``m`` of ``A = I`` and the filter row ``r`` a ``k``.

Both assignments are the hardware's to choose (``A = X, B = Y`` or
``A = Y, B = X``; with one input, the other operand is a tensor of no
dimensions, e.g. ``O[m] += X[m,k]`` runs ``X`` against ones): which input an
einsum's text writes first says nothing about the op. A *binding* gives each
role of the block one dimension of that role under one assignment; the
bound op is then the contract's per-dimension block (the role's extent on
its dimension, 1 elsewhere), which the model and the simulator know.
:func:`role_bindings` lists every binding, :func:`bind_compute` makes the
bound op; choosing among them is the solver's (:mod:`mapsearch.solve.block_roles`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from mapsearch.spec.architecture import Architecture, Compute
from mapsearch.spec.einsum import Einsum
from mapsearch.spec.reading import _note

__all__ = ["ROLES", "ROLE_MEANING", "RoleBinding", "role_candidates", "role_bindings", "roles_problem",
           "bind_compute", "bind_architecture", "parse_binding", "fixed_bindings", "bindable_blocks"]

ROLES = ("m", "n", "k")
ROLE_MEANING = {
    "m": "in the output and one input only",
    "n": "in the output and one input only (the other input than m's)",
    "k": "in both inputs, not in the output",
}


@dataclass(frozen=True)
class RoleBinding:
    """Each role of a block given in roles, bound to one dimension: ``(role, dim)`` in the block's role order."""

    pairs: tuple[tuple[str, str], ...]

    def text(self) -> str:
        """``m=k, n=p, k=c``."""
        return ", ".join(f"{role}={dim}" for role, dim in self.pairs)

    def covers(self, fixed: Iterable[tuple[str, str]]) -> bool:
        """Every ``(role, dim)`` of ``fixed`` is in this binding."""
        return set(fixed) <= set(self.pairs)


def role_candidates(einsum: Einsum, swapped: bool = False) -> dict[str, tuple[str, ...]]:
    """The dimensions of each role, in the einsum's dimension order.

    ``swapped=False``: the op's first operand is the einsum's first input;
    ``True``: its second (or, with one input, the empty tensor of ones).
    An einsum of more than two inputs has no roles (every list empty).
    """
    if len(einsum.inputs) > 2:
        return {r: () for r in ROLES}
    first = einsum.inputs[0].dims
    second = einsum.inputs[1].dims if len(einsum.inputs) == 2 else frozenset()
    if swapped:
        first, second = second, first
    out = einsum.output.dims
    dims = einsum.dims
    return {
        "m": tuple(d for d in dims if d in out and d in first and d not in second),
        "n": tuple(d for d in dims if d in out and d in second and d not in first),
        "k": tuple(d for d in dims if d in first and d in second and d not in out),
    }


def role_bindings(einsum: Einsum, compute: Compute) -> tuple[RoleBinding, ...]:
    """Every binding of ``compute``'s roles to ``einsum``'s dimensions, both operand assignments, each once.

    Order: the einsum's inputs as written first, then swapped; within one,
    the product of each role's candidates in dimension order. Empty when a
    role has no candidate (:func:`roles_problem` says which).
    """
    roles = [r for r, _ in compute.block_roles]
    found: dict[tuple[tuple[str, str], ...], None] = {}
    for swapped in (False, True):
        candidates = role_candidates(einsum, swapped)
        for dims in itertools.product(*(candidates[r] for r in roles)):
            found.setdefault(tuple(zip(roles, dims)), None)
    return tuple(RoleBinding(pairs) for pairs in found)


def roles_problem(einsum: Einsum, compute: Compute) -> tuple[str, str] | None:
    """``(role, why)`` when ``compute``'s roles cannot bind to ``einsum``, else None.

    ``role`` is the first role no dimension has, or ``""`` when the einsum
    has no roles at all (more than two inputs) or no operand order has a
    dimension for every role at once.
    """
    if not compute.block_roles:
        return None
    if len(einsum.inputs) > 2:
        return "", f"GEMM roles need an einsum of one or two inputs; {einsum.text()!r} has {len(einsum.inputs)}"
    if role_bindings(einsum, compute):
        return None
    both = [role_candidates(einsum, s) for s in (False, True)]
    for role, _ in compute.block_roles:
        if not any(c[role] for c in both):
            return role, (f"no dimension of {einsum.text()!r} has role {role} ({ROLE_MEANING[role]}); give a literal "
                          "block (compute.block) or a scalar op for this workload")
    roles = ", ".join(r for r, _ in compute.block_roles)
    return "", (f"no order of the operands of {einsum.text()!r} has a dimension for each of the roles {roles} "
                "(m and n need a dimension of the output in each input); give a literal block (compute.block) or a "
                "scalar op for this workload")


def bind_compute(compute: Compute, binding: RoleBinding) -> Compute:
    """The op with each role's extent on its bound dimension: a literal per-dimension block."""
    dims = dict(binding.pairs)
    return replace(compute, block=tuple((dims[r], b) for r, b in compute.block_roles), block_roles=())


def bind_architecture(architecture: Architecture, binding: RoleBinding) -> Architecture:
    return replace(architecture, compute=bind_compute(architecture.compute, binding))


def parse_binding(value: str | Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """``'m=q,k=c'`` or ``{'m': 'q', 'k': 'c'}`` as ``(role, dim)`` pairs; ValueError saying what is wrong."""
    if isinstance(value, Mapping):
        items = [(str(r), str(d)) for r, d in value.items()]
    else:
        items = []
        for part in str(value).split(","):
            role, eq, dim = part.partition("=")
            if not eq or not role.strip() or not dim.strip():
                raise ValueError(f"ROLE=DIM pairs separated by commas, e.g. m=q,k=c (got {part.strip()!r})")
            items.append((role.strip(), dim.strip()))
    seen: set[str] = set()
    for role, _ in items:
        if role not in ROLES:
            raise ValueError(f"roles among {', '.join(ROLES)} (got {role!r})")
        if role in seen:
            raise ValueError(f"each role once (got {role!r} twice)")
        seen.add(role)
    if not items:
        raise ValueError("at least one ROLE=DIM pair")
    return tuple(items)


def fixed_bindings(einsum: Einsum, compute: Compute, fixed: tuple[tuple[str, str], ...],
                   ) -> tuple[tuple[RoleBinding, ...], tuple[str, str] | None]:
    """``(the bindings that keep every fixed (role, dim), None)``, or ``((), (expected, got))`` for a bad pair."""
    bindings = role_bindings(einsum, compute)
    roles = [r for r, _ in compute.block_roles]
    text = ",".join(f"{r}={d}" for r, d in fixed)
    if not roles:
        return (), ("a compute block given in GEMM roles (compute.block_roles) to bind; this op has none", text)
    for role, dim in fixed:
        if role not in roles:
            return (), (f"roles of the op's block ({', '.join(roles)})", f"{role}={dim}")
        dims = sorted({d for b in bindings for r, d in b.pairs if r == role}, key=einsum.dims.index)
        if dim not in dims:
            return (), (f"{role} bound to a dimension of role {role} in {einsum.text()!r} ({', '.join(dims)})",
                        f"{role}={dim}")
    kept = tuple(b for b in bindings if b.covers(fixed))
    if not kept:
        return (), ("roles that one order of the operands allows together (m and n from different inputs)", text)
    return kept, None


def bindable_blocks(compute: Compute, einsums: tuple[Einsum, ...], source: str,
                    architecture_source: str) -> list[dict[str, int]]:
    """Every per-dimension block the solver may give ``compute`` on ``einsums`` (its own block when it has no roles).

    A role with no dimension in one of them is a SpecError naming
    ``compute.block_roles.ROLE`` in ``architecture_source``.
    """
    if not compute.block_roles:
        return [dict(compute.block)]
    blocks: list[dict[str, int]] = []
    for einsum in einsums:
        problem = roles_problem(einsum, compute)
        if problem is not None:
            field = "compute.block_roles" + (f".{problem[0]}" if problem[0] else "")
            raise _note(architecture_source, field, f"with {source}: {problem[1]}")
        blocks += [dict(bind_compute(compute, b).block) for b in role_bindings(einsum, compute)]
    return blocks or [dict(compute.block)]
