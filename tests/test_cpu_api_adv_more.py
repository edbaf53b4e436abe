"""AscendAntiQuant, DropOut and Select with a bytes mask on the CPU Ascend C API against numpy, with
their host scratch helpers and failure paths; kernels in tests/ascendc_kernels/adv_more_kernels.cpp
(one build)."""
import ctypes
import os
import re

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import AscendCCheckError

pytestmark = pytest.mark.usefixtures("private_cache_dir")
SOURCE = os.path.join(ASCENDC_KERNELS, "adv_more_kernels.cpp")


@pytest.fixture(scope="module")
def lib():
    with open(SOURCE, encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="adv_more_kernels")


def _line(marker):
    with open(SOURCE, encoding="utf-8") as f:
        for i, text in enumerate(f, 1):
            if f"LINE:{marker}" in text:
                return i
    raise AssertionError(marker)


def _bits(v):
    return int(np.array([v], np.float32).view(np.int32)[0])


def _fails(lib, entry, args, marker, pattern):
    with pytest.raises(AscendCCheckError) as info:
        lib.launch(entry, 1, args)
    msg = str(info.value)
    assert re.search(rf"adv_more_kernels\.cpp:{_line(marker)}: ", msg), msg
    assert re.search(pattern, msg), msg


@pytest.mark.parametrize("k,n,groups", [(8, 128, 1), (6, 32, 3), (1, 32, 1)])
def test_antiquant_per_channel_in_half_steps(lib, k, n, groups):
    rng = np.random.default_rng(k * n)
    src = rng.integers(-128, 128, (k, n)).astype(np.int8)
    offset = rng.uniform(-10, 10, (groups, n)).astype(np.float16)
    scale = rng.uniform(-10, 10, (groups, n)).astype(np.float16)
    out = np.zeros(k * n, np.float16)
    lib.launch("antiquant_f16", 1, [("x", src), ("y", np.concatenate([offset.ravel(), scale.ravel()])),
                                    ("p", np.array([k, n, groups, 0], np.int32)), ("out", out)])
    g = k // groups
    rows = np.arange(k) // g
    want = (src.astype(np.float16) + offset[rows]) * scale[rows]   # each step rounded to half
    np.testing.assert_array_equal(out.reshape(k, n), want)


def test_antiquant_groups_must_divide_k(lib):
    args = [("x", np.zeros(8 * 32, np.int8)), ("y", np.zeros(2 * 3 * 32, np.float16)),
            ("p", np.array([8, 32, 3, 0], np.int32)), ("out", np.zeros(8 * 32, np.float16))]
    _fails(lib, "antiquant_f16", args, "antiquant_call", r"AscendAntiQuant: scale \[3, 32\] and offset \[3, 32\] do "
                                                         r"not fit the source \[8, 32\]")


@pytest.mark.parametrize("w,mw", [(64, 64), (32, 64), (64, 8), (64, 32)])   # byte, byte padded, bit, bit padded
def test_dropout_modes_inferred_from_the_shape(lib, w, mw):
    rng = np.random.default_rng(w + mw)
    rows, keep = 4, np.float32(0.3)
    src = rng.uniform(-100, 100, (rows, w)).astype(np.float32)
    mask = rng.integers(0, 256 if mw * 8 <= w * 8 and mw < w else 2, (rows, mw)).astype(np.uint8)
    out = np.zeros(rows * w, np.float32)
    lib.launch("dropout_f32", 1, [("x", src), ("y", mask), ("p", np.array([rows, w, mw, _bits(keep)], np.int32)),
                                  ("out", out)])
    if mw >= w:
        kept = mask[:, :w] != 0
    else:
        kept = np.unpackbits(mask, axis=1, bitorder="little")[:, :w] != 0
    want = np.where(kept, src * np.float32(1 / keep), 0).astype(np.float32)
    np.testing.assert_array_equal(out.reshape(rows, w), want)


def test_dropout_keep_prob_range(lib):
    args = [("x", np.ones(64, np.float32)), ("y", np.ones(64, np.uint8)),
            ("p", np.array([1, 64, 64, _bits(1.0)], np.int32)), ("out", np.zeros(64, np.float32))]
    _fails(lib, "dropout_f32", args, "dropout_call", r"DropOut: keepProb = 1; it must be in \(0, 1\)")


@pytest.mark.parametrize("w,mw", [(16, 32), (32, 32)])
def test_select_with_bytes_mask_both_forms(lib, w, mw):
    rng = np.random.default_rng(w)
    rows, s = 2, np.float32(-7.5)
    src = rng.uniform(-1, 1, (rows, w)).astype(np.float32)
    mask = rng.integers(0, 2, (rows, mw)).astype(np.uint8)
    out = np.zeros(2 * rows * w, np.float32)
    lib.launch("select_f32", 1, [("x", src), ("y", mask), ("p", np.array([rows, w, mw, _bits(s)], np.int32)),
                                 ("out", out)])
    m0 = mask[:, :w] == 0
    np.testing.assert_array_equal(out[:rows * w].reshape(rows, w), np.where(m0, src, s))
    np.testing.assert_array_equal(out[rows * w:].reshape(rows, w), np.where(m0, s, src))


def test_select_mask_axis_rule(lib):
    args = [("x", np.ones(4 * 16, np.float32)), ("y", np.ones(4 * 8, np.uint8)),
            ("p", np.array([4, 16, 8, 0], np.int32)), ("out", np.zeros(128, np.float32))]
    _fails(lib, "select_f32", args, "select_call", r"Select \(bytes mask\): info firstAxis 4, srcLastAxis 16, "
                                                   r"maskLastAxis 8: .*at least the source's")


def test_host_scratch_sizes(lib):
    fn = ctypes.CDLL(lib.path).filter_tmp_sizes
    out = (ctypes.c_uint32 * 8)()
    fn(ctypes.c_uint32(8), ctypes.c_uint32(128), ctypes.c_uint32(1), ctypes.c_uint32(32), out)
    # antiquant half: none; bf16 per channel: 2 float scale copies + 64 float columns of k rows;
    # dropout: 2 repeats .. 2 float copies; select: 1024 bytes of half + 512, plus the mask copy
    assert list(out) == [0, 0, 128 * 2 * 4 + 64 * 8 * 4, 128 * 2 * 4 + 64 * 8 * 4, 2 * 1024 * 4, 512,
                         1024 * 2 + 512 + 1024, 1024 * 2 + 512 + 1024]


@pytest.mark.parametrize("d0,d1", [(3, 16), (32, 24), (1, 8)])
def test_pattern_reduce_max_min(lib, d0, d1):
    x = np.random.default_rng(d0 * d1).uniform(-5, 5, (d0, d1)).astype(np.float32)
    pad = max(d0, d1) + 8
    out = np.zeros(4 * pad, np.float32)
    lib.launch("reduce_f32", 1, [("x", x), ("y", np.zeros(8, np.float32)), ("p", np.array([d0, d1, 0, 0], np.int32)),
                                 ("out", out)])
    np.testing.assert_array_equal(out[:d0], x.max(axis=1))
    np.testing.assert_array_equal(out[pad:pad + d1], x.max(axis=0))
    np.testing.assert_array_equal(out[2 * pad:2 * pad + d0], x.min(axis=1))
    np.testing.assert_array_equal(out[3 * pad:3 * pad + d1], x.min(axis=0))


def test_pattern_reduce_scratch_minimum(lib):
    # AR over rows of 24 floats: one 8-float block per row (32 x 32 B = 1024); RA over 32 rows: 16 rows of
    # the 96-byte padded row = 1536
    args = [("x", np.ones((32, 24), np.float32)), ("y", np.zeros(8, np.float32)),
            ("p", np.array([32, 24, 1024, 0], np.int32)), ("out", np.zeros(4 * 40, np.float32))]
    _fails(lib, "reduce_f32", args, "reduce_call", r"ReduceMax: sharedTmpBuffer has 1024 bytes, but this call needs at "
                                                   r"least 1536 \(the minValue of GetReduceMaxMaxMinTmpSize")


@pytest.mark.parametrize("full", [1, 0])
def test_concat_sort_extract(lib, full):
    n = 96
    rng = np.random.default_rng(full)
    v = rng.integers(-20, 20, n).astype(np.float32)   # ties: equal scores keep their input order
    idx = np.arange(n, dtype=np.uint32) + 1000
    out = np.zeros(2 * n, np.float32)
    lib.launch("sort_f32", 1, [("x", v), ("y", idx), ("p", np.array([n, full, 0, 0], np.int32)), ("out", out)])
    groups = [np.arange(n)] if full else [np.arange(g, g + 32) for g in range(0, n, 32)]
    order = np.concatenate([g[np.argsort(-v[g], kind="stable")] for g in groups])
    np.testing.assert_array_equal(out[:n], v[order])
    np.testing.assert_array_equal(out[n:].view(np.uint32), idx[order])


def test_sort_needs_its_merge_scratch(lib):
    args = [("x", np.zeros(96, np.float32)), ("y", np.zeros(96, np.uint32)),
            ("p", np.array([96, 1, 256, 0], np.int32)), ("out", np.zeros(192, np.float32))]
    _fails(lib, "sort_f32", args, "sort_call", r"Sort: tmp .*768")


def _topk(lib, x, idx, fin, n, k, flags):
    outter = x.shape[0]
    y = np.concatenate([idx.ravel().view(np.uint8), np.pad(fin.astype(np.uint8), (0, 32 - outter))])
    out = np.zeros(outter * 16, np.float32)
    lib.launch("topk_f32", 1, [("x", x), ("y", y), ("p", np.array([outter, n, k, flags], np.int32)), ("out", out)])
    return out[:outter * 8].reshape(outter, 8), out[outter * 8:].view(np.int32).reshape(outter, 8)


@pytest.mark.parametrize("largest,small,init", [(1, 0, 0), (0, 0, 0), (1, 1, 1), (0, 1, 0), (1, 0, 1)])
def test_topk_against_a_stable_sort(lib, largest, small, init):
    rng = np.random.default_rng(largest + 2 * small + 4 * init)
    outter, n, k = 3, 29, 5
    x = rng.integers(-8, 8, (outter, 32)).astype(np.float32)   # ties keep the lower position first
    idx = rng.integers(0, 10000, (outter, 32)).astype(np.int32)
    fin = np.array([0, 1, 0], bool)
    vals, inds = _topk(lib, x, idx, fin, n, k, largest | small << 1 | init << 2)
    for r in range(outter):
        row = x[r, :n]
        order = np.argsort(-row if largest else row, kind="stable")[:k]
        np.testing.assert_array_equal(vals[r, :k], row[order])
        want = (idx[r] if small else idx[0])[order] if init else order
        np.testing.assert_array_equal(inds[r, :k], np.full(k, n) if fin[r] else want)


def test_topk_k_range(lib):
    x = np.zeros((1, 32), np.float32)
    with pytest.raises(AscendCCheckError) as info:
        _topk(lib, x, np.zeros((1, 32), np.int32), np.zeros(1, bool), 4, 5, 1)
    msg = str(info.value)
    assert re.search(rf"adv_more_kernels\.cpp:{_line('topk_call')}: TopK: k = 5; it must be in \[1, n = 4\]", msg), msg


def _flashv3_reference(x, alpha, inmean=None, insum=None, inmax=None, loop=1):
    """The SoftmaxFlashV3 page's formula per row: partial means of the columns its block sums gather, the
    row mean, contiguous k / 8 column groups shifted, then the running mean / max / sum."""
    m, k = x.shape
    scalar = alpha / (1 - alpha)
    cols = np.arange(k)
    group = np.where(cols < 512, cols // 64, (cols - 512) % 64 // 8)
    part = np.stack([x[:, group == g].sum(axis=1) for g in range(8)], axis=1) / (k // 8)
    mean = part.mean(axis=1)
    xs = x - (mean[:, None] - part[:, cols // (k // 8)]) * scalar
    row_max = xs.max(axis=1)
    if inmean is None:
        x_mean, x_max, shift_prev = mean, row_max, None
    else:
        x_mean = (mean + inmean * (loop - 1)) / loop
        shift_prev = (inmean - x_mean) * scalar
        x_max = np.maximum((mean - x_mean) * scalar + row_max, shift_prev + inmax)
    dst = np.exp(xs - (x_max - (mean - x_mean) * scalar)[:, None])
    total = dst.sum(axis=1)
    exp_max = None
    if inmean is not None:
        exp_max = np.exp(inmax - x_max + shift_prev)
        total = total + exp_max * insum
    return dst, x_mean, total, x_max, exp_max


@pytest.mark.parametrize("k,update", [(512, False), (1024, True)])
def test_softmax_flash_v3_against_the_page_formula(lib, k, update):
    rng = np.random.default_rng(11)
    m, alpha, loop = 8, 0.9375, 3
    x = rng.uniform(0, 1, (m, k)).astype(np.float16)
    # earlier blocks' mean, sum and max near this block's, so expMax stays inside half's range
    stats = np.stack([rng.uniform(0.45, 0.55, m), rng.uniform(0.5, 2.0, m), rng.uniform(0.8, 1.2, m)]).astype(np.float32)
    y = np.repeat(stats, 8, axis=1).reshape(-1)          # inMean, inSum, inMax: one 8-float block per row
    out = np.zeros(m * k // 2 + 3 * m * 8 + m * 8, np.float32)
    lib.launch("flashv3_f16", 1, [("x", x), ("y", y), ("p", np.array([m, k, int(update) | loop << 8,
                                                                           _bits(alpha)], np.int32)), ("out", out)])
    ref = _flashv3_reference(x.astype(np.float64), alpha, *(stats.astype(np.float64) if update else ()),
                             **({"loop": loop} if update else {}))
    dst = out[:m * k // 2].view(np.float16).reshape(m, k)
    np.testing.assert_allclose(dst.astype(np.float64), ref[0], rtol=2e-3, atol=1e-4)
    blocks = out[m * k // 2:m * k // 2 + 3 * m * 8].reshape(3, m, 8)
    for got, want in zip(blocks, ref[1:4]):
        np.testing.assert_allclose(got, np.repeat(want[:, None], 8, axis=1), rtol=1e-5, atol=1e-5)
    if update:
        exp_max = out[m * k // 2 + 3 * m * 8:].view(np.float16).reshape(m, 16)
        np.testing.assert_allclose(exp_max.astype(np.float64), np.repeat(ref[4][:, None], 16, axis=1), rtol=2e-3)


def test_softmax_flash_v3_shape_rule(lib):
    # the page: srcK >= 512 and a multiple of 64
    x = np.zeros((8, 448), np.float16)
    _fails(lib, "flashv3_f16", [("x", x), ("y", np.zeros(3 * 64, np.float32)),
                                ("p", np.array([8, 448, 1 | 2 << 8, _bits(0.9375)], np.int32)),
                                ("out", np.zeros(8 * 448, np.float32))],
           "flashv3_call", r"SoftmaxFlashV3: srcM x srcK = 8 x 448; the page needs srcK >= 512")
