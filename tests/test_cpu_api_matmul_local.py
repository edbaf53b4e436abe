"""The Matmul object's own L1 / L0A / L0B / L0C buffers (tests/ascendc_kernels/matmul_local_kernels.cpp):
planned in the kernel's TPipe where CANN's Matmul plans them (asc-devkit impl/adv_api/detail/matmul:
InitShareBufStart / InitShareBufEnd, TBufPoolL0's whole-L0A/L0B TBufs, the A1/B1 queues), so a kernel's own
TQue on those positions never silently shares bytes with them: a queue planned before the Matmul keeps
its data; one that would overlap the Matmul's buffers is refused at its InitBuffer line.  Also A / B given
in GM in CubeFormat::NZ (they were read as ND)."""
import ctypes
import os
import re

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import AscendCCheckError

pytestmark = pytest.mark.usefixtures("private_cache_dir")

SOURCE = os.path.join(ASCENDC_KERNELS, "matmul_local_kernels.cpp")
M, N, K = 32, 48, 64


@pytest.fixture(scope="module")
def lib():
    with open(SOURCE, encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="matmul_local_kernels")


def _line(marker):
    with open(SOURCE, encoding="utf-8") as f:
        return next(i for i, text in enumerate(f, 1) if f"LINE:{marker}" in text)


def _run(lib, mode, seed=3):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    keep = rng.uniform(-4, 4, 512).astype(np.float16)
    tiling = np.zeros(80, np.int32)
    tiling[0] = mode
    assert lib._lib.LocalTiling(M, N, K, ctypes.c_void_p(tiling.ctypes.data + 4), tiling.nbytes - 4) > 0
    c = np.zeros((M, N), np.float32)
    kept = keep.copy()
    lib.launch("mm_local", 1, [("a", a), ("b", b), ("c", c), ("keep", kept), ("tiling", tiling)])
    return a, b, c, keep, kept


def test_kernel_l1_queues_around_a_matmul_keep_their_data(lib):
    # an A1 queue before the Matmul (the object is planned after it) and one after it (at the object's start
    # plus the tiling's shareL1Size): C matches numpy and both halves of `keep` come back unchanged
    a, b, c, keep, kept = _run(lib, 0)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(kept[:256], keep[256:])
    np.testing.assert_array_equal(kept[256:], keep[:256])


def test_a_kernel_queue_on_the_matmuls_l0a_is_refused_at_its_init_buffer_line(lib):
    with pytest.raises(AscendCCheckError) as info:
        _run(lib, 1)
    msg = str(info.value)
    assert re.search(rf"matmul_local_kernels\.cpp:{_line('a2_before')}: InitBuffer: TQue<A2> \[0, 1024\) of L0A "
                     r"overlaps the own buffers of the Matmul object registered later at \S*matmul_local_kernels\.cpp:"
                     rf"{_line('mm_after_a2')}, which takes L0A \[0, 65536\) of it \(all of L0A", msg), msg
    assert "leaves L0A, L0B and the bias table to it" in msg


def test_a_kernel_queue_after_the_matmul_finds_l0b_taken(lib):
    with pytest.raises(AscendCCheckError) as info:
        _run(lib, 2)
    msg = str(info.value)
    assert re.search(rf"matmul_local_kernels\.cpp:{_line('b2_after')}: InitBuffer: TQue<B2> plan of L0B needs 66560 "
                     r"bytes, ascend910b has 65536 .*the Matmul object registered at \S*matmul_local_kernels\.cpp:"
                     rf"{_line('mm_before_b2')} holds L0B \[0, 65536\)", msg), msg


def test_a_kernel_queue_placed_on_the_matmuls_l1_buffers_is_refused(lib):
    # shareL1Size 0: CANN would place the next A1 queue at the Matmul's own start, over its A1/B1 queues
    with pytest.raises(AscendCCheckError) as info:
        _run(lib, 3)
    msg = str(info.value)
    assert re.search(rf"matmul_local_kernels\.cpp:{_line('a1_after')}: InitBuffer: TQue<A1> \[0, 512\) of L1 overlaps "
                     r"the own L1 buffers \[0, \d+\) of the Matmul object registered at \S*matmul_local_kernels\.cpp:"
                     rf"{_line('mm_no_share')} \(A1/B1 queues\)", msg), msg
    assert "tiling's shareL1Size" in msg


def _nz(x):
    """A half matrix in CANN's NZ layout: 16-column groups, each the rows (rounded up to 16) x 16, in order."""
    r, c = x.shape
    padded = np.zeros((-(-r // 16) * 16, c), x.dtype)
    padded[:r] = x
    return np.ascontiguousarray(padded.reshape(-1, c // 16, 16).transpose(1, 0, 2))


@pytest.mark.parametrize("mode", [1, 2, 3])
def test_nz_a_and_b_in_gm_match_numpy(lib, mode):
    # M = 40 rows: an NZ A's groups are 48 rows high (the padding rows are never read)
    m, n, k = 40, 48, 64
    rng = np.random.default_rng(mode)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    tiling = np.zeros(80, np.int32)
    tiling[0] = mode
    assert lib._lib.LocalTiling(m, n, k, ctypes.c_void_p(tiling.ctypes.data + 4), tiling.nbytes - 4) > 0
    c = np.zeros((m, n), np.float32)
    a_gm = _nz(a) if mode & 2 else a
    b_gm = _nz(b) if mode & 1 else b
    lib.launch("mm_nz", 1, [("a", a_gm), ("b", b_gm), ("c", c), ("unused", c), ("tiling", tiling)])
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5, atol=1e-5)
