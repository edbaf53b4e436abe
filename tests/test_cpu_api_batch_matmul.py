"""Batch matmul through the Matmul API on the CPU implementation of Ascend C
(tests/ascendc_kernels/matmul_batch_kernels.cpp, written from the asc-devkit docs): host tiling with
the BSNGD / NORMAL batch axes, IterateBatch with G broadcast and a shared bias, against numpy, and
IterateNBatch's isNBatch rule."""
import ctypes
import os
import re

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import AscendCCheckError

pytestmark = pytest.mark.usefixtures("private_cache_dir")
SOURCE = os.path.join(ASCENDC_KERNELS, "matmul_batch_kernels.cpp")


@pytest.fixture(scope="module")
def lib():
    with open(SOURCE, encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="matmul_batch_kernels")


def _run(lib, entry, layout, m, n, k, ga, gb, bias_on, a, b, bias, c):
    tiling = np.zeros(64, np.int32)
    assert lib._lib.BatchTiling(layout, m, n, k, ga, gb, int(bias_on), tiling.ctypes.data_as(ctypes.c_void_p),
                                tiling.nbytes) > 0
    ws = np.zeros(16 << 20, np.uint8)
    lib.launch(entry, 1, [("a", a), ("b", b), ("bias", bias), ("c", c), ("workspace", ws), ("tiling", tiling)])


def test_bsngd_iterate_batch_broadcasts_the_smaller_g(lib):
    # A [S=M, gA=1, D=K], B^T [S=N, gB=3, D=K] -> C [M, 3, N]: every B group against the one A group
    rng = np.random.default_rng(31)
    m, n, k, ga, gb = 32, 48, 32, 1, 3
    a = rng.uniform(-1, 1, (m, ga, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (n, gb, k)).astype(np.float16)
    c = np.zeros((m, gb, n), np.float32)
    _run(lib, "batch_bsngd", 0, m, n, k, ga, gb, False, a, b, np.zeros(n, np.float32), c)
    want = np.einsum("mk,ngk->mgn", a[:, 0].astype(np.float32), b.astype(np.float32))
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


def test_normal_iterate_batch_reuses_one_bias(lib):
    rng = np.random.default_rng(32)
    m, n, k, batch = 16, 32, 48, 3
    a = rng.uniform(-1, 1, (batch, m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (batch, k, n)).astype(np.float16)
    bias = rng.uniform(-1, 1, n).astype(np.float32)
    c = np.zeros((batch, m, n), np.float32)
    _run(lib, "batch_normal", 1, m, n, k, batch, batch, True, a, b, bias, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32) + bias, rtol=1e-5, atol=1e-4)


def test_iterate_n_batch_needs_is_n_batch(lib):
    with open(SOURCE, encoding="utf-8") as f:
        line = next(i for i, text in enumerate(f, 1) if "LINE:n_batch" in text)
    z = np.zeros(4096, np.float16)
    with pytest.raises(AscendCCheckError) as info:
        _run(lib, "batch_n_without_is_n_batch", 0, 32, 32, 32, 1, 1, False, z, z, np.zeros(32, np.float32),
             np.zeros(4096, np.float32))
    assert re.search(rf"matmul_batch_kernels\.cpp:{line}: Matmul::IterateNBatch: MatmulConfig\.isNBatch is off",
                     str(info.value)), str(info.value)
