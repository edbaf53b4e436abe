"""fs.nll_loss and fs.cross_entropy (ops/composite.py) against numpy: the reference interpreter,
the LLVM call and the printed Ascend C under simulate, on drawn shapes (size 1, odd class
counts, a spatial axis), weights, ignore_index in and out of the class range, and -inf / NaN in
classes other than the target's (a gather must not read them)."""
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import check_user_error, fuzz_settings, marked_line


def np_nll(x, t, w=None, reduction="mean", ignore=-100):
    """numpy's nll_loss: class axis 1 (or 0 for a 1-D x with a 0-d t)."""
    x = np.asarray(x, np.float64)
    if x.ndim == 1:   # one sample ([C], 0-d t); 'none' then gives [1] here, a 0-d result in torch
        x, t = x[None], np.asarray(t)[None]
    xc = np.moveaxis(x, 1, -1)                                   # [N, d..., C]
    valid = t != ignore
    safe = np.where(valid & (t >= 0) & (t < xc.shape[-1]), t, 0)
    picked = np.take_along_axis(xc, safe[..., None], -1)[..., 0]
    wt = np.ones_like(picked) if w is None else np.asarray(w, np.float64)[safe]
    wt = np.where(valid, wt, 0.0)
    loss = np.where(valid, -picked * wt, 0.0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return loss.sum() / wt.sum()


def _reference(kernel, *args):
    saved = fs.config.executor
    fs.config.executor = "reference"
    try:
        return kernel(*args)
    finally:
        fs.config.executor = saved


def _close(got, want, tol):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=tol, atol=tol,
                               equal_nan=True)


@given(n=st.integers(1, 6), c=st.integers(1, 33), spatial=st.booleans(), weighted=st.booleans(),
       reduction=st.sampled_from(["mean", "sum", "none"]), ignore=st.sampled_from([-100, 0, 3]),
       logits=st.booleans(), dtype=st.sampled_from([np.float32, np.float16]), seed=st.integers(0, 2 ** 16))
@fuzz_settings(0.02)
def test_nll_loss_and_cross_entropy_agree_with_numpy(n, c, spatial, weighted, reduction, ignore, logits, dtype,
                                                     seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, c, 3) if spatial else (n, c)) * 2).astype(dtype)
    t = rng.integers(0, c, (n, 3) if spatial else (n,)).astype(np.int32)
    t[rng.random(t.shape) < 0.3] = ignore
    w = rng.uniform(0.5, 2.0, c).astype(dtype)
    if logits:
        xd = x.astype(np.float64)
        lp = xd - xd.max(1, keepdims=True)
        lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
        want = np_nll(lp, t, w if weighted else None, reduction, ignore)
    else:
        want = np_nll(x, t, w if weighted else None, reduction, ignore)
    op = fs.cross_entropy if logits else fs.nll_loss

    def f(x, t, w):
        return op(x, t, w if weighted else None, reduction, ignore)

    k = fs.fused_kernel(f)
    tol = 2e-2 if dtype == np.float16 else 2e-5
    for got in (k(x, t, w), _reference(k, x, t, w)):
        assert np.asarray(got).shape == np.shape(want)
        _close(got, want, tol * (1 + np.abs(want).max(initial=0)))


@given(n=st.integers(1, 5), c=st.integers(2, 40), reduction=st.sampled_from(["mean", "sum", "none"]),
       seed=st.integers(0, 2 ** 16))
@fuzz_settings(0.004)
def test_cross_entropy_simulates(n, c, reduction, seed):
    """The printed kernels on the CPU Ascend C API (910B), one draw by default: a g++ build each."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c)).astype(np.float32)
    t = rng.integers(0, c, n).astype(np.int32)
    t[0] = 1   # the ignored class
    w = rng.uniform(0.5, 2.0, c).astype(np.float32)
    k = fs.fused_kernel(lambda x, t, w: fs.cross_entropy(x, t, w, reduction, ignore_index=1),
                        target="ascend910b").compile(x, t, w)
    k.check_ascendc()
    xd = x.astype(np.float64)
    lp = xd - np.log(np.exp(xd).sum(1, keepdims=True))
    _close(k.simulate(x, t, w), np_nll(lp, t, w, reduction, 1), 2e-5)


def test_other_classes_nan_and_inf_do_not_leak_and_1d_input():
    x = np.array([[0.5, -np.inf, np.nan], [np.nan, -1.0, -np.inf]], np.float32)
    t = np.array([0, 1], np.int32)
    k = fs.fused_kernel(lambda x, t: fs.nll_loss(x, t, reduction="none"))
    np.testing.assert_array_equal(k(x, t), [-0.5, 1.0])
    x1 = np.array([0.1, 0.7, 0.2], np.float32)
    got = fs.fused_kernel(lambda x, t: fs.cross_entropy(x, t))(x1, np.array(2, np.int32))
    _close(got, -(0.2 - np.log(np.exp(x1.astype(np.float64)).sum())), 1e-6)


def test_float_targets_name_the_users_line():
    def f(x, p):
        return fs.nll_loss(x, p)   # LINE-MARK soft

    x = np.zeros((2, 3), np.float32)
    with pytest.raises(fs.DTypeError) as info:
        fs.fused_kernel(f)(x, x)
    check_user_error(info, file=os.path.abspath(__file__), line=marked_line(__file__, "soft"),
                     message="nll_loss needs integer class indices")
