"""fs.take (gather / embedding lookup): IR op, reference, executors, fusion and errors."""
from __future__ import annotations

import numpy as np
import pytest

import fusedsl as fs

TABLE = np.random.default_rng(0).standard_normal((10, 8)).astype(np.float32)
IDS = np.array([[1, 2], [3, -1], [9, 0]], np.int32)
BIAS = np.linspace(-1, 1, 8, dtype=np.float32)


@fs.fused_kernel
def embed_bias_relu(table, ids, bias):
    return fs.relu(fs.take(table, ids) + bias)


def test_take_rows_plus_bias_relu_matches_numpy():
    np.testing.assert_array_equal(embed_bias_relu(TABLE, IDS, BIAS), np.maximum(TABLE[IDS] + BIAS, 0))
    k = embed_bias_relu.compile(TABLE, IDS, BIAS)
    assert "take(%table, %ids) {axis = 0} : f32[3,2,8]" in k.ir
    assert fs.parse_ir(k.ir) is not None
    rows = k.report().kernels
    # the gather is the kernel's CopyIn addressing: one kernel (tests/test_views.py for more)
    assert [r.ops for r in rows] == [["take", "add", "relu"]] and rows[0].reason_code == "FS100"


def test_take_other_axis_and_eager():
    @fs.fused_kernel
    def cols(t, i):
        return fs.take(t, i, axis=1)
    i = np.array([7, 0, 3], np.int32)
    np.testing.assert_array_equal(cols(TABLE, i), np.take(TABLE, i, axis=1))
    np.testing.assert_array_equal(fs.take(TABLE, i, axis=-1), np.take(TABLE, i, axis=1))


def test_take_errors_point_at_the_user():
    with pytest.raises(fs.FusedslError, match=r"test_take.py:\d+: take: index 10 is out of range for axis 0"):
        embed_bias_relu(TABLE, np.array([[10, 0], [0, 0], [0, 0]], np.int32), BIAS)
    with pytest.raises(fs.DTypeError, match="take indices must be integers"):
        fs.take(TABLE, np.zeros(3, np.float32))
    with pytest.raises(fs.FusedslError, match="take axis 2 is out of range"):
        fs.take(TABLE, IDS, axis=2)
