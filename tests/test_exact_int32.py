"""Composites that compute int32 results as float32 integers convert them with
ops/composite.exact_int32, which casts only integers up to 1024 in magnitude: 310P and 910A
have no float32 -> int32 Cast and go through half, exact for integers to 2048 only.  Before,
their printed Ascend C gave argmax / argmin indices past 1024, argsort indices, right_shift and
adaptive pooling windows wrong (argmax 3 of 4 rows over 5000 elements, argsort 952 of 6000,
right_shift by 3 256 of 256, adaptive_avg_pool1d 3 of 7), with no warning (those programs:
tests/test_exact_cast.py's test_index_results_past_1024)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings
from fusedsl.frontend.api import _F
from fusedsl.ops.composite import exact_int32
from fusedsl.reference import run_module

CHIPS = ("ascend310p", "ascend910")   # the targets without a float32 -> int32 Cast
TOP = float(2 ** 31)
EDGES = np.array([TOP, -TOP, TOP - 128, -(TOP - 128), 0.0, -0.0, 1.0, -1.0, 1023.0, 1024.0, 1025.0, 2047.0,
                  2048.0, 2049.0, -2049.0, 2 ** 21 - 1, 2 ** 21 + 1, 2 ** 24 - 1, 2 ** 24 + 2, -(2 ** 30) - 64,
                  1048575.0, -1048577.0, 3e9 - 3e9 + 12345678.0, 16777215.0], np.float32)
N = 64


def _numpy_int32(v):
    return v.astype(np.int64).astype(np.int32)   # 2**31 wraps to INT_MIN


def _values(ints):
    v = np.zeros(N, np.float32)
    v[:EDGES.size] = EDGES
    v[EDGES.size:EDGES.size + len(ints)] = np.array(ints, np.float64).astype(np.float32)
    return np.trunc(v)


@pytest.fixture(scope="module", params=[(chip, bound) for chip in CHIPS for bound in (2 ** 31, 2 ** 20)])
def converter(request):
    """exact_int32 printed for a chip, with its three-piece (to 2**31) or two-piece (to 2**20) form."""
    chip, bound = request.param
    k = fs.fused_kernel(lambda v: exact_int32(_F, v, bound)).compile(fs.spec((N,), fs.float32), target=chip)
    return k, bound


@fuzz_settings(scale=0.3)
@given(st.lists(st.integers(-2 ** 31, 2 ** 31), min_size=N - EDGES.size, max_size=N - EDGES.size))
def test_exact_int32_converts_every_float32_integer_up_to_its_bound(converter, ints):
    """Under simulate on 310P / 910A, the LLVM executor and the reference: numpy's int32 of the
    float32 integers (the edges of each piece, 2**31 wrapping to INT_MIN), for values within the
    bound (others are clipped to it)."""
    k, bound = converter
    v = np.clip(_values(ints), -bound, bound)
    want = _numpy_int32(v)
    for got in (k.simulate(v), k(v), run_module(k.graph, [v])[0]):
        np.testing.assert_array_equal(got, want)
