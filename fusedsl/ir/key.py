"""A Function's content as a hashable key: equal keys mean functions a consumer cannot tell
apart -- the same ops in the same order on the same values, the same attributes (of the same
Python types), names, types and source lines.  A memo keyed by it (lower/kinds.py: the lowering
of a fused kernel seen before in the process) returns what the function's twin produced.

Why not the printed text: the printer normalises (parameter names made identifiers, a result's
name not printed, 1 / 1.0 / True told apart only through their spelling) and costs more.  Keys
compare Python values with their type next to them, so 1, 1.0 and True stay apart, and floats by
their exact bits (0.0 and -0.0 differ, a NaN equals itself).  An attribute of a type not listed
here makes the function unkeyable (None): it is then lowered every time, never shared wrongly.
"""
from __future__ import annotations

from ..dtypes import DType
from .core import Function

_PLAIN = (int, bool, str, type(None))


class _Unkeyable(Exception):
    pass


def _attr(v):
    t = type(v)
    if t in _PLAIN:
        return (t, v)
    if t is float:
        return (float, v.hex())
    if t is tuple:
        return (tuple, tuple(_attr(x) for x in v))
    if t is DType:
        return (DType, v.name)
    raise _Unkeyable


def _type(v) -> tuple:
    ty = v.type
    return (tuple((type(d), d) for d in ty.shape), ty.dtype.name, v.name)


def function_key(fn: Function) -> tuple | None:
    """`fn`'s content as a hashable tuple (values numbered in order of definition), or None when
    an attribute has a type this key does not know (see the module's doc)."""
    number: dict[int, int] = {}
    params = []
    for p in fn.params:
        number[id(p.value)] = len(number)
        params.append((p.kind, _type(p.value)))
    ops = []
    try:
        for op in fn.ops:
            operands = tuple(number.get(id(v), -1) for v in op.operands)   # -1: not defined before
            for v in op.results:
                number[id(v)] = len(number)
            ops.append((op.name, operands, tuple(_type(v) for v in op.results),
                        tuple((k, _attr(v)) for k, v in op.attrs), op.loc.file, op.loc.line))
    except _Unkeyable:
        return None
    results = tuple(number.get(id(v), -1) for v in fn.results)
    return (fn.name, fn.loc.file, fn.loc.line, tuple(params), tuple(ops), results)
