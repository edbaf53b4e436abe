"""The op vocabulary of issue 20 (fusedsl/ops/composite.py): differential tests per op family.

Each op runs three ways -- the reference interpreter (eager fs.<op> on numpy arrays), the LLVM
backend (`kernel(*arrays)`) and, once per family on a few targets, the printed Ascend C on the
CPU implementation of the API (`simulate`, one multi-output kernel per family to keep g++ builds
few) -- and is compared with numpy (torch for the torch-only ops).

Stated accuracy (float32 inputs; 16-bit floats compute in float32 and round once, so they are
within one ulp of their dtype of the float32 result):
  rounding, sign, hardswish/sigmoid/tanh, relu6, clip, isnan/isinf/isfinite/nan_to_num, logic: exact
  sin/cos/tan (|x| < 5e4), atan/atan2/asin/acos, log2/log10, log1p/expm1, sinh/cosh, erf,
  softplus/elu/selu/celu/logsigmoid/mish, fmod/remainder/floor_divide: rtol 1e-5 (a few ulp)
  exp2 and pow: rtol 1e-5 for |result exponent| < 16 (the error grows as |p log x| 2**-24)
  exact gelu: atol 1e-6 (its tail below x = -1.4 is erfc's absolute error 1.5e-7 times x/2)
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fusedsl as fs
from conftest import covering, fuzz_settings

F32_TOL = (1e-5, 1e-6)
SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-7, -3e4]


def _torch(f):
    return lambda *a: f(*[torch.from_numpy(np.asarray(x)) for x in a]).numpy()


# name: (numpy / torch reference, input range, extra tolerance or None)
UNARY = {
    "floor": (np.floor, 1e6, None), "ceil": (np.ceil, 1e6, None), "trunc": (np.trunc, 1e6, None),
    "rint": (np.rint, 1e6, None), "sign": (np.sign, 10, None),
    "log2": (np.log2, 1e4, None), "log10": (np.log10, 1e4, None), "exp2": (np.exp2, 16, None),
    "log1p": (np.log1p, 50, None), "expm1": (np.expm1, 30, None),
    "sin": (np.sin, 5e4, None), "cos": (np.cos, 5e4, None), "tan": (np.tan, 100, (1e-5, 1e-5)),
    "arctan": (np.arctan, 1e3, None), "arcsin": (np.arcsin, 1.2, None), "arccos": (np.arccos, 1.2, None),
    "sinh": (np.sinh, 40, None), "cosh": (np.cosh, 40, None),
    "erf": (_torch(torch.erf), 6, None), "gelu_erf": (_torch(torch.nn.functional.gelu), 10, (1e-5, 1e-6)),
    "softplus": (_torch(torch.nn.functional.softplus), 40, None),
    "softsign": (_torch(torch.nn.functional.softsign), 100, None),
    "elu": (_torch(torch.nn.functional.elu), 30, None), "selu": (_torch(torch.selu), 30, None),
    "celu": (_torch(torch.celu), 30, None), "mish": (_torch(torch.nn.functional.mish), 30, (1e-5, 1e-6)),
    "hardswish": (_torch(torch.nn.functional.hardswish), 10, None),
    "hardsigmoid": (_torch(torch.nn.functional.hardsigmoid), 10, None),
    "hardtanh": (_torch(torch.nn.functional.hardtanh), 5, None),
    "relu6": (_torch(torch.nn.functional.relu6), 10, None),
    "logsigmoid": (_torch(torch.nn.functional.logsigmoid), 40, None),
    "isnan": (np.isnan, 10, None), "isinf": (np.isinf, 10, None), "isfinite": (np.isfinite, 10, None),
    "nan_to_num": (np.nan_to_num, 10, None), "logical_not": (np.logical_not, 3, None),
}
BINARY = {
    "arctan2": np.arctan2, "fmod": np.fmod, "remainder": np.remainder, "floor_divide": np.floor_divide,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}
# ops whose value at +-inf differs from the reference by definition (torch's gelu(inf) is NaN)
NO_INF = {"gelu_erf", "mish", "tan"}


def close(got, want, tol=F32_TOL, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, what
    if want.dtype == np.bool_:
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w)), f"{what}: NaN positions differ\n{g}\n{w}"
    assert np.array_equal(g[np.isinf(w)], w[np.isinf(w)]), f"{what}: infinities differ"
    fin = np.isfinite(w)
    rtol, atol = tol
    np.testing.assert_allclose(g[fin], w[fin], rtol=rtol, atol=atol, err_msg=what)


def arrays(scale, specials=True, min_size=1):
    s = float(np.float32(scale))
    finite = st.floats(-s, s, width=32, allow_nan=False)
    elems = st.one_of(finite, st.sampled_from(SPECIAL)) if specials else finite
    return hnp.arrays(np.float32, st.integers(min_size, 37), elements=elems)


def _ref(name, fn, *xs):
    with np.errstate(all="ignore"):
        want = fn(*xs)
    return np.asarray(want).astype(np.float32) if np.asarray(want).dtype.kind == "f" else np.asarray(want)


_KERNELS = {}


def _llvm(name, arity):
    """One compiled kernel per op over a symbolic length N (a compile per drawn shape is slow)."""
    if name not in _KERNELS:
        f = getattr(fs, name)
        k = fs.fused_kernel((lambda a: f(a)) if arity == 1 else (lambda a, b: f(a, b)))
        _KERNELS[name] = k.compile(*[fs.spec(("N",), "float32")] * arity)
    return _KERNELS[name]


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
@fuzz_settings(0.02)
def test_unary_ops_reference_and_llvm_agree_with_numpy(name, data):
    fn, scale, tol = UNARY[name]
    x = data.draw(arrays(scale, specials=True))
    if name in NO_INF:
        x = np.where(np.isinf(x), 0.0, x).astype(np.float32)
    want = _ref(name, fn, x)
    close(getattr(fs, name)(x), want, tol or F32_TOL, f"{name} reference")
    close(_llvm(name, 1)(x), want, tol or F32_TOL, f"{name} llvm")


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
@fuzz_settings(0.02)
def test_binary_ops_reference_and_llvm_agree_with_numpy(name, data):
    n = data.draw(st.integers(1, 29))
    a = data.draw(hnp.arrays(np.float32, n, elements=st.one_of(st.floats(-1e3, 1e3, width=32),
                                                                st.sampled_from(SPECIAL))))
    b = data.draw(hnp.arrays(np.float32, n, elements=st.one_of(st.floats(-20, 20, width=32),
                                                                st.sampled_from(SPECIAL))))
    if name in ("fmod", "remainder", "floor_divide"):
        # exact while the quotient |a / b| < 2**22 (documented); beyond, b is set to 1
        with np.errstate(all="ignore"):
            b = np.where(np.isfinite(a) & np.isfinite(b) & (np.abs(a / b) >= 2.0 ** 22), 1.0, b).astype(np.float32)
    want = _ref(name, BINARY[name], a, b)
    close(getattr(fs, name)(a, b), want, what=f"{name} reference")
    close(_llvm(name, 2)(a, b), want, what=f"{name} llvm")


@pytest.mark.parametrize("name", ["sin", "erf", "floor", "log1p", "arctan2", "hardswish"])
def test_half_inputs_round_once_from_float32(name):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(41) * 3).astype(np.float16)
    y = (rng.standard_normal(41) * 3).astype(np.float16)
    f = getattr(fs, name)
    args = (x, y) if name in BINARY else (x,)
    ref = BINARY[name] if name in BINARY else UNARY[name][0]
    want = _ref(name, ref, *[a.astype(np.float32) for a in args]).astype(np.float16)
    k = fs.fused_kernel((lambda a, b: f(a, b)) if len(args) == 2 else (lambda a: f(a)))
    for got in (f(*args), k(*args)):
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-3)


def test_integer_rounding_ops_and_division_modes():
    a = np.array([7, -7, 7, -7, 0, 5, 1], np.int32)
    b = np.array([2, 2, -2, -2, 3, 0, 1], np.int32)
    k = fs.fused_kernel(lambda x, y: (fs.floor_divide(x, y), fs.fmod(x, y), fs.remainder(x, y),
                                      fs.div(x, y, rounding_mode="trunc"), fs.sign(x), fs.floor(x)))
    fd, fm, rm, tr, sg, fl = k(a, b)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(fd, np.floor_divide(a, b))
        np.testing.assert_array_equal(fm, np.fmod(a, b))
        np.testing.assert_array_equal(rm, np.remainder(a, b))
    np.testing.assert_array_equal(tr[b != 0], np.trunc(a[b != 0] / b[b != 0]).astype(np.int32))
    np.testing.assert_array_equal(sg, np.sign(a))
    np.testing.assert_array_equal(fl, a)
    assert fd.dtype == np.int32 and sg.dtype == np.int32
    x = np.array([1.5, -2.5, 7.0], np.float32)
    y = np.array([0.5, 2.0, -2.0], np.float32)
    got = fs.div(x, y, rounding_mode="floor")
    np.testing.assert_array_equal(got, np.floor_divide(x, y))
    np.testing.assert_array_equal(fs.div(x, y), x / y)


def test_pow_with_tensor_and_general_exponents():
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(33) * 2).astype(np.float32)
    p = np.round(rng.standard_normal(33) * 3).astype(np.float32)
    p[::3] += 0.5
    x[:3] = [0.0, -0.0, 0.0]
    p[:3] = [0.0, 2.0, -1.0]
    k = fs.fused_kernel(lambda a, b: (a ** b, fs.power(a, 1.7), fs.power(a, 4)))
    t, s17, s4 = k(x, p)
    with np.errstate(all="ignore"):
        close(t, np.power(x, p), what="x ** tensor")
        close(s17, np.power(x, np.float32(1.7)), what="x ** 1.7")
        close(s4, np.power(x, 4).astype(np.float32), what="x ** 4")


def test_clip_lerp_addcmul_addcdiv_and_torch_aliases():
    rng = np.random.default_rng(11)
    x, lo, hi, w = (rng.standard_normal(23).astype(np.float32) for _ in range(4))
    x[0] = np.nan
    lo = lo - 1
    hi = hi + 1

    @fs.fused_kernel
    def k(x, lo, hi, w):
        return (fs.clip(x, lo, hi), fs.clamp(x, None, 0.5), fs.lerp(x, hi, w), fs.lerp(x, hi, 0.75),
                fs.addcmul(x, lo, hi, value=0.5), fs.addcdiv(x, lo, hi), fs.gelu_erf(x))

    c1, c2, l1, l2, am, ad, ge = k(x, lo, hi, w)
    tx = [torch.from_numpy(v) for v in (x, lo, hi, w)]
    close(c1, np.clip(x, lo, hi), what="clip tensor bounds")
    close(c2, torch.clamp(tx[0], max=0.5).numpy(), what="clamp max")
    close(l1, torch.lerp(tx[0], tx[2], tx[3]).numpy(), what="lerp tensor weight")
    close(l2, torch.lerp(tx[0], tx[2], 0.75).numpy(), what="lerp scalar weight")
    close(am, torch.addcmul(tx[0], tx[1], tx[2], value=0.5).numpy(), what="addcmul")
    close(ad, torch.addcdiv(tx[0], tx[1], tx[2]).numpy(), what="addcdiv")
    close(ge, torch.nn.functional.gelu(tx[0]).numpy(), what="exact gelu")


def test_numpy_ufuncs_on_traced_tensors_trace_the_fs_op():
    k = fs.fused_kernel(lambda a, b: (np.sin(a), np.arctan2(a, b), np.isnan(a), np.floor_divide(a, b)))
    a = np.array([0.5, -2.0, np.nan], np.float32)
    b = np.array([1.0, -3.0, 2.0], np.float32)
    s, t, n, d = k(a, b)
    close(s, np.sin(a))
    close(t, np.arctan2(a, b))
    np.testing.assert_array_equal(n, np.isnan(a))
    close(d, np.floor_divide(a, b))


def test_errors_name_the_users_line():
    x = np.ones(3, np.float32)
    with pytest.raises(fs.ArgumentError, match="rounding_mode") as info:
        fs.div(x, x, rounding_mode="ceil")
    assert __file__ in str(info.value)
    with pytest.raises(fs.ArgumentError, match="clip needs"):
        fs.clip(x)
    with pytest.raises(fs.DTypeError, match="sign is not defined on bool"):
        fs.sign(x > 0)


# one printed kernel per family on the CPU implementation of the Ascend C API
FAMILIES = {
    "rounding": (lambda x, y: (fs.floor(x * 100), fs.ceil(x * 100), fs.trunc(x * 100), fs.rint(x * 100),
                               fs.sign(x)),
                 lambda x, y: (np.floor(np.float32(100) * x), np.ceil(np.float32(100) * x),
                               np.trunc(np.float32(100) * x), np.rint(np.float32(100) * x), np.sign(x))),
    # compares and selects each take a mask buffer: a kernel holds at most 64 UB buffers, so the
    # heavier ops get kernels of their own (arcsin ~45 buffers, floor_divide ~56)
    "trig": (lambda x, y: (fs.sin(x * 10), fs.cos(x * 10), fs.arctan(x)),
             lambda x, y: (np.sin(np.float32(10) * x), np.cos(np.float32(10) * x), np.arctan(x))),
    "atan2": (lambda x, y: (fs.arctan2(x, y),), lambda x, y: (np.arctan2(x, y),)),
    "asin": (lambda x, y: (fs.arcsin(x / 4),), lambda x, y: (np.arcsin(x / np.float32(4)),)),
    "exp_log": (lambda x, y: (fs.log1p(fs.abs(x)), fs.expm1(x), fs.log2(fs.abs(x)), fs.erf(x), fs.sinh(x)),
                lambda x, y: (np.log1p(np.abs(x)), np.expm1(x), np.log2(np.abs(x)),
                              torch.erf(torch.from_numpy(x)).numpy(), np.sinh(x))),
    "activation": (lambda x, y: (fs.gelu_erf(x), fs.softplus(x), fs.hardswish(x), fs.mish(x),
                                 fs.elu(x)),
                   lambda x, y: tuple(f(torch.from_numpy(x)).numpy() for f in (
                       torch.nn.functional.gelu, torch.nn.functional.softplus, torch.nn.functional.hardswish,
                       torch.nn.functional.mish, torch.nn.functional.elu))),
    "arith": (lambda x, y: (fs.fmod(x * 7, y), fs.remainder(x * 7, y), fs.isnan(x / y), fs.logical_and(x > 0, y > 0)),
              lambda x, y: (np.fmod(np.float32(7) * x, y), np.remainder(np.float32(7) * x, y), np.isnan(x / y),
                            np.logical_and(x > 0, y > 0))),
    "floordiv": (lambda x, y: (fs.floor_divide(x * 7, y),), lambda x, y: (np.floor_divide(np.float32(7) * x, y),)),
}


@pytest.mark.parametrize("family,target", covering(sorted(FAMILIES), ["ascend910b", "ascend310p"]))
def test_families_print_and_simulate(family, target):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 37)) * 2).astype(np.float32)
    y = (rng.standard_normal((3, 37)) * 2 + 0.1).astype(np.float32)
    x[0, :4] = [0.0, -0.0, 1.0, -1.0]
    fn, ref = FAMILIES[family]
    for other in ("ascend910b", "ascend310p"):   # prints on both chips; simulated on `target` (a g++ build)
        printed = fs.fused_kernel(fn, target=other).compile(x, y)
        assert all(p.error is None for p in printed.kernels) and printed.source, (other, [p.error for p in printed.kernels])
    k = fs.fused_kernel(fn, target=target)
    c = k.compile(x, y)
    with np.errstate(all="ignore"):
        wants = ref(x, y)
    sims, cpus = c.simulate(x, y), c(x, y)
    if len(wants) == 1:     # a one-output kernel returns the array itself
        sims, cpus = (sims,), (cpus,)
    for got_sim, got_cpu, want in zip(sims, cpus, wants):
        want = np.asarray(want)
        close(got_sim, want.astype(got_sim.dtype), (2e-5, 2e-6), f"{family} simulate on {target}")
        close(got_cpu, want.astype(got_cpu.dtype), (2e-5, 2e-6), f"{family} llvm")


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8])
@given(data=st.data())
@fuzz_settings(0.01)
def test_bitwise_ops_on_integers(dtype, data):
    info = np.iinfo(dtype)
    n = data.draw(st.integers(1, 33))
    a = data.draw(hnp.arrays(dtype, n, elements=st.integers(info.min, info.max)))
    b = data.draw(hnp.arrays(dtype, n, elements=st.integers(info.min, info.max)))
    k = fs.fused_kernel(lambda x, y: (fs.bitwise_and(x, y), fs.bitwise_or(x, y), fs.bitwise_xor(x, y),
                                      fs.invert(x), fs.left_shift(x, 3)))
    for got, want in zip(k(a, b), (a & b, a | b, a ^ b, ~a, (a.astype(np.int64) << 3).astype(dtype))):
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fs.bitwise_xor(a, b), a ^ b)     # reference


def test_bitwise_prints_on_int16_lanes_and_is_refused_where_there_is_no_and():
    a = np.array([5, -7, 123456789, 0, -1], np.int32)
    b = np.array([3, 12, -987654, 7, 2], np.int32)
    c = fs.fused_kernel(lambda x, y: (fs.bitwise_xor(x, y), fs.bitwise_or(x, 6)), target="ascend310p").compile(a, b)
    assert "ReinterpretCast<int16_t>(), n * 2);" in c.source
    for got, want in zip(c.simulate(a, b), (a ^ b, a | 6)):
        np.testing.assert_array_equal(got, want)
    t = np.array([True, False, True])
    np.testing.assert_array_equal(fs.bitwise_and(t, t[::-1].copy()), t & t[::-1])   # bools: logical
    line = 0

    def k(x, y):
        return fs.bitwise_and(x, y)   # the line below is the one named
    line = k.__code__.co_firstlineno + 1
    c910 = fs.fused_kernel(k, target="ascend910").compile(a, b)
    with pytest.raises(fs.ScheduleError, match="bitwise_and on int32 is not available on ascend910") as info:
        c910.source
    assert f"{__file__}:{line}" in str(info.value)
    np.testing.assert_array_equal(c910(a, b), a & b)            # the CPU still runs it
    with pytest.raises(fs.DTypeError, match="needs integer or bool"):
        fs.bitwise_and(np.ones(2, np.float32), np.ones(2, np.float32))


def test_rounding_is_one_cast_on_a2_and_exact_everywhere():
    x = np.array([0.0, -0.0, 0.3, -0.3, 2.5, -2.5, 1.5, -1e-45, 1e-45, 4194303.5, -4194303.5, 5e6 + 0.5,
                  -5e6 - 0.5, 8388607.5, -8388607.5, 4194304.5, 1e30, np.inf, -np.inf, np.nan, 3.7, -3.7],
                 np.float32)
    want = (np.floor(x), np.ceil(x), np.trunc(x), np.rint(x))
    a2 = fs.fused_kernel(lambda a: fs.floor(a), target="ascend910b").compile(x)
    assert a2.source.count("AscendC::Cast(") == 1 and "CAST_FLOOR" in a2.source
    k = fs.fused_kernel(lambda a: (fs.floor(a), fs.ceil(a), fs.trunc(a), fs.rint(a)), target="ascend310p")
    c = k.compile(x)
    assert "CAST_FLOOR" not in c.source          # 310P has no float -> float Cast: the primitive form
    for outs in (c(x), c.simulate(x)):
        for got, w in zip(outs, want):
            np.testing.assert_array_equal(got, w)
    np.testing.assert_array_equal(a2.simulate(x), want[0])
    np.testing.assert_array_equal(a2(x), want[0])
