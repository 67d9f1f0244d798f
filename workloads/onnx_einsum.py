"""An Einsum equation as a chain of batched GEMMs (the importer counts them, the executor runs them).

Operands are contracted left to right, as ``workloads/onnx_reference.py``
counts them: each step ``cur x next`` keeps the indices a later operand or the
output needs; its indices split into batch (in both, kept), K (in both,
summed), M (only in ``cur``) and N (only in ``next``), so the step is a
batched GEMM of ``batch*M*K*N`` MACs, the product of all its index sizes.
An ellipsis stands for spare index letters (right-aligned, broadcast as numpy
does). Not a chain of GEMMs, and refused: an index summed out of one operand
alone (a ReduceSum), an index repeated in one term (a diagonal or trace).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from math import prod

__all__ = ["EinsumPlan", "einsum_plan", "EinsumError"]


class EinsumError(ValueError):
    """The equation is not a chain of GEMMs this module lowers (the message says why)."""


@dataclass(frozen=True)
class EinsumStep:
    """One pairwise contraction: index letters of the two operands and of the result, split by role."""

    a: str
    b: str
    out: str
    batch: str
    m: str
    k: str
    n: str


@dataclass(frozen=True)
class EinsumPlan:
    terms: tuple[str, ...]  # one letter per operand dim (ellipses expanded)
    out: str
    sizes: dict
    steps: tuple[EinsumStep, ...]

    def step_macs(self, step: EinsumStep) -> int:
        return prod(self.sizes[c] for c in set(step.a) | set(step.b))

    @property
    def macs(self) -> int:
        return sum(self.step_macs(s) for s in self.steps)


def einsum_plan(equation: str, shapes: list[tuple[int, ...]]) -> EinsumPlan:
    """The GEMM chain of ``equation`` on operands of ``shapes``; :class:`EinsumError` when it is not one."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    raw = lhs.split(",")
    if len(raw) != len(shapes):
        raise EinsumError(f"equation {equation!r} has {len(raw)} operand(s) for {len(shapes)} input(s)")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in eq]
    ell_rank = max((len(s) - (len(t) - 3) for t, s in zip(raw, shapes) if "..." in t), default=0)
    ell = "".join(spare[:ell_rank])
    terms, sizes = [], {}
    for term, shape in zip(raw, shapes):
        if "..." in term:
            pre, post = term.split("...")
            n = len(shape) - len(pre) - len(post)
            term = pre + (ell[ell_rank - n:] if n > 0 else "") + post
        if len(term) != len(shape):
            raise EinsumError(f"equation {equation!r}: term {term!r} does not match an operand of rank {len(shape)}")
        repeated = sorted(c for c, k in Counter(term).items() if k > 1)
        if repeated:
            raise EinsumError(f"equation {equation!r}: index {', '.join(repeated)} repeats in one operand "
                              f"(a diagonal), not a GEMM")
        for c, d in zip(term, shape):
            if sizes.get(c, 1) != 1 and d not in (1, sizes[c]):
                raise EinsumError(f"equation {equation!r}: index {c} is {sizes[c]} and {d}")
            sizes[c] = max(sizes.get(c, 1), d)
        terms.append(term)
    if arrow:
        out = rhs.replace("...", ell)
    else:  # numpy's implicit output: the ellipsis, then the letters seen once, sorted
        once = Counter("".join(terms))
        out = ell + "".join(sorted(c for c in once if once[c] == 1 and c not in ell))
    unknown = sorted(set(out) - set(sizes))
    if unknown:
        raise EinsumError(f"equation {equation!r}: output index {', '.join(unknown)} is in no operand")
    steps = []
    cur = terms[0]
    for i in range(1, len(terms)):
        nxt = terms[i]
        later = set(out).union(*map(set, terms[i + 1:]))
        lone = sorted((set(cur) ^ set(nxt)) - later)
        if lone:
            raise EinsumError(f"equation {equation!r}: index {', '.join(lone)} summed out of one operand "
                              f"alone, not a GEMM (reduce that operand first: ReduceSum, then Einsum)")
        batch = "".join(c for c in cur if c in nxt and c in later)
        k = "".join(c for c in cur if c in nxt and c not in later)
        m = "".join(c for c in cur if c not in nxt)
        n = "".join(c for c in nxt if c not in cur)
        res = out if i == len(terms) - 1 else batch + m + n
        steps.append(EinsumStep(cur, nxt, res, batch, m, k, n))
        cur = res
    return EinsumPlan(tuple(terms), out, sizes, tuple(steps))
