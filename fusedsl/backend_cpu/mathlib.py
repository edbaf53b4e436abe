"""Inline vector math for the LLVM backend: exp and log as straight-line IR.

No vector math library is linked into the JIT, and a call to `expf` stays scalar and
blocks vectorisation, so exp and ln are emitted inline on <N x float> values:
range reduction, a polynomial, and the power of two assembled from bits.  Both are
the Cephes single-precision algorithms (relative error about 1 ulp over the whole
float range); the tests measure exp against float64.

Every function takes an `ir.IRBuilder`, a helper `K` that makes splat constants of
the value's type, and the value; they never branch, so the caller's loop stays one
basic block.
"""
from __future__ import annotations

from llvmlite import ir

F32 = ir.FloatType()
I32 = ir.IntType(32)

# exp: x = n*ln2 + r, |r| <= ln2/2; e^r = 1 + r + r^2 * P(r)
_EXP_P = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
          1.6666665459e-1, 5.0000001201e-1)
_LN2_HI = 0.693359375        # exact in float: n*_LN2_HI is exact for |n| < 2^9
_LN2_LO = -2.12194440e-4
_LOG2E = 1.44269504088896341
# exp(x) overflows above 88.73 and underflows to 0 below -103.98; clamping here keeps the
# exponent arithmetic in range while still producing inf / 0 from the final multiply.
_EXP_HI = 89.0
_EXP_LO = -104.0
_ROUND_MAGIC = 12582912.0    # 1.5 * 2^23: adding it leaves round(x) in the low mantissa bits
_ROUND_MAGIC_BITS = 0x4B400000

# log: x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log(1+f) = f - f^2/2 + f^3 * P(f)
_LOG_P = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
          1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
          3.3333331174e-1)
_SQRT_HALF = 0.707106781186547524
_FLT_MIN = 1.17549435e-38


class VectorConsts:
    """Splat constants and intrinsic declarations for one vector width.

    `scalef`: the target has AVX-512's vscalefps (x * 2^floor(y) in one instruction,
    rounding once into the denormal range and saturating to inf/0), which replaces the
    exponent-bit arithmetic of exp.
    """

    def __init__(self, module: ir.Module, lanes: int, scalef: bool = False):
        self.module = module
        self.lanes = lanes
        self.f = ir.VectorType(F32, lanes)
        self.i = ir.VectorType(I32, lanes)
        self.scalef = scalef and lanes == 16

    def fc(self, value: float) -> ir.Constant:
        return ir.Constant(self.f, [ir.Constant(F32, value)] * self.lanes)

    def ic(self, value: int) -> ir.Constant:
        return ir.Constant(self.i, [ir.Constant(I32, value)] * self.lanes)

    def intrinsic(self, name: str, ret, args) -> ir.Function:
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, ir.FunctionType(ret, args), name)

    def unary(self, b: ir.IRBuilder, name: str, x):
        """llvm.<name>.v<N>f32(x), e.g. rint, floor, sqrt, fabs."""
        fn = self.intrinsic(f"llvm.{name}.v{self.lanes}f32", self.f, [self.f])
        return b.call(fn, [x])

    def fma(self, b: ir.IRBuilder, x, y, z):
        fn = self.intrinsic(f"llvm.fma.v{self.lanes}f32", self.f, [self.f, self.f, self.f])
        return b.call(fn, [x, y, z])


def _horner(k: VectorConsts, b: ir.IRBuilder, coeffs, x):
    acc = k.fc(coeffs[0])
    for c in coeffs[1:]:
        acc = k.fma(b, acc, x, k.fc(c))
    return acc


def _pow2(k: VectorConsts, b: ir.IRBuilder, n_int):
    """2^n as float for n in [-126, 127], from the exponent bits."""
    return b.bitcast(b.shl(b.add(n_int, k.ic(127)), k.ic(23)), k.f)


def emit_exp(k: VectorConsts, b: ir.IRBuilder, x):
    # select-based clamps keep NaN (the compares are false), and NaN then flows through
    # the polynomial; no float->int conversion is used, so no poison either.
    x = b.select(b.fcmp_ordered(">", x, k.fc(_EXP_HI)), k.fc(_EXP_HI), x)
    x = b.select(b.fcmp_ordered("<", x, k.fc(_EXP_LO)), k.fc(_EXP_LO), x)
    n = k.unary(b, "rint", b.fmul(x, k.fc(_LOG2E)))
    r = k.fma(b, n, k.fc(-_LN2_HI), x)
    r = k.fma(b, n, k.fc(-_LN2_LO), r)
    p = _horner(k, b, _EXP_P, r)
    p = k.fma(b, p, b.fmul(r, r), r)
    p = b.fadd(p, k.fc(1.0))
    if k.scalef:
        fn = k.intrinsic("llvm.x86.avx512.mask.scalef.ps.512", k.f,
                         [k.f, k.f, k.f, ir.IntType(16), I32])
        # mask all ones, rounding 4 = the current (nearest-even) mode
        return b.call(fn, [p, n, ir.Constant(k.f, ir.Undefined), ir.Constant(ir.IntType(16), -1),
                           ir.Constant(I32, 4)])
    # n is an integer in [-150, 129]: read it from the mantissa after the magic add, and
    # scale in two steps so each power of two stays a normal float (denormal results
    # then round once, in the last multiply).
    n_int = b.sub(b.bitcast(b.fadd(n, k.fc(_ROUND_MAGIC)), k.i), k.ic(_ROUND_MAGIC_BITS))
    n1 = b.ashr(n_int, k.ic(1))
    n2 = b.sub(n_int, n1)
    return b.fmul(b.fmul(p, _pow2(k, b, n1)), _pow2(k, b, n2))


def emit_log(k: VectorConsts, b: ir.IRBuilder, x):
    # denormals: scale into the normal range first, then correct the exponent
    tiny = b.fcmp_ordered("<", x, k.fc(_FLT_MIN))
    xs = b.select(tiny, b.fmul(x, k.fc(8388608.0)), x)
    bias = b.select(tiny, k.ic(126 + 23), k.ic(126))
    bits = b.bitcast(xs, k.i)
    e = b.sub(b.and_(b.lshr(bits, k.ic(23)), k.ic(0xFF)), bias)
    m = b.bitcast(b.or_(b.and_(bits, k.ic(0x007FFFFF)), k.ic(0x3F000000)), k.f)   # [0.5, 1)
    small = b.fcmp_ordered("<", m, k.fc(_SQRT_HALF))
    e = b.sub(e, b.zext(small, k.i))
    f = b.fsub(b.select(small, b.fadd(m, m), m), k.fc(1.0))
    ef = b.sitofp(e, k.f)
    z = b.fmul(f, f)
    y = b.fmul(b.fmul(_horner(k, b, _LOG_P, f), f), z)
    y = k.fma(b, ef, k.fc(_LN2_LO), y)
    y = k.fma(b, z, k.fc(-0.5), y)
    r = b.fadd(f, y)
    r = k.fma(b, ef, k.fc(_LN2_HI), r)
    # special values, as logf: log(0) = -inf, log(x<0) = log(nan) = nan, log(inf) = inf
    inf = float("inf")
    r = b.select(b.fcmp_ordered("==", x, k.fc(inf)), k.fc(inf), r)
    r = b.select(b.fcmp_ordered("==", x, k.fc(0.0)), k.fc(-inf), r)
    return b.select(b.fcmp_unordered("<", x, k.fc(0.0)), k.fc(float("nan")), r)
