"""int4b_t on the CPU implementation of the Ascend C API (tests/ascendc_kernels/cube_int4_kernels.cpp,
written from the asc-devkit docs): LocalTensor<int4b_t> counts 4-bit elements as CANN's does, so
GetSize, operator[], ReinterpretCast, GetValue/SetValue, DataCopy counts and Mmad's m/n/k are in
elements and the int4 cube path (Nd2Nz, LoadData 2D / 3D v2, LoadDataWithTranspose, Mmad) matches numpy."""
import ctypes
import os
import re

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import AscendCCheckError

pytestmark = pytest.mark.usefixtures("private_cache_dir")

M, K, N = 32, 128, 64
SOURCE = os.path.join(ASCENDC_KERNELS, "cube_int4_kernels.cpp")


@pytest.fixture(scope="module")
def lib():
    with open(SOURCE, encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="cube_int4_kernels")


def pack(x):
    """int4 values (-8..7), last axis even, to bytes: element 2i in the low nibble of byte i."""
    u = (x.astype(np.int16) & 0xF).astype(np.uint8)
    return np.ascontiguousarray(u[..., 0::2] | (u[..., 1::2] << 4)).astype(np.uint8)


def unpack(b):
    lo = (b & 0xF).astype(np.int16)
    hi = (b >> 4).astype(np.int16)
    out = np.stack([lo, hi], axis=-1).reshape(*b.shape[:-1], b.shape[-1] * 2)
    return np.where(out >= 8, out - 16, out).astype(np.int8)


def _line(marker):
    with open(SOURCE, encoding="utf-8") as f:
        return next(i for i, text in enumerate(f, 1) if f"LINE:{marker}" in text)


def test_pack_roundtrip():
    x = np.arange(-8, 8, dtype=np.int8).reshape(2, 8)
    np.testing.assert_array_equal(unpack(pack(x)), x)


@pytest.mark.parametrize("entry,b_transposed", [("int4_mmad_load2d", True), ("int4_mmad_load3d_transpose", False)])
def test_int4_mmad_matches_numpy_and_sizes_count_elements(lib, entry, b_transposed):
    rng = np.random.default_rng(4)
    a = rng.integers(-8, 8, (M, K)).astype(np.int8)
    b = rng.integers(-8, 8, (K, N)).astype(np.int8)
    b_gm = pack(b.T) if b_transposed else pack(b)
    c = np.zeros((M, N), np.int32)
    probe = np.full(8, -1, np.int32)
    lib.launch(entry, 1, [("a", pack(a)), ("b", b_gm), ("c", c), ("probe", probe)])
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
    # GetSize in elements, GetLength in bytes; a1[1024] starts 512 bytes in and has 1024 fewer elements;
    # int8 views count bytes, and back to int4b_t doubles again; GlobalTensor[64] is 32 bytes on
    assert probe[:7].tolist() == [M * K, M * K // 2, M * K - 1024, 512, K * N // 2, M * K, 32]


def test_int4_mmad_with_an_odd_k_is_refused_at_the_kernel_line(lib):
    z = np.zeros(M * K, np.uint8)
    with pytest.raises(AscendCCheckError) as info:
        lib.launch("int4_mmad_odd_k", 1, [("a", z), ("b", z), ("c", np.zeros((M, N), np.int32)),
                                          ("probe", np.zeros(8, np.int32))])
    assert re.search(rf"cube_int4_kernels\.cpp:{_line('odd_k')}: Mmad: MmadParams\.k = 127 with int4b_t matrices; "
                     r"k must be even", str(info.value)), str(info.value)


def test_an_odd_int4_view_is_refused(lib):
    # operator[] takes no call-site argument (C++ allows it one parameter), so this message names no line
    z = np.zeros(64, np.uint8)
    with pytest.raises(AscendCCheckError, match=r"LocalTensor<int4b_t>\[\]\(3\): an odd int4b_t offset starts in "
                                                r"the middle of a byte"):
        lib.launch("int4_odd_view", 1, [("a", z), ("b", z), ("c", z), ("probe", z)])


def test_int4_data_copy_and_nibble_get_set_value_on_ub(lib):
    rng = np.random.default_rng(5)
    x = rng.integers(-8, 8, 256).astype(np.int8)
    out = np.zeros(128, np.uint8)
    probe = np.zeros(8, np.int32)
    lib.launch("int4_ub_roundtrip", 1, [("x", pack(x)), ("out", out), ("probe", probe)])
    want = x.copy()
    want[3] = -5
    want[4] = ((int(x[1]) + int(x[2]) + 8) % 16) - 8   # the 4-bit store wraps
    np.testing.assert_array_equal(unpack(out), want)
    assert probe[:5].tolist() == [x[0], x[1], x[7], 256, x[5]]


MM_SOURCE = os.path.join(ASCENDC_KERNELS, "matmul_int4_kernels.cpp")


@pytest.fixture(scope="module")
def mm_lib():
    with open(MM_SOURCE, encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="matmul_int4_kernels")


def _mm_int4(mm_lib, m, n, k, seed=6, entry="matmul_int4"):
    rng = np.random.default_rng(seed)
    a = rng.integers(-8, 8, (m, k)).astype(np.int8)
    b = rng.integers(-8, 8, (k, n)).astype(np.int8)
    bias = rng.integers(-100, 100, n).astype(np.int32)
    tiling = np.zeros(64, np.int32)
    assert mm_lib._lib.Int4Tiling(m, n, k, tiling.ctypes.data_as(ctypes.c_void_p), tiling.nbytes) > 0
    c = np.zeros((m, n), np.int32)
    # pack() pairs values along the last axis; an odd K is packed with a zero nibble on each row's end
    pa = pack(np.pad(a, ((0, 0), (0, k % 2))))
    mm_lib.launch(entry, 1, [("a", pa), ("b", pack(b)), ("bias", bias), ("c", c), ("tiling", tiling)])
    return c, a.astype(np.int64) @ b.astype(np.int64) + bias


@pytest.mark.parametrize("entry", ["matmul_int4", "matmul_int4_mix"])
def test_int4_matmul_api_with_dt_int4_tiling_matches_numpy(mm_lib, entry):
    # a cube-only Matmul (ASCENDC_CUBE_ONLY) computes on the cube core in a mixed launch too
    c, want = _mm_int4(mm_lib, 48, 64, 192, entry=entry)
    np.testing.assert_array_equal(c, want)


def test_int4_matmul_api_needs_an_even_inner_axis(mm_lib):
    with open(MM_SOURCE, encoding="utf-8") as f:
        line = next(i for i, text in enumerate(f, 1) if "LINE:iterate_all" in text)
    with pytest.raises(AscendCCheckError) as info:
        _mm_int4(mm_lib, 32, 64, 63)
    assert re.search(rf"matmul_int4_kernels\.cpp:{line}: Matmul::Iterate: int4b_t A and B need an even count along "
                     r"their inner \(contiguous\) axes and an even singleCoreK", str(info.value)), str(info.value)
