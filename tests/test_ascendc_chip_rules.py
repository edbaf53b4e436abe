"""Printed kernels on 310P/910A keep the chip rules the CPU implementation checks (issue 10
item 6): Select mode 0 only on 910A, no 64-byte GM line shared by two cores when tails are
written with SetValue, and float32 -> int32 through half truncating exactly for |x| < 1024 (and
beyond, in pieces: tests/test_exact_cast.py)."""
import numpy as np

import fusedsl as fs


@fs.fused_kernel
def where_gt(a, b):
    return fs.where(a > b, a * 2, b)


@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


@fs.fused_kernel
def to_int(x):
    return x.astype("int32")


def test_select_is_mode_0_on_910():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((7, 33)).astype(np.float32) for _ in range(2))
    k = where_gt.compile(a, b, target="ascend910")
    assert "VSEL_CMPMASK_SPR" in k.source
    assert "VSEL_TENSOR_TENSOR_MODE" not in k.source and "VSEL_TENSOR_SCALAR_MODE" not in k.source
    np.testing.assert_array_equal(k.simulate(a, b), np.where(a > b, a * 2, b))


def test_tails_do_not_share_gm_lines_across_cores_on_910():
    # 19 floats = 76 bytes per row: equal row splits would put two cores in one 64-byte line
    rng = np.random.default_rng(1)
    a = rng.standard_normal(19).astype(np.float32)
    b = rng.standard_normal((8192, 19)).astype(np.float32)
    k = abs_add_relu.compile(a, b, target="ascend910")
    np.testing.assert_array_equal(k.simulate(a, b), np.maximum(np.abs(a) + b, 0))


def test_float_to_int32_through_half_truncates_exactly_below_1024():
    x = np.concatenate([np.random.default_rng(2).uniform(-1023.99, 1023.99, 2000),
                        [4.99837, -4.99837, 2.9999, 1023.9, -0.5]]).astype(np.float32)
    np.testing.assert_array_equal(to_int.compile(x, target="ascend310p").simulate(x), x.astype(np.int32))
