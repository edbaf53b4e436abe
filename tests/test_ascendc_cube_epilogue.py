"""Epilogues of cube kernels printed as Ascend C (issue 8, item 2): compares and `where`, bool
masks, runtime scalars and matmuls with several batch axes, run with `simulate` (the printed
C++ on fusedsl's CPU implementation of the Ascend C API) and through `kernel(*arrays)`, both
against numpy on 910B and 310P; what is still not printed says so at the user's line."""
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from fusedsl.reference import run_module

from conftest import fuzz_settings

HERE = os.path.basename(__file__)
TARGETS = ["ascend910b", "ascend310p"]
# 310P's Matmul API has no float32 x float32 form: f32 inputs run on 910B only
TARGET_DTYPES = [("ascend910b", np.float32), ("ascend910b", np.float16), ("ascend310p", np.float16)]


def _close(got, want, tol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    if want.dtype == np.bool_:   # the data make every product exact, so compares agree bit for bit
        assert np.array_equal(got, want), f"{int(np.sum(got != want))} of {want.size} mask bits differ"
        return
    got, want = got.astype(np.float64), want.astype(np.float64)
    assert np.abs(got - want).max() <= tol * (1 + np.abs(want).max())


def _check(c, args, want, tol):
    """simulate and kernel(*arrays) both agree with `want` (numpy)."""
    assert [p.kind for p in c.kernels] == ["cube"]
    for got in (c.simulate(*args), c(*args)):
        got = got if isinstance(got, (tuple, list)) else (got,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w, tol)


def _tol(dtype):
    return 4e-3 if dtype == np.float16 else 1e-4


def _data(seed, dtype, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _exact(seed, dtype, *shapes):
    """Multiples of 0.5 in [-2, 2]: every product and sum (K < 100) is exact in f16 and f32, so a
    compare sees the same value in every executor and ties (y == threshold) really occur."""
    rng = np.random.default_rng(seed)
    return [(rng.integers(-4, 5, s) * 0.5).astype(dtype) for s in shapes]


# ---- compares and where ------------------------------------------------------------------

@pytest.mark.parametrize("target,dtype", TARGET_DTYPES)
@pytest.mark.parametrize("m,n,k", [(33, 40, 19), (1, 1, 1), (17, 1, 5), (130, 70, 45)])
def test_where_leaky_and_a_bool_mask(target, dtype, m, n, k):
    @fs.fused_kernel(target=target)
    def f(x, w, b):
        y = x @ w + b
        return fs.where(y > 0, y, y * 0.1), y >= 0.5

    x, w, b = _exact(m * n + k, dtype, (m, k), (k, n), (n,))
    c = f.compile(x, w, b)
    assert "AscendC::Compares(" in c.source and "AscendC::Select(" in c.source
    y = (x.astype(np.float64) @ w.astype(np.float64)).astype(dtype).astype(np.float64) + b
    _check(c, (x, w, b), [np.where(y > 0, y, 0.1 * y).astype(dtype), y >= 0.5], _tol(dtype))


@pytest.mark.parametrize("target", TARGETS)
def test_compare_with_a_residual_and_a_mask_input(target):
    """Both sides of the compare vary (a residual tensor); a bool [M, N] input picks values."""
    @fs.fused_kernel(target=target)
    def f(x, w, r, keep):
        y = x @ w
        z = fs.where(y < r, r, y)           # max(y, r) through a compare
        return fs.where(keep, z, 0.0), fs.cast(y != r, "float16")

    x, w, r = _exact(7, np.float16, (45, 30), (30, 50), (45, 50))
    keep = np.random.default_rng(8).random((45, 50)) > 0.3
    c = f.compile(x, w, r, keep)
    want = run_module(c.graph, [x, w, r, keep])
    _check(c, (x, w, r, keep), want, 4e-3)


@fuzz_settings(0.01)
@given(m=st.integers(1, 70), n=st.integers(1, 70), k=st.integers(1, 40), target_dtype=st.sampled_from(TARGET_DTYPES),
       cmp=st.sampled_from(["lt", "le", "gt", "ge", "eq", "ne"]), seed=st.integers(0, 2**16))
def test_compares_in_the_epilogue_fuzz(m, n, k, target_dtype, cmp, seed):
    target, dtype = target_dtype

    @fs.fused_kernel(target=target)
    def f(x, w, b):
        y = x @ w + b
        t = {"lt": y < 0.5, "le": y <= 0.5, "gt": y > 0.5, "ge": y >= 0.5, "eq": y == 0.5, "ne": y != 0.5}[cmp]
        return fs.where(t, y * 2.0, -y), t

    x, w, b = _exact(seed, dtype, (m, k), (k, n), (n,))
    c = f.compile(x, w, b)
    _check(c, (x, w, b), run_module(c.graph, [x, w, b]), _tol(dtype))
