"""The high-level math and activation APIs of the CPU Ascend C API (Acosh, Ceil/Floor/Trunc/Frac, Erf, Log*,
Exp with Taylor terms, ClampMin/Max, Fmod, Power, Axpy, Xor, CumSum; Gelu, Sigmoid, Silu, Swish, SwiGLU,
GeGLU) against numpy, with their scratch-space,
overlap and per-chip checks; kernels in tests/ascendc_kernels/adv_math_kernels.cpp (one build)."""
import ctypes
import math
import os
import re

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import AscendCCheckError

pytestmark = pytest.mark.usefixtures("private_cache_dir")
SOURCE = os.path.join(ASCENDC_KERNELS, "adv_math_kernels.cpp")


@pytest.fixture(scope="module")
def lib():
    with open(SOURCE, encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="adv_math_kernels")


def _line(marker):
    with open(SOURCE, encoding="utf-8") as f:
        for i, text in enumerate(f, 1):
            if f"LINE:{marker}" in text:
                return i
    raise AssertionError(marker)


def _params(op, n, tmp, scalar=0.0):
    p = np.zeros(4, np.int32)
    p[:3] = (op, n, tmp)
    p[3] = np.array([scalar], np.float32).view(np.int32)[0]
    return p


def _pad(a):
    return np.concatenate([a, np.zeros(-a.size % 16, a.dtype)])


def run(lib, op, x, y=None, tmp=65536, scalar=0.0, entry="adv_f32", target="ascend910b"):
    n = x.size
    y = np.zeros_like(x) if y is None else y
    out = np.zeros(_pad(x).size, x.dtype)
    lib.launch(entry, 1, [("x", _pad(x)), ("y", _pad(y)), ("p", _params(op, n, tmp, scalar)), ("out", out)],
               target=target)
    return out[:n]


def _f64(fn, *arrays):
    with np.errstate(all="ignore"):
        return fn(*[a.astype(np.float64) for a in arrays])


UNARY = [  # op, numpy function, input range
    (0, np.arccosh, (1.0, 100.0)),
    (1, np.ceil, (-50.0, 50.0)),
    (2, np.floor, (-50.0, 50.0)),
    (3, np.trunc, (-50.0, 50.0)),
    (4, lambda v: v - np.trunc(v), (-50.0, 50.0)),
    (5, np.vectorize(math.erf), (-3.0, 3.0)),
    (6, np.log, (0.01, 1000.0)),
    (7, np.log2, (0.01, 1000.0)),
    (8, np.log10, (0.01, 1000.0)),
]


@fuzz_settings(0.3)
@given(n=st.sampled_from([1, 16, 77, 200, 1000]), seed=st.integers(0, 2**16), framework=st.booleans())
def test_unary_math_matches_numpy(lib, n, seed, framework):
    rng = np.random.default_rng(seed)
    for op, fn, (lo, hi) in UNARY:
        x = rng.uniform(lo, hi, n).astype(np.float32)
        tmp = 0 if framework else 65536
        got = run(lib, op, x, tmp=tmp)
        np.testing.assert_allclose(got, _f64(fn, x).astype(np.float32), rtol=1e-6, atol=1e-7, err_msg=str(op))
        xh = x.astype(np.float16)
        goth = run(lib, op, xh, tmp=tmp, entry="adv_f16")
        np.testing.assert_allclose(goth.astype(np.float32), _f64(fn, xh).astype(np.float16).astype(np.float32),
                                   rtol=1e-3, atol=1e-3, err_msg=f"half {op}")


def _gelu(v):
    return v / (1 + np.exp(-1.5957691216057308 * (v + 0.044715 * v**3)))


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("framework", [False, True])
def test_activations_match_numpy(lib, dtype, framework):
    rng = np.random.default_rng(7)
    x = rng.uniform(-6, 6, 333).astype(dtype)
    y = rng.uniform(-6, 6, 333).astype(dtype)
    entry = "adv_f32" if dtype == np.float32 else "adv_f16"
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=2e-3, atol=2e-3)
    tmp = 0 if framework else 65536
    cases = [
        (20, {}, _gelu(x.astype(np.float64))),
        (21, {}, _sigmoid(x.astype(np.float64))),
        (22, {}, x * _sigmoid(x.astype(np.float64))),
        (23, {"scalar": 1.702}, x * _sigmoid(np.float64(np.array(1.702, dtype)) * x.astype(np.float64))),
        (24, {"y": y, "scalar": 0.5}, x * y * _sigmoid(0.5 * y.astype(np.float64))),
        (25, {"y": y}, x * _gelu(y.astype(np.float64))),
        (28, {}, x / (1 + np.exp(-1.702 * x.astype(np.float64)))),   # FasterGelu
    ]
    for op, kw, want in cases:
        got = run(lib, op, x, tmp=tmp, entry=entry, **kw)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(dtype).astype(np.float64), err_msg=str(op),
                                   **tol)


def test_exp_with_taylor_terms_and_plain(lib):
    x = np.random.default_rng(1).uniform(-10, 10, 512).astype(np.float32)
    xa = np.floor(x)
    xb = x - xa
    item = np.ones_like(x)
    taylor = np.ones_like(x)
    for k in range(10):
        item = item * (xb / np.float32(k + 1))
        taylor = taylor + item
    np.testing.assert_allclose(run(lib, 9, x), np.exp(xa.astype(np.float64)).astype(np.float32) * taylor, rtol=1e-6)
    np.testing.assert_allclose(run(lib, 10, x), np.exp(x.astype(np.float64)).astype(np.float32), rtol=1e-6)


def test_clamp_fmod_power_axpy(lib):
    rng = np.random.default_rng(2)
    x = rng.uniform(-10, 10, 300).astype(np.float32)
    y = rng.uniform(0.5, 4, 300).astype(np.float32) * np.where(rng.random(300) < 0.5, -1, 1).astype(np.float32)
    np.testing.assert_array_equal(run(lib, 11, x, scalar=1.5), np.maximum(x, np.float32(1.5)))
    np.testing.assert_array_equal(run(lib, 12, x, scalar=1.5), np.minimum(x, np.float32(1.5)))
    np.testing.assert_allclose(run(lib, 13, x, y), np.fmod(x, y), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(run(lib, 13, x, y, tmp=0), np.fmod(x, y), rtol=1e-6, atol=1e-6)
    base = np.abs(x) + 0.5
    np.testing.assert_allclose(run(lib, 14, base, y), _f64(np.power, base, y).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(run(lib, 15, base, scalar=2.5), _f64(np.power, base, np.float32(2.5)).astype(np.float32),
                               rtol=1e-6)
    np.testing.assert_allclose(run(lib, 16, x, y, scalar=1.5), _f64(np.power, np.float32(1.5), y).astype(np.float32),
                               rtol=1e-6)
    np.testing.assert_allclose(run(lib, 17, x, y, scalar=3.0), (x * np.float32(3.0)).astype(np.float32), rtol=1e-6)


def _tree_sum(row):
    row = list(row.astype(np.float32))
    while len(row) > 1:
        nxt = [np.float32(row[i] + row[i + 1]) for i in range(0, len(row) - 1, 2)]
        row = nxt + ([row[-1]] if len(row) % 2 else [])
    return row[0]


@fuzz_settings(0.2)
@given(outter=st.integers(1, 9), n=st.sampled_from([1, 7, 8, 65, 130]), seed=st.integers(0, 2**16))
def test_sum_adds_each_row_in_the_devices_tree_order(lib, outter, n, seed):
    inner = (n + 7) // 8 * 8
    x = np.random.default_rng(seed).standard_normal((outter, inner)).astype(np.float32) * 1000
    out = np.zeros((outter + 7) // 8 * 8, np.float32)
    lib.launch("sum_f32", 1, [("x", x), ("y", x), ("p", np.array([outter, n, 0, 0], np.int32)), ("out", out)])
    np.testing.assert_array_equal(out[:outter], [_tree_sum(r[:n]) for r in x])


def test_arange(lib):
    got = run(lib, 27, np.zeros(100, np.float32), scalar=-3.25)
    np.testing.assert_array_equal(got, np.float32(-3.25) + np.arange(100, dtype=np.float32) * np.float32(0.5))


def _softmax(lib, op, x, y=None, ori_k=None):
    m, k = x.shape
    y = np.zeros_like(x) if y is None else y
    out = np.zeros(m * k + 3 * m * 8, np.float32)
    p = np.array([m, k, op, k if ori_k is None else ori_k], np.int32)
    lib.launch("softmax_f32", 1, [("x", x), ("y", y), ("p", p), ("out", out)])
    rows = lambda a: a.reshape(m, 8)  # noqa: E731
    return out[:m * k].reshape(m, k), rows(out[m * k:m * k + m * 8]), rows(out[m * k + m * 8:m * k + 16 * m]), \
        rows(out[m * k + 16 * m:])


@pytest.mark.parametrize("ori_k", [None, 13])
def test_softmax_and_logsoftmax_match_the_api_formulas(lib, ori_k):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((5, 16)).astype(np.float32) * 4
    k = 16 if ori_k is None else ori_k
    x64 = x.astype(np.float64)
    mx = x64[:, :k].max(axis=1, keepdims=True)
    sm = np.exp(x64[:, :k] - mx).sum(axis=1, keepdims=True)
    want = np.exp(x64 - mx) / sm
    dst, s, m, _ = _softmax(lib, 0, x, ori_k=ori_k)
    np.testing.assert_allclose(dst, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s, np.repeat(sm, 8, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(m, np.repeat(mx.astype(np.float32), 8, axis=1))
    dst, _, _, _ = _softmax(lib, 1, x, ori_k=ori_k)
    np.testing.assert_allclose(dst, np.log10(want), rtol=1e-5, atol=1e-6)   # log10: the API page's formula


def test_softmax_flash_v2_update_and_simple_softmax(lib):
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    y = np.zeros_like(x)
    y[:, :8] = rng.uniform(1, 3, (4, 1)).astype(np.float32)       # running sums
    y[:, 8:16] = rng.uniform(-1, 2, (4, 1)).astype(np.float32)    # running maxes
    in_sum, in_max = y[:, :1].astype(np.float64), y[:, 8:9].astype(np.float64)
    x64 = x.astype(np.float64)
    new_max = np.maximum(in_max, x64.max(axis=1, keepdims=True))
    e = np.exp(x64 - new_max)
    exp_max = np.exp(in_max - new_max)
    dst, s, m, em = _softmax(lib, 2, x, y)
    np.testing.assert_allclose(dst, e, rtol=1e-6)
    np.testing.assert_array_equal(m[:, :1], new_max.astype(np.float32))
    np.testing.assert_allclose(s[:, :1], exp_max * in_sum + e.sum(axis=1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(em[:, :1], exp_max, rtol=1e-6)
    dst, _, _, _ = _softmax(lib, 5, x, y)
    np.testing.assert_allclose(dst, np.exp(x64 - in_max) / in_sum, rtol=1e-6)


def test_softmax_grad_and_front(lib):
    rng = np.random.default_rng(13)
    x = rng.uniform(0, 1, (3, 24)).astype(np.float32)
    g = rng.standard_normal((3, 24)).astype(np.float32)
    d = (g.astype(np.float64) * x).sum(axis=1, keepdims=True)
    dst, _, _, _ = _softmax(lib, 3, x, g)
    np.testing.assert_allclose(dst, (g - d.astype(np.float32)) * x, rtol=1e-5, atol=1e-6)
    _, front, _, _ = _softmax(lib, 4, x, g)
    np.testing.assert_allclose(front, np.repeat(d, 8, axis=1), rtol=1e-6)


def test_softmax_checks_basic_block_and_scratch(lib):
    x = np.ones((5, 16), np.float32)
    with pytest.raises(AscendCCheckError) as info:
        _softmax(lib, 6, x)
    assert re.search(rf"adv_math_kernels\.cpp:{_line('basic_block_call')}: SoftMax: isBasicBlock is set but "
                     r"\[5, 16\] is not a basic block", str(info.value)), str(info.value)
    with pytest.raises(AscendCCheckError) as info:
        _softmax(lib, 7, x)
    assert re.search(rf"adv_math_kernels\.cpp:{_line('small_scratch_call')}: SoftMax: sharedTmpBuffer has 64 bytes, "
                     r"but this call needs at least 352 \(the minValue of GetSoftMaxMinTmpSize", str(info.value))


def _quant_ref(x, scale, offset):
    h = lambda v: np.asarray(v, np.float32).astype(np.float16)  # noqa: E731
    v = (h(x) * h(scale)).astype(np.float16) + h(offset)   # half arithmetic, as the device
    return np.clip(np.round(v.astype(np.float32)), -128, 127).astype(np.int8)


@pytest.mark.parametrize("per_channel", [0, 1])
def test_ascend_quant_rounds_in_half_and_saturates(lib, per_channel):
    rng = np.random.default_rng(14)
    n = 96
    x = rng.uniform(-80, 80, n).astype(np.float32)
    x[:4] = [4.25, -4.25, 3.75, 200.0]   # ties to even after *2 + 0.5, and saturation
    y = np.zeros(32, np.float32)
    if per_channel:
        y[:16] = rng.uniform(0.5, 2, 16)
        y[16:] = rng.uniform(-1, 1, 16)
        scale, offset = np.tile(y[:16], n // 16), np.tile(y[16:], n // 16)
    else:
        y[0], y[16] = 2.0, 0.5
        scale, offset = y[0], y[16]
    out = np.zeros(128, np.int8)
    lib.launch("quant_f32", 1, [("x", np.concatenate([x, np.zeros(32, np.float32)])), ("y", y),
                                ("p", np.array([n, per_channel, 0, 0], np.int32)), ("out", out)])
    np.testing.assert_array_equal(out[:n], _quant_ref(x, scale, offset))


def test_ascend_dequant_scales_the_first_calcount_of_each_row(lib):
    rng = np.random.default_rng(15)
    m, n, cal = 3, 16, 12
    x = rng.integers(-1000, 1000, (m, n)).astype(np.int32)
    sc = rng.uniform(-2, 2, n).astype(np.float32)
    out = np.zeros((m, n), np.float32)
    lib.launch("dequant_f32", 1, [("x", x), ("y", sc), ("p", np.array([m, n, cal, 0], np.int32)), ("out", out)])
    np.testing.assert_array_equal(out[:, :cal], x[:, :cal].astype(np.float32) * sc[:cal])


def _bcast(lib, m, k, axis, tmp=8192):
    x = np.arange(1, (m if axis == 1 else k) + 1, dtype=np.float32)
    x = np.concatenate([x, np.zeros(-x.size % 8, np.float32)])
    out = np.zeros(m * k + 8, np.float32)
    lib.launch("bcast_f32", 1, [("x", x), ("y", x), ("p", np.array([m, k, axis, tmp], np.int32)), ("out", out)])
    return x, out


def test_broadcast_rows_and_columns_and_fill(lib):
    x, out = _bcast(lib, 5, 24, 1)
    np.testing.assert_array_equal(out[:120].reshape(5, 24), np.repeat(x[:5, None], 24, axis=1))
    np.testing.assert_array_equal(out[120:], np.full(8, 7, np.float32))   # Fill
    x, out = _bcast(lib, 3, 16, 0)
    np.testing.assert_array_equal(out[:48].reshape(3, 16), np.tile(x[:16], (3, 1)))


def test_broadcast_scratch_minimum(lib):
    # [5, 20] float: 8 x 8 floats for Brcb and 8 rows of 24 for the unaligned copy = 1024 bytes
    with pytest.raises(AscendCCheckError) as info:
        _bcast(lib, 5, 20, 1, tmp=512)
    assert re.search(rf"adv_math_kernels\.cpp:{_line('bcast_call')}: Broadcast: sharedTmpBuffer has 512 bytes, but "
                     r"this call needs at least 1024", str(info.value)), str(info.value)


@pytest.mark.parametrize("ori_h", [32, 20])
def test_rmsnorm_over_the_original_h(lib, ori_h):
    rng = np.random.default_rng(16)
    rows, h = 6, 32
    x = rng.standard_normal((rows, h)).astype(np.float32)
    g = rng.uniform(0.5, 1.5, h).astype(np.float32)
    out = np.zeros((rows, h), np.float32)
    lib.launch("rmsnorm_f32", 1, [("x", x), ("y", g), ("p", np.array([rows, h, ori_h, 0], np.int32)), ("out", out)])
    x64 = x.astype(np.float64)
    rstd = 1 / np.sqrt((x64[:, :ori_h] ** 2).mean(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, x64 * rstd * g, rtol=1e-5, atol=1e-6)


def test_rmsnorm_scratch_minimum(lib):
    x = np.ones((2, 32), np.float32)
    with pytest.raises(AscendCCheckError) as info:
        lib.launch("rmsnorm_f32", 1, [("x", x), ("y", np.ones(32, np.float32)),
                                      ("p", np.array([2, 32, 32, 64], np.int32)), ("out", x.copy())])
    assert re.search(rf"adv_math_kernels\.cpp:{_line('rmsnorm_call')}: RmsNorm: sharedTmpBuffer has 64 bytes, but "
                     r"this call needs at least 160", str(info.value)), str(info.value)


def test_deepnorm_is_layernorm_of_alpha_x_plus_gx(lib):
    rng = np.random.default_rng(17)
    rows, h, ori = 4, 32, 24
    x, gx = rng.standard_normal((2, rows, h)).astype(np.float32)
    gamma, beta = rng.uniform(0.5, 1.5, (2, h)).astype(np.float32)
    buf = np.concatenate([x.ravel(), gx.ravel(), gamma, beta])
    out = np.zeros(rows * h + 16, np.float32)
    lib.launch("deepnorm_f32", 1, [("x", buf), ("y", np.zeros(8, np.float32)), ("p", np.array([rows, h, ori, 4096], np.int32)),
                                   ("out", out)])
    x1 = 0.5 * x.astype(np.float64) + gx
    mu = x1[:, :ori].mean(axis=1, keepdims=True)
    var = ((x1[:, :ori] - mu) ** 2).mean(axis=1, keepdims=True)
    want = gamma * (x1 - mu) / np.sqrt(var + 1e-5) + beta
    np.testing.assert_allclose(out[:rows * h].reshape(rows, h), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[rows * h:rows * h + rows], mu.ravel(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[rows * h + 8:rows * h + 8 + rows], var.ravel(), rtol=1e-5)
    with pytest.raises(AscendCCheckError) as info:   # 3 float rows of 32 + 2 x 32 bytes = 448
        lib.launch("deepnorm_f32", 1, [("x", buf), ("y", np.zeros(8, np.float32)),
                                       ("p", np.array([rows, h, ori, 256], np.int32)), ("out", out)])
    assert re.search(rf"adv_math_kernels\.cpp:{_line('deepnorm_call')}: DeepNorm: sharedTmpBuffer has 256 bytes, "
                     r"but this call needs at least 448", str(info.value)), str(info.value)


def test_xor_int16(lib):
    rng = np.random.default_rng(3)
    a = rng.integers(-32768, 32767, 512, dtype=np.int16)
    b = rng.integers(-32768, 32767, 512, dtype=np.int16)
    np.testing.assert_array_equal(run(lib, 0, a, b, entry="adv_i16"), a ^ b)


@pytest.mark.parametrize("last_axis", [1, 0])
def test_cumsum_rows_and_columns(lib, last_axis):
    x = np.random.default_rng(4).uniform(-1, 1, (5, 16)).astype(np.float32)
    out = np.zeros(5 * 16 + 16, np.float32)
    p = np.array([5, 16, last_axis, 0], np.int32)
    lib.launch("cumsum_f32", 1, [("x", x), ("y", np.zeros(1, np.float32)), ("p", p), ("out", out)])
    want = np.cumsum(x, axis=1 if last_axis else 0, dtype=np.float32)
    np.testing.assert_allclose(out[:80].reshape(5, 16), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[80:], want[-1], rtol=1e-5, atol=1e-6)


def test_host_tmp_sizes_follow_the_api_rules(lib):
    fn = ctypes.CDLL(lib.path).adv_tmp_sizes
    out = (ctypes.c_uint32 * 8)()
    fn(ctypes.c_uint32(1000), ctypes.c_uint32(4), out)
    # (max, min): Acosh 1 float node, Erf 3, Exp 3 float temporaries, Frac none for float
    assert list(out) == [4000, 256, 3 * 4000, 3 * 256, 3 * 4000, 3 * 256, 0, 0]
    fn(ctypes.c_uint32(1000), ctypes.c_uint32(2), out)
    assert list(out) == [2 * 1000 * 2, 512, 8 * 2000, 8 * 256, 4 * 4000, 4 * 256, 4 * 2000, 4 * 256]


# ---- failure paths: the message names the user's file:line ---------------------------------------

def _fails(lib, marker, pattern, **kw):
    with pytest.raises(AscendCCheckError) as info:
        run(lib, **kw)
    msg = str(info.value)
    assert re.search(rf"adv_math_kernels\.cpp:{_line(marker)}: ", msg), msg
    assert re.search(pattern, msg), msg


def test_scratch_smaller_than_the_minimum_is_refused(lib):
    x = np.ones(64, np.float32) * 2
    _fails(lib, "acosh_call", r"Acosh: sharedTmpBuffer has 128 bytes, but this call needs at least 256 "
                              r"\(the minValue of GetAcoshMaxMinTmpSize", op=0, x=x, tmp=128)
    _fails(lib, "exp_call", r"Exp \(high-level, Taylor\): sharedTmpBuffer has 512 bytes, but this call needs at "
                            r"least 768", op=9, x=x, tmp=512)


def test_gelu_scratch_below_three_repeats(lib):
    _fails(lib, "gelu_call", r"Gelu: sharedTmpBuffer has 512 bytes, but this call needs at least 768",
           op=26, x=np.ones(64, np.float32), tmp=512)


def test_scratch_overlapping_an_operand_and_in_place_are_refused(lib):
    x = np.ones(64, np.float32) * 2
    _fails(lib, "overlap_call", r"Acosh: dstTensor UB \[\d+, \d+\) overlaps srcTensor", op=18, x=x)
    with pytest.raises(AscendCCheckError, match=r"Acosh: sharedTmpBuffer UB \[\d+, \d+\) overlaps dstTensor"):
        run(lib, 19, x)


def test_taylor_exp_is_not_on_310p_and_erf_rejects_int(lib):
    x = np.ones(64, np.float32)
    _fails(lib, "exp_call", r"Exp \(high-level, Taylor\) is not available on ascend310p \(Atlas A2/A3 products only",
           op=9, x=x, target="ascend310p")
    np.testing.assert_allclose(run(lib, 5, x, target="ascend310p"), np.full(64, math.erf(1.0), np.float32))


def test_framework_scratch_needs_free_ub(lib):
    # adv_f32 plans 3 x 8 KB + 64 KB of UB: the framework-allocated Erf half (8 x 256 B) fits ...
    x = np.ones(64, np.float16)
    np.testing.assert_allclose(run(lib, 5, x, tmp=0, entry="adv_f16").astype(np.float32), math.erf(1.0), rtol=1e-3)
    # ... adv_full_ub leaves 256 bytes free and float Erf needs 768
    x = np.ones(64, np.float32)
    with pytest.raises(AscendCCheckError) as info:
        lib.launch("adv_full_ub", 1, [("x", x), ("y", x), ("p", x), ("out", x.copy())])
    msg = str(info.value)
    assert re.search(rf"adv_math_kernels\.cpp:{_line('full_ub_call')}: Erf: without sharedTmpBuffer the API takes "
                     r"its scratch \(at least 768 bytes, the minValue of GetErfMaxMinTmpSize\) from the UB that "
                     r"TPipe::InitBuffer left free, but only 256 of 196608 bytes are free", msg), msg
