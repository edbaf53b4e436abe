"""Tile stmts as LLVM IR on vectors of LANES elements: the arithmetic of the CPU backend.

Every float dtype lives in float32 registers.  A float16 or bfloat16 stmt computes in
float32 and rounds to its dtype once (round to nearest even), except the stmts that
cannot change an exact value (max/min/abs/relu/copy and multiplication by -1); an
immediate scalar is first converted to the stmt's dtype, as the Ascend C API takes a
scalar of the tensor's type.  max/min follow numpy: `(x >= y or isnan(x)) ? x : y`.
exp and ln are the inline polynomials of `mathlib`.  Casts: to an int, round per the
mode, convert to int32 and wrap to narrower ints (numpy's reference wraps too);
int to float rounds to nearest even; int8 <-> uint8 keeps the bits.  No fast-math:
nothing is reassociated or contracted, so results match the tile interpreter bit for
bit wherever numpy's own functions are not involved.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from .. import dtypes as dt
from ..lower.errors import LoweringError  # noqa: F401  (re-exported: the LLVM lowerings raise it)
from ..lower.vector import Stmt
from ..tile.prims import PRIMS
from .mathlib import VectorConsts, emit_exp, emit_log

LANES = 16            # one 512-bit register of float32

I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
F16 = ir.HalfType()
F32 = ir.FloatType()


# ---- dtype helpers ----------------------------------------------------------------------------
def mem_type(d: dt.DType):
    """How a dtype is stored in memory (bfloat16 as its 16 bits, bool as a 0/1 byte)."""
    return {"float32": F32, "float16": F16, "bfloat16": I16, "int32": I32, "int8": I8,
            "uint8": I8, "bool": I8}[d.name]


def reg_type(d: dt.DType):
    """How a dtype lives in registers: every float dtype as float32."""
    if d.is_float:
        return F32
    return {"int32": I32, "int8": I8, "uint8": I8, "bool": I8}[d.name]


def _unsigned(d: dt.DType) -> bool:
    return d in (dt.uint8, dt.bool_)


def vec(t, lanes: int):
    return ir.VectorType(t, lanes)


def round_scalar_to(value, d: dt.DType):
    """A Python number as the dtype's value (what the Ascend C scalar operand holds)."""
    with np.errstate(all="ignore"):
        if d == dt.bool_:
            return int(bool(value))
        if d.is_float:
            return float(np.asarray(value, dtype=np.float64).astype(d.np).astype(np.float64))
        return int(np.asarray(value).astype(np.int64).astype(d.np))


class StmtEmitter:
    """Emits tile stmts on LANES-wide vectors at the builder's position."""

    def __init__(self, k: VectorConsts, b: ir.IRBuilder, var_types: dict[str, dt.DType]):
        self.k = k
        self.b = b
        self.lanes = k.lanes
        self.var_types = var_types

    # -- constants and conversions ---------------------------------------------------------
    def splat(self, value, t):
        return ir.Constant(vec(t, self.lanes), [ir.Constant(t, value)] * self.lanes)

    def splat_value(self, scalar):
        """A scalar SSA value broadcast to all lanes."""
        b = self.b
        vt = vec(scalar.type, self.lanes)
        v = b.insert_element(ir.Constant(vt, ir.Undefined), scalar, ir.Constant(I32, 0))
        return b.shuffle_vector(v, ir.Constant(vt, ir.Undefined),
                                ir.Constant(vec(I32, self.lanes), [ir.Constant(I32, 0)] * self.lanes))

    def to_reg(self, v, d: dt.DType):
        b = self.b
        if d == dt.float16:
            return b.fpext(v, vec(F32, self.lanes))
        if d == dt.bfloat16:
            wide = b.shl(b.zext(v, vec(I32, self.lanes)), self.splat(16, I32))
            return b.bitcast(wide, vec(F32, self.lanes))
        return v

    def to_mem(self, v, d: dt.DType):
        """A register value (already exact in d) in d's memory form."""
        b = self.b
        if d == dt.float16:
            return b.fptrunc(v, vec(F16, self.lanes))
        if d == dt.bfloat16:
            bits = b.lshr(b.bitcast(v, vec(I32, self.lanes)), self.splat(16, I32))
            return b.trunc(bits, vec(I16, self.lanes))
        return v

    def round_to(self, v, d: dt.DType, toward_zero: bool = False, to_odd: bool = False):
        """Round a float32 register to dtype d's precision: to nearest even, or toward zero
        (CAST_TRUNC, used on a float hop towards an integer so that 2.9999 stays below 3), or
        to odd (CAST_ODD, float16 only: truncate, then set the last bit when inexact -- the
        310P/910A float->half hop on the way to an integer)."""
        b = self.b
        if d == dt.float16:
            half = b.fptrunc(v, vec(F16, self.lanes))
            if toward_zero or to_odd:
                # nearest is at most one ulp off: step back when it rounded away from zero
                # (this also turns an overflow to inf into the largest finite half)
                away = b.fcmp_ordered(">", self.k.unary(b, "fabs", b.fpext(half, vec(F32, self.lanes))),
                                      self.k.unary(b, "fabs", v))
                bits = b.bitcast(half, vec(I16, self.lanes))
                bits = b.select(away, b.sub(bits, self.splat(1, I16)), bits)
                if to_odd:
                    inexact = b.fcmp_ordered("!=", b.fpext(b.bitcast(bits, vec(F16, self.lanes)),
                                                           vec(F32, self.lanes)), v)
                    bits = b.select(inexact, b.or_(bits, self.splat(1, I16)), bits)
                half = b.bitcast(bits, vec(F16, self.lanes))
            return b.fpext(half, vec(F32, self.lanes))
        if d == dt.bfloat16:
            bits = b.bitcast(v, vec(I32, self.lanes))
            if toward_zero:
                rounded = bits
            else:
                odd = b.and_(b.lshr(bits, self.splat(16, I32)), self.splat(1, I32))
                rounded = b.add(b.add(bits, self.splat(0x7FFF, I32)), odd)
            quiet = b.or_(bits, self.splat(0x00400000, I32))     # keep NaN a NaN
            isnan = b.fcmp_unordered("uno", v, v)
            bits = b.and_(b.select(isnan, quiet, rounded), self.splat(0xFFFF0000 - (1 << 32), I32))
            return b.bitcast(bits, vec(F32, self.lanes))
        return v

    def scalar_operand(self, stmt: Stmt, var_values: dict):
        """The stmt's scalar as a vector in the stmt dtype's register form."""
        kind, value = stmt.scalar
        d = stmt.dtype
        if kind == "imm":
            return self.splat(round_scalar_to(value, d), reg_type(d))
        src_dtype = self.var_types[value]
        v = var_values[value]
        return self.convert(v, src_dtype, d, None)

    # -- stmts ------------------------------------------------------------------------------
    def stmt(self, st: Stmt, srcs, scalar):
        """The value one stmt writes; float16/bfloat16 results are rounded here."""
        if st.op == "cast":
            return self.convert(srcs[0], st.src_dtype, st.dtype, st.round_mode)
        if st.op == "dup":
            return scalar
        if st.op == "cmp":      # operands in st.dtype; the result is a half 0/1
            other = srcs[1] if len(srcs) > 1 else scalar
            true = self._compare(st.cmp_mode, srcs[0], other, st.dtype)
            return self.b.select(true, self.k.fc(1.0), self.k.fc(0.0))
        if st.op == "select" and st.cmp_mode is not None:   # srcs: a, b compared, then the two values
            return self.b.select(self._compare(st.cmp_mode, srcs[0], srcs[1], st.dtype), srcs[2], srcs[3])
        if st.op == "select":   # srcs: the half 0/1 condition, then the two values
            cond = self.b.fcmp_unordered("!=", srcs[0], self.k.fc(0.0))
            return self.b.select(cond, srcs[1], srcs[2])
        d = st.dtype
        if d.is_float:
            value = self._float_op(st.op, srcs, scalar)
            exact = PRIMS[st.op].exact or st.negation
            return value if exact or d == dt.float32 else self.round_to(value, d)
        if d == dt.int32:
            return self._int_op(st.op, srcs, scalar)
        raise LoweringError(f"{st.op} on {d} (the schedule computes narrow ints in float16)")

    def _compare(self, mode: str, x, y, d: dt.DType):
        """numpy's comparison: ordered (NaN compares false) except !=, which NaN satisfies."""
        op = {"LT": "<", "LE": "<=", "GT": ">", "GE": ">=", "EQ": "==", "NE": "!="}[mode]
        b = self.b
        if d.is_float:
            return b.fcmp_unordered(op, x, y) if mode == "NE" else b.fcmp_ordered(op, x, y)
        return (b.icmp_unsigned if _unsigned(d) else b.icmp_signed)(op, x, y)

    def fmax(self, x, y):
        # numpy's float32 maximum: (x > y or isnan(x)) ? x : y -- a tie (-0.0, +0.0) gives y
        b = self.b
        take_x = b.or_(b.fcmp_ordered(">", x, y), b.fcmp_unordered("uno", x, x))
        return b.select(take_x, x, y)

    def fmin(self, x, y):
        b = self.b
        take_x = b.or_(b.fcmp_ordered("<", x, y), b.fcmp_unordered("uno", x, x))
        return b.select(take_x, x, y)

    def exp(self, x):
        return emit_exp(self.k, self.b, x)

    def log(self, x):
        return emit_log(self.k, self.b, x)

    def _float_op(self, op: str, srcs, s):
        p = PRIMS.get(op)
        if p is None or p.llvm_float is None:
            raise LoweringError(f"tile op {op} is not implemented for floats")
        return p.llvm_float(self, srcs, s)

    def _int_op(self, op: str, srcs, s):
        p = PRIMS.get(op)
        if p is None or p.llvm_int is None:
            raise LoweringError(f"tile op {op} is not implemented for int32")
        return p.llvm_int(self, srcs, s)

    def convert(self, v, src: dt.DType, dst: dt.DType, mode: str | None):
        """Cast semantics (module doc) on register vectors; bool is a 0/1 byte."""
        b = self.b
        lanes = self.lanes
        if src == dst:
            return v
        if dst == dt.bool_:     # numpy's astype(bool): nonzero (and NaN) is True
            zero = self.k.fc(0.0) if src.is_float else self.splat(0, reg_type(src))
            nonzero = b.fcmp_unordered("!=", v, zero) if src.is_float else b.icmp_unsigned("!=", v, zero)
            return b.zext(nonzero, vec(I8, lanes))
        if src.is_float and dst.is_float:
            if mode not in (None, "CAST_NONE", "CAST_RINT", "CAST_TRUNC") and not (
                    mode == "CAST_ODD" and dst == dt.float16):
                raise LoweringError(f"float cast {src}->{dst} with {mode}")
            return v if dst == dt.float32 else self.round_to(
                v, dst, toward_zero=mode == "CAST_TRUNC", to_odd=mode == "CAST_ODD")
        if not src.is_float and dst.is_float:
            as_float = (b.uitofp if _unsigned(src) else b.sitofp)(v, vec(F32, lanes))
            return as_float if dst == dt.float32 else self.round_to(as_float, dst)
        if src.is_float and dst.is_int:
            if mode not in (None, "CAST_TRUNC"):
                name = {"CAST_RINT": "rint", "CAST_NONE": "rint", "CAST_FLOOR": "floor",
                        "CAST_CEIL": "ceil", "CAST_ROUND": "round"}[mode]
                v = self.k.unary(b, name, v)
            as_int = b.fptosi(v, vec(I32, lanes))
            return as_int if dst == dt.int32 else b.trunc(as_int, vec(I8, lanes))
        # int -> int: widen by the source's signedness, narrow by wrapping
        if dst == dt.int32:
            return (b.zext if _unsigned(src) else b.sext)(v, vec(I32, lanes))
        if src == dt.int32:
            return b.trunc(v, vec(I8, lanes))
        return v      # int8/uint8 from int8/uint8/bool: the same bits

