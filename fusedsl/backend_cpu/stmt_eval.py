"""The numpy semantics of one tile statement (tile/ir.py `Stmt`): what a Step's statements compute,
for the TileKernel interpreter (kernel_interp.py), which every CPU lowering must agree with.

Arithmetic rules shared with the LLVM backend (and the reference, see fusedsl.dtypes):
- a float16 stmt computes in float32 and rounds to half once; its immediate scalar is
  first converted to half (the Ascend C API takes a `half` scalar);
- float -> int casts truncate (or round per the cast's mode) and wrap, like the
  reference (the NPU leaves out-of-range values undefined, so any result is allowed);
  int8/uint8 are computed in float16 by the schedule: the final wrap agrees with
  numpy's per-op wrapping for + - * while values stay exact in half (|x| <= 2048),
  and for max/min/abs only while no intermediate leaves the int8/uint8 range;
- max/min propagate NaN like numpy.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..tile.ir import Stmt
from ..tile.prims import PRIMS

__all__ = ["apply_stmt", "convert"]


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype in (np.float16, dt.bfloat16.np) else x


def apply_stmt(stmt: Stmt, srcs, scalar, shape) -> np.ndarray:
    """dst of one stmt from its source arrays (see module doc for the rounding rule)."""
    if stmt.op == "cast":
        return convert(srcs[0], stmt.src_dtype, stmt.dtype, stmt.round_mode)
    if stmt.op == "dup":
        return np.broadcast_to(scalar, shape)
    if stmt.op == "cmp":      # operands in stmt.dtype; the result is a half 0/1
        other = srcs[1] if len(srcs) > 1 else scalar
        with np.errstate(all="ignore"):
            return _COMPARE[stmt.cmp_mode](srcs[0], other).astype(np.float16)
    if stmt.op == "select" and stmt.cmp_mode is not None:   # srcs: a, b compared, then the two values
        with np.errstate(all="ignore"):
            return np.where(_COMPARE[stmt.cmp_mode](srcs[0], srcs[1]), srcs[2], srcs[3])
    if stmt.op == "select":   # srcs: the half 0/1 condition, then the two values
        return np.where(srcs[0] != 0, srcs[1], srcs[2])
    xs = [_wide(s) for s in srcs]
    s = None if scalar is None else _wide(np.asarray(scalar))
    with np.errstate(all="ignore"):
        result = PRIMS[stmt.op].ref(xs, s)   # the primitive's record (tile/prims.py)
        return np.asarray(result).astype(stmt.dtype.np)


_COMPARE = {"LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
            "EQ": np.equal, "NE": np.not_equal}

_INT_ROUNDING = {
    "CAST_TRUNC": np.trunc,
    "CAST_RINT": np.rint,
    "CAST_NONE": np.rint,
    "CAST_FLOOR": np.floor,
    "CAST_CEIL": np.ceil,
    "CAST_ROUND": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),   # half away from zero
}


def convert(x: np.ndarray, src: dt.DType, dst: dt.DType, mode: str | None = None) -> np.ndarray:
    """Cast semantics: to int truncates (or rounds per mode) and wraps; to float is RNE;
    to bool is numpy's (nonzero is True)."""
    with np.errstate(all="ignore"):
        if dst == dt.bool_:
            return x != 0
        if dst.is_int and src.is_float:
            rounded = _INT_ROUNDING[mode or "CAST_TRUNC"](x.astype(np.float32))
            return rounded.astype(np.int64).astype(dst.np)
        if dst.is_int:
            return x.astype(np.int64).astype(dst.np)
        if mode not in (None, "CAST_NONE", "CAST_RINT", "CAST_TRUNC") and not (
                mode == "CAST_ODD" and dst == dt.float16):
            raise NotImplementedError(f"float cast {src}->{dst} with {mode}")
        if src == dt.float16 and dst == dt.bfloat16 or src == dt.bfloat16 and dst == dt.float16:
            x = x.astype(np.float32)    # exact; then one rounding
        nearest = x.astype(dst.np)
        if mode not in ("CAST_TRUNC", "CAST_ODD") or dst.itemsize >= src.itemsize:
            return nearest
        # toward zero: nearest is at most one ulp off, step back where it went away from zero
        # (sign-magnitude bits: one less is one ulp closer to zero; inf becomes the largest finite)
        away = np.abs(nearest.astype(np.float64)) > np.abs(x.astype(np.float64))
        bits = nearest.view(np.uint16).copy()
        bits[away] -= 1
        if mode == "CAST_ODD":
            # round to odd: the truncation with its last bit set when it is inexact
            inexact = bits.view(dst.np).astype(np.float64) != x.astype(np.float64)
            bits[inexact & ~np.isnan(x)] |= 1
        return bits.view(dst.np)
