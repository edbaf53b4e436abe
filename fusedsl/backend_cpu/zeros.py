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
