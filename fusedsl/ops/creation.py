"""Creation ops whose values vary along their one axis: arange and linspace.

They are graph ops of their own with the HOST trait: fusion keeps them out of every kernel (like
a reshape view, they stay in the host program between kernels), the host computes them once per
call with their numpy reference (a 1-D tensor of `num` elements, a few bytes beside the data the
kernels move), and the kernels read them as inputs, broadcast like any tensor.  So an op built
on them (argmax, tril/triu, one_hot, cumsum, flip: ops/composite.py) prints, lowers and fuses
wherever its other parts do.  Generating the values inside the kernel instead (Ascend C
CreateVecIndex / ArithProgression, an LLVM iota) would save that input; the tile IR has no
index primitive yet.

Shapes are static: `num` is part of the op, as numpy's result length is part of its call.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..ir.core import TensorType
from ..ir.ops import HOST, register
from ..ir.shapes import TypeRuleError


def arange_length(start, stop, step) -> int:
    """numpy's arange length: ceil((stop - start) / step), at least 0."""
    if step == 0:
        raise TypeRuleError("arange step must not be 0", kind="arg")
    return max(0, math.ceil((stop - start) / step))


def _arange_infer(types, attrs):
    return (TensorType((arange_length(attrs["start"], attrs["stop"], attrs["step"]),), dt.to_dtype(attrs["dtype"])),)


def _linspace_infer(types, attrs):
    if int(attrs["num"]) < 0:
        raise TypeRuleError(f"linspace num must be >= 0, got {attrs['num']}", kind="arg")
    return (TensorType((int(attrs["num"]),), dt.to_dtype(attrs["dtype"])),)


register("arange", arity=0, traits=[HOST], attrs=("start", "stop", "step", "dtype"), infer=_arange_infer,
         ref=lambda args, a: np.arange(a["start"], a["stop"], a["step"]).astype(dt.to_dtype(a["dtype"]).np),
         public=("arange",), aten=("aten.arange.default", "aten.arange.start", "aten.arange.start_step"),
         onnx=("Range",), doc="evenly spaced values start, start + step, ... below stop (numpy.arange)")
register("linspace", arity=0, traits=[HOST], attrs=("start", "stop", "num", "endpoint", "dtype"),
         infer=_linspace_infer,
         ref=lambda args, a: np.linspace(a["start"], a["stop"], int(a["num"]), endpoint=bool(a["endpoint"]))
         .astype(dt.to_dtype(a["dtype"]).np),
         public=("linspace",), aten=("aten.linspace.default",),
         doc="num evenly spaced values from start to stop (numpy.linspace)")
