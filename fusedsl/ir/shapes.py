"""Shape arithmetic shared by type rules, the tracer and the scheduler.

Dimensions are ints or symbolic names.  A symbolic dimension only ever equals
itself: broadcasting "M" against 128 is refused (we cannot prove M == 128).
"""
from __future__ import annotations

import operator

import numpy as np

from .core import Dim


class TypeRuleError(Exception):
    """Raised by a type rule; the caller attaches the user's location."""

    def __init__(self, message: str, hint: str | None = None, kind: str = "shape"):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.kind = kind  # "shape" | "dtype" | "arg"


def fmt_shape(shape) -> str:
    inner = ", ".join(str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def broadcast_shapes(*shapes: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """numpy broadcasting of several shapes (right-aligned)."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for i in range(rank):
        dim: Dim = 1
        for s in shapes:
            j = i - (rank - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1 or d == dim:
                continue
            if dim == 1:
                dim = d
                continue
            raise TypeRuleError(
                f"shapes {', '.join(fmt_shape(s) for s in shapes)} cannot be broadcast together "
                f"(axis {i - rank} has sizes {dim} and {d})",
                "make the sizes equal, or 1 in one operand (numpy broadcasting rules)")
        out.append(dim)
    return tuple(out)


def normalize_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise TypeRuleError(f"axis {axis} is out of range for a tensor of rank {rank}",
                            f"use an axis in [{-rank}, {rank - 1}]", kind="arg")
    return axis % rank


def normalize_axes(axis, rank: int) -> tuple[int, ...]:
    """None -> all axes; int or sequence -> sorted unique non-negative axes."""
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, (int, np.integer)):  # numpy ints too, e.g. axis=np.argmax(...)
        axis = (axis,)
    axes = sorted({normalize_axis(operator.index(a), rank) for a in axis})
    return tuple(axes)


def num_elements(shape) -> int | None:
    """Static element count, or None when a dimension is symbolic."""
    n = 1
    for d in shape:
        if not isinstance(d, int):
            return None
        n *= d
    return n


def symbolic_factor(shape) -> tuple[tuple[str, ...], int]:
    """(sorted symbolic names, product of static dims) - for reshape checks."""
    names = tuple(sorted(d for d in shape if isinstance(d, str)))
    static = 1
    for d in shape:
        if isinstance(d, int):
            static *= d
    return names, static


def column_param(shape, domain, first: int, last: int, out_layout: bool = False) -> tuple[str, int, int, int] | None:
    """(kind, sa, sk, sb) of a contiguous tensor of `shape` read over `domain` viewed as
    [A, K, B] (a column kernel's input, lower/column_plan.py), or None when one stride per
    group cannot address it (a group of axes that is partly broadcast, or a tensor that varies
    along K but not along B).  `out_layout`: the tensor is read by ops on the reduced values
    without keepdims, so it broadcasts against the domain without its reduced axes."""
    shape = tuple(shape)
    nk = last - first + 1
    if out_layout:
        if len(shape) > len(domain) - nk:
            return None
        p = (1,) * (len(domain) - nk - len(shape)) + shape
        padded = p[:first] + (1,) * nk + p[first:]
    elif len(shape) > len(domain):
        return None
    else:
        padded = (1,) * (len(domain) - len(shape)) + shape
    if any(d != D and d != 1 for d, D in zip(padded, domain)):
        return None
    Ks, Bs = num_elements(domain[first:last + 1]), num_elements(domain[last + 1:])
    if Ks is None or Bs is None:   # symbolic sizes: strides are known at the call
        Ks = Bs = 0
    if padded == tuple(domain) and not out_layout:   # the whole domain (also when its groups are all size 1)
        return "elem", Ks * Bs, Bs, 1
    groups = (range(0, first), range(first, last + 1), range(last + 1, len(domain)))
    present = []
    for g in groups:
        real = [i for i in g if domain[i] != 1]   # size-1 axes of D take no stride
        if all(padded[i] == domain[i] for i in real):
            present.append(bool(real))
        elif all(padded[i] == 1 for i in real):
            present.append(False)
        else:
            return None
    has_a, has_k, has_b = present
    if has_k:
        if not has_b:
            return None
        return "elem", Ks * Bs if has_a else 0, Bs, 1
    if has_b:
        return "col", Bs if has_a else 0, 0, 1
    if not has_a and all(d == 1 for d in shape):
        return "scalar", 0, 0, 0
    return None
