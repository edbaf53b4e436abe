"""float32 -> int32 where the chip's Cast goes through half (ascend310p, ascend910): the chain of
tile instructions, written once.  The vector lowering emits it (lower/vector.py, an emitter that
makes slots and stmts) and the fusion cost model prices it (cost.op_vector_cycles, an emitter that
adds up the vector calls), so the model counts the instructions that print.

The chain is numpy's float32 -> int32 (trunc toward zero) from casts of values below 1024 only:
x is clamped to [-2**31, 2**31], NaN is selected to -2**31, s = clamp(x, -512, 512) and x - s
(exact: same sign, not larger) is split by rint (adding and subtracting 1.5 * 2**23) into
h 2**21 + m 2**10 + l with |h|, |m| <= 1024 and |l| <= 512, every step exact in float32.
r = l + s lies in [s - 512, s + 512]: 0 <= r <= 1024 when x >= 512, -1024 <= r <= 0 when
x <= -512, and r = x in between, so r has x's sign and trunc(x) = h 2**21 + m 2**10 + trunc(r).
h and m are integers up to 1024 and r is below 1024 in magnitude (or exactly +-1024): each Cast
through half is exact; the pieces are joined in wrapping int32 arithmetic.  2**31 (x at or past
it, +inf) wraps to INT_MIN as numpy's x86 answer does; -2**31 (and below, -inf) is INT_MIN; NaN
is INT_MIN by the select (its pieces, cast on their own, would be 0 on the chip and INT_MIN on
x86).  28 vector instructions (910A: 34, with the Duplicates of its missing scalar forms).
"""
from __future__ import annotations

from .. import dtypes as dt

HALF_EXACT = 2048          # integers up to it are exact in half: two Casts through half suffice
TOP = 2.0 ** 31            # float32 values at or past it (and +-inf) give INT_MIN, as numpy on x86
ROUND_F32 = 12582912.0     # 1.5 * 2**23: x + it - it rounds x to an integer (half to even), |x| < 2**22
TENSOR_FORM = {"adds": "add", "muls": "mul", "maxs": "max", "mins": "min"}   # where a chip lacks the scalar form


def exact_int32_chain(em, src):
    """Run the chain on `em` from the float32 value `src`; the last instruction goes to
    em.finish.  The emitter's methods:

      step(prim, srcs, scalar=None, dtype=float32) -> value   one primitive (the emitter picks the
                                                              tensor form + Duplicate a chip needs)
      nan_to_int_min(x) -> value                              x == x ? x : -2**31 (Compare + Select)
      cast(x) -> value                                        float32 -> int32 through half (2 Casts)
      finish(prim, srcs, dtype)                               the last instruction, into the result
    """
    f32, i32 = dt.float32, dt.int32

    def clamp(x, top):
        return em.step("mins", [em.step("maxs", [x], -top)], top)

    def rint(x, scale):   # rint(x * scale), exact for |x * scale| <= 2**22
        return em.step("adds", [em.step("adds", [em.step("muls", [x], scale)], ROUND_F32)], -ROUND_F32)

    x = em.nan_to_int_min(clamp(src, TOP))
    s = clamp(x, 512.0)
    xs = em.step("sub", [x, s])
    h = rint(xs, 2.0 ** -21)
    rest = em.step("add", [xs, em.step("muls", [h], -2.0 ** 21)])
    m = rint(rest, 2.0 ** -10)
    r = em.step("add", [em.step("add", [rest, em.step("muls", [m], -1024.0)]), s])
    joined = em.step("add", [em.step("muls", [em.cast(h)], 1 << 21, i32), em.step("muls", [em.cast(m)], 1024, i32)],
                     dtype=i32)
    em.finish("add", [joined, em.cast(r)], i32)
