"""Ops defined as a decomposition into other fs ops: ONE definition each.

A composite is a function `fn(F, *args, **kwargs)` written against `F`, the namespace of fs ops
(the frontend passes itself, so this module imports no frontend), plus its metadata: the fs
names that call it, the ATen / ONNX names it implements (the importers read them), the dtypes it
accepts and its docs text (docs/OPS.md is generated from it).  Because it is made of graph ops,
a composite prints, lowers, fuses and runs everywhere its parts do, with no code in any backend.

Numerics.  16-bit float inputs are computed in float32 and rounded to their dtype once at the end
(`_f32`), so a composite's error is float32's plus one rounding.  The transcendental functions
are written from primitives every target has (add, mul, div, exp, ln, sqrt, compare, select):

  rounding   graph ops (ops/elementwise.py): one Cast float -> float with the round mode on A2/A3;
             elsewhere x is split into two parts clamped to 2**22 and an integer rest, each part
             rounded by the "magic number" 1.5 * 2**23 ((c + M) - M) and corrected by a 0/1 step
  sin, cos   Cody-Waite reduction by pi/2 (three-part constant, exact products for |k| < 2**15,
             so |x| < ~5e4), cephes' minimax polynomials on [-pi/4, pi/4], quadrant by selects;
             within ~2 ulp for |x| < 5e4 (larger |x| loses the reduction's accuracy)
  atan       cephes' reduction (x > tan(3pi/8): pi/2 - atan(1/x); x > tan(pi/8): pi/4 +
             atan((x-1)/(x+1))) and its degree-9 odd polynomial, ~2 ulp; atan2 adds the
             quadrant, signed zeros and infinities the way numpy does; asin / acos are atan2
             of (x, sqrt((1-x)(1+x))), exact at +-1
  erf        |x| < 1: its Taylor series to x**25 (error < 1e-9); |x| >= 1: 1 - erfc with
             Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7); exact gelu takes erfc directly
             on the negative side so that its tail does not cancel
  log1p, expm1  the Goldberg / Kahan tricks on log and exp (accurate near 0)
  pow        exp(p * log|x|) with numpy's signs for negative x and integral p, 0**0 = 1
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Callable

import ml_dtypes

from .. import dtypes as dt


@dataclass(frozen=True)
class Composite:
    name: str
    fn: Callable                 # fn(F, *args, **kwargs)
    public: tuple[str, ...]      # fs.<name> functions
    family: str                  # docs/OPS.md section
    dtypes: str                  # "float" (ints are cast to float32), "numeric", "int", "any"
    aten: tuple[str, ...] = ()
    onnx: tuple[str, ...] = ()
    doc: str = ""
    example: str | None = None   # a call on float32 arrays x (and y): the docstring's example and the
                                 # kernel docs/OPS.md compiles per target; default fs.<name>(x[, y, ...])

    @property
    def arity(self) -> int:
        """How many tensors the example passes (x, y, z)."""
        params = list(inspect.signature(self.fn).parameters.values())[1:]
        n = sum(1 for p in params if p.default is inspect.Parameter.empty and p.kind == p.POSITIONAL_OR_KEYWORD)
        uses_y = self.example and "y" in self.example.replace("np.", "").replace("astype", "")
        return 2 if uses_y else (1 if self.example else n)

    def call_text(self) -> str:
        return self.example or f"fs.{self.public[0]}({', '.join('xyz'[:self.arity])})"


COMPOSITES: dict[str, Composite] = {}


def composite(name, family, dtypes="float", public=None, aten=(), onnx=(), doc="", example=None):
    def deco(fn):
        COMPOSITES[name] = Composite(name, fn, tuple(public or (name,)), family, dtypes, tuple(aten),
                                     tuple(onnx), doc, example)
        return fn
    return deco


def _aten(*names):
    return tuple(f"aten.{n}" for n in names)


# ---- helpers ------------------------------------------------------------------------------
def _f32(F, x):
    """x as float32 (ints and 16-bit floats), and the function that rounds a result back."""
    if not isinstance(x, F.Tensor):
        raise F.ArgumentError("this op needs a tensor, got a Python number", loc=F.user_frame())
    out = x.dtype if x.dtype.is_float else dt.float32
    x32 = F.cast(x, dt.float32)
    return x32, (lambda y: F.cast(y, out))


def _horner(F, coeffs, z):
    """c0 + z (c1 + z (c2 + ...)), coefficients from c0 up."""
    acc = coeffs[-1]
    for c in reversed(coeffs[:-1]):
        acc = acc * z + c
    return acc


def _rint(F, x):
    """Round half to even (float32 x; inf and NaN pass through): the rint_f32 graph op."""
    return F.emit("rint_f32", x)


def _floor(F, x):
    return F.emit("floor_f32", x)


def _ceil(F, x):
    return F.emit("ceil_f32", x)


def _trunc(F, x):
    return F.emit("trunc_f32", x)


def _signbit(F, x):
    """x < 0, counting -0.0 (1 / -0.0 is -inf) and not NaN."""
    return F.logical_or(x < 0.0, F.logical_and(x == 0.0, F.reciprocal(x) < 0.0))


def _float_op(fn):
    """A unary float op: computed in float32, rounded to the input's float dtype once."""
    def op(F, x):
        x32, back = _f32(F, x)
        return back(fn(F, x32))
    op.__doc__ = fn.__doc__
    return op


# ---- rounding: graph ops of their own (ops/elementwise.py: one Cast on A2/A3) -----------------------
def _rounding(op):
    def fn(F, x):
        if isinstance(x, F.Tensor) and not x.dtype.is_float:
            return x
        x32, back = _f32(F, x)
        return back(F.emit(op, x32))
    return fn


composite("floor", "rounding", aten=_aten("floor.default"), onnx=("Floor",),
          doc="largest integer <= x (ints unchanged); one Cast(CAST_FLOOR) on A2/A3")(_rounding("floor_f32"))
composite("ceil", "rounding", aten=_aten("ceil.default"), onnx=("Ceil",),
          doc="smallest integer >= x; one Cast(CAST_CEIL) on A2/A3")(_rounding("ceil_f32"))
composite("trunc", "rounding", public=("trunc", "fix"), aten=_aten("trunc.default", "fix.default"),
          doc="integer part, toward zero; one Cast(CAST_TRUNC) on A2/A3")(_rounding("trunc_f32"))
composite("rint", "rounding", public=("rint", "round", "around"), aten=_aten("round.default"),
          onnx=("Round",), doc="round half to even (numpy.round with decimals=0, torch.round); "
                                "one Cast(CAST_RINT) on A2/A3")(_rounding("rint_f32"))


@composite("sign", "rounding", dtypes="numeric", aten=_aten("sign.default"), onnx=("Sign",),
           doc="numpy.sign: -1, 0 or 1 (NaN stays NaN, -0.0 gives 0.0)")
def sign(F, x):
    if x.dtype == dt.bool_:
        raise F.DTypeError("fs.sign is not defined on bool tensors", loc=F.user_frame(),
                           hint="cast first, e.g. x.astype(fs.int32)")
    if not x.dtype.is_float:
        return F.cast(F.where(x > 0, 1, F.where(x < 0, -1, 0)), x.dtype)
    return F.where(x > 0, 1.0, F.where(x < 0, -1.0, F.where(x == 0, 0.0, x)))


# ---- exponentials and logarithms -------------------------------------------------------------
@composite("log2", "exp_log", aten=_aten("log2.default"), doc="base-2 logarithm, log(x) / ln 2")
@_float_op
def log2(F, x):
    return F.log(x) * (1.0 / math.log(2.0))


@composite("log10", "exp_log", aten=_aten("log10.default"), doc="base-10 logarithm, log(x) / ln 10")
@_float_op
def log10(F, x):
    return F.log(x) * (1.0 / math.log(10.0))


@composite("exp2", "exp_log", aten=_aten("exp2.default"),
           doc="2**x as exp(x ln 2) (relative error grows as |x| * 2**-24)")
@_float_op
def exp2(F, x):
    return F.exp(x * math.log(2.0))


def _log1p(F, x):
    u = x + 1.0
    d = u - 1.0
    exact = F.log(u) * (x / F.where(d == 0.0, 1.0, d))
    return F.where(d == 0.0, x, F.where(u == math.inf, u, exact))


def _expm1(F, x):
    u = F.exp(x)
    d = u - 1.0
    lu = F.log(u)
    kahan = d * (x / F.where(lu == 0.0, 1.0, lu))
    return F.where(u == 1.0, x, F.where(d == -1.0, -1.0, F.where(u == math.inf, u, kahan)))


composite("log1p", "exp_log", aten=_aten("log1p.default"), doc="log(1 + x), accurate near 0")(
    _float_op(_log1p))
composite("expm1", "exp_log", aten=_aten("expm1.default"), doc="exp(x) - 1, accurate near 0")(
    _float_op(_expm1))


# ---- trigonometry ----------------------------------------------------------------------------
_PIO2 = (1.5703125, 4.837512969970703125e-4, 7.54978995489188216e-8)   # pi/2 in three parts
_SIN = (1.0, -1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4)       # cephes sinf on [-pi/4, pi/4]
_COS = (1.0, -0.5, 4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5)


def _reduce(F, x):
    """(r, k): x = k pi/2 + r, |r| <= pi/4, k an integral float."""
    k = _rint(F, x * (2.0 / math.pi))
    r = ((x - k * _PIO2[0]) - k * _PIO2[1]) - k * _PIO2[2]
    return r, k


def _sin_cos_poly(F, r):
    z = r * r
    s = r + r * (z * _horner(F, list(_SIN[1:]), z))
    c = _horner(F, list(_COS), z)
    return s, c


def _quadrant(F, k):
    """(odd, negate) of the quadrant k mod 4: k odd, and k mod 4 in {2, 3}."""
    h = _floor(F, k * 0.5)
    odd = (k - h * 2.0) != 0.0
    neg = (h - _floor(F, h * 0.5) * 2.0) != 0.0
    return odd, neg


def _sin(F, x):
    r, k = _reduce(F, x)
    s, c = _sin_cos_poly(F, r)
    odd, neg = _quadrant(F, k)
    v = F.where(odd, c, s)
    return F.where(neg, -v, v)


def _cos(F, x):
    r, k = _reduce(F, x)
    s, c = _sin_cos_poly(F, r)
    odd, neg = _quadrant(F, k + 1.0)       # cos x = sin(x + pi/2)
    v = F.where(odd, c, s)
    return F.where(neg, -v, v)


composite("sin", "trig", aten=_aten("sin.default"), onnx=("Sin",), doc="sine (radians)")(_float_op(_sin))
composite("cos", "trig", aten=_aten("cos.default"), onnx=("Cos",), doc="cosine (radians)")(_float_op(_cos))


@composite("tan", "trig", aten=_aten("tan.default"), onnx=("Tan",), doc="tangent, sin / cos of one reduction")
@_float_op
def tan(F, x):
    r, k = _reduce(F, x)
    s, c = _sin_cos_poly(F, r)
    odd, _ = _quadrant(F, k)
    return F.where(odd, -c / s, s / c)


_TAN3PI8 = 2.414213562373095
_TANPI8 = 0.4142135623730950
_ATAN = (-3.33329491539e-1, 1.99777106478e-1, -1.38776856032e-1, 8.05374449538e-2)


def _atan(F, x):
    a = F.abs(x)
    big, mid = a > _TAN3PI8, a > _TANPI8
    xr = F.where(big, -F.reciprocal(a), F.where(mid, (a - 1.0) / (a + 1.0), a))
    y0 = F.where(big, math.pi / 2, F.where(mid, math.pi / 4, 0.0))
    z = xr * xr
    y = y0 + (xr + xr * (z * _horner(F, list(_ATAN), z)))
    return F.where(x < 0.0, -y, y)


composite("arctan", "trig", public=("arctan", "atan"), aten=_aten("atan.default"), onnx=("Atan",),
          doc="inverse tangent")(_float_op(_atan))


def _atan2(F, y, x):
    t = _atan(F, y / x)
    xneg, yneg = _signbit(F, x), _signbit(F, y)
    pi = F.where(yneg, -math.pi, math.pi)
    base = F.where(xneg, t + pi, t)        # x = -0.0 counts as negative, as numpy's
    zeros = F.logical_and(y == 0.0, x == 0.0)            # atan2(+-0, +-0): 0 or pi, signed like y
    base = F.where(zeros, F.where(xneg, pi, y), base)
    infs = F.logical_and(F.abs(y) == math.inf, F.abs(x) == math.inf)
    corner = F.where(xneg, 3 * math.pi / 4, math.pi / 4)
    return F.where(infs, F.where(yneg, -corner, corner), base)


@composite("arctan2", "trig", public=("arctan2", "atan2"), aten=_aten("atan2.default"),
           doc="angle of (x, y): numpy.arctan2, signed zeros and infinities included")
def arctan2(F, y, x):
    y, x = F.promote_float(y, x)
    y32, back = _f32(F, y)
    return back(_atan2(F, y32, F.cast(x, dt.float32)))


def _asin(F, x):
    return _atan2(F, x, F.sqrt((1.0 - x) * (1.0 + x)))


composite("arcsin", "trig", public=("arcsin", "asin"), aten=_aten("asin.default"), onnx=("Asin",),
          doc="inverse sine, NaN outside [-1, 1]")(_float_op(_asin))
composite("arccos", "trig", public=("arccos", "acos"), aten=_aten("acos.default"), onnx=("Acos",),
          doc="inverse cosine, NaN outside [-1, 1]")(
    _float_op(lambda F, x: _atan2(F, F.sqrt((1.0 - x) * (1.0 + x)), x)))

_SINH_TAYLOR = [1.0, 1.0 / 6, 1.0 / 120, 1.0 / 5040, 1.0 / 362880, 1.0 / 39916800]


@composite("sinh", "trig", aten=_aten("sinh.default"), onnx=("Sinh",),
           doc="hyperbolic sine: its Taylor series below |x| = 0.5, (e**x - e**-x) / 2 above")
@_float_op
def sinh(F, x):
    z = x * x
    small = x * _horner(F, _SINH_TAYLOR, z)
    e = F.exp(F.abs(x))
    big = (e - F.reciprocal(e)) * 0.5
    return F.where(F.abs(x) < 0.5, small, F.where(x < 0.0, -big, big))


@composite("cosh", "trig", aten=_aten("cosh.default"), onnx=("Cosh",), doc="hyperbolic cosine")
@_float_op
def cosh(F, x):
    e = F.exp(F.abs(x))
    return (e + F.reciprocal(e)) * 0.5


# ---- erf and exact gelu ------------------------------------------------------------------------
_ERF_TAYLOR = [2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(13)]
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _erfc_pos(F, a):
    """erfc(a) for a >= 1 (A&S 7.1.26)."""
    t = F.reciprocal(a * _AS_P + 1.0)
    return t * _horner(F, list(_AS_A), t) * F.exp(-(a * a))


def _erf(F, x):
    a = F.abs(x)
    small = x * _horner(F, _ERF_TAYLOR, x * x)
    big = 1.0 - _erfc_pos(F, a)
    return F.where(a < 1.0, small, F.where(x < 0.0, -big, big))


composite("erf", "special", aten=_aten("erf.default"), onnx=("Erf",), doc="the error function")(
    _float_op(_erf))


def _gelu_exact(F, x):
    u = x * (1.0 / math.sqrt(2.0))
    one_plus = F.where(u <= -1.0, _erfc_pos(F, -u), 1.0 + _erf(F, u))
    return (x * 0.5) * one_plus


composite("gelu_erf", "activation", aten=("aten.gelu.default",), onnx=("Gelu",),
          doc="exact GELU, x/2 (1 + erf(x / sqrt 2)): PyTorch's default (approximate='none'); "
              "fs.gelu is the tanh approximation")(_float_op(_gelu_exact))


# ---- activations ----------------------------------------------------------------------------------
def _softplus(F, x, beta=1.0, threshold=20.0):
    bx = x * beta if beta != 1 else x
    soft = _log1p(F, F.exp(bx))
    return F.where(bx > threshold, x, soft / beta if beta != 1 else soft)


@composite("softplus", "activation", aten=_aten("softplus.default"), onnx=("Softplus",),
           doc="log(1 + exp(beta x)) / beta, x itself above the threshold (torch's)")
def softplus(F, x, beta=1.0, threshold=20.0):
    x32, back = _f32(F, x)
    return back(_softplus(F, x32, beta, threshold))


composite("softsign", "activation", aten=_aten("softsign.default"), onnx=("Softsign",),
          doc="x / (1 + |x|)")(_float_op(lambda F, x: x / (F.abs(x) + 1.0)))


@composite("elu", "activation", aten=_aten("elu.default"), onnx=("Elu",), doc="x if x > 0 else alpha (e**x - 1)")
def elu(F, x, alpha=1.0):
    x32, back = _f32(F, x)
    return back(F.where(x32 > 0.0, x32, _expm1(F, x32) * alpha))


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


@composite("selu", "activation",
           aten=_aten("selu.default"),
           onnx=("Selu",),
           doc="scale * elu(x, alpha), the SELU constants")
@_float_op
def selu(F, x):
    return F.where(x > 0.0, x * SELU_SCALE, _expm1(F, x) * (SELU_ALPHA * SELU_SCALE))


@composite("celu", "activation", aten=_aten("celu.default"), onnx=("Celu",),
           doc="max(0, x) + min(0, alpha (e**(x/alpha) - 1))")
def celu(F, x, alpha=1.0):
    x32, back = _f32(F, x)
    return back(F.maximum(x32, 0.0) + F.minimum(_expm1(F, x32 * (1.0 / alpha)) * alpha, 0.0))


@composite("mish", "activation", aten=_aten("mish.default"), onnx=("Mish",),
           doc="x tanh(softplus(x)), as x n / (n + 2) with n = e**x (e**x + 2) (no cancellation for x < 0)")
@_float_op
def mish(F, x):
    e = F.exp(F.minimum(x, 20.0))
    n = e * (e + 2.0)
    return F.where(x > 20.0, x, x * (n / (n + 2.0)))
composite("hardswish", "activation", aten=_aten("hardswish.default"), onnx=("HardSwish",),
          doc="x min(max(x + 3, 0), 6) / 6")(
    _float_op(lambda F, x: x * F.minimum(F.maximum(x + 3.0, 0.0), 6.0) / 6.0))
composite("hardsigmoid", "activation", aten=_aten("hardsigmoid.default"), onnx=("HardSigmoid",),
          doc="min(max(x + 3, 0), 6) / 6 (torch's; ONNX's alpha=1/6, beta=0.5)")(
    _float_op(lambda F, x: F.minimum(F.maximum(x + 3.0, 0.0), 6.0) / 6.0))


@composite("hardtanh", "activation", dtypes="numeric", aten=_aten("hardtanh.default"),
           doc="clip(x, min_val, max_val)")
def hardtanh(F, x, min_val=-1.0, max_val=1.0):
    return F.clip(x, min_val, max_val)


composite("relu6", "activation", dtypes="numeric", aten=_aten("relu6.default"), doc="clip(x, 0, 6)")(
    lambda F, x: F.clip(x, 0, 6))
composite("logsigmoid", "activation", aten=_aten("log_sigmoid.default", "log_sigmoid_forward.default"),
          doc="log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))")(
    _float_op(lambda F, x: F.minimum(x, 0.0) - _log1p(F, F.exp(-F.abs(x)))))


@composite("clip", "arith", dtypes="numeric", public=("clip", "clamp"),
           aten=_aten("clamp.default", "clamp.Tensor", "clip.default"),
           onnx=("Clip",),
           doc="minimum(maximum(x, lo), hi): scalar or tensor bounds, either may be None; NaN propagates",
           example="fs.clip(x, 0, 1)")
def clip(F, x, a_min=None, a_max=None):
    if a_min is None and a_max is None:
        raise F.ArgumentError("clip needs a_min or a_max", loc=F.user_frame())
    y = x
    if a_min is not None:
        y = F.maximum(y, a_min)
    if a_max is not None:
        y = F.minimum(y, a_max)
    return y


# ---- arithmetic ------------------------------------------------------------------------------------
@composite("float_power", "arith", public=("pow_tensor",), aten=_aten("pow.Tensor_Tensor", "pow.Scalar"),
           onnx=("Pow",), doc="x ** p with a tensor exponent: exp(p log|x|), numpy's sign for negative x "
                               "and integral p (NaN otherwise), 0 ** 0 = 1; fs.power calls it")
def pow_tensor(F, x, p):
    x, p = F.promote_float(x, p) if isinstance(p, F.Tensor) else (x, p)
    x32, back = _f32(F, x)
    p32 = F.cast(p, dt.float32) if isinstance(p, F.Tensor) else float(p)
    a = F.abs(x32)
    mag = F.exp(p32 * F.log(a))
    if isinstance(p32, float):
        integral = p32 == math.floor(p32)
        odd = integral and int(p32) % 2 == 1
        neg = x32 < 0.0
        signed = (F.where(neg, -mag, mag) if odd else mag) if integral else F.where(neg, math.nan, mag)
        return back(signed if p32 != 0 else F.where(a != a, 1.0, 1.0))
    pint = _floor(F, p32) == p32
    half = p32 * 0.5
    odd = F.logical_and(pint, _floor(F, half) != half)
    neg = x32 < 0.0
    signed = F.where(neg, F.where(pint, F.where(odd, -mag, mag), math.nan), mag)
    return back(F.where(p32 == 0.0, 1.0, signed))


def _split(F, v):
    """Veltkamp: v = hi + lo with 12 significant bits each, so products of halves are exact."""
    c = v * 4097.0
    hi = c - (c - v)
    return hi, v - hi


def _fmod(F, a, b):
    """a - trunc(a / b) b with the product q b taken exactly (Dekker: four exact partial
    products), then one correction where the quotient rounded across an integer."""
    q = _trunc(F, a / b)
    qh, ql = _split(F, q)
    bh, bl = _split(F, b)
    r = (((a - qh * bh) - qh * bl) - ql * bh) - ql * bl
    wrong = F.logical_and(r != 0.0, (r < 0.0) != (a < 0.0))
    r = F.where(wrong, r + F.where((a < 0.0) == (b < 0.0), b, -b), r)
    finite = F.where(F.abs(a) == math.inf, math.nan, a)           # fmod(+-inf, b) is NaN
    return F.where(F.abs(b) == math.inf, finite, F.where(F.abs(q) >= 4194304.0, a - q * b, r))


def _int_or_float(F, a, b, float_fn, int_fn=None, kind=None):
    a, b = F.promote_pair_public(a, b)
    if a.dtype.is_float:
        return F.cast(float_fn(F, F.cast(a, dt.float32), F.cast(b, dt.float32)), a.dtype)
    if a.dtype == dt.int32 and kind is not None:
        return _int32_division(F, a, b, kind)
    # 8-bit integers: exact in float32 (|a|, |b| < 2**24)
    r = (int_fn or float_fn)(F, F.cast(a, dt.float32), F.cast(b, dt.float32))
    if a.dtype == dt.int8:   # -128 // -1 = 128 wraps to -128 as numpy's int8 (the chip's cast would saturate)
        r = F.where(r == 128.0, -128.0, r)
    return F.cast(F.where(F.cast(b, dt.float32) == 0.0, 0.0, r), a.dtype)


# _int32_division's quotient digits: step k takes D = d * 2**s off r, s in _SHIFTS, with
# d = rint(fl(r) * fl(1 / fl(b)) * 2**-s) an integer of at most 2048 in magnitude (rint by adding
# and subtracting _ROUND).  Every executor casts such a float32 to int32 exactly -- 310P / 910A
# have no float32 -> int32 Cast and go through half, whose integers are exact to 2048 -- and
# r / b - D shrinks to |r / b| < 2**19 + 2**9, then 2**8 + 1, then 0.5 + 2**-14 (the float32
# quotient is within 4 ulp, 2**-22, of r / b)
_SHIFTS = (20, 9, 0)
_ROUND = 12582912.0     # 1.5 * 2**23: (x + it) - it rounds x to an integer, |x| <= 2**22


def exact_int32(F, v, bound=2 ** 31):
    """v, a float32 tensor of integers with |v| <= bound <= 2**31, as int32, exact on every
    executor and target (2**31 wraps to INT_MIN like numpy's int32 arithmetic).  310P / 910A cast
    float32 -> int32 through half, exact for integers to 2048 only (argmax past index 1024 came
    out wrong there), so v is cut into pieces of at most 1024 in magnitude, each cast alone and
    joined in int32: v = h 2**21 + m 2**10 + l with h = rint(v / 2**21), m = rint(rest / 2**10)
    (rint by adding and subtracting _ROUND; every step exact), |l| <= 512.  One cast for
    bound <= 1024, 7 graph ops to 2**20, 17 beyond: give the tightest bound known."""
    if bound <= 1024:
        return small_int32(F, v, bound)
    if bound <= 2 ** 20:
        m = (v * 2.0 ** -10 + _ROUND) - _ROUND
        return small_int32(F, m, 1024) * 1024 + small_int32(F, v - m * 1024.0, 512)
    h = (v * 2.0 ** -21 + _ROUND) - _ROUND
    rest = v - h * 2.0 ** 21
    m = (rest * 2.0 ** -10 + _ROUND) - _ROUND
    low = rest - m * 1024.0
    return small_int32(F, h, 1024) * (1 << 21) + small_int32(F, m, 1024) * 1024 + small_int32(F, low, 512)


def small_int32(F, v, bound):
    """F.cast(v, int32) of a float32 tensor of integers with |v| <= bound <= 2048, the bound
    carried by the cast op (attribute `bound`, which only the vector lowering reads): on 310P /
    910A an unbounded float32 -> int32 cast is 26 vector instructions (lower/vector.
    _exact_int32_cast), one of integers up to 2048 the two Casts through half (exact there)."""
    if not 0 <= bound <= 2048:
        raise ValueError(f"small_int32 takes bounds up to 2048, got {bound}")
    return v.trace.emit("cast", [v], {"dtype": dt.int32.name, "bound": int(bound)})


def _int_flag(F, cond):
    """A bool tensor as int32 0 / 1."""
    return F.cast(F.where(cond, 1.0, 0.0), dt.int32)


def _int32_division(F, a, b, kind):
    """Integer division of int32 tensors, exact over all of int32, as numpy's int32 (which wraps
    INT_MIN // -1 to INT_MIN, INT_MIN % -1 = 0) with x // 0 = x % 0 = 0 (numpy's values; fmod and
    truncated division alike).  kind: "floor" (floor_divide), "remainder" (floor's remainder, the
    sign of b), "trunc" (C division), "fmod" (its remainder, the sign of a).

    Made of ops every executor and every target has for int32 (add, sub, mul, and casts of
    integers up to 2048 from float32) and float32 arithmetic and compares: the chip has no int32
    Div, and 310P / 910A no float32 -> int32 Cast (theirs goes through half, exact for integers
    to 2048 only).  The quotient is built in three digits (_SHIFTS): each D = d * 2**s is taken
    off r = a - T b in int32, leaving |r| <= (0.5 + 2**-14) |b| of either sign; one step on the
    sign of r b (floor: b's sign) or r a (trunc: a's sign) then moves r into [0, |b|) with the
    sign wanted.  The true r and T always fit int32 (but T = 2**31 at INT_MIN / -1); their
    partial products may wrap, and int32 add / sub / mul wrap alike on every executor (numpy,
    LLVM, the CPU Ascend C API's int64-then-wrap, the chip's int32 Mul), so the sums are exact
    modulo 2**32 and the results are numpy's, wrapped INT_MIN // -1 included."""
    f32 = dt.float32
    fa = F.cast(a, f32)
    nz = _int_flag(F, F.cast(b, f32) != 0.0)     # x // 0 = x % 0 = 0: divide by 1, then times 0
    b = b + (1 - nz)
    fb = F.cast(b, f32)
    inv = 1.0 / fb
    r, t = a, None
    for s in _SHIFTS:
        fr = fa if t is None else F.cast(r, f32)
        p = fr * inv * 2.0 ** -s if s else fr * inv
        d = small_int32(F, (p + _ROUND) - _ROUND, 2048)
        q = d * (1 << s) if s else d
        r = r - q * b
        t = q if t is None else t + q
    fr = F.cast(r, f32)
    if kind in ("floor", "remainder"):
        wrong = _int_flag(F, fr * fb < 0.0)       # r not 0 and of the other sign than b
        t, r = t - wrong, r + wrong * b
    else:
        wrong = _int_flag(F, fr * fa < 0.0)       # r not 0 and of the other sign than a
        sgn = 1 - _int_flag(F, fa * fb < 0.0) * 2    # the sign of a / b where r needs moving
        t, r = t - wrong * sgn, r + wrong * sgn * b
    return (t if kind in ("floor", "trunc") else r) * nz


@composite("fmod", "arith", dtypes="numeric", aten=_aten("fmod.Tensor", "fmod.Scalar"), onnx=("Mod[fmod=1]",),
           doc="C fmod: a - trunc(a / b) b, the sign of a (int32: exact over all of int32 on every executor "
               "and target; x fmod 0 = 0 for ints)")
def fmod(F, a, b):
    return _int_or_float(F, a, b, _fmod, kind="fmod")


def _remainder(F, a, b):
    r = _fmod(F, a, b)
    fix = F.logical_and(r != 0.0, (r < 0.0) != (b < 0.0))
    return F.where(fix, r + b, r)


@composite("remainder", "arith", dtypes="numeric", public=("remainder", "mod"),
           aten=_aten("remainder.Tensor", "remainder.Scalar"), onnx=("Mod",),
           doc="numpy.remainder / torch.remainder: the sign of b")
def remainder(F, a, b):
    return _int_or_float(F, a, b, _remainder, kind="remainder")


def _floor_div(F, a, b):
    """numpy's floor_divide: from divmod's remainder, so that a == b * (a // b) + a % b."""
    mod = _fmod(F, a, b)
    div = (a - mod) / b
    div = F.where(F.logical_and(mod != 0.0, (b < 0.0) != (mod < 0.0)), div - 1.0, div)
    fl = _floor(F, div)
    fl = F.where(div - fl > 0.5, fl + 1.0, fl)
    fl = F.where(div == 0.0, div * 0.0 + F.where(a / b < 0.0, -0.0, 0.0), fl)
    return F.where(b == 0.0, a / b, fl)


@composite("floor_divide", "arith", dtypes="numeric", aten=_aten("floor_divide.default"),
           doc="floor(a / b) (int32: exact over all of int32 on every executor and target; numpy's "
               "INT_MIN // -1 = INT_MIN, x // 0 = 0)")
def floor_divide(F, a, b):
    return _int_or_float(F, a, b, _floor_div, kind="floor")


@composite("divide_rounded", "arith", dtypes="numeric", public=("div",),
           aten=_aten("div.Tensor_mode", "div.Scalar_mode"),
           doc="torch.div(a, b, rounding_mode=None | 'trunc' | 'floor')")
def div(F, a, b, rounding_mode=None):
    if rounding_mode is None:
        return F.divide(a, b)
    if rounding_mode == "floor":
        return floor_divide(F, a, b)
    if rounding_mode == "trunc":
        return _int_or_float(F, a, b, lambda F, x, y: _trunc(F, x / y), kind="trunc")
    raise F.ArgumentError(f"div rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}",
                          loc=F.user_frame())


@composite("lerp", "arith", aten=_aten("lerp.Scalar", "lerp.Tensor"),
           doc="a + w (b - a), as torch: b - (b - a)(1 - w) for |w| >= 0.5")
def lerp(F, a, b, w):
    a, b = F.promote_float(a, b)
    d = b - a
    if not isinstance(w, F.Tensor):
        return a + w * d if abs(w) < 0.5 else b - d * (1.0 - w)
    return F.where(F.abs(w) < 0.5, a + w * d, b - d * (1.0 - w))


@composite("addcmul", "arith", dtypes="numeric", aten=_aten("addcmul.default"), doc="x + value t1 t2")
def addcmul(F, x, t1, t2, value=1.0):
    return x + (t1 * t2 if value == 1 else value * t1 * t2)


@composite("addcdiv", "arith", aten=_aten("addcdiv.default"), doc="x + value t1 / t2")
def addcdiv(F, x, t1, t2, value=1.0):
    return x + (t1 / t2 if value == 1 else value * t1 / t2)


# ---- float classification ---------------------------------------------------------------------------
@composite("isnan", "classify", dtypes="any", aten=_aten("isnan.default"), onnx=("IsNaN",),
           doc="x != x (Compare(x, x, NE) on the NPU); False for ints")
def isnan(F, x):
    return x != x if x.dtype.is_float else F.not_equal(x, x)


@composite("isinf", "classify", dtypes="any", aten=_aten("isinf.default"), onnx=("IsInf",), doc="|x| == inf")
def isinf(F, x):
    return F.abs(x) == math.inf if x.dtype.is_float else F.not_equal(x, x)


@composite("isfinite", "classify", dtypes="any", aten=_aten("isfinite.default"),
           doc="|x| < inf (False for NaN)")
def isfinite(F, x):
    return F.abs(x) < math.inf if x.dtype.is_float else F.equal(x, x)


@composite("nan_to_num", "classify", dtypes="any", aten=_aten("nan_to_num.default"),
           doc="NaN -> nan, +inf -> posinf, -inf -> neginf (defaults 0 and the dtype's extremes)")
def nan_to_num(F, x, nan=0.0, posinf=None, neginf=None):
    if not x.dtype.is_float:
        return x
    big = float(ml_dtypes.finfo(x.dtype.np).max)
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    y = F.where(x == math.inf, posinf, F.where(x == -math.inf, neginf, x))
    return F.where(x != x, nan, y)


# ---- logic ---------------------------------------------------------------------------------------------
def _truth(F, x):
    return x if x.dtype == dt.bool_ else F.not_equal(x, 0)


composite("logical_not", "logic", dtypes="any", aten=_aten("logical_not.default"), onnx=("Not",),
          doc="x == 0")(lambda F, x: F.equal(_truth(F, x), False))
composite("logical_and", "logic", dtypes="any", aten=_aten("logical_and.default"), onnx=("And",),
          doc="a != 0 and b != 0")(lambda F, a, b: F.where(_truth(F, a), _truth(F, b), False))
composite("logical_or", "logic", dtypes="any", aten=_aten("logical_or.default"), onnx=("Or",),
          doc="a != 0 or b != 0")(lambda F, a, b: F.where(_truth(F, a), True, _truth(F, b)))
composite("logical_xor", "logic", dtypes="any", aten=_aten("logical_xor.default"), onnx=("Xor",),
          doc="(a != 0) != (b != 0)")(lambda F, a, b: F.not_equal(_truth(F, a), _truth(F, b)))


# ---- reductions and norms ----------------------------------------------------------------------
def _axes(F, x, axis):
    """axis as a sorted tuple of non-negative ints (None = all)."""
    if axis is None:
        return tuple(range(x.ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted(a % max(x.ndim, 1) for a in axes))


def _count(x, axes) -> int:
    n = 1
    for a in axes:
        n *= x.shape[a]
    return n


@composite("var", "reduction", dtypes="numeric", aten=_aten("var.dim", "var.correction", "var.default"),
           doc="mean((x - mean(x))**2) * n / (n - correction); numpy's ddof, torch's correction")
def var(F, x, axis=None, ddof=0, keepdims=False, correction=None):
    corr = ddof if correction is None else correction
    x32, back = _f32(F, x)
    axes = _axes(F, x, axis)
    n = _count(x, axes)
    centered = x32 - F.mean(x32, axis=axes, keepdims=True)
    v = F.mean(F.square(centered), axis=axes, keepdims=keepdims)
    if corr:
        v = v * (n / (n - corr)) if n > corr else v * math.inf
    return back(v)


@composite("std", "reduction", dtypes="numeric", aten=_aten("std.dim", "std.correction", "std.default"),
           doc="sqrt(var(x, ...))")
def std(F, x, axis=None, ddof=0, keepdims=False, correction=None):
    x32, back = _f32(F, x)
    return back(F.sqrt(var(F, x32, axis, ddof, keepdims, correction)))


@composite("logsumexp", "reduction", aten=_aten("logsumexp.default"), onnx=("ReduceLogSumExp",),
           doc="m + log(sum(exp(x - m))), m the max (finite); -inf for all -inf")
def logsumexp(F, x, axis=None, keepdims=False):
    x32, back = _f32(F, x)
    axes = _axes(F, x, axis)
    m = F.max(x32, axis=axes, keepdims=True)
    m = F.where(F.abs(m) == math.inf, 0.0, m)
    s = F.log(F.sum(F.exp(x32 - m), axis=axes, keepdims=True)) + m
    return back(s if keepdims else F.reshape(s, tuple(d for i, d in enumerate(x.shape) if i not in axes)))


@composite("log_softmax", "reduction", aten=_aten("log_softmax.int", "_log_softmax.default"),
           onnx=("LogSoftmax",), doc="(x - m) - log(sum(exp(x - m))) along axis")
def log_softmax(F, x, axis=-1):
    x32, back = _f32(F, x)
    shifted = x32 - F.max(x32, axis=axis, keepdims=True)
    return back(shifted - F.log(F.sum(F.exp(shifted), axis=axis, keepdims=True)))


@composite("vector_norm", "reduction", public=("vector_norm", "norm"),
           aten=_aten("linalg_vector_norm.default", "norm.ScalarOpt_dim", "frobenius_norm.dim"),
           onnx=("ReduceL1", "ReduceL2"),
           doc="(sum |x|**ord)**(1/ord) over axis (None: all): ord 2 (default, Frobenius for a matrix: "
               "'fro'), 1, inf, -inf, 0 (count of nonzeros) or any p > 0")
def vector_norm(F, x, ord=2, axis=None, keepdims=False):
    x32, back = _f32(F, x)
    axes = _axes(F, x, axis)
    a = F.abs(x32)
    if ord in (2, "fro", None):
        r = F.sqrt(F.sum(F.square(a), axis=axes, keepdims=keepdims))
    elif ord == 1:
        r = F.sum(a, axis=axes, keepdims=keepdims)
    elif ord == math.inf:
        r = F.max(a, axis=axes, keepdims=keepdims)
    elif ord == -math.inf:
        r = F.min(a, axis=axes, keepdims=keepdims)
    elif ord == 0:
        r = F.cast(F.sum(F.cast(x32 != 0.0, dt.float32), axis=axes, keepdims=keepdims), dt.float32)
    elif isinstance(ord, (int, float)) and ord > 0:
        r = F.power(F.sum(F.power(a, float(ord)), axis=axes, keepdims=keepdims), 1.0 / ord)
    else:
        raise F.ArgumentError(f"vector_norm ord must be 2, 'fro', 1, inf, -inf, 0 or p > 0, got {ord!r}",
                              loc=F.user_frame())
    return back(r)


@composite("any", "reduction", dtypes="any", aten=_aten("any.dim", "any.default", "any.dims"),
           doc="whether some element is nonzero (NaN counts as nonzero)")
def any_(F, x, axis=None, keepdims=False):
    t = F.cast(_truth(F, x), dt.float16)
    return F.max(t, axis=_axes(F, x, axis), keepdims=keepdims) > 0


@composite("all", "reduction", dtypes="any", aten=_aten("all.dim", "all.default", "all.dims"),
           doc="whether every element is nonzero")
def all_(F, x, axis=None, keepdims=False):
    t = F.cast(_truth(F, x), dt.float16)
    return F.min(t, axis=_axes(F, x, axis), keepdims=keepdims) > 0


@composite("count_nonzero", "reduction", dtypes="any", aten=_aten("count_nonzero.dim_IntList", "count_nonzero.default"),
           doc="number of nonzero elements (int32)")
def count_nonzero(F, x, axis=None, keepdims=False):
    return F.sum(F.cast(_truth(F, x), dt.int32), axis=_axes(F, x, axis), keepdims=keepdims)


def _reduce_loss(F, e, reduction):
    if reduction == "mean":
        return F.mean(e)
    if reduction == "sum":
        return F.sum(e)
    if reduction == "none":
        return e
    raise F.ArgumentError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}", loc=F.user_frame())


@composite("mse_loss", "reduction",
           aten=_aten("mse_loss.default"),
           doc="mean((a - b)**2) (reduction 'mean' / 'sum' / 'none')")
def mse_loss(F, a, b, reduction="mean"):
    return _reduce_loss(F, F.square(a - b), reduction)


@composite("l1_loss", "reduction", aten=_aten("l1_loss.default"), doc="mean(|a - b|)")
def l1_loss(F, a, b, reduction="mean"):
    return _reduce_loss(F, F.abs(a - b), reduction)


@composite("smooth_l1_loss", "reduction", aten=_aten("smooth_l1_loss.default"),
           doc="0.5 d**2 / beta where |d| < beta, else |d| - beta / 2")
def smooth_l1_loss(F, a, b, reduction="mean", beta=1.0):
    d = F.abs(a - b)
    return _reduce_loss(F, F.where(d < beta, F.square(d) * (0.5 / beta), d - 0.5 * beta), reduction)


@composite("huber_loss", "reduction", aten=_aten("huber_loss.default"),
           doc="0.5 d**2 where |d| <= delta, else delta (|d| - delta / 2)")
def huber_loss(F, a, b, reduction="mean", delta=1.0):
    d = F.abs(a - b)
    return _reduce_loss(F, F.where(d <= delta, F.square(d) * 0.5, (d - 0.5 * delta) * delta), reduction)


@composite("nll_loss", "reduction",
           aten=_aten("nll_loss_forward.default", "nll_loss.default", "nll_loss_nd.default", "nll_loss2d_forward.default",
                      "nll_loss2d.default"),
           onnx=("NegativeLogLikelihoodLoss",),
           doc="-x[i, target[i]] (times weight[target[i]]) per row: a row sum of where(target == class, x, "
               "0), no index reads; ignore_index rows count 0 with weight 0; mean divides by the summed "
               "weights (torch.nn.functional.nll_loss)",
           example="fs.nll_loss(x, fs.argmax(y, axis=1))")
def nll_loss(F, x, target, weight=None, reduction="mean", ignore_index=-100):
    """The negative log-likelihood loss of log-probabilities `x` ([N, C], [C] with a 0-d target, or
    [N, C, d...] with target [N, d...]: the class axis is 1) at integer class indices `target`.

    The target's value is picked by a sum over the classes of where(target == class, x, 0), so the
    other classes' values (NaN or -inf too) do not reach it. `weight` ([C]) scales each term by
    its class's weight; a target equal to `ignore_index` (None: none) counts 0 with weight 0, so
    a mean over ignored rows only is 0 / 0 = NaN, as in torch. A target outside [0, C) that is
    not `ignore_index` selects nothing (torch raises). `reduction` is 'mean' (the sum over the
    summed weights), 'sum' or 'none'.
    """
    if not isinstance(target, F.Tensor) or not target.dtype.is_int:
        raise F.DTypeError(f"nll_loss needs integer class indices as target, got "
                           f"{target.dtype if isinstance(target, F.Tensor) else type(target).__name__}",
                           loc=F.user_frame(), hint="class probabilities are cross_entropy's soft targets: "
                                                    "-sum(log_softmax(x) * p, axis=1)")
    if reduction not in ("mean", "sum", "none"):
        raise F.ArgumentError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}", loc=F.user_frame())
    x32, back = _f32(F, x)
    if x32.ndim > 2:   # the class axis last: [N, d..., C]
        x32 = F.transpose(x32, (0,) + tuple(range(2, x32.ndim)) + (1,))
    c = x32.shape[-1]
    idx = F.reshape(F.cast(target, dt.int32), tuple(target.shape) + (1,))
    hit = idx == _arange(F, x32, 0, c)                      # [..., C]: the target's class
    loss = -F.sum(F.where(hit, x32, 0.0), axis=-1)          # -x[..., target]
    w = None
    if weight is not None:
        w = F.sum(F.where(hit, F.cast(weight, dt.float32), 0.0), axis=-1)   # weight[target]
        loss = loss * w
    if ignore_index is not None:
        valid = target != ignore_index
        w = F.cast(valid, dt.float32) if w is None else F.where(valid, w, 0.0)
        loss = F.where(valid, loss, 0.0)
    if reduction == "none":
        return back(loss)
    if reduction == "sum" or w is None:
        return back(_reduce_loss(F, loss, reduction))
    return back(F.sum(loss) / F.sum(w))


@composite("cross_entropy", "reduction", onnx=("SoftmaxCrossEntropyLoss",),
           doc="nll_loss(log_softmax(x, axis=1), target, ...): torch.nn.functional.cross_entropy with class "
               "indices",
           example="fs.cross_entropy(x, fs.argmax(y, axis=1))")
def cross_entropy(F, x, target, weight=None, reduction="mean", ignore_index=-100):
    """The cross-entropy of logits `x` ([N, C], [C], or [N, C, d...]; the class axis is 1) at
    integer class indices `target`: nll_loss of log_softmax over the class axis (see nll_loss for
    `weight`, `reduction` and `ignore_index`)."""
    return nll_loss(F, log_softmax(F, x, axis=1 if x.ndim > 1 else 0), target, weight, reduction, ignore_index)


# ---- shape and creation --------------------------------------------------------------------------
@composite("expand_dims", "shape", dtypes="any", public=("expand_dims", "unsqueeze"),
           aten=_aten("unsqueeze.default"),
           onnx=("Unsqueeze",),
           doc="a new axis of size 1 at `axis`",
           example="fs.expand_dims(x, 0)")
def expand_dims(F, x, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    rank = x.ndim + len(axes)
    where_new = sorted(a % rank for a in axes)
    shape, it = [], iter(x.shape)
    for i in range(rank):
        shape.append(1 if i in where_new else next(it))
    return F.reshape(x, tuple(shape))


@composite("squeeze", "shape", dtypes="any", aten=_aten("squeeze.dim", "squeeze.dims", "squeeze.default"),
           onnx=("Squeeze",), doc="drop size-1 axes (all, or the ones named)")
def squeeze(F, x, axis=None):
    if axis is None:
        drop = {i for i, d in enumerate(x.shape) if d == 1}
    else:
        drop = {a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis)}
        bad = [a for a in drop if x.shape[a] != 1]
        if bad:
            raise F.ShapeError(f"squeeze: axis {bad[0]} has size {x.shape[bad[0]]}, not 1", loc=F.user_frame())
    return F.reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in drop))


@composite("permute", "shape", dtypes="any",
           aten=_aten("permute.default"),
           doc="torch's x.permute(*dims)",
           example="fs.permute(x, 1, 0)")
def permute(F, x, *dims):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    return F.transpose(x, [d % max(x.ndim, 1) for d in dims])


@composite("expand", "shape", dtypes="any", aten=_aten("expand.default"), onnx=("Expand",),
           doc="torch's x.expand(*sizes): broadcast_to, -1 keeps a size", example="fs.expand(x, 2, -1, -1)")
def expand(F, x, *sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    lead = len(sizes) - x.ndim
    shape = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    return F.broadcast_to(x, shape)


@composite("tile", "shape", dtypes="any", public=("repeat",), aten=_aten("repeat.default"),
           onnx=("Tile",),
           doc="numpy.tile / torch's x.repeat(*reps): copies along each axis "
               "(fs.tile is the tile-IR package, so the fs name is repeat)",
           example="fs.repeat(x, (2, 1))")
def tile(F, x, reps):
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    rank = max(len(reps), x.ndim)
    reps = (1,) * (rank - len(reps)) + reps
    shape = (1,) * (rank - x.ndim) + tuple(x.shape)
    y = F.reshape(x, tuple(v for d in shape for v in (1, d)))
    y = F.broadcast_to(y, tuple(v for r, d in zip(reps, shape) for v in (r, d)))
    return F.reshape(y, tuple(r * d for r, d in zip(reps, shape)))


def _split_points(F, size, sections):
    if isinstance(sections, int):
        if sections <= 0 or size % sections:
            raise F.ArgumentError(f"split: {size} elements do not divide into {sections} equal sections",
                                  loc=F.user_frame(), hint="give split points, or use fs.chunk / fs.array_split")
        step = size // sections
        return list(range(step, size, step))
    return [int(i) for i in sections]


@composite("split", "shape", dtypes="any", aten=(), onnx=("Split",),
           doc="numpy.split: `sections` equal parts or the given split points, along `axis` (a list)",
           example="fs.split(x, 3)")
def split(F, x, sections, axis=0):
    axis %= x.ndim
    points = [0] + _split_points(F, x.shape[axis], sections) + [x.shape[axis]]
    index = [slice(None)] * x.ndim
    parts = []
    for lo, hi in zip(points[:-1], points[1:]):
        index[axis] = slice(lo, hi)
        parts.append(x[tuple(index)])
    return parts


@composite("split_size", "shape", dtypes="any", public=("split_size",),
           aten=_aten("split.Tensor", "split_with_sizes.default"),
           doc="torch.split: parts of `size` elements (the last may be shorter) or of the given sizes",
           example="fs.split_size(x, 2)")
def split_size(F, x, size, axis=0):
    n = x.shape[axis % x.ndim]
    if isinstance(size, int):
        points = list(range(size, n, size))
    else:
        points, acc = [], 0
        for s in size[:-1]:
            acc += s
            points.append(acc)
    return split(F, x, points, axis)


@composite("chunk", "shape", dtypes="any", aten=_aten("chunk.default"),
           doc="torch.chunk: n parts of ceil(size / n) elements", example="fs.chunk(x, 2)")
def chunk(F, x, n, axis=0):
    size = x.shape[axis % x.ndim]
    return split_size(F, x, -(-size // n), axis)


@composite("unbind", "shape", dtypes="any", aten=_aten("unbind.int"), doc="the slices along `axis`, that axis removed")
def unbind(F, x, axis=0):
    axis %= x.ndim
    return [squeeze(F, p, axis) for p in split(F, x, x.shape[axis], axis)]


@composite("stack", "shape", dtypes="any",
           aten=_aten("stack.default"),
           doc="join along a new axis",
           example="fs.stack([x, y], axis=1)")
def stack(F, xs, axis=0):
    xs = list(xs)
    return F.concatenate([expand_dims(F, v, axis) for v in xs], axis=axis)


@composite("hstack", "shape", dtypes="any",
           aten=_aten("hstack.default"),
           doc="numpy.hstack",
           example="fs.hstack([x, y])")
def hstack(F, xs):
    xs = list(xs)
    return F.concatenate(xs, axis=0 if xs[0].ndim == 1 else 1)


@composite("vstack", "shape", dtypes="any",
           aten=_aten("vstack.default"),
           doc="numpy.vstack",
           example="fs.vstack([x, y])")
def vstack(F, xs):
    xs = [v if v.ndim >= 2 else F.reshape(v, (1,) + tuple(v.shape)) for v in xs]
    return F.concatenate(xs, axis=0)


@composite("masked_fill", "shape", dtypes="any", aten=_aten("masked_fill.Scalar", "masked_fill.Tensor"),
           doc="where(mask, value, x)", example="fs.masked_fill(x, x > 0, 0)")
def masked_fill(F, x, mask, value):
    return F.cast(F.where(mask, value, x), x.dtype)


@composite("full_like", "shape", dtypes="any", aten=_aten("full_like.default"),
           doc="a tensor of x's shape filled with `value` (a constant folded into its consumers)",
           example="fs.full_like(x, 2)")
def full_like(F, x, value, dtype=None):
    d = F.to_dtype(dtype) if dtype is not None else x.dtype
    return F.broadcast_to(x.trace.constant(value, d), tuple(x.shape))


composite("zeros_like", "shape", dtypes="any", aten=_aten("zeros_like.default"), doc="full_like(x, 0)")(
    lambda F, x, dtype=None: full_like(F, x, 0, dtype))
composite("ones_like", "shape", dtypes="any", aten=_aten("ones_like.default", "empty_like.default"),
          doc="full_like(x, 1) (empty_like maps here too)")(
    lambda F, x, dtype=None: full_like(F, x, 1, dtype))


# ---- bitwise ----------------------------------------------------------------------------------------
def _bitwise(F, name, logical, *xs):
    xs = list(xs)
    if len(xs) == 2:
        xs = list(F.promote_pair_public(*xs))
    d = xs[0].dtype
    if d == dt.bool_:
        return logical(F, *xs)
    if d.is_float:
        raise F.DTypeError(f"fs.{name} needs integer or bool tensors, got {d}", loc=F.user_frame(),
                           hint="cast first, e.g. x.astype(fs.int32)")
    wide = [F.cast(x, dt.int32) for x in xs]   # 8-bit ints: the same bits sign- or zero-extended
    return F.cast(F.emit(name, *wide), d)


composite("bitwise_and", "logic", dtypes="int", aten=_aten("bitwise_and.Tensor", "bitwise_and.Scalar"),
          onnx=("BitwiseAnd",), doc="a & b on integers (logical_and on bools); And on int16 lanes, not on ascend910",
          example="fs.bitwise_and(x.astype(np.int32), y.astype(np.int32))")(
    lambda F, a, b: _bitwise(F, "bitwise_and", lambda F, x, y: F.logical_and(x, y), a, b))
composite("bitwise_or", "logic", dtypes="int", aten=_aten("bitwise_or.Tensor", "bitwise_or.Scalar"),
          onnx=("BitwiseOr",), doc="a | b on integers (logical_or on bools)",
          example="fs.bitwise_or(x.astype(np.int32), y.astype(np.int32))")(
    lambda F, a, b: _bitwise(F, "bitwise_or", lambda F, x, y: F.logical_or(x, y), a, b))
composite("bitwise_xor", "logic", dtypes="int", aten=_aten("bitwise_xor.Tensor", "bitwise_xor.Scalar"),
          onnx=("BitwiseXor",), doc="a ^ b on integers (logical_xor on bools)",
          example="fs.bitwise_xor(x.astype(np.int32), y.astype(np.int32))")(
    lambda F, a, b: _bitwise(F, "bitwise_xor", lambda F, x, y: F.not_equal(x, y), a, b))
composite("bitwise_not", "logic", dtypes="int", public=("bitwise_not", "invert"), aten=_aten("bitwise_not.default"),
          onnx=("BitwiseNot",), doc="~a on integers (logical_not on bools)",
          example="fs.bitwise_not(x.astype(np.int32))")(
    lambda F, x: _bitwise(F, "bitwise_not", lambda F, v: F.equal(v, False), x))


@composite("left_shift", "logic", dtypes="int", aten=_aten("bitwise_left_shift.Tensor_Scalar", "__lshift__.Scalar"),
           doc="a << k for a constant k in [0, 31]: a * 2**k, wrapping like numpy's int32",
           example="fs.left_shift(x.astype(np.int32), 3)")
def left_shift(F, a, k):
    if not isinstance(k, int) or not 0 <= k < 32:
        raise F.ArgumentError(f"left_shift needs a constant shift in [0, 31], got {k!r}", loc=F.user_frame(),
                              hint="a tensor shift amount is not supported")
    if a.dtype.is_float or a.dtype == dt.bool_:
        raise F.DTypeError(f"fs.left_shift needs integer tensors, got {a.dtype}", loc=F.user_frame())
    factor = (1 << k) if k < 31 else -(1 << 31)
    return F.cast(F.cast(a, dt.int32) * factor, a.dtype)


@composite("right_shift", "logic", dtypes="int",
           aten=_aten("bitwise_right_shift.Tensor_Scalar", "__rshift__.Scalar"),
           doc="a >> k for a constant k in [0, 31]: arithmetic (floor(a / 2**k)), exact for every int32",
           example="fs.right_shift(x.astype(np.int32), 3)")
def right_shift(F, a, k):
    if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < 32:
        raise F.ArgumentError(f"right_shift needs a constant shift in [0, 31], got {k!r}", loc=F.user_frame(),
                              hint="a tensor shift amount is not supported")
    if a.dtype.is_float or a.dtype == dt.bool_:
        raise F.DTypeError(f"fs.right_shift needs integer tensors, got {a.dtype}", loc=F.user_frame())
    if k == 0:
        return a
    # No vector shift on every chip: a is split into its high 16 bits (a multiple of 2**16, at most
    # 15 significant bits: exact in float32) and its low 16 bits (0..65535), each scaled exactly
    # by a power of two in float32, and the integer parts added in int32 (no rounding anywhere).
    a32 = F.cast(a, dt.int32)
    hi = F.cast(F.bitwise_and(a32, -65536), dt.float32)
    if k <= 16:
        lo = F.cast(F.bitwise_and(a32, 65535), dt.float32)
        r = exact_int32(F, hi * float(2.0 ** -k), 2 ** (31 - k)) + \
            exact_int32(F, _floor(F, lo * float(2.0 ** -k)), 2 ** (16 - k))
    else:
        r = exact_int32(F, _floor(F, hi * float(2.0 ** -k)), 2 ** (31 - k))
    return F.cast(r, a.dtype)


# ---- index ops built on arange (ops/creation.py: a small host input the kernels broadcast) ----------
def _arange(F, x, start, stop, step=1, dtype=dt.int32):
    return x.trace.emit("arange", [], {"start": start, "stop": stop, "step": step, "dtype": dtype.name})


def _iota(F, x, axis, dtype=dt.int32):
    """0, 1, ..., x.shape[axis] - 1 along `axis`, shaped to broadcast against x."""
    n = x.shape[axis]
    shape = [1] * x.ndim
    shape[axis] = n
    return F.reshape(_arange(F, x, 0, n, 1, dtype), tuple(shape))


def _arg(F, x, axis, keepdims, pick, name):
    if not isinstance(x, F.Tensor):
        raise F.ArgumentError(f"{name} needs a tensor, got a Python number", loc=F.user_frame())
    if axis is None:   # numpy: the index into the flattened array
        r = _arg(F, F.reshape(x, (-1,)), 0, False, pick, name)
        return F.reshape(r, (1,) * x.ndim) if keepdims else r
    axis %= max(x.ndim, 1)
    n = x.shape[axis]
    if n == 0:
        raise F.ArgumentError(f"{name} of an empty axis (size 0 along axis {axis}) has no index", loc=F.user_frame())
    v = F.cast(x, dt.float32) if x.dtype in (dt.bool_, dt.uint8, dt.int8) else x
    m = pick(v, axis=axis, keepdims=True)
    hit = v == m
    if v.dtype.is_float:   # numpy: the first NaN wins over every number
        isnan = v != v
        anynan = F.max(F.cast(isnan, dt.float32), axis=axis, keepdims=True) > 0.0
        hit = F.where(anynan, isnan, hit)
    # the first hit: the smallest index among the hits (indices exact in float32 below 2**24)
    cand = F.where(hit, _iota(F, x, axis, dt.float32), float(n))
    r = exact_int32(F, F.min(cand, axis=axis, keepdims=True), n)   # never a 0-d cast: a kernel of one element
    return r if keepdims else F.reshape(r, tuple(d for i, d in enumerate(x.shape) if i != axis))


@composite("argmax", "reduction", dtypes="any", aten=_aten("argmax.default"), onnx=("ArgMax",),
           doc="index of the largest element along `axis` (the first on ties; the first NaN if any), int32",
           example="fs.argmax(x, axis=1)")
def argmax(F, x, axis=None, keepdims=False):
    return _arg(F, x, axis, keepdims, F.max, "argmax")


@composite("argmin", "reduction", dtypes="any", aten=_aten("argmin.default"), onnx=("ArgMin",),
           doc="index of the smallest element along `axis` (the first on ties; the first NaN if any), int32",
           example="fs.argmin(x, axis=1)")
def argmin(F, x, axis=None, keepdims=False):
    return _arg(F, x, axis, keepdims, F.min, "argmin")


def _odd(F, c):
    """c mod 2 == 1 for float32 counts c >= 0."""
    return c - 2.0 * _floor(F, c * 0.5) > 0.5


@composite("prod", "reduction", dtypes="numeric", public=("prod", "product"),
           aten=_aten("prod.dim_int", "prod.default"), onnx=("ReduceProd",),
           doc="product over `axis`: sign from the count of negatives, magnitude exp(sum(log|x|)) "
               "(float32 rounding of log/exp: ~1e-6 relative per factor), 0 / inf / NaN like numpy; "
               "int32 exact in int32 multiplies (wrapping like numpy's int32); int8 / uint8 exact and wrapping "
               "like numpy's (pairwise float32 products wrapped at every step); bool through float32")
def prod(F, x, axis=None, keepdims=False):
    axes = _axes(F, x, axis)
    if isinstance(x, F.Tensor) and x.dtype == dt.int32:
        return _int32_product(F, x, axes, keepdims)
    if isinstance(x, F.Tensor) and x.dtype in (dt.int8, dt.uint8):
        # float32 products of wrapped 8-bit values (|v| <= 65025, exact) wrapped again, pairwise:
        # numpy's wrapped int8 / uint8 product (exp(sum(log)) rounds, the chip's cast saturates)
        x32 = F.cast(x, dt.float32)
        wrapped = _int32_product(F, x32, axes, keepdims, mul=lambda a, b: _wrap8(F, a * b, x.dtype))
        return F.cast(wrapped, x.dtype)
    x32, back = _f32(F, x)

    def count(mask):
        return F.sum(F.cast(mask, dt.float32), axis=axes, keepdims=keepdims)

    a = F.abs(x32)
    zero = x32 == 0.0
    mag = F.exp(F.sum(F.log(F.where(zero, 1.0, a)), axis=axes, keepdims=keepdims))
    neg = _odd(F, count(x32 < 0.0))
    r = F.where(neg, -mag, mag)
    nz, ninf, nnan = count(zero) > 0.0, count(a == math.inf) > 0.0, count(x32 != x32) > 0.0
    r = F.where(nz, F.where(neg, -0.0, 0.0), r)
    r = F.where(F.logical_or(nnan, F.logical_and(nz, ninf)), math.nan, r)
    out = back(r)
    return out if x.dtype.is_float else F.cast(_nearest(F, F.where(F.abs(r) < 2.0 ** 31, r, 0.0)), x.dtype)


def _nearest(F, r):
    """A float32 that approximates an integer, moved half a unit away from zero so that the
    truncating cast to an integer dtype gives the nearest integer (exp(log 39 + log 15) is
    584.99994: truncated, 584)."""
    return F.where(r < 0.0, r - 0.5, r + 0.5)


def _int32_product(F, x, axes, keepdims, mul=None):
    """The product over `axes` of an int32 tensor in int32 multiplies, exact and wrapping like
    numpy's int32 product (the log / exp path rounds: 39 * 15 came out 584): the reduced axes
    moved last and flattened, then halves multiplied pairwise, log2(n) elementwise steps.
    `mul` replaces the multiply (8-bit products: wrapped float32 multiplies, _wrap8)."""
    rank = x.ndim
    keep = [d for d in range(rank) if d not in axes]
    rest = tuple(x.shape[d] for d in keep)
    n = _count(x, axes)
    out_shape = tuple(1 if d in axes else x.shape[d] for d in range(rank)) if keepdims else rest
    if n == 0:   # the empty product
        one = x.trace.constant(1, x.dtype if mul is not None else dt.int32)
        return F.broadcast_to(one, out_shape) if out_shape else one
    perm = keep + list(axes)
    y = F.transpose(x, perm) if perm != list(range(rank)) else x
    rows = _count(x, keep)
    y = F.reshape(y, (rows, n))
    while n > 1:
        half = n // 2
        a, b = y[:, :half], y[:, half:2 * half]
        z = a * b if mul is None else mul(a, b)
        y = F.concatenate([z, y[:, 2 * half:]], axis=1) if n % 2 else z
        n = half + n % 2
    return F.reshape(y, out_shape)


def _scan(F, parts, axis, identity=-0.0, combine=None):
    """Inclusive prefix sums of float32 (or, with identity 0, int32) tensors along `axis`, all
    parts at once, in log2(n) steps -- or prefix `combine`s (products, wrapped 8-bit sums) with
    its identity (Hillis-Steele): y += y shifted by s along the axis (-0.0 in front) for s = 1, 2, 4, ...
    Each step is one vector kernel whose shifted operand is a slice + concatenation of the
    previous step's output (view addressing, nothing copied): n log2(n) adds per row instead of
    the n**2 multiply-adds of a matmul by a triangular matrix, no [n, n] matrix at all, and each
    sum a balanced tree of the terms (float32 rounding ~log2(n) ulp, not numpy's sequential n)."""
    x = parts[0]
    rank = x.ndim
    axis %= max(rank, 1)
    n = x.shape[axis]
    perm = [d for d in range(rank) if d != axis] + [axis]
    moved = [F.transpose(p, perm) if axis != rank - 1 else p for p in parts]
    y = F.concatenate([F.reshape(p, (1, -1, n)) for p in moved], axis=0)   # [k, rest, n]
    step = 1
    position = x.trace.emit("arange", [], {"start": 0, "stop": n, "step": 1, "dtype": "int32"})
    while step < n:
        # y shifted by `step`: its first `step` places are any of y's values, masked to -0.0 (the
        # additive identity of every float: 0.0 + -0.0 would turn numpy's -0.0 sums into 0.0);
        # slices of y only, so the step is ONE kernel (a zeros piece would be one more each step)
        shifted = F.concatenate([y[:, :, :step], y[:, :, :n - step]], axis=2)
        masked = F.where(position >= step, shifted, identity)
        y = y + masked if combine is None else combine(y, masked)
        step *= 2
    inv = [perm.index(d) for d in range(rank)]
    shape = tuple(x.shape[d] for d in perm)
    res = []
    for i in range(len(parts)):
        r = F.reshape(y[i], shape)
        res.append(F.transpose(r, inv) if axis != rank - 1 else r)
    return res


def _scan_input(F, x, axis, name):
    if not isinstance(x, F.Tensor):
        raise F.ArgumentError(f"{name} needs a tensor, got a Python number", loc=F.user_frame())
    if x.ndim == 0:
        x = F.reshape(x, (1,))
    axis %= x.ndim
    n = x.shape[axis]
    if not isinstance(n, int):
        # the scan's step count is log2(n): a symbolic length has none
        raise F.ShapeError(f"{name} along an axis of {n} elements: fusedsl scans a fixed number of elements "
                           "(log2(n) steps)", loc=F.user_frame(),
                           hint="give that axis a fixed size (the kernel is traced per shape)")
    return x, axis


def _wrap8(F, v, dtype):
    """The exact float32 integer v (|v| <= 65025) wrapped into int8's [-128, 127] or uint8's
    [0, 255] as numpy's 8-bit arithmetic wraps: w = v - 256 rint(v / 256) in [-128, 128] (v / 256
    exact, rint by adding and subtracting 1.5 * 2**23), then 128 -> -128 (int8) or w + 256 below 0
    (uint8).  Every value is exact in float32, and the cast to the 8-bit dtype that follows is of
    a value in range: exact on every executor (the chip's narrowing casts saturate)."""
    t = (v * (1.0 / 256.0) + _ROUND) - _ROUND
    w = v - t * 256.0
    if dtype == dt.int8:
        return F.where(w >= 128.0, w - 256.0, w)
    return F.where(w < 0.0, w + 256.0, w)


def _scan8(F, x, axis, identity, op):
    """An 8-bit scan in float32 with every step's values wrapped (mod 256 commutes with + and *),
    so each step's sums (|v| <= 256) and products (|v| <= 65025) are exact integers: numpy's
    wrapped int8 / uint8 cumsum and cumprod for any length, on every executor."""
    r = _scan(F, [F.cast(x, dt.float32)], axis, identity=identity,
              combine=lambda a, b: _wrap8(F, op(a, b), x.dtype))[0]
    return F.cast(r, x.dtype)


@composite("cumsum", "reduction", dtypes="numeric", aten=_aten("cumsum.default"), onnx=("CumSum",),
           doc="inclusive prefix sums along `axis` in log2(n) shifted-add steps (a balanced tree per prefix: "
               "float32 rounding ~log2(n) ulp; inf / NaN like numpy); int32 exact in int32 additions (wrapping "
               "like numpy's int32), int8 / uint8 exact and wrapping like numpy's (wrapped at every step), bool "
               "exact while the sums stay below 2**24",
           example="fs.cumsum(x, axis=1)")
def cumsum(F, x, axis=-1):
    x, axis = _scan_input(F, x, axis, "cumsum")
    if x.dtype == dt.int32:   # int32 additions: exact (wrapping as numpy's int32), not float32's 2**24
        return _scan(F, [x], axis, identity=0)[0]
    if x.dtype in (dt.int8, dt.uint8):
        return _scan8(F, x, axis, 0.0, lambda a, b: a + b)
    # bool through float32 (the chips cast float32 -> int8, not int32 -> int8): exact below 2**24
    x32, back = _f32(F, x)
    r = _scan(F, [x32], axis)[0]   # additions carry inf and NaN as numpy's do (inf + -inf = NaN)
    return back(r) if x.dtype.is_float else F.cast(r, x.dtype)


@composite("cumprod", "reduction", dtypes="numeric", aten=_aten("cumprod.default"),
           doc="inclusive prefix products along `axis`: sign from the count of negatives so far, "
               "magnitude exp(cumsum(log|x|)) (~1e-6 relative per factor), 0 / inf / NaN like numpy; int32 "
               "exact in int32 multiplies (wrapping like numpy's int32); int8 / uint8 exact and wrapping like "
               "numpy's (float32 products wrapped at every step); bool through float32",
           example="fs.cumprod(x, axis=1)")
def cumprod(F, x, axis=-1):
    x, axis = _scan_input(F, x, axis, "cumprod")
    if x.dtype == dt.int32:   # int32 multiplies: exact (wrapping as numpy's int32), not exp(sum(log))
        return _scan(F, [x], axis, identity=1, combine=lambda a, b: a * b)[0]
    if x.dtype in (dt.int8, dt.uint8):
        return _scan8(F, x, axis, 1.0, lambda a, b: a * b)
    x32, back = _f32(F, x)
    a = F.abs(x32)
    zero, inf, nan = x32 == 0.0, a == math.inf, x32 != x32
    regular = F.logical_not(F.logical_or(F.logical_or(zero, inf), nan))
    logs, nz, ninf, nnan, nneg = _scan(F, [F.where(regular, F.log(F.where(regular, a, 1.0)), 0.0),
                                           F.cast(zero, dt.float32), F.cast(inf, dt.float32),
                                           F.cast(nan, dt.float32), F.cast(x32 < 0.0, dt.float32)], axis)
    neg = _odd(F, nneg)
    r = F.where(neg, -1.0, 1.0) * F.exp(logs)
    r = F.where(ninf > 0.0, F.where(neg, -math.inf, math.inf), r)
    r = F.where(nz > 0.0, F.where(neg, -0.0, 0.0), r)
    r = F.where(F.logical_or(nnan > 0.0, F.logical_and(nz > 0.0, ninf > 0.0)), math.nan, r)
    return back(r) if x.dtype.is_float else F.cast(_nearest(F, r), x.dtype)


@composite("flip", "shape", dtypes="any", aten=_aten("flip.default"),
           doc="the elements in reverse order along `axis` (all axes when None): a take of the rows "
               "n-1, ..., 0 (a gather view), so every dtype is exact",
           example="fs.flip(x, 1)")
def flip(F, x, axis=None):
    axes = range(x.ndim) if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    for a in sorted({a % max(x.ndim, 1) for a in axes}):
        n = x.shape[a]
        if n <= 1:
            continue
        perm = [a] + [d for d in range(x.ndim) if d != a]
        y = F.transpose(x, perm) if a != 0 else x
        moved = tuple(y.shape)
        rows = F.take(F.reshape(y, (n, -1)), _arange(F, x, n - 1, -1, -1), axis=0)
        y = F.reshape(rows, moved)
        x = F.transpose(y, [perm.index(d) for d in range(x.ndim)]) if a != 0 else y
    return x


def _tri(F, x, k, lower):
    if x.ndim < 2:
        raise F.ArgumentError(f"{'tril' if lower else 'triu'} needs a tensor of at least 2 dimensions, got "
                              f"{x.ndim}", loc=F.user_frame())
    m, n = x.shape[-2], x.shape[-1]
    d = F.reshape(_arange(F, x, 0, n), (1, n)) - F.reshape(_arange(F, x, 0, m), (m, 1))   # column - row
    keep = d <= int(k) if lower else d >= int(k)
    return F.cast(F.where(keep, x, F.cast(x.trace.constant(0, x.dtype), x.dtype)), x.dtype)


composite("tril", "shape", dtypes="any", aten=_aten("tril.default"), onnx=("Trilu[upper=0]",),
          doc="x with the elements above diagonal k zeroed (numpy.tril, torch.tril)",
          example="fs.tril(x)")(lambda F, x, k=0: _tri(F, x, k, True))
composite("triu", "shape", dtypes="any", aten=_aten("triu.default"), onnx=("Trilu[upper=1]",),
          doc="x with the elements below diagonal k zeroed (numpy.triu, torch.triu)",
          example="fs.triu(x)")(lambda F, x, k=0: _tri(F, x, k, False))


@composite("one_hot", "shape", dtypes="int", aten=_aten("one_hot.default"), onnx=("OneHot",),
           doc="int32 [..., num_classes]: 1 where the class equals the index (torch.nn.functional.one_hot; "
               "indices outside [0, num_classes) give a row of zeros)",
           example="fs.one_hot((x * 3).astype(np.int32), 4)")
def one_hot(F, indices, num_classes=-1):
    if not isinstance(num_classes, int) or num_classes < 0:
        raise F.ArgumentError(f"one_hot needs num_classes >= 0 given as a constant, got {num_classes!r}",
                              loc=F.user_frame(), hint="the class count sets the result's shape; pass it "
                              "(torch's -1, the largest index + 1, depends on the data)")
    if indices.dtype.is_float or indices.dtype == dt.bool_:
        raise F.DTypeError(f"one_hot needs integer indices, got {indices.dtype}", loc=F.user_frame())
    idx = F.reshape(F.cast(indices, dt.int32), tuple(indices.shape) + (1,))
    return F.cast(idx == _arange(F, indices, 0, num_classes), dt.int32)
