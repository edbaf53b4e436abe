"""AscendAntiQuant, DropOut and Select with a bytes mask on the CPU Ascend C API against numpy, with
their host scratch helpers and failure paths; kernels in tests/ascendc_kernels/filter_quant_kernels.cpp
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
SOURCE = os.path.join(ASCENDC_KERNELS, "filter_quant_kernels.cpp")


@pytest.fixture(scope="module")
def lib():
    with open(SOURCE, encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="filter_quant_kernels")


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
    assert re.search(rf"filter_quant_kernels\.cpp:{_line(marker)}: ", msg), msg
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
