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
