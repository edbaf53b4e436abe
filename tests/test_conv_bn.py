"""Conv + BatchNorm (+ ReLU / LeakyReLU / residual) is ONE printed cube kernel (issue 21 item 4),
and so is linear + BatchNorm1d: fold-batch-norm turns the chain into one per-channel scale and
shift of the cube result, and the epilogue computes them from the statistics per tile row. No
weight-rescaling kernel; single_kernel=True holds. simulate and kernel(*arrays) vs numpy."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings

TOL = {"float32": 2e-5, "float16": 4e-3}


def _close(got, want, dtype):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    err = np.abs(got - want).max()
    assert err <= TOL[dtype] * (1 + np.abs(want).max()), f"max abs error {err}"


def _conv(x, w, stride=1, padding=0):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    p = (h + 2 * padding - r) // stride + 1
    q = (wd + 2 * padding - s) // stride + 1
    out = np.zeros((n, k, p, q))
    for i in range(r):
        for j in range(s):
            patch = xp[:, :, i:i + stride * p:stride, j:j + stride * q:stride]
            out += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j])
    return out


def _bn(y, m, v, g, b, axis=1, eps=1e-5):
    shape = [1] * y.ndim
    shape[axis] = -1
    r = lambda a: np.asarray(a, np.float64).reshape(shape)  # noqa: E731
    return (y - r(m)) / np.sqrt(r(v) + eps) * r(g) + r(b)


def _stats(rng, c, dtype):
    return [rng.uniform(-1, 1, c).astype(dtype), rng.uniform(0.5, 2, c).astype(dtype),
            rng.uniform(0.5, 1.5, c).astype(dtype), rng.uniform(-1, 1, c).astype(dtype)]


@pytest.mark.parametrize("target,dtype", [("ascend910b", "float32"), ("ascend910b", "float16"),
                                          ("ascend310p", "float16")])
def test_conv_bn_relu_is_one_printed_kernel(target, dtype):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 8, 17, 19)).astype(dtype)
    w = (rng.normal(size=(32, 8, 3, 3)) * 0.2).astype(dtype)
    m, v, g, b = _stats(rng, 32, dtype)

    @fs.fused_kernel(target=target, single_kernel=True)
    def conv_bn_relu(x, w, m, v, g, b):
        return fs.relu(fs.batch_norm(fs.conv2d(x, w, padding=1), m, v, g, b))

    k = conv_bn_relu.compile(x, w, m, v, g, b)
    assert [p.kernel_kind for p in k.kernels] == ["conv"] and k.kernels[0].printable
    y = _conv(x.astype(np.float64), w.astype(np.float64), padding=1)
    if dtype == "float16":
        y = y.astype(np.float16).astype(np.float64)   # the conv's result rounds to float16 first
    want = np.maximum(_bn(y, m, v, g, b), 0)
    _close(k.simulate(x, w, m, v, g, b), want, dtype)
    _close(k(x, w, m, v, g, b), want, dtype)


@fuzz_settings(scale=0.006)
@given(n=st.integers(1, 2), c=st.integers(1, 6), k=st.integers(1, 20), hw=st.integers(3, 9),
       bias=st.booleans(), act=st.sampled_from(["relu", "leaky", "residual"]),
       target=st.sampled_from(["ascend910b", "ascend310p"]), seed=st.integers(0, 2 ** 16))
def test_generated_conv_bn_epilogues_are_one_kernel(n, c, k, hw, bias, act, target, seed):
    rng = np.random.default_rng(seed)
    dtype = "float16" if target == "ascend310p" else "float32"
    x = rng.normal(size=(n, c, hw, hw + 1)).astype(dtype)
    w = (rng.normal(size=(k, c, 3, 3)) * 0.3).astype(dtype)
    cb = rng.normal(size=k).astype(dtype)
    m, v, g, b = _stats(rng, k, dtype)
    res = rng.normal(size=(n, k, hw, hw + 1)).astype(dtype)

    def fn(x, w, cb, m, v, g, b, res):
        y = fs.batch_norm(fs.conv2d(x, w, cb if bias else None, padding=1), m, v, g, b)
        return {"relu": fs.relu(y), "leaky": fs.leaky_relu(y, 0.1), "residual": fs.relu(y + res)}[act]

    kern = fs.fused_kernel(fn, target=target).compile(x, w, cb, m, v, g, b, res)
    assert [p.kernel_kind for p in kern.kernels] == ["conv"], [p.ops for p in kern.kernels]
    y = _conv(x.astype(np.float64), w.astype(np.float64), padding=1)
    if dtype == "float16":
        y = y.astype(np.float16).astype(np.float64)
    if bias:
        y = y + cb.astype(np.float64).reshape(1, -1, 1, 1)
    z = _bn(y, m, v, g, b)
    want = {"relu": np.maximum(z, 0), "leaky": np.where(z > 0, z, 0.1 * z),
            "residual": np.maximum(z + res.astype(np.float64), 0)}[act]
    # float16: each epilogue op rounds; the tolerance is relative to the result's magnitude
    _close(kern.simulate(x, w, cb, m, v, g, b, res), want, dtype if dtype == "float32" else "float16")


@pytest.mark.parametrize("target,dtype", [("ascend910b", "float32"), ("ascend310p", "float16")])
def test_linear_bn1d_is_one_printed_kernel(target, dtype):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 24)).astype(dtype)
    w = (rng.normal(size=(36, 24)) * 0.2).astype(dtype)
    m, v, g, b = _stats(rng, 36, dtype)

    @fs.fused_kernel(target=target, single_kernel=True)
    def linear_bn(x, w, m, v, g, b):
        return fs.relu(fs.batch_norm(x @ w.T, m, v, g, b))

    k = linear_bn.compile(x, w, m, v, g, b)
    assert [p.kernel_kind for p in k.kernels] == ["cube"]
    y = x.astype(np.float64) @ w.astype(np.float64).T
    if dtype == "float16":
        y = y.astype(np.float16).astype(np.float64)
    _close(k.simulate(x, w, m, v, g, b), np.maximum(_bn(y, m, v, g, b), 0), dtype)


def test_a_one_pixel_conv_output_prints_its_epilogue():
    """P*Q == 1: the epilogue's rows are one pixel long (this raised a KeyError in the printer)."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(1, 2, 1, 1)).astype(np.float32)
    w = rng.normal(size=(3, 2, 1, 1)).astype(np.float32)
    cb = rng.normal(size=3).astype(np.float32)
    m, v, g, b = _stats(rng, 3, "float32")
    k = fs.fused_kernel(lambda x, w, cb, m, v, g, b: fs.relu(fs.batch_norm(fs.conv2d(x, w, cb), m, v, g, b))
                        ).compile(x, w, cb, m, v, g, b)
    y = _conv(x.astype(np.float64), w.astype(np.float64)) + cb.reshape(1, -1, 1, 1)
    _close(k.simulate(x, w, cb, m, v, g, b), np.maximum(_bn(y, m, v, g, b), 0), "float32")
