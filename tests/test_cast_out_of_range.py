"""Float -> int casts of NaN, +-inf and values outside int32 (issue 18 item 12): the numpy
reference and the LLVM executor give numpy's answer on x86 (INT32_MIN, wrapped to narrower
ints); the printed Ascend C saturates like the NPU's Cast (NaN -> 0), which simulate shows."""
import numpy as np
import pytest

import fusedsl as fs
from fusedsl.reference import run_module

VALUES = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.0 ** 31, -2.0 ** 31, 2.7, -2.7, -0.0, 1e5],
                  np.float32)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint8"])
def test_reference_and_llvm_give_numpys_answer(dtype):
    k = fs.fused_kernel(lambda a: a.astype(dtype)).compile(VALUES)
    with np.errstate(invalid="ignore"):
        want = VALUES.astype(np.int32).astype(dtype)   # numpy on x86, through int32 like the C cast
    np.testing.assert_array_equal(run_module(k.graph, [VALUES])[0], want)
    if dtype == "int32":
        np.testing.assert_array_equal(k(VALUES), want)


def test_the_printed_cast_saturates_like_the_npu():
    k = fs.fused_kernel(lambda a: a.astype("int32")).compile(VALUES)
    got = k.simulate(VALUES)
    imax, imin = 2 ** 31 - 1, -2 ** 31
    want = np.array([0, imax, imin, imax, imin, imax, imin, 2, -2, 0, 100000], np.int64)
    np.testing.assert_array_equal(got.astype(np.int64), want)
