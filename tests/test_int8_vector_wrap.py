"""8-bit add / sub / mul / neg / abs in vector kernels wrap like numpy on every executor
(lower/vector.py `_wrap8`): the printed Ascend C computes them exactly in float32 and wraps
before its narrowing casts, which saturate on the chip (test_cast_half_to_int8_saturates)."""
import warnings

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.reference import run_module


def _eight_bit(a, b, u, v):
    return (a + b, a - b, a * b, -a, fs.abs(a), a * a, a + 100, 3 - a,
            u + v, u - v, u * v, -u, u * u, u + 200, 7 - u)


@pytest.mark.parametrize("target", ["ascend910b", "ascend910"])   # ascend910: no Maxs / Mins
def test_every_8bit_pair_wraps_like_numpy_in_the_printed_ascendc(target):
    """All 256 x 256 operand pairs of int8 and of uint8 through one kernel: simulate (the printed
    Ascend C on the CPU Ascend C API), kernel(*arrays) and the numpy reference agree bit for bit
    with numpy, and simulate warns of nothing."""
    i = np.arange(256)
    a, b = (i[:, None] - 128).astype(np.int8) + np.zeros((1, 256), np.int8), (i[None, :] - 128).astype(np.int8)
    u, v = i[:, None].astype(np.uint8) + np.zeros((1, 256), np.uint8), i[None, :].astype(np.uint8)
    b, v = np.ascontiguousarray(np.broadcast_to(b, a.shape)), np.ascontiguousarray(np.broadcast_to(v, u.shape))
    with np.errstate(over="ignore"):
        want = (a + b, a - b, a * b, -a, np.abs(a), a * a, a + np.int8(100), np.int8(3) - a,
                u + v, u - v, u * v, -u, u * u, u + np.uint8(200), np.uint8(7) - u)
    k = fs.fused_kernel(_eight_bit).compile(a, b, u, v, target=target)
    src = k.source
    assert "Adds" in src and "12582912" in src   # the float32 rounding step of the wrap is printed
    with warnings.catch_warnings():
        warnings.simplefilter("error", fs.SaturationWarning)
        sim = k.simulate(a, b, u, v)
    for run in (sim, k(a, b, u, v), run_module(k.graph, [a, b, u, v])):
        for n, (got, w) in enumerate(zip(run, want)):
            assert got.dtype == w.dtype, n
            np.testing.assert_array_equal(got, w, err_msg=f"output {n}")
