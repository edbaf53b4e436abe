"""Reductions over separated axes (passes/split_reductions.py): sum / mean / max / min over axes
that are not one contiguous range run natively on the LLVM backend and print as Ascend C (one
reduction per run of adjacent axes); numpy, the reference, the LLVM call and simulate agree
(NaN propagation of max / min included)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
import fusedsl.compiler as compiler
from conftest import fuzz_settings
from fusedsl.passes.split_reductions import runs

NP = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}


def _reference(kernel, *args):
    saved = fs.config.executor
    fs.config.executor = "reference"
    try:
        return kernel(*args)
    finally:
        fs.config.executor = saved


def test_runs_of_adjacent_axes():
    assert runs((4, 1, 3)) == [[1], [3, 4]]
    assert runs((0, 2, 4)) == [[0], [2], [4]]
    assert runs((2,)) == [[2]]


@st.composite
def _case(draw):
    rank = draw(st.integers(3, 5))
    shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 5, 7]), min_size=rank, max_size=rank)))
    axes = draw(st.lists(st.integers(0, rank - 1), min_size=2, max_size=rank - 1, unique=True))
    if len(runs(axes)) < 2:   # adjacent axes only: make a gap
        axes = [0, rank - 1]
    return shape, tuple(axes)


@given(case=_case(), name=st.sampled_from(sorted(NP)), keep=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float16, np.int32]), nan=st.booleans(), seed=st.integers(0, 2 ** 16))
@fuzz_settings(0.03)
def test_separated_axes_run_natively_and_agree_with_numpy(case, name, keep, dtype, nan, seed):
    shape, axes = case
    if name == "mean" and dtype == np.int32:
        dtype = np.float32
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 5).astype(dtype)
    if nan and dtype != np.int32 and x.size > 1:
        x.flat[rng.integers(0, x.size)] = np.nan
    want = NP[name](x.astype(np.float64), axis=axes, keepdims=keep)
    k = fs.fused_kernel(lambda v: getattr(fs, name)(v, axis=axes, keepdims=keep))
    ref = _reference(k, x)
    with pytest.MonkeyPatch.context() as m:   # the LLVM executors, no fallback to the reference
        m.setattr(compiler, "run_function", lambda *a, **kw: pytest.fail("a kernel ran on the numpy reference"))
        m.setattr(fs.config, "executor", "llvm")
        got = k(x)
    tol = 2e-2 if dtype == np.float16 else 1e-5
    for g in (got, ref):
        assert np.shape(g) == np.shape(want)
        np.testing.assert_allclose(np.asarray(g, np.float64), want, rtol=tol, atol=tol * (1 + np.nanmax(
            np.abs(want), initial=0)), equal_nan=True)


@given(case=_case(), name=st.sampled_from(sorted(NP)), keep=st.booleans(), seed=st.integers(0, 2 ** 16))
@fuzz_settings(0.004)
def test_separated_axes_print_and_simulate(case, name, keep, seed):
    """Every kernel prints; simulate of the printed source agrees (one draw by default: g++ builds)."""
    shape, axes = case
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    c = fs.fused_kernel(lambda v: getattr(fs, name)(v, axis=axes, keepdims=keep), target="ascend910b").compile(x)
    c.check_ascendc()
    np.testing.assert_allclose(c.simulate(x), NP[name](x.astype(np.float64), axis=axes, keepdims=keep),
                               rtol=1e-5, atol=1e-5)


def test_max_over_axes_1_and_3_is_two_printed_reductions():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    c = fs.fused_kernel(lambda v: fs.max(v, axis=(1, 3)), target="ascend910b").compile(x)
    assert len(c.kernels) == 2   # max over axis 3 (a column kernel), then over axis 1
    np.testing.assert_array_equal(c.simulate(x), x.max(axis=(1, 3)))
