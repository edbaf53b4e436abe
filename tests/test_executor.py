"""kernel(*arrays) on the default LLVM executor: wiring, fallbacks, out=, semantics."""
from __future__ import annotations

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.reference import run_module


def reference(kernel, *args):
    k = kernel.compile(*args)
    outs = run_module(k.graph, [a for a in args if isinstance(a, np.ndarray)])
    return outs[0] if len(outs) == 1 else outs


def test_default_executor_is_llvm():
    assert fs.config.executor == "llvm"


@fs.fused_kernel
def wrap(x, y):
    return x * y + x, x * x - y, fs.abs(x) - y


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32])
def test_integer_arithmetic_wraps_like_numpy(dtype):
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    x = rng.integers(lo, hi, 999).astype(dtype)
    y = rng.integers(lo, hi, 999).astype(dtype)
    with np.errstate(all="ignore"):
        want = (x * y + x, x * x - y, np.abs(x) - y)
    for got, w in zip(wrap(x, y), want):
        np.testing.assert_array_equal(got, w)


@fs.fused_kernel
def mixed(x, w):
    # a row kernel (softmax and the row sum: native LLVM) and a cube kernel (matmul + relu + 1:
    # BLAS with the epilogue) in one call
    s = fs.softmax(x * 2.0)
    return fs.relu(s @ w) + 1.0, s.sum(axis=-1)


def test_row_and_cube_kernels_run_inside_one_call():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((33, 17)).astype(np.float32)
    w = rng.standard_normal((17, 5)).astype(np.float32)
    got, want = mixed(x, w), reference(mixed, x, w)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)
    k = mixed.compile(x, w)
    assert {p.kind for p in k.kernels} == {"row", "cube"}


@fs.fused_kernel
def seed(a, b):
    return fs.relu(fs.abs(a) + b)


def test_out_is_written_in_place_and_results_never_alias():
    a = np.linspace(-1, 1, 128, dtype=np.float32)
    b = np.linspace(-2, 2, 192 * 128, dtype=np.float32).reshape(192, 128)
    out = np.full_like(b, np.nan)
    assert seed(a, b, out=out) is out
    np.testing.assert_array_equal(out, np.maximum(np.abs(a) + b, 0))
    # the fast path must see new arrays (not a stale binding) on every call
    b2 = -b
    np.testing.assert_array_equal(seed(a, b2), np.maximum(np.abs(a) - b, 0))

    @fs.fused_kernel
    def passthrough(x):
        return x, x.reshape(2, 8), fs.exp(x)
    x = np.arange(16, dtype=np.float32)
    r0, r1, _ = passthrough(x)
    # a returned parameter is a copy; a reshape is a view of its input, as numpy's (issue 21 item 7)
    assert not np.shares_memory(r0, x) and np.shares_memory(r1, x) and not np.shares_memory(r0, r1)


def test_bad_out_is_a_located_error():
    a = np.ones(128, np.float32)
    b = np.ones((4, 128), np.float32)
    with pytest.raises(fs.ArgumentError, match="out= array must be") as info:
        seed(a, b, out=np.empty((4, 128), np.float64))  # LINE-MARK
    assert "test_executor.py" in str(info.value)


def test_reference_executor_is_still_available(monkeypatch):
    monkeypatch.setattr(fs.config, "executor", "reference")
    a = np.ones(8, np.float32)
    b = np.full((3, 8), -2.0, np.float32)
    np.testing.assert_array_equal(seed(a, b), np.zeros((3, 8), np.float32))
