"""Structural zeros: which elements of a program's values are zero whatever the arguments are.

The importers compose convolution variants from a plain conv2d and data movement: dilation
zero-inserts the weight, groups make it block-diagonal, a transposed convolution zero-inserts
and pads its input (importers/torch_window.py).  A dense conv2d then multiplies those zeros:
a stride-5 transposed convolution with dilation 2 computed 72x the multiply-adds eager torch
does.  This module finds the zeros once per compiled program, from the IR alone, so that the
CPU conv executor can skip them (backend_cpu/conv_sparse.py).

A mask is a bool array of the value's shape, False where the element is a structural zero
(always +0.0 or 0): it was copied from a constant zero by data-movement ops only (slice,
concatenate, broadcast_to, transpose, reshape, cast).  Every other op makes its result
"unknown" (no mask), so the analysis is conservative: a False is a proof, a True says nothing.
Values without any structural zero have no entry.
"""
from __future__ import annotations

import numpy as np

from ..ir.core import Module
from ..ir.ops import REGISTRY

MAX_ELEMENTS = 1 << 26      # no masks for values larger than this (a mask is a byte per element)
_MOVES = ("slice", "broadcast_to", "transpose", "reshape")


def _constant_mask(op):
    value = np.asarray(op.attr("value"))
    if value.shape != tuple(op.result.shape):
        value = np.broadcast_to(value, tuple(op.result.shape))
    return value != 0


def _op_mask(op, masks):
    """The result's mask from its operands' masks (None: no structural zero known)."""
    name = op.name
    if name == "constant":
        if not all(isinstance(d, int) for d in op.result.shape):
            return None
        return _constant_mask(op)
    operands = [masks.get(id(v)) for v in op.operands]
    if all(m is None for m in operands):
        return None
    if name in _MOVES:
        return np.asarray(REGISTRY[name].ref([operands[0]], dict(op.attrs)))
    if name == "cast":   # a zero casts to zero
        return operands[0]
    if name == "concatenate":
        parts = [np.broadcast_to(True, tuple(v.shape)) if m is None else m for v, m in zip(op.operands, operands)]
        return np.concatenate(parts, axis=op.attr("axis"))
    return None


def structural_zeros(module: Module) -> dict[int, np.ndarray]:
    """id(value) -> mask for every value of main and of the kernels it calls that has a
    structural zero (module docstring).  Values of symbolic or very large shapes get none."""
    masks: dict[int, np.ndarray] = {}

    def keep(v, mask):
        # a kernel function called twice sees other operands the second time: set or clear
        masks.pop(id(v), None)
        if mask is None or not all(isinstance(d, int) for d in v.shape):
            return
        if mask.size > MAX_ELEMENTS or mask.shape != tuple(v.shape) or mask.all():
            return
        masks[id(v)] = mask

    for op in module.main.ops:
        if op.name == "call":
            fn = module.function(op.attr("callee"))
            if fn is None:
                continue
            for p, v in zip(fn.params, op.operands):
                keep(p.value, masks.get(id(v)))
            for inner in fn.ops:
                for r in inner.results:
                    keep(r, _op_mask(inner, masks) if len(inner.results) == 1 else None)
            for r, v in zip(fn.results, op.results):
                keep(v, masks.get(id(r)))
        else:
            for r in op.results:
                keep(r, _op_mask(op, masks) if len(op.results) == 1 else None)
    return masks


# ---- copy sources ------------------------------------------------------------------------------
# The same walk with element indices instead of booleans: which values are, element by element,
# copies of one parameter of main (or structural zeros).  A conv2d over such an operand (a
# dilated, block-diagonal or flipped weight; a transposed convolution's zero-inserted input) can
# read the parameter itself at its nonzero positions, and the kernels that built the operand need
# not run (program.py drops them when nothing else reads their results).
MAX_SOURCE_ELEMENTS = 1 << 22   # an index array is 8 bytes per element


def _op_source(op, sources):
    """(parameter index, index array) of the result from its operands', or None."""
    name = op.name
    if name == "constant":
        if not all(isinstance(d, int) for d in op.result.shape) or _constant_mask(op).any():
            return None
        return (None, np.full(tuple(op.result.shape), -1, np.int64))   # zeros: from no parameter
    got = [sources.get(id(v)) for v in op.operands]
    if name in _MOVES:
        if got[0] is None:
            return None
        return got[0][0], np.asarray(REGISTRY[name].ref([got[0][1]], dict(op.attrs)))
    if name == "concatenate":
        if any(g is None for g in got):
            return None
        params = {g[0] for g in got if g[0] is not None}
        if len(params) > 1:
            return None
        return (params.pop() if params else None), np.concatenate([g[1] for g in got], axis=op.attr("axis"))
    return None


def copy_sources(module: Module) -> dict[int, tuple[int, np.ndarray]]:
    """id(value) -> (i, index) for every value of main (and of the kernels it calls) whose
    elements are each a copy of an element of main's parameter i (`index` holds its flat
    position) or a structural zero (index -1), through data movement only (slice,
    concatenate, broadcast_to, transpose, reshape, constant zeros).  Parameters themselves and
    values of symbolic or very large shapes get no entry."""
    main = module.main
    sources: dict[int, tuple] = {}
    for i, p in enumerate(main.params):
        shape = tuple(p.value.shape)
        if p.kind == "tensor" and all(isinstance(d, int) for d in shape) and 0 < int(np.prod(shape)) <= MAX_SOURCE_ELEMENTS:
            sources[id(p.value)] = (i, np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape))
    params = {id(p.value) for p in main.params}

    def keep(v, got):
        sources.pop(id(v), None)
        if got is None or not all(isinstance(d, int) for d in v.shape):
            return
        if got[1].size > MAX_SOURCE_ELEMENTS or got[1].shape != tuple(v.shape):
            return
        sources[id(v)] = got

    for op in main.ops:
        if op.name == "call":
            fn = module.function(op.attr("callee"))
            if fn is None:
                continue
            for p, v in zip(fn.params, op.operands):
                keep(p.value, sources.get(id(v)))
            for inner in fn.ops:
                for r in inner.results:
                    keep(r, _op_source(inner, sources) if len(inner.results) == 1 else None)
            for r, v in zip(fn.results, op.results):
                keep(v, sources.get(id(r)))
        else:
            for r in op.results:
                keep(r, _op_source(op, sources) if len(op.results) == 1 else None)
    return {k: v for k, v in sources.items() if k not in params and v[0] is not None}
