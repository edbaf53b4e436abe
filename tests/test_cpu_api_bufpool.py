"""TBufPool and EXTERN_IMPL_BUFPOOL on the CPU Ascend C API (tests/ascendc_kernels/bufpool_kernels.cpp,
one build): pools laid over each other and nested, a user-written pool, the whole UB a TPipe may plan,
and one failure per rule, each naming the kernel's line."""
import os
import re

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import AscendCCheckError

pytestmark = pytest.mark.usefixtures("private_cache_dir")
SOURCE = os.path.join(ASCENDC_KERNELS, "bufpool_kernels.cpp")
N = 256
B = N * 4


def _line(marker):
    with open(SOURCE, encoding="utf-8") as f:
        for i, text in enumerate(f, 1):
            if f"LINE:{marker}" in text:
                return i
    raise AssertionError(marker)


@pytest.fixture(scope="module")
def lib():
    with open(SOURCE, encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="bufpool_kernels")


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_pools_against_numpy(lib, target):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(5 * N, np.float32)
    info = np.full(16, -1, np.int32)
    lib.launch("pools", 1, [("x", x), ("y", y), ("out", out), ("info", info)], target=target)
    o = out.reshape(5, N)
    np.testing.assert_array_equal(o[0], x + y)
    np.testing.assert_array_equal(o[1], x * y)
    np.testing.assert_array_equal(o[2], x - y)
    np.testing.assert_array_equal(o[3], np.maximum(x, y))
    np.testing.assert_array_equal(o[4][:N - 16], (x + y)[:N - 16])
    np.testing.assert_array_equal(o[4][N - 16:], 0)
    # first pool [0, 3B); the pool over it starts at 0 too; outer [3B, 7B) holds inner1 = inner2 = [3B, 5B)
    # and its own queue at 5B; the user pool at 7B: its queue's buffer 0 after buffer 1 and a 32-byte gap,
    # the TBuf after both, 4 buffer ids taken
    assert info[:10].tolist() == [B, B, 5 * B, 3 * B, 3 * B, 7 * B, 4, 8 * B + 32, 7 * B, 9 * B + 64]


def test_whole_ub_is_the_tpipe_budget(lib):
    out = np.zeros(64, np.float32)
    for target, whole in (("ascend910b", 196608), ("ascend310p", 262144)):
        out[:] = 0
        lib.launch("whole_ub", 1, [("x", out), ("y", out), ("out", out), ("info", np.array([whole], np.int32))],
                   target=target)
        np.testing.assert_array_equal(out, 3)
        with pytest.raises(AscendCCheckError) as info:
            lib.launch("whole_ub", 1, [("x", out), ("y", out), ("out", out),
                                       ("info", np.array([whole + 32], np.int32))], target=target)
        msg = str(info.value)
        assert re.search(rf"bufpool_kernels\.cpp:{_line('whole_pool')}: InitBuffer: UB plan needs {whole + 32} "
                         rf"bytes, {target} has {whole} \(this call adds 1 x {whole + 32} bytes for "
                         r"TBufPool<VECCALC>", msg), msg


@pytest.mark.parametrize("mode,marker,pattern", [
    (1, "no_reset", r"TBufPool::InitBuffer: TBufPool<VECCALC> \(UB \[0, 1024\)\) shares UB with TBufPool<VECCALC> "
                    r"\(UB \[0, 1024\)\), which is still in use; call Reset\(\) on that pool"),
    (2, "held", r"TBufPool::Reset: 1 tensor\(s\) of the queues of TBufPool<VECCALC> \(UB \[0, 1024\)\) are still "
                r"allocated or enqueued"),
    (3, "overflow", r"TBufPool::InitBuffer: 2 x 608 bytes for a TQue do not fit TBufPool<VECCALC> \(UB \[0, 1024\)\), "
                    r"which has 1024 of its 1024 bytes left"),
    (4, "longer", r"TPipe::InitBufPool: 1056 bytes \(rounded up to 32\) laid over TBufPool<VECCALC> \(UB \[0, 1024\)\), "
                  r"which has 1024; the length may not exceed the shared pool's"),
    (5, "ids", r"TBufPool::InitBuffer: TQue<VECCALC> needs 1 buffer ids and TBufPool<VECCALC> \(UB \[1024, 2048\)\) "
               r"has 0 of its 2 left \(bufIDSize\)"),
    (6, "outside", r"InitBufHandle: buffer 0 at UB \[1312, 1568\) is outside EXTERN_IMPL_BUFPOOL pool<VECCALC> "
                   r"\(UB \[1024, 1536\)\)"),
])
def test_pool_rules_name_the_line(lib, mode, marker, pattern):
    z = np.zeros(16, np.float32)
    with pytest.raises(AscendCCheckError) as info:
        lib.launch("pool_misuse", 1, [("x", z), ("y", z), ("out", z), ("info", np.array([mode], np.int32))])
    msg = str(info.value)
    assert re.search(rf"bufpool_kernels\.cpp:{_line(marker)}: {pattern}", msg), msg
