"""Row kernels whose inputs broadcast over any subset of the leading axes (a mask [1, 1, S, S]
over scores [B, H, S, S], a position table [S, D] over [B, S, D], a per-row value [B, 1, S, 1]):
the printed Ascend C addresses each input row by its own element strides. simulate, the LLVM
call and the numpy reference agree with numpy, single-read and multi-pass plans, and the
row epilogue of a matmul."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings

TOL = {"float32": 2e-5, "float16": 2e-2, "bfloat16": 5e-2}


def _np(dtype):
    return np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)


def _close(got, want, dtype):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape
    err = np.abs(got - want).max() if got.size else 0.0
    assert err <= TOL[dtype] * (1 + np.abs(want).max()), f"max abs error {err}"


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer_norm(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def test_the_issue_example_sums_each_row_of_the_broadcast_input():
    x = np.zeros((2, 3, 8), np.float32)
    y = np.arange(24, dtype=np.float32).reshape(1, 3, 8)
    k = fs.fused_kernel(lambda x, y: fs.sum(x + y, axis=-1)).compile(x, y)
    want = (x + y).sum(-1)
    np.testing.assert_array_equal(k.simulate(x, y), want)
    np.testing.assert_array_equal(k(x, y), want)


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p", "ascend910"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_softmax_with_a_broadcast_mask(target, dtype):
    rng = np.random.default_rng(1)
    s = rng.normal(size=(2, 3, 17, 17)).astype(dtype)
    mask = rng.normal(size=(1, 1, 17, 17)).astype(dtype)
    k = fs.fused_kernel(lambda s, m: fs.softmax(s * 0.125 + m), target=target).compile(s, mask)
    want = _softmax(s.astype(np.float64) * 0.125 + mask.astype(np.float64))
    _close(k.simulate(s, mask), want, dtype)
    _close(k(s, mask), want, dtype)


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_layer_norm_of_x_plus_a_position_table(target):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 5, 64)).astype(np.float32)
    pos = rng.normal(size=(5, 64)).astype(np.float32)
    g = rng.normal(size=64).astype(np.float32)
    b = rng.normal(size=64).astype(np.float32)
    k = fs.fused_kernel(lambda x, p, g, b: fs.layer_norm(x + p, g, b), target=target).compile(x, pos, g, b)
    want = _layer_norm(x.astype(np.float64) + pos, g, b)
    _close(k.simulate(x, pos, g, b), want, "float32")


def test_rows_bigger_than_ub_with_a_broadcast_input_take_the_multi_pass_plan():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 3, 70000)).astype(np.float32)
    y = rng.normal(size=(3, 70000)).astype(np.float32)
    k = fs.fused_kernel(lambda x, y: fs.softmax(x + y)).compile(x, y)
    assert "multi-pass" in str(k.report())
    _close(k.simulate(x, y), _softmax(x.astype(np.float64) + y), "float32")


@fuzz_settings(scale=0.01)
@given(outer=st.lists(st.integers(1, 5), min_size=1, max_size=3), cols=st.integers(1, 70),
       data=st.data(), dtype=st.sampled_from(["float32", "float16", "bfloat16"]),
       target=st.sampled_from(["ascend910b", "ascend310p", "ascend910"]),
       kind=st.sampled_from(["softmax", "sum", "layer_norm", "perrow"]), seed=st.integers(0, 2 ** 16))
def test_generated_row_kernels_with_inputs_broadcasting_over_leading_axes(outer, cols, data, dtype, target,
                                                                         kind, seed):
    if dtype == "bfloat16":
        target = "ascend910b"   # the only target with bfloat16 vector APIs
    shape = tuple(outer) + (cols,)
    # y keeps any subset of x's leading axes (the others are 1 or dropped); its last axis is whole
    keep = data.draw(st.lists(st.booleans(), min_size=len(outer), max_size=len(outer)), label="keep")
    yshape = tuple(n if k else 1 for n, k in zip(outer, keep)) + (cols,)
    drop = data.draw(st.integers(0, len(outer)), label="drop")
    if all(n == 1 for n in yshape[:drop]):
        yshape = yshape[drop:]
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, shape).astype(_np(dtype))
    y = rng.uniform(-3, 3, yshape).astype(_np(dtype))
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    if kind == "softmax":
        def fn(x, y):
            return fs.softmax(x * 0.5 + y)
        want = _softmax(xf * 0.5 + yf)
    elif kind == "sum":
        def fn(x, y):
            return fs.sum(x - y, axis=-1)
        want = (xf - yf).sum(-1)
    elif kind == "layer_norm":
        def fn(x, y):   # layer_norm's statistics without weights
            z = x + y
            c = z - fs.mean(z, axis=-1, keepdims=True)
            return c * fs.rsqrt(fs.mean(c * c, axis=-1, keepdims=True) + 1e-5)
        zf = xf + yf
        cf = zf - zf.mean(-1, keepdims=True)
        want = cf / np.sqrt((cf * cf).mean(-1, keepdims=True) + 1e-5)
    else:   # a per-row value [.., 1] broadcast back over the row
        yshape = yshape[:-1] + (1,)
        y = rng.uniform(-3, 3, yshape).astype(_np(dtype))
        yf = y.astype(np.float64)

        def fn(x, y):
            return fs.max(x, axis=-1, keepdims=True) * y + x
        want = xf.max(-1, keepdims=True) * yf + xf
    k = fs.fused_kernel(fn, target=target).compile(x, y)
    _close(k.simulate(x, y), want, dtype)
    _close(k(x, y), want, dtype)


@pytest.mark.parametrize("target,dtype", [("ascend910b", "float32"), ("ascend910b", "float16"),
                                          ("ascend310p", "float16")])
def test_softmax_after_a_matmul_with_a_broadcast_residual(target, dtype):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(40, 24)).astype(dtype)
    w = (rng.normal(size=(24, 72)) * 0.2).astype(dtype)
    r = rng.normal(size=(1, 72)).astype(dtype)
    k = fs.fused_kernel(lambda x, w, r: fs.softmax(x @ w + r), target=target).compile(x, w, r)
    want = _softmax(x.astype(np.float64) @ w.astype(np.float64) + r)
    _close(k.simulate(x, w, r), want, dtype)
