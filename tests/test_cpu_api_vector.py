"""Vector APIs of the CPU implementation against numpy: Cast in every round mode,
Compare/Compares + Select, the mask/repeat form, reductions, Brcb, DataCopyPad and the
element-wise ops (tests/ascendc_kernels/vector_kernels.cpp, one build for the module)."""
import os

import ml_dtypes
import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner

KERNELS = ASCENDC_KERNELS
N = 1024
BF16 = np.dtype(ml_dtypes.bfloat16)


pytestmark = pytest.mark.usefixtures("private_cache_dir")


@pytest.fixture(scope="module")
def lib():
    with open(os.path.join(KERNELS, "vector_kernels.cpp"), encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="vector_kernels")


# ---- Cast ------------------------------------------------------------------------------

def _float_inputs(rng, dtype):
    """float32 values that exercise every rounding branch for a cast to `dtype`."""
    parts = [rng.standard_normal(400).astype(np.float32) * 50]
    # Exact midpoints between neighbouring values of the target type: the ties.
    base = (rng.standard_normal(200) * 20).astype(dtype)
    nxt = np.nextafter(base, np.array(np.inf, dtype))
    parts.append(((base.astype(np.float64) + nxt.astype(np.float64)) / 2).astype(np.float32))
    parts.append(np.arange(-20, 20, dtype=np.float32) + 0.5)                       # integer ties
    parts.append(np.array([0.0, -0.0, 1e-8, -1e-8, 65504, 65519, 65520, 70000, -70000, 3e38, -3e38],
                          np.float32))
    x = np.concatenate(parts)
    return np.concatenate([x, rng.standard_normal(N - x.size).astype(np.float32)])


def _round_float(x32, dtype, mode):
    """numpy model of an Ascend RoundMode to a float type: bracket x, then choose."""
    x = x32.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        r = x32.astype(dtype)                     # round to nearest even
        rv = r.astype(np.float64)
        up = np.nextafter(r, np.array(np.inf, dtype))
        down = np.nextafter(r, np.array(-np.inf, dtype))
        lo = np.where(rv > x, down, r)
        hi = np.where(rv < x, up, r)
        lo64, hi64 = lo.astype(np.float64), hi.astype(np.float64)
        if mode in ("NONE", "RINT"):
            out = r
        elif mode == "FLOOR":
            out = lo
        elif mode == "CEIL":
            out = hi
        elif mode == "TRUNC":
            out = np.where(x > 0, lo, hi)
        elif mode == "ROUND":
            dlo, dhi = x - lo64, hi64 - x
            out = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(x > 0, hi, lo)))
            out = np.where(np.isinf(rv), r, out)
        elif mode == "ODD":
            bits = lo.view(np.uint16 if lo.itemsize == 2 else np.uint32)
            out = np.where(bits & 1, lo, hi)
        return np.where(rv == x, r, out).astype(dtype)


def _round_int(x, mode, dtype):
    x = x.astype(np.float64)
    y = {"RINT": np.rint, "NONE": np.rint, "FLOOR": np.floor, "CEIL": np.ceil, "TRUNC": np.trunc,
         "ROUND": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)}[mode](x)
    info = np.iinfo(dtype)
    return np.clip(y, info.min, info.max).astype(dtype)


FLOAT_MODES = ["RINT", "FLOOR", "CEIL", "ROUND", "TRUNC"]


@pytest.mark.parametrize("mode", FLOAT_MODES + ["NONE", "ODD"])
def test_cast_float_to_half(lib, mode):
    x = _float_inputs(np.random.default_rng(10), np.float16)
    y = np.zeros(N, np.float16)
    lib.launch(f"cast_float_half_{mode}", 1, [("src", x), ("dst", y)])
    want = _round_float(x, np.float16, mode)
    np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("mode", FLOAT_MODES)
def test_cast_float_to_bfloat16(lib, mode):
    x = _float_inputs(np.random.default_rng(11), BF16)
    x[-11:] = np.array([0.0, -0.0, 1e-8, -1e-8, 1.0, -1.0, 3.4e38, -3.4e38, 2.0, 7.0, 9.0], np.float32)
    y = np.zeros(N, np.uint16)
    lib.launch(f"cast_float_bfloat16_{mode}", 1, [("src", x), ("dst", y)])
    want = _round_float(x, BF16, mode)
    np.testing.assert_array_equal(y, want.view(np.uint16))


@pytest.mark.parametrize("mode", FLOAT_MODES)
def test_cast_float_to_int32_and_float(lib, mode):
    rng = np.random.default_rng(12)
    x = np.concatenate([rng.standard_normal(N - 44).astype(np.float32) * 1000,
                        np.arange(-20, 20, dtype=np.float32) + 0.5,
                        np.array([3e9, -3e9, 2.5, -2.5], np.float32)])
    y = np.zeros(N, np.int32)
    lib.launch(f"cast_float_int32_{mode}", 1, [("src", x), ("dst", y)])
    np.testing.assert_array_equal(y, _round_int(x, mode, np.int32))
    f = np.zeros(N, np.float32)
    lib.launch(f"cast_float_float_{mode}", 1, [("src", x), ("dst", f)])
    np.testing.assert_array_equal(f, _round_int(x, mode, np.int64).astype(np.float32))


@pytest.mark.parametrize("mode", FLOAT_MODES)
def test_cast_half_to_int32(lib, mode):
    x = (np.random.default_rng(13).standard_normal(N) * 300).astype(np.float16)
    x[:8] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 65504, -65504]
    y = np.zeros(N, np.int32)
    lib.launch(f"cast_half_int32_{mode}", 1, [("src", x), ("dst", y)])
    np.testing.assert_array_equal(y, _round_int(x, mode, np.int32))


@pytest.mark.parametrize("mode", FLOAT_MODES + ["NONE"])
def test_cast_half_to_int8_saturates(lib, mode):
    x = (np.random.default_rng(14).standard_normal(N) * 100).astype(np.float16)
    y = np.zeros(N, np.int8)
    lib.launch(f"cast_half_int8_{mode}", 1, [("src", x), ("dst", y)])
    np.testing.assert_array_equal(y, _round_int(x, mode, np.int8))


def test_exact_widening_casts(lib):
    rng = np.random.default_rng(15)
    h = rng.standard_normal(N).astype(np.float16)
    f = np.zeros(N, np.float32)
    lib.launch("cast_half_float_NONE", 1, [("src", h), ("dst", f)])
    np.testing.assert_array_equal(f, h.astype(np.float32))
    b = rng.standard_normal(N).astype(BF16)
    lib.launch("cast_bfloat16_float_NONE", 1, [("src", b.view(np.uint16).copy()), ("dst", f)])
    np.testing.assert_array_equal(f, b.astype(np.float32))
    u = rng.integers(0, 256, N, dtype=np.uint8)
    h2 = np.zeros(N, np.float16)
    lib.launch("cast_uint8_half_NONE", 1, [("src", u), ("dst", h2)])
    np.testing.assert_array_equal(h2, u.astype(np.float16))
    i = rng.integers(-2**31, 2**31 - 1, N, dtype=np.int32)
    for mode in ("NONE", "RINT"):
        lib.launch(f"cast_int32_float_{mode}", 1, [("src", i), ("dst", f)])
        np.testing.assert_array_equal(f, i.astype(np.float32))


# ---- Compare / Select ----------------------------------------------------------------------

CMP = {"LT": np.less, "GT": np.greater, "EQ": np.equal, "LE": np.less_equal, "GE": np.greater_equal,
       "NE": np.not_equal}


@pytest.mark.parametrize("mode", list(CMP))
def test_compare_and_select(lib, mode):
    rng = np.random.default_rng(20)
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    b[::7] = a[::7]
    mask = np.zeros(N // 8, np.uint8)
    sel = np.zeros(N, np.float32)
    lib.launch(f"cmpsel_{mode}", 1, [("a", a), ("b", b), ("mask", mask), ("sel", sel)])
    cond = CMP[mode](a, b)
    np.testing.assert_array_equal(mask, np.packbits(cond, bitorder="little"))
    np.testing.assert_array_equal(sel, np.where(cond, a, b))


@pytest.mark.parametrize("mode", list(CMP))
def test_compares_and_scalar_select_on_half(lib, mode):
    a = np.random.default_rng(21).standard_normal(N).astype(np.float16)
    a[::5] = 0.25
    mask = np.zeros(N // 8, np.uint8)
    sel = np.zeros(N, np.float16)
    lib.launch(f"cmpssel_{mode}", 1, [("a", a), ("unused", a), ("mask", mask), ("sel", sel)])
    cond = CMP[mode](a, np.float16(0.25))
    np.testing.assert_array_equal(mask, np.packbits(cond, bitorder="little"))
    np.testing.assert_array_equal(sel, np.where(cond, a, np.float16(-1)))


# ---- mask/repeat form ------------------------------------------------------------------------

def test_mask_repeat_form_with_strides(lib):
    rng = np.random.default_rng(30)
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    o1 = np.zeros(N, np.float32)
    o2 = np.zeros(N, np.float32)
    stats = lib.launch("mask_forms", 1, [("a", a), ("b", b), ("o1", o1), ("o2", o2)])
    want1 = np.full(N, -7, np.float32)
    for r in range(3):                      # mask 40, dstRep 10, src0 blk 2 / rep 16, src1 rep 8
        for j in range(40):
            blk, e = divmod(j, 8)
            want1[(r * 10 + blk) * 8 + e] = a[(r * 16 + blk * 2) * 8 + e] + b[(r * 8 + blk) * 8 + e]
    np.testing.assert_array_equal(o1, want1)
    want2 = np.full(N, -7, np.float32)
    for r in range(4):                      # lanes whose bit is set in 0xF0F0...
        for j in range(64):
            if j % 8 >= 4:
                want2[r * 64 + j] = a[r * 64 + j] * 3
    np.testing.assert_array_equal(o2, want2)
    # Two Duplicates (1024 floats = 16 repeats each), then Add (3 repeats) and Muls (4).
    assert stats.vector_instructions == 4
    assert stats.vector_repeats == 16 + 16 + 3 + 4


# ---- reductions and Brcb -------------------------------------------------------------------

def test_reductions_and_brcb(lib):
    s = np.random.default_rng(40).standard_normal(512).astype(np.float32)
    s[100] = 9.0                            # a unique maximum inside ReduceMax's first 500
    out = np.zeros(64, np.float32)
    brcb = np.zeros(128, np.float32)
    lib.launch("reductions", 1, [("src", s), ("out", out), ("brcb", brcb)])
    idx = out.view(np.uint32)
    s64 = s.astype(np.float64)
    # Each repeat sums its 64 lanes in a pairwise tree, rounding every partial sum to float.
    def tree(v):
        while v.shape[-1] > 1:
            v = (v[..., 0::2].astype(np.float64) + v[..., 1::2]).astype(np.float32)
        return v[..., 0]
    sums = tree(s.reshape(8, 64))
    np.testing.assert_array_equal(out[:8], sums)
    rows = s.reshape(8, 64)[:, :48]
    np.testing.assert_array_equal(out[8:24:2], rows.max(axis=1))
    np.testing.assert_array_equal(idx[9:24:2], rows.argmax(axis=1))
    acc = sums[0]                            # ReduceSum's count form on 2201 adds the repeats in order
    for v in sums[1:]:
        acc = np.float32(np.float64(acc) + v)
    assert out[24] == acc
    np.testing.assert_allclose(out[24], s64.sum(), rtol=1e-5)
    assert (out[32], idx[33]) == (9.0, 100)
    assert (out[40], idx[41]) == (s.min(), s.argmin())
    np.testing.assert_array_equal(brcb, np.repeat(s[:16], 8))


# ---- data movement -------------------------------------------------------------------------

def test_datacopypad_and_strided_datacopy(lib):
    src = np.arange(64, dtype=np.float32)
    ub = np.zeros(48, np.float32)
    out = np.zeros(64, np.float32)
    strided = np.zeros(16, np.float32)
    stats = lib.launch("pad_copies", 1, [("src", src), ("ub", ub), ("out", out), ("strided", strided)])
    want_ub = np.full((3, 16), -1, np.float32)
    for r in range(3):                      # GM rows 40 bytes apart by a 8-byte gap -> 12 floats
        want_ub[r, :10] = src[r * 12: r * 12 + 10]
    np.testing.assert_array_equal(ub, want_ub.ravel())
    want_out = np.zeros(64, np.float32)
    for r in range(3):                      # written back with a 4-byte gap -> 11 floats apart
        want_out[r * 11: r * 11 + 10] = src[r * 12: r * 12 + 10]
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(strided, np.concatenate([src[0:8], src[16:24]]))
    assert stats.gm_bytes_read == 120 + 64
    assert stats.gm_bytes_written == 120 + 48 * 4 + 16 * 4


# ---- element-wise ops ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_elementwise_ops(lib, dtype):
    rng = np.random.default_rng(50)
    m = 256
    x = (rng.standard_normal(m) * 3).astype(dtype)
    y = (rng.random(m) * 4 + 0.25).astype(dtype)
    out = np.zeros(14 * m, dtype)
    name = "half" if dtype == np.float16 else "float"
    lib.launch(f"elementwise_{name}", 1, [("x", x), ("y", y), ("out", out)])
    a, b = x.astype(np.float32), y.astype(np.float32)
    exact = {0: a + b, 1: a - b, 2: a * b, 3: a / b, 4: np.maximum(a, b), 5: np.minimum(a, b), 7: np.abs(a),
             8: np.maximum(a, 0), 9: np.sqrt(b), 11: np.float32(1) / b, 12: a + np.float32(1.5),
             13: np.where(a < 0, a * np.float32(0.25), a)}
    got = out.reshape(14, m)
    for k, want in exact.items():
        np.testing.assert_array_equal(got[k], want.astype(dtype), err_msg=f"op {k}")
    rtol = 1e-3 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(got[6].astype(np.float64), np.exp(a).astype(dtype).astype(np.float64), rtol=rtol)
    np.testing.assert_allclose(got[10].astype(np.float64), np.log(b).astype(dtype).astype(np.float64), rtol=rtol,
                               atol=rtol)
