"""A scale after a matmul with a transposed operand keeps printing (issue 21 item 3): a scale by
one number stays in the cube kernel's epilogue (x @ w.T * 2.0 and attention scores
q @ k.T * 0.125 are ONE printed kernel), a per-column scale is folded onto the rows of w before
the transpose, so the cube kernel still reads the scaled weights transposed."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings

TOL = {"float32": 1e-5, "float16": 4e-3}


def _close(got, want, dtype):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= TOL[dtype] * (1 + np.abs(want).max())


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("target,dtype", [("ascend910b", "float32"), ("ascend910b", "float16"),
                                          ("ascend310p", "float16")])
def test_relu_of_x_at_w_transposed_times_a_number_is_one_kernel(target, dtype):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 24)).astype(dtype)
    w = (rng.normal(size=(36, 24)) * 0.2).astype(dtype)
    k = fs.fused_kernel(lambda x, w: fs.relu(x @ w.T * 2.0), target=target).compile(x, w)
    assert [p.kernel_kind for p in k.kernels] == ["cube"] and k.kernels[0].printable
    want = np.maximum(x.astype(np.float64) @ w.astype(np.float64).T * 2.0, 0)
    _close(k.simulate(x, w), want, dtype)
    _close(k(x, w), want, dtype)


def test_attention_scores_with_a_scale_print_as_one_cube_kernel():
    rng = np.random.default_rng(1)
    q = rng.normal(size=(33, 16)).astype(np.float32)
    kk = rng.normal(size=(20, 16)).astype(np.float32)
    k = fs.fused_kernel(lambda q, k: fs.softmax(q @ k.T * 0.125)).compile(q, kk)
    assert [p.kernel_kind for p in k.kernels] == ["cube"]
    _close(k.simulate(q, kk), _softmax(q.astype(np.float64) @ kk.T * 0.125), "float32")


@fuzz_settings(scale=0.006)
@given(m=st.integers(1, 40), kd=st.integers(1, 30), n=st.integers(1, 40), per_column=st.booleans(),
       target=st.sampled_from(["ascend910b", "ascend310p"]), seed=st.integers(0, 2 ** 16))
def test_generated_scales_after_x_at_w_transposed_print_and_agree(m, kd, n, per_column, target, seed):
    rng = np.random.default_rng(seed)
    dtype = "float16" if target == "ascend310p" else "float32"
    x = rng.normal(size=(m, kd)).astype(dtype)
    w = (rng.normal(size=(n, kd)) * 0.3).astype(dtype)
    s = rng.uniform(0.5, 2.0, size=n).astype(dtype)
    if per_column:
        def fn(x, w, s):
            return fs.relu(x @ w.T * s + 1.0)
        want = np.maximum(x.astype(np.float64) @ w.astype(np.float64).T * s.astype(np.float64) + 1.0, 0)
    else:
        def fn(x, w, s):
            return fs.leaky_relu(x @ w.T * 0.5, 0.1) + s
        y = x.astype(np.float64) @ w.astype(np.float64).T * 0.5
        want = np.where(y > 0, y, 0.1 * y) + s
    k = fs.fused_kernel(fn, target=target).compile(x, w, s)
    assert all(p.printable for p in k.kernels), [(p.ops, str(p.error)) for p in k.kernels]
    _close(k.simulate(x, w, s), want, dtype)
